//! The integration tests of `vnfm-lcm`, a module each, built as one test program: one link and
//! one binary instead of one per file, which keeps a cold build's disk use and link time down.

mod log_capture;
mod notify_support;
mod plan_support;
mod runner_support;

mod coordinate_scripts;
mod crash;
mod grant_use;
mod grants;
mod hook_reports;
mod mixed_vnf;
mod notify_delivery;
mod pkgm_subscriptions;
mod plan_corpus;
mod plan_memory_driver;
mod plan_steps;
mod plan_validate;
mod runner_default_vim;
mod runner_diagnosis;
mod runner_driver_checks;
mod runner_failures;
mod runner_inline_vims;
mod runner_instantiate_state;
mod runner_ops;
mod runner_panics;
mod runner_preview;
mod runner_recovery;
mod runner_subscriptions;
mod subscriptions_matching;
mod subscriptions_store;
mod takeover;
mod vim_dependents;
mod vim_keyring;
mod vim_registry;
