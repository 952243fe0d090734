//! A policy file kept current: read again when its contents change, as oslo.policy reloads a
//! changed policy file without a restart.
//!
//! Whoever owns the file's lifetime (the server) calls [`PolicyFile::reload_if_changed`]
//! now and then; requests read [`PolicyFile::current`]. The contents, not the modification
//! time, decide whether the file changed: an edit within the same second and a file replaced
//! by renaming (as Kubernetes updates a mounted ConfigMap) are both seen. An edit that does not
//! parse is refused once, with its file:line, and the rules in force stay.

use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use crate::{Policy, PolicyError};

/// What [`PolicyFile::reload_if_changed`] found.
#[derive(Debug)]
pub enum Reload {
    /// The file reads as when it was last loaded or refused.
    Unchanged,
    /// The file changed and its new rules are in force.
    Reloaded,
    /// The file changed (or could no longer be read) and the change is refused: the rules
    /// in force stay. Reported once per distinct contents or error.
    Refused(PolicyError),
}

/// The policy of a file (see the [module](self) documentation).
#[derive(Debug)]
pub struct PolicyFile {
    path: Option<PathBuf>,
    state: RwLock<Seen>,
}

#[derive(Debug)]
struct Seen {
    policy: Arc<Policy>,
    /// The text last loaded or refused, or the last read error's message.
    last: String,
}

impl PolicyFile {
    /// Reads and parses the policy file at `path`.
    pub fn open(path: &Path) -> Result<PolicyFile, PolicyError> {
        let text = read(path)?;
        let policy = Policy::parse(&path.display().to_string(), &text)?;
        Ok(PolicyFile {
            path: Some(path.to_owned()),
            state: RwLock::new(Seen {
                policy: Arc::new(policy),
                last: text,
            }),
        })
    }

    /// A policy that no file backs: it never changes.
    pub fn fixed(policy: Policy) -> PolicyFile {
        PolicyFile {
            path: None,
            state: RwLock::new(Seen {
                policy: Arc::new(policy),
                last: String::new(),
            }),
        }
    }

    /// The file, if a file backs the policy.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The rules in force.
    pub fn current(&self) -> Arc<Policy> {
        self.state
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .policy
            .clone()
    }

    /// Reads the file again and puts its rules in force when its contents changed and parse.
    pub fn reload_if_changed(&self) -> Reload {
        let Some(path) = &self.path else {
            return Reload::Unchanged;
        };
        let read = read(path);
        let seen = match &read {
            Ok(text) => text.clone(),
            Err(e) => e.to_string(),
        };
        let mut state = self.state.write().unwrap_or_else(PoisonError::into_inner);
        if state.last == seen {
            return Reload::Unchanged;
        }
        state.last = seen;
        let parsed = read.and_then(|text| Policy::parse(&path.display().to_string(), &text));
        match parsed {
            Ok(policy) => {
                state.policy = Arc::new(policy);
                Reload::Reloaded
            }
            Err(e) => Reload::Refused(e),
        }
    }
}

fn read(path: &Path) -> Result<String, PolicyError> {
    std::fs::read_to_string(path).map_err(|source| PolicyError::Read {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule_text(file: &PolicyFile, name: &str) -> Option<String> {
        file.current().rule(name).map(|r| format!("{r:?}"))
    }

    #[test]
    fn a_changed_file_is_reloaded_and_a_broken_edit_refused_once_keeping_the_rules() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.yaml");
        std::fs::write(&path, "\"show\": \"role:admin\"\n").unwrap();
        let file = PolicyFile::open(&path).unwrap();
        let admin_only = rule_text(&file, "show").unwrap();
        assert!(matches!(file.reload_if_changed(), Reload::Unchanged));

        std::fs::write(&path, "\"show\": \"role:reader\"\n\"list\": \"@\"\n").unwrap();
        assert!(matches!(file.reload_if_changed(), Reload::Reloaded));
        assert_ne!(rule_text(&file, "show").unwrap(), admin_only);
        assert!(file.current().rule("list").is_some());

        std::fs::write(
            &path,
            "\"show\": \"role:reader\"\n\"list\": \"role:x or\"\n",
        )
        .unwrap();
        match file.reload_if_changed() {
            Reload::Refused(e) => assert!(e.to_string().contains(":2: rule `list`"), "{e}"),
            other => panic!("a broken edit is refused: {other:?}"),
        }
        assert!(
            file.current().rule("list").is_some(),
            "the rules in force stay"
        );
        assert!(
            matches!(file.reload_if_changed(), Reload::Unchanged),
            "refused once, not at every look"
        );

        std::fs::remove_file(&path).unwrap();
        assert!(matches!(
            file.reload_if_changed(),
            Reload::Refused(PolicyError::Read { .. })
        ));
        assert!(matches!(file.reload_if_changed(), Reload::Unchanged));
        assert!(file.current().rule("show").is_some());

        std::fs::write(&path, "\"show\": \"role:admin\"\n").unwrap();
        assert!(matches!(file.reload_if_changed(), Reload::Reloaded));
        assert_eq!(rule_text(&file, "show").unwrap(), admin_only);
        assert!(file.current().rule("list").is_none());
    }

    #[test]
    fn a_fixed_policy_never_changes() {
        let file = PolicyFile::fixed(Policy::parse("p", "\"a\": \"@\"\n").unwrap());
        assert!(file.path().is_none());
        assert!(matches!(file.reload_if_changed(), Reload::Unchanged));
        assert!(file.current().rule("a").is_some());
    }
}
