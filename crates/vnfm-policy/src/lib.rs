//! Policy files in OpenStack's oslo.policy form, as Tacker reads them, and Tacker's enhanced
//! policy attributes (area, vendor, tenant).
//!
//! A policy file is a YAML (or JSON) mapping of rule names to rules:
//!
//! ```
//! use serde_json::json;
//! use vnfm_policy::{Decision, Policy};
//!
//! let policy = Policy::parse(
//!     "policy.yaml",
//!     r#"
//! "owner": "project_id:%(project_id)s"
//! "os_nfv_orchestration_api_v2:vnf_instances:show": "tenant:%(tenant)s and rule:owner or role:admin"
//! "#,
//! )
//! .unwrap();
//! let creds = json!({"roles": ["member", "TENANT_ns1"], "project_id": "p1"});
//! let target = json!({"tenant": "ns1", "project_id": "p1"});
//! let decision = policy.enhanced(
//!     "os_nfv_orchestration_api_v2:vnf_instances:show",
//!     target.as_object().unwrap(),
//!     creds.as_object().unwrap(),
//!     true,
//! );
//! assert_eq!(decision, Decision::Allowed);
//! ```
//!
//! The rule language is in [`rule`], the enhanced attributes in [`enhanced`], a file kept
//! current as it is edited in [`mod@file`]. Nothing here does I/O but reading the file
//! ([`Policy::load`], [`PolicyFile`]).

use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::{Map, Value};

pub mod enhanced;
pub mod file;
pub mod rule;

pub use file::{PolicyFile, Reload};
pub use rule::Rule;

/// What can go wrong reading a policy file.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file could not be read.
    #[error("reading the policy file {path} failed: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a YAML or JSON mapping of rule names to rules.
    #[error(
        "{file}: not a policy file (a YAML or JSON mapping of rule names to rule strings): {source}"
    )]
    Format {
        /// The file.
        file: String,
        /// The YAML parser's error (with its line and column).
        #[source]
        source: Box<serde_saphyr::Error>,
    },
    /// A rule does not parse.
    #[error("{file}:{line}: rule `{name}`: {message}")]
    Rule {
        /// The file.
        file: String,
        /// The 1-based line of the rule's name.
        line: usize,
        /// The rule's name.
        name: String,
        /// What is wrong.
        message: String,
    },
}

/// A rule as written: the string form, or oslo.policy's legacy list form (a list of
/// alternatives, each a list of checks that must all pass).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Written {
    Text(String),
    Lists(Vec<Vec<String>>),
}

/// The answer of a policy to one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The rule passes.
    Allowed,
    /// The rule fails.
    Denied,
    /// The resource's attribute is a special value (`all`, `all@region`) the caller may not
    /// reach (Tacker's target check).
    SpecialTarget(enhanced::SpecialTarget),
    /// The file has no rule of that name.
    NoRule,
}

impl Decision {
    /// Whether the request may go on (no rule counts as allowed).
    pub fn allows(&self) -> bool {
        matches!(self, Decision::Allowed | Decision::NoRule)
    }
}

/// The rules of a policy file.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    rules: IndexMap<String, Rule>,
}

impl Policy {
    /// Reads and parses the policy file at `path`.
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Read {
            path: path.to_owned(),
            source,
        })?;
        Policy::parse(&path.display().to_string(), &text)
    }

    /// Parses the text of a policy file named `file` (for the errors).
    pub fn parse(file: &str, text: &str) -> Result<Policy, PolicyError> {
        let blank = text
            .lines()
            .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'));
        if blank {
            return Ok(Policy::default());
        }
        let written: IndexMap<String, Written> =
            serde_saphyr::from_str(text).map_err(|source| PolicyError::Format {
                file: file.to_owned(),
                source: Box::new(source),
            })?;
        let mut rules = IndexMap::with_capacity(written.len());
        for (name, w) in written {
            let parsed = match w {
                Written::Text(t) => Rule::parse(&t),
                Written::Lists(alternatives) => from_lists(&alternatives),
            };
            let rule = parsed.map_err(|message| PolicyError::Rule {
                file: file.to_owned(),
                line: line_of(text, &name),
                name: name.clone(),
                message,
            })?;
            rules.insert(name, rule);
        }
        Ok(Policy { rules })
    }

    /// The rule named `name`.
    pub fn rule(&self, name: &str) -> Option<&Rule> {
        self.rules.get(name)
    }

    /// The rules' names, in the file's order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.rules.keys().map(String::as_str)
    }

    /// The `rule:NAME` references that name no rule of the file (such a check fails, as in
    /// oslo.policy): `(referring rule, missing name)`.
    pub fn undefined_references(&self) -> Vec<(&str, &str)> {
        self.rules
            .iter()
            .flat_map(|(name, r)| {
                r.references()
                    .into_iter()
                    .map(move |to| (name.as_str(), to))
            })
            .filter(|(_, to)| !self.rules.contains_key(*to))
            .collect()
    }

    /// Evaluates rule `name` for `target` and `creds` as they are.
    pub fn check(
        &self,
        name: &str,
        target: &Map<String, Value>,
        creds: &Map<String, Value>,
    ) -> Decision {
        let Some(rule) = self.rules.get(name) else {
            return Decision::NoRule;
        };
        let lookup = |n: &str| self.rules.get(n);
        let ctx = rule::Context {
            rules: &lookup,
            target,
            creds,
        };
        if rule.check(&ctx) {
            Decision::Allowed
        } else {
            Decision::Denied
        }
    }

    /// Evaluates rule `name` as Tacker's enhanced policy does: the caller's area, vendor and
    /// tenant from its roles (`creds["roles"]`), the `all` special values resolved against the
    /// target, and, with `target_check`, a target holding a special value refused
    /// ([`enhanced::prepare`]).
    pub fn enhanced(
        &self,
        name: &str,
        target: &Map<String, Value>,
        creds: &Map<String, Value>,
        target_check: bool,
    ) -> Decision {
        if !self.rules.contains_key(name) {
            return Decision::NoRule;
        }
        match enhanced::prepare(target, creds, target_check) {
            Ok((t, c)) => self.check(name, &t, &c),
            Err(special) => Decision::SpecialTarget(special),
        }
    }
}

/// oslo.policy's list form: `[["a", "b"], ["c"]]` is `(a and b) or c`; `[]` always passes.
fn from_lists(alternatives: &[Vec<String>]) -> Result<Rule, String> {
    if alternatives.is_empty() {
        return Ok(Rule::Always);
    }
    let mut ors = Vec::new();
    for checks in alternatives {
        let ands = checks
            .iter()
            .map(|c| Rule::parse(c))
            .collect::<Result<Vec<_>, _>>()?;
        ors.push(Rule::And(ands));
    }
    Ok(Rule::Or(ors))
}

/// The 1-based line where `name` is written as a key (1 when it cannot be found).
fn line_of(text: &str, name: &str) -> usize {
    let keys = [
        format!("\"{name}\""),
        format!("'{name}'"),
        format!("{name}:"),
    ];
    text.lines()
        .position(|l| {
            let l = l.trim_start().trim_start_matches(['{', ',']).trim_start();
            keys.iter().any(|k| l.starts_with(k.as_str()))
        })
        .map_or(1, |i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_bad_rule_is_reported_with_file_and_line() {
        let text = "# comment\n\"ok\": \"role:admin\"\n\n\"broken\": \"role:admin and\"\n";
        let e = Policy::parse("policy.yaml", text).unwrap_err();
        let shown = e.to_string();
        assert!(
            shown.starts_with("policy.yaml:4: rule `broken`:"),
            "{shown}"
        );
        assert!(shown.contains("ends where a check"), "{shown}");
        let e = Policy::parse("p.yaml", "- a\n- b\n").unwrap_err();
        assert!(matches!(e, PolicyError::Format { .. }), "{e}");
        let e = Policy::parse("p.json", "{\n  \"a\": \"@\",\n  \"b\": \"nope\"\n}").unwrap_err();
        assert!(e.to_string().starts_with("p.json:3: rule `b`"), "{e}");
    }

    #[test]
    fn json_and_list_forms_are_read() {
        let p = Policy::parse(
            "p.json",
            r#"{"a": [["role:x", "role:y"], ["role:z"]], "b": [], "c": ""}"#,
        )
        .unwrap();
        let creds = |roles: Value| json!({"roles": roles}).as_object().unwrap().clone();
        let t = Map::new();
        assert_eq!(
            p.check("a", &t, &creds(json!(["x", "y"]))),
            Decision::Allowed
        );
        assert_eq!(p.check("a", &t, &creds(json!(["x"]))), Decision::Denied);
        assert_eq!(p.check("a", &t, &creds(json!(["z"]))), Decision::Allowed);
        assert_eq!(p.check("b", &t, &creds(json!([]))), Decision::Allowed);
        assert_eq!(p.check("c", &t, &creds(json!([]))), Decision::Allowed);
        assert_eq!(p.check("d", &t, &creds(json!([]))), Decision::NoRule);
        assert!(
            Policy::parse("empty", "# nothing\n\n")
                .unwrap()
                .names()
                .next()
                .is_none()
        );
    }

    #[test]
    fn undefined_references_are_listed() {
        let p = Policy::parse("p", "a: rule:b or rule:c\nb: '@'\n").unwrap();
        assert_eq!(p.undefined_references(), vec![("a", "c")]);
    }

    #[test]
    fn a_reference_cycle_fails_closed() {
        let p = Policy::parse("p", "a: rule:b\nb: rule:a or role:x\n").unwrap();
        let creds = json!({"roles": []}).as_object().unwrap().clone();
        assert_eq!(p.check("a", &Map::new(), &creds), Decision::Denied);
    }
}
