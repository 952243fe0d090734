//! The crate's table of services (`src/services.rs`) against the table of the variables the
//! test services' scripts give (`scripts/test-env/services.tsv`, whose header says why they
//! are two tables checked here rather than one generated from the other): every variable a
//! service needs is one its script declares, and every script there is one a service names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use vnfm_test_env::{Found, SERVICES, Service};

const TSV: &str = include_str!("../../../scripts/test-env/services.tsv");

/// The services that no script of `scripts/test-env` starts.
const NOT_FROM_TEST_ENV: &[&str] = &["corpus", "tacker_source"];

/// services.tsv: each script's variables, in order.
fn declared() -> BTreeMap<&'static str, Vec<&'static str>> {
    let mut scripts: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (i, line) in TSV.lines().enumerate() {
        if line.starts_with('#') {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        assert!(
            cols.len() == 3 && cols.iter().all(|c| !c.trim().is_empty()),
            "services.tsv line {}: not `service<TAB>variable<TAB>meaning`: {line:?}",
            i + 1
        );
        let (script, var) = (cols[0], cols[1]);
        assert!(
            var.bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_'),
            "services.tsv line {}: {var:?} is not a variable name",
            i + 1
        );
        let vars = scripts.entry(script).or_default();
        assert!(
            !vars.contains(&var),
            "services.tsv line {}: {script} declares {var} twice",
            i + 1
        );
        vars.push(var);
    }
    scripts
}

/// The script of `scripts/test-env` that a service's start command runs.
fn script_of(s: &Service) -> Option<&'static str> {
    let rest = s.start.split_once("scripts/test-env/")?.1;
    Some(
        rest.split_once(".sh")
            .expect("a script's name ends in .sh")
            .0,
    )
}

#[test]
fn every_variable_a_service_needs_is_declared_by_its_script() {
    let declared = declared();
    for s in SERVICES {
        let Some(script) = script_of(s) else {
            assert!(
                NOT_FROM_TEST_ENV.contains(&s.name),
                "the service {} is started by no script of scripts/test-env: {:?}",
                s.name,
                s.start
            );
            continue;
        };
        assert_eq!(s.found, Found::VarsSet, "{}", s.name);
        let vars = declared.get(script).unwrap_or_else(|| {
            panic!(
                "services.tsv declares no variable of {script}.sh (the service {})",
                s.name
            )
        });
        for v in s.vars {
            assert!(
                vars.contains(v),
                "the service {} needs {v}, which services.tsv does not declare for {script}.sh",
                s.name
            );
        }
        // `export VAR=$(scripts/test-env/<script>.sh ...)`: the script prints the value of its
        // one variable.
        if let Some(var) = s
            .start
            .strip_prefix("export ")
            .and_then(|r| r.split_once("=$(scripts/test-env/"))
            .map(|(v, _)| v)
        {
            assert_eq!(vars, &[var], "{script}.sh prints one variable's value");
        }
    }
}

#[test]
fn every_script_of_services_tsv_is_one_a_service_names() {
    let named: BTreeSet<&str> = SERVICES.iter().filter_map(script_of).collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/test-env");
    for script in declared().keys() {
        assert!(
            named.contains(script),
            "services.tsv declares variables of {script}.sh, which no service of src/services.rs starts"
        );
        assert!(
            root.join(format!("{script}.sh")).is_file(),
            "services.tsv names {script}.sh, which scripts/test-env does not have"
        );
    }
}
