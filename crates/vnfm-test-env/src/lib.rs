//! The services some tests need (PostgreSQL, the SSH test hosts, Keystone, Heat, Prometheus,
//! the Helm library, ...), and the one way a test says so.
//!
//! A test that needs a service carries `#[vnfm_test_env::needs(service, ...)]`. Whether the
//! service is there is decided when the test is built:
//!
//! - the crate's build script calls [`build_script`] with the services its tests need; it sets
//!   the cfg `vnfm_test_<service>` when all the service's variables are set (or when `CI` is
//!   set and `scripts/test.sh` starts that service: [`Service::in_ci`]), and tells Cargo to
//!   build again when one of them changes;
//! - `#[needs(...)]` makes the test `#[ignore = "needs <what>: <how to start it>"]` unless
//!   those cfgs are set, so a plain `cargo test` without the services lists it as ignored with
//!   the reason, never as passed;
//! - a test built to run (or run with `--ignored`) starts with [`require`], which panics
//!   naming the missing variable and how to start the service: the variable went away after
//!   the build, or `CI` is set and the service was not started.
//!
//! A crate adopts it with three lines:
//!
//! ```toml
//! [build-dependencies]
//! vnfm-test-env = { path = "../vnfm-test-env" }
//! [dev-dependencies]
//! vnfm-test-env = { path = "../vnfm-test-env" }
//! ```
//!
//! ```ignore
//! // build.rs
//! fn main() {
//!     vnfm_test_env::build_script(&["postgres"]);
//! }
//! ```
//!
//! and on each such test `#[vnfm_test_env::needs(postgres)]` (above `#[test]` or
//! `#[tokio::test]`: below `#[test]` it comes too late to make the test ignored), whose
//! helpers read the
//! service's variables with [`var`]. A test naming a service its crate's build script does
//! not list is an `unexpected_cfgs` warning (an error under `clippy -D warnings`).

mod services;

pub use services::{SERVICES, Service, reason, service};
/// Marks a test as needing services: ignored, with the reason, unless they were there when it
/// was built; failing at run time when they are not there then. See the crate documentation.
pub use vnfm_test_env_macros::needs;

/// A self-signed CA certificate (P-256, `CN=vnfm test CA`, valid until 2126), PEM: what a VIM
/// connection's `ssl_ca_cert` holds in tests that register VIMs without connecting to them
/// (a VIM's CA is checked to be an X.509 certificate when it is registered).
pub const CA_PEM: &str = include_str!("../data/ca.pem");

/// Whether `CI` is set (to anything but empty, `0` or `false`).
pub fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !matches!(v.as_str(), "" | "0" | "false"))
}

fn is_set(var: &str) -> bool {
    std::env::var_os(var).is_some_and(|v| !v.is_empty())
}

#[track_caller]
fn known(name: &str) -> &'static Service {
    service(name).unwrap_or_else(|| {
        panic!(
            "no test service `{name}`; the services are: {}",
            services::names()
        )
    })
}

/// For a build script: declares the cfgs `vnfm_test_<name>` of `services`, sets those whose
/// service is there (all its variables set, or `CI` set and [`Service::in_ci`]), and asks
/// Cargo to run the script again when one of the variables (or `CI`) changes. Panics (the
/// build fails) on a name that is not in [`SERVICES`].
pub fn build_script(services: &[&str]) {
    println!("cargo::rerun-if-env-changed=CI");
    let ci = ci();
    for name in services {
        let s = known(name);
        println!("cargo::rustc-check-cfg=cfg(vnfm_test_{name})");
        for var in s.vars {
            println!("cargo::rerun-if-env-changed={var}");
        }
        if s.vars.iter().all(|v| is_set(v)) || (ci && s.in_ci) {
            println!("cargo::rustc-cfg=vnfm_test_{name}");
        }
    }
}

/// For a crate's build script: finds Tacker's sample packages (`shared/corpus/tacker` in the
/// nearest directory above the crate that has it), sets `VNFM_TACKER_CORPUS` to their path for
/// the tests, and the cfg `vnfm_tacker_corpus` when they are there, so the tests that read
/// them are built `#[cfg_attr(not(vnfm_tacker_corpus), ignore = "...")]`: ignored with the
/// reason without them, never passing.
pub fn tacker_corpus_build_script() {
    println!("cargo::rustc-check-cfg=cfg(vnfm_tacker_corpus)");
    let manifest = std::path::PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").expect("a build script runs under Cargo"),
    );
    let found = manifest
        .ancestors()
        .map(|a| a.join("shared/corpus/tacker"))
        .find(|c| c.is_dir());
    let corpus = found
        .clone()
        .unwrap_or_else(|| manifest.join("../../../shared/corpus/tacker"));
    println!("cargo::rustc-env=VNFM_TACKER_CORPUS={}", corpus.display());
    println!("cargo::rerun-if-changed={}", corpus.display());
    if found.is_some() {
        println!("cargo::rustc-cfg=vnfm_tacker_corpus");
    }
}

/// The run-time guard `#[needs(...)]` puts first in a test: panics when a variable of one of
/// `services` is not set, naming it and how to start the service.
#[track_caller]
pub fn require(services: &[&str]) {
    for name in services {
        let s = known(name);
        if let Some(var) = s.vars.iter().find(|v| !is_set(v)) {
            missing(s, var);
        }
    }
}

/// The value of `var`, a variable of one of [`SERVICES`]; panics when it is not set, naming
/// the service and how to start it.
#[track_caller]
pub fn var(var: &str) -> String {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => v,
        _ => match SERVICES.iter().find(|s| s.vars.contains(&var)) {
            Some(s) => missing(s, var),
            None => panic!("{var} is not set"),
        },
    }
}

#[track_caller]
fn missing(s: &Service, var: &str) -> ! {
    let why = if ci() && s.in_ci {
        "CI is set, and scripts/test.sh starts it before `cargo test`"
    } else {
        "the test runs: the variable was set when it was built, or --ignored asked for it"
    };
    panic!(
        "{var} is not set, but this test needs {} ({why}): {}",
        s.what, s.start
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_service_has_a_unique_name_that_is_a_cfg_suffix_and_variables() {
        for (i, s) in SERVICES.iter().enumerate() {
            assert!(
                s.name.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{}",
                s.name
            );
            assert!(!s.vars.is_empty(), "{}", s.name);
            assert!(SERVICES[..i].iter().all(|o| o.name != s.name), "{}", s.name);
        }
    }

    #[test]
    fn services_started_by_one_command_share_one_reason() {
        let ks = service("keystone").unwrap();
        let cli = service("openstack_cli").unwrap();
        let pg = service("postgres").unwrap();
        assert_eq!(
            reason(&[ks, cli, pg]),
            format!(
                "needs Keystone and the OpenStack client with the Tacker plugin: {}; \
                 needs PostgreSQL: {}",
                ks.start, pg.start
            )
        );
    }

    #[test]
    #[should_panic(expected = "this test needs the SSH test hosts")]
    fn a_missing_variable_panics_naming_the_service() {
        // A variable no environment sets, checked through the table's message path.
        missing(service("sshd").unwrap(), "VNFM_TEST_SSHD");
    }

    #[test]
    #[should_panic(expected = "no test service `postgresql`")]
    fn an_unknown_service_is_refused() {
        require(&["postgresql"]);
    }
}
