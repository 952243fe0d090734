//! Test support: the SSH hosts started by `scripts/test-env/sshd.sh`.
//!
//! The script starts one sshd per loopback address and writes a state directory whose path
//! tests find in [`TestHosts::ENV`] (`VNFM_TEST_SSHD`). Tests that need the hosts carry
//! `#[vnfm_test_env::needs(sshd)]`: ignored, with the reason, when it was not set at build time.

use std::path::{Path, PathBuf};

use crate::{Auth, HostKeyPolicy, Secret, SshTarget};

/// One test host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestHost {
    /// Loopback address (`127.0.1.x`).
    pub address: String,
    /// Port.
    pub port: u16,
    /// Its host key's SHA-256 fingerprint.
    pub fingerprint: String,
}

/// The hosts of one `sshd.sh start`.
#[derive(Debug, Clone)]
pub struct TestHosts {
    /// The state directory.
    pub dir: PathBuf,
    /// The hosts, in address order.
    pub hosts: Vec<TestHost>,
    /// The user to log in as with [`TestHosts::client_key`].
    pub user: String,
    /// A private key every host accepts.
    pub client_key: PathBuf,
    /// OpenSSH known_hosts file with every host's key.
    pub known_hosts: PathBuf,
    /// A user and password every host accepts (only when the script ran as root).
    pub password_login: Option<(String, String)>,
    /// The sshd that answers at every loopback address (`127.x.y.z`): its port and host key
    /// fingerprint. It stands in for VMs whose addresses are made up; a login's
    /// `SSH_CONNECTION` tells which address it reached.
    pub any_address: Option<(u16, String)>,
}

impl TestHosts {
    /// The environment variable holding the state directory.
    pub const ENV: &'static str = "VNFM_TEST_SSHD";

    /// The hosts named by [`TestHosts::ENV`]. Panics when it is not set or points at an
    /// unusable directory (a broken test setup).
    pub fn from_env() -> TestHosts {
        let Some(dir) = std::env::var_os(Self::ENV) else {
            panic!(
                "{} is not set: start the SSH test hosts with `export {}=$(scripts/test-env/sshd.sh start 4)`",
                Self::ENV,
                Self::ENV
            );
        };
        match Self::load(Path::new(&dir)) {
            Ok(h) => h,
            Err(e) => panic!("{} points at an unusable directory: {e}", Self::ENV),
        }
    }

    /// Reads a state directory.
    pub fn load(dir: &Path) -> std::io::Result<TestHosts> {
        let read = |name: &str| std::fs::read_to_string(dir.join(name));
        let bad = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidData, m);
        let mut hosts = Vec::new();
        for line in read("hosts")?.lines().filter(|l| !l.trim().is_empty()) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let [address, port, fingerprint] = f[..] else {
                return Err(bad(format!("bad hosts line `{line}`")));
            };
            hosts.push(TestHost {
                address: address.to_string(),
                port: port
                    .parse()
                    .map_err(|_| bad(format!("bad port in `{line}`")))?,
                fingerprint: fingerprint.to_string(),
            });
        }
        let password_login = match (read("password_user"), read("password")) {
            (Ok(u), Ok(p)) => Some((u.trim().to_string(), p.trim().to_string())),
            _ => None,
        };
        let any_address = match read("any_host") {
            Ok(line) => {
                let f: Vec<&str> = line.split_whitespace().collect();
                let [port, fingerprint] = f[..] else {
                    return Err(bad(format!("bad any_host line `{}`", line.trim())));
                };
                let port = port
                    .parse()
                    .map_err(|_| bad(format!("bad port in any_host `{}`", line.trim())))?;
                Some((port, fingerprint.to_string()))
            }
            Err(_) => None,
        };
        Ok(TestHosts {
            any_address,
            dir: dir.to_path_buf(),
            hosts,
            user: read("user")?.trim().to_string(),
            client_key: dir.join("client_key"),
            known_hosts: dir.join("known_hosts"),
            password_login,
        })
    }

    /// Host `i` with key authentication and its pinned fingerprint.
    pub fn target(&self, i: usize) -> SshTarget {
        let h = &self.hosts[i];
        SshTarget::new(h.address.clone(), self.user.clone(), self.key())
            .port(h.port)
            .host_key(HostKeyPolicy::Fingerprint(h.fingerprint.clone()))
    }

    /// The client key, as [`Auth`].
    pub fn key(&self) -> Auth {
        Auth::KeyFile(self.client_key.clone())
    }

    /// The client key's text, as [`Auth::Key`].
    pub fn key_text(&self) -> std::io::Result<Auth> {
        Ok(Auth::Key {
            private_key: Secret::new(std::fs::read_to_string(&self.client_key)?),
            passphrase: None,
        })
    }
}
