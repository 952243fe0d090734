//! The services some tests need (PostgreSQL, the SSH test hosts, Keystone, Heat, Prometheus,
//! the Helm library, ...) and the inputs some read (the corpus: [`corpus_dir`]), and the one
//! way a test says so.
//!
//! A test that needs a service carries `#[vnfm_test_env::needs(service, ...)]`. Whether the
//! service is there is decided when the test is built:
//!
//! - the crate's build script calls [`build_script`] with the services its tests need; it sets
//!   the cfg `vnfm_test_<service>` when all the service's variables are set (for `corpus`:
//!   when its directory exists), or when `CI` is set and `scripts/test.sh` starts that
//!   service ([`Service::in_ci`]), and tells Cargo to build again when one of them changes;
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
//! helpers read the service's variables with [`var`], and the corpus's files at [`corpus`]
//! (every test that reads the corpus carries `#[needs(corpus)]`). A test naming a service its crate's build script does
//! not list is an `unexpected_cfgs` warning (an error under `clippy -D warnings`).

mod built;
mod services;

use std::path::{Path, PathBuf};

pub use built::{BUILT_DIR_VAR, built};
pub use services::{Found, SERVICES, Service, reason, service};
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

/// The variable that says where the corpus is, when it is not at `shared/corpus` beside the
/// checkout.
pub const CORPUS_DIR_VAR: &str = "VNFM_CORPUS_DIR";

/// The corpus: the inputs nobody here wrote that tests read (Tacker's sample packages under
/// `tacker/`, the ETSI API test suites under `etsi/`, ASD samples under `asd/`). It is
/// `VNFM_CORPUS_DIR` when that is set, else `shared/corpus` in the directory that holds the
/// checkout. Tests that read it carry `#[needs(corpus)]`.
pub fn corpus_dir() -> PathBuf {
    match std::env::var_os(CORPUS_DIR_VAR) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => checkout()
            .parent()
            .expect("a checkout is in a directory")
            .join("shared/corpus"),
    }
}

/// The checkout this crate is in.
fn checkout() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("this crate is at <checkout>/crates/vnfm-test-env")
}

/// What a build script watches so that its crate is built again when the corpus changes or
/// appears: the corpus directory; while it is missing, its parent (`shared` beside the
/// checkout), which changes when the corpus is put in it; nothing when that is missing too,
/// or the corpus is elsewhere ([`CORPUS_DIR_VAR`], watched as a variable). Never a missing
/// path (Cargo takes one for changed: the crate and its dependents would be built at every
/// build) nor a directory that holds the checkout (Cargo scans a watched directory whole,
/// and the checkout's `target/` changes at every build).
fn corpus_watch() -> Option<PathBuf> {
    let dir = corpus_dir();
    if dir.is_dir() {
        return Some(dir);
    }
    if is_set(CORPUS_DIR_VAR) {
        return None;
    }
    dir.parent()
        .filter(|p| p.is_dir() && !checkout().starts_with(p))
        .map(Path::to_path_buf)
}

/// `rel` in the [corpus](corpus_dir), e.g. `corpus("tacker/v2-vm-basic-lcms-min")`.
pub fn corpus(rel: impl AsRef<Path>) -> PathBuf {
    corpus_dir().join(rel)
}

/// The file `rel` of OpenStack Tacker's source distribution (the `tacker_source` service:
/// `VNFM_TEST_TACKER_SOURCE`), e.g. `etc/tacker/enhanced_tacker_policy.yaml.sample`.
pub fn tacker_source(rel: impl AsRef<Path>) -> PathBuf {
    let dir = std::env::var_os("VNFM_TEST_TACKER_SOURCE")
        .expect("VNFM_TEST_TACKER_SOURCE is set (the tacker_source service)");
    PathBuf::from(dir).join(rel)
}

/// Whether service `s` is there now.
fn is_there(s: &Service) -> bool {
    match s.found {
        Found::VarsSet => s.vars.iter().all(|v| is_set(v)),
        Found::CorpusDir => corpus_dir().is_dir(),
    }
}

/// For a build script: declares the cfgs `vnfm_test_<name>` of `services`, sets those whose
/// service is there (all its variables set or, for the corpus, its directory there; or `CI`
/// set and [`Service::in_ci`]), and asks Cargo to run the script again when one of the
/// variables (or `CI`) changes, or the corpus directory does. Panics (the build fails) on a
/// name that is not in [`SERVICES`].
pub fn build_script(services: &[&str]) {
    println!("cargo::rerun-if-env-changed=CI");
    let ci = ci();
    for name in services {
        let s = known(name);
        println!("cargo::rustc-check-cfg=cfg(vnfm_test_{name})");
        for var in s.vars {
            println!("cargo::rerun-if-env-changed={var}");
        }
        if s.found == Found::CorpusDir
            && let Some(watched) = corpus_watch()
        {
            println!("cargo::rerun-if-changed={}", watched.display());
        }
        if is_there(s) || (ci && s.in_ci) {
            println!("cargo::rustc-cfg=vnfm_test_{name}");
        }
    }
}

/// The run-time guard `#[needs(...)]` puts first in a test: panics when one of `services` is
/// not there, naming the variable that is not set (or the corpus directory that is missing)
/// and how to start the service.
#[track_caller]
pub fn require(services: &[&str]) {
    for name in services {
        let s = known(name);
        match s.found {
            Found::VarsSet => {
                if let Some(var) = s.vars.iter().find(|v| !is_set(v)) {
                    missing(s, &format!("{var} is not set"));
                }
            }
            Found::CorpusDir => {
                let dir = corpus_dir();
                if !dir.is_dir() {
                    missing(s, &format!("{} is not a directory", dir.display()));
                }
            }
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
            Some(s) => missing(s, &format!("{var} is not set")),
            None => panic!("{var} is not set"),
        },
    }
}

/// Panics: `problem` (what is not there), the service the test needs, why the test runs
/// anyway, and how to start the service.
#[track_caller]
fn missing(s: &Service, problem: &str) -> ! {
    let why = if ci() && s.in_ci {
        match s.found {
            Found::VarsSet => "CI is set, and scripts/test.sh starts it before `cargo test`",
            Found::CorpusDir => "CI is set, and CI runs have it",
        }
    } else {
        match s.found {
            Found::VarsSet => {
                "the test runs: the variable was set when it was built, or --ignored asked for it"
            }
            Found::CorpusDir => {
                "the test runs: the directory was there when it was built, or --ignored asked for it"
            }
        }
    };
    panic!(
        "{problem}, but this test needs {} ({why}): {}",
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
        missing(service("sshd").unwrap(), "VNFM_TEST_SSHD is not set");
    }

    #[test]
    fn the_corpus_is_beside_the_checkout() {
        // The test binary's own environment: VNFM_CORPUS_DIR is not set by Cargo.
        if std::env::var_os(CORPUS_DIR_VAR).is_none() {
            // The directory that holds the checkout (it exists, the corpus may not).
            let beside = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..");
            let corpus = corpus_dir();
            let holder = corpus.parent().and_then(Path::parent).unwrap();
            assert_eq!(
                holder.canonicalize().unwrap(),
                beside.canonicalize().unwrap()
            );
            assert!(
                corpus_dir().ends_with("shared/corpus"),
                "{}",
                corpus_dir().display()
            );
            assert!(!corpus_dir().to_string_lossy().contains(".."));
        }
        assert_eq!(corpus("tacker/x"), corpus_dir().join("tacker/x"));
    }

    #[test]
    fn the_watched_path_exists_and_never_holds_the_checkout() {
        match corpus_watch() {
            Some(watched) => {
                assert!(watched.is_dir(), "{}", watched.display());
                assert!(!checkout().starts_with(&watched), "{}", watched.display());
                if corpus_dir().is_dir() {
                    assert_eq!(watched, corpus_dir());
                }
            }
            None => assert!(!corpus_dir().is_dir()),
        }
    }

    #[test]
    fn a_missing_corpus_panics_naming_its_path() {
        let dir = corpus_dir();
        let message = std::panic::catch_unwind(|| {
            missing(
                service("corpus").unwrap(),
                &format!("{} is not a directory", dir.display()),
            )
        })
        .expect_err("missing panics");
        let message = message
            .downcast_ref::<String>()
            .expect("a formatted message");
        assert!(
            message.starts_with(&format!(
                "{} is not a directory, but this test needs the corpus",
                dir.display()
            )),
            "{message}"
        );
        assert!(message.contains("VNFM_CORPUS_DIR"), "{message}");
    }

    #[test]
    #[should_panic(expected = "no test service `postgresql`")]
    fn an_unknown_service_is_refused() {
        require(&["postgresql"]);
    }
}
