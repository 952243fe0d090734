//! The integration tests of `vnfm-assurance`, a module each, built as one test program.

// The runner fixtures are vnfm-lcm's own: automatic healing and scaling run the same
// lifecycle operations its runner tests do, on the same in-memory drivers.
#[path = "../../vnfm-lcm/tests/runner_support/mod.rs"]
mod runner_support;

mod auto_heal;
mod auto_scale;
mod infra_watch;
