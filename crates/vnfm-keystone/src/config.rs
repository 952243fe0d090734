//! What the validator needs: Keystone's URL, the service identity it authenticates as, the
//! cache bounds and the mapping from Keystone roles to what a caller may do.

use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

use vnfm_types::SecretString;

use crate::identity::KeystoneIdentity;

/// Default time after which a cached token is asked about again ([`KeystoneConfig::revalidate_after`]).
pub const DEFAULT_REVALIDATE_AFTER: Duration = Duration::from_secs(60);

/// Default number of validated tokens kept ([`KeystoneConfig::cache_capacity`]).
pub const DEFAULT_CACHE_CAPACITY: usize = 10_000;

/// Default timeout of one request to Keystone.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The identity the validator authenticates as to validate callers' tokens. Keystone lets a
/// token be validated by a user with the `admin` or `service` role (policy
/// `identity:validate_token`), so the service user needs one of them.
#[derive(Clone)]
pub enum ServiceCredentials {
    /// A user and password, with a project scope (`password` method).
    Password {
        /// User name.
        user: String,
        /// The user's password.
        password: SecretString,
        /// The user's domain name (usually `Default`).
        user_domain: String,
        /// The project the service token is scoped to.
        project: String,
        /// The project's domain name (usually `Default`).
        project_domain: String,
    },
    /// An application credential (`application_credential` method; the credential fixes the
    /// scope).
    ApplicationCredential {
        /// The credential id.
        id: String,
        /// The credential secret.
        secret: SecretString,
    },
}

impl fmt::Debug for ServiceCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServiceCredentials::Password {
                user,
                user_domain,
                project,
                project_domain,
                ..
            } => f
                .debug_struct("Password")
                .field("user", user)
                .field("password", &"***")
                .field("user_domain", user_domain)
                .field("project", project)
                .field("project_domain", project_domain)
                .finish(),
            ServiceCredentials::ApplicationCredential { id, .. } => f
                .debug_struct("ApplicationCredential")
                .field("id", id)
                .field("secret", &"***")
                .finish(),
        }
    }
}

/// Settings of a [`crate::KeystoneValidator`].
#[derive(Debug, Clone)]
pub struct KeystoneConfig {
    /// Keystone's identity endpoint: `http://keystone:5000/v3` (`/v3` is added when the URL
    /// does not end with it).
    pub url: String,
    /// The service identity.
    pub credentials: ServiceCredentials,
    /// How long a validated token is trusted before Keystone is asked again: a revoked token
    /// stops working within this time. A token is never trusted past its `expires_at`.
    pub revalidate_after: Duration,
    /// Most tokens kept in the cache; the least recently used goes first.
    pub cache_capacity: usize,
    /// Timeout of one request to Keystone (connecting included).
    pub request_timeout: Duration,
    /// Which Keystone roles allow what.
    pub roles: RolePolicy,
}

impl KeystoneConfig {
    /// Keystone at `url` with the service identity `credentials`, and the defaults: revalidate
    /// after 60 s, 10,000 cached tokens, 10 s per request, the default [`RolePolicy`].
    pub fn new(url: impl Into<String>, credentials: ServiceCredentials) -> KeystoneConfig {
        KeystoneConfig {
            url: url.into(),
            credentials,
            revalidate_after: DEFAULT_REVALIDATE_AFTER,
            cache_capacity: DEFAULT_CACHE_CAPACITY,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            roles: RolePolicy::default(),
        }
    }
}

/// What a caller may do, from its Keystone roles ([`RolePolicy::access`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Access {
    /// May read (`GET`, `HEAD`).
    pub read: bool,
    /// May change (`POST`, `PUT`, `PATCH`, `DELETE`).
    pub write: bool,
    /// Sees the resources of every project, not only its own.
    pub all_projects: bool,
}

/// Which Keystone roles grant reading, writing and access to every project. Role names are
/// compared without regard to ASCII case. Keystone puts the roles a role implies into the
/// token too (by default `admin` implies `member`, which implies `reader`).
///
/// | default roles | grant |
/// |---|---|
/// | `reader` | read |
/// | `member`, `admin` | read and write |
/// | `admin` | every project (on a project-scoped token of the admin project, or a system-scoped token) |
///
/// A caller without any of these roles is authenticated but may do nothing (`403`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RolePolicy {
    /// Roles that grant reading.
    pub reader: BTreeSet<String>,
    /// Roles that grant reading and writing.
    pub writer: BTreeSet<String>,
    /// Roles that grant reading every project's resources. Writing still needs a writer role.
    pub admin: BTreeSet<String>,
}

impl Default for RolePolicy {
    fn default() -> Self {
        let set = |names: &[&str]| names.iter().map(|s| (*s).to_owned()).collect();
        RolePolicy {
            reader: set(&["reader"]),
            writer: set(&["member", "admin"]),
            admin: set(&["admin"]),
        }
    }
}

impl RolePolicy {
    /// What `identity` may do.
    ///
    /// `all_projects` needs an admin role on a system-scoped token, or on a project-scoped
    /// token whose `is_admin_project` is true (Keystone leaves it out, meaning true, unless an
    /// admin project is configured): an `admin` role on an ordinary project does not reach
    /// other projects.
    pub fn access(&self, identity: &KeystoneIdentity) -> Access {
        let has = |set: &BTreeSet<String>| {
            identity
                .roles
                .iter()
                .any(|r| set.iter().any(|s| s.eq_ignore_ascii_case(r)))
        };
        let write = has(&self.writer);
        let admin_scope =
            identity.system_scope || (identity.project_id.is_some() && identity.is_admin_project);
        let all_projects = has(&self.admin) && admin_scope;
        Access {
            read: write || all_projects || has(&self.reader),
            write,
            all_projects,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use super::*;

    fn identity(roles: &[&str], is_admin_project: bool) -> KeystoneIdentity {
        KeystoneIdentity {
            user_id: "u".into(),
            user_name: "alice".into(),
            user_domain: None,
            project_id: Some("p".into()),
            project_name: Some("demo".into()),
            project_domain: None,
            domain: None,
            system_scope: false,
            roles: roles.iter().map(|r| (*r).to_owned()).collect(),
            expires_at: SystemTime::now(),
            is_admin_project,
        }
    }

    #[test]
    fn default_roles_grant_read_write_and_all_projects() {
        let p = RolePolicy::default();
        let none = Access::default();
        assert_eq!(p.access(&identity(&[], true)), none);
        assert_eq!(p.access(&identity(&["heat_stack_owner"], true)), none);
        let reader = Access { read: true, ..none };
        assert_eq!(p.access(&identity(&["reader"], true)), reader);
        let member = Access {
            read: true,
            write: true,
            all_projects: false,
        };
        assert_eq!(p.access(&identity(&["Member"], true)), member);
        let admin = Access {
            all_projects: true,
            ..member
        };
        assert_eq!(
            p.access(&identity(&["admin", "member", "reader"], true)),
            admin
        );
        // An admin role outside the admin project stays within its project.
        assert_eq!(p.access(&identity(&["admin"], false)), member);
        let mut system = identity(&["admin"], false);
        system.project_id = None;
        system.system_scope = true;
        assert_eq!(p.access(&system), admin);
    }

    #[test]
    fn configured_roles_replace_the_defaults() {
        let p = RolePolicy {
            reader: ["auditor".to_owned()].into(),
            writer: ["vnf_operator".to_owned()].into(),
            admin: ["cloud_admin".to_owned()].into(),
        };
        assert!(!p.access(&identity(&["member"], true)).write);
        assert!(p.access(&identity(&["vnf_operator"], true)).write);
        let auditor = p.access(&identity(&["auditor", "cloud_admin"], true));
        assert!(auditor.read && auditor.all_projects && !auditor.write);
    }

    #[test]
    fn debug_output_hides_the_secrets() {
        let password = ServiceCredentials::Password {
            user: "vnfm".into(),
            password: SecretString::new("pa55-word"),
            user_domain: "Default".into(),
            project: "service".into(),
            project_domain: "Default".into(),
        };
        let app = ServiceCredentials::ApplicationCredential {
            id: "abc".into(),
            secret: SecretString::new("app-s3cret"),
        };
        let shown = format!("{:?}", KeystoneConfig::new("http://k/v3", password));
        assert!(
            shown.contains("vnfm") && !shown.contains("pa55-word"),
            "{shown}"
        );
        let shown = format!("{app:?}");
        assert!(
            shown.contains("abc") && !shown.contains("app-s3cret"),
            "{shown}"
        );
    }
}
