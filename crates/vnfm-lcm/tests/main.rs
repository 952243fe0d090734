//! The lifecycle core's integration tests, one program: each module was its own test binary.

mod notify_support;
mod plan_support;
mod runner_support;

mod auto_heal;
mod auto_scale;
mod log_capture;

mod crash;
mod grant_use;
mod grants;
mod hook_reports;
mod infra_watch;
mod mixed_vnf;
mod notify_delivery;
mod pkgm_subscriptions;
mod plan_corpus;
mod plan_memory_driver;
mod plan_steps;
mod plan_validate;
mod runner_default_vim;
mod runner_failures;
mod runner_inline_vims;
mod runner_ops;
mod runner_panics;
mod runner_preview;
mod runner_recovery;
mod runner_subscriptions;
mod subscriptions_matching;
mod subscriptions_store;
mod vim_dependents;
mod vim_keyring;
mod vim_registry;
