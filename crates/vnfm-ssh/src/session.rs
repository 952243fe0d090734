//! [`Session`]: one authenticated SSH connection, with exec and SFTP upload.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use russh::client::{self, Handle};
use russh::keys::{HashAlg, PrivateKeyWithHashAlg, PublicKeyOrCertificate};
use russh::{ChannelMsg, Disconnect};
use russh_sftp::client::SftpSession;
use russh_sftp::protocol::{FileAttributes, OpenFlags};
use tokio::io::AsyncWriteExt;

use crate::{
    Auth, ConnectOptions, HostKeyPolicy, KexOrder, KeyError, RemoteCommand, SshError, SshTarget,
};

/// At most this much of a command's stdout and of its stderr is kept.
pub const OUTPUT_LIMIT: usize = 8 * 1024 * 1024;

/// What a command produced.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Output {
    /// Exit status, when the command exited.
    pub status: Option<u32>,
    /// Signal name, when the command was killed by one.
    pub signal: Option<String>,
    /// Standard output (at most [`OUTPUT_LIMIT`] bytes).
    pub stdout: Vec<u8>,
    /// Standard error (at most [`OUTPUT_LIMIT`] bytes).
    pub stderr: Vec<u8>,
    /// Whether output beyond the limit was dropped.
    pub truncated: bool,
}

impl Output {
    /// Exit status 0.
    pub fn success(&self) -> bool {
        self.status == Some(0)
    }

    /// Standard output as text (lossy).
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// Standard error as text (lossy).
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    /// `exited with status 2`, `was killed by signal KILL`, ...
    pub fn status_text(&self) -> String {
        match (&self.status, &self.signal) {
            (Some(s), _) => format!("exited with status {s}"),
            (None, Some(sig)) => format!("was killed by signal {sig}"),
            (None, None) => "ended without an exit status".to_string(),
        }
    }

    /// `Ok(self)` on success, else [`SshError::CommandFailed`] with the last 2000 bytes of
    /// stderr (scrub secrets from it before showing it if the command could echo any).
    pub fn check(self, host: &str, command: &RemoteCommand) -> Result<Output, SshError> {
        if self.success() {
            return Ok(self);
        }
        let err = self.stderr_text();
        let tail = match err.char_indices().rev().nth(1999) {
            Some((i, _)) => format!("...{}", &err[i..]),
            None => err,
        };
        Err(SshError::CommandFailed {
            host: host.to_string(),
            command: command.describe(),
            status: self.status_text(),
            stderr: tail.trim().to_string(),
        })
    }
}

/// Checks the server's key against the policy; records what it saw.
struct Checker {
    policy: HostKeyPolicy,
    host: String,
    port: u16,
    label: String,
    seen: Arc<Mutex<Option<String>>>,
    problem: Arc<Mutex<Option<SshError>>>,
}

/// The key-exchange methods the client offers, best first: russh's own list with ECDH on P-256
/// moved to where `order` puts it (after the post-quantum hybrid, before or after X25519).
fn kex_methods(order: KexOrder) -> Vec<russh::kex::Name> {
    let mut methods: Vec<_> = russh::Preferred::DEFAULT
        .kex
        .iter()
        .copied()
        .filter(|m| *m != russh::kex::ECDH_SHA2_NISTP256)
        .collect();
    let x25519 = methods
        .iter()
        .position(|m| *m == russh::kex::CURVE25519)
        .unwrap_or(0);
    let at = match order {
        KexOrder::NistP256First => x25519,
        KexOrder::Curve25519First => x25519 + 1,
    };
    methods.insert(at, russh::kex::ECDH_SHA2_NISTP256);
    methods
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Checker {
    fn verdict(&self, key: &russh::keys::PublicKey, fp: &str) -> Result<(), SshError> {
        let mismatch = |expected: &str| SshError::HostKeyMismatch {
            host: self.label.clone(),
            expected: expected.to_string(),
            actual: fp.to_string(),
        };
        match &self.policy {
            HostKeyPolicy::AcceptNew { recorded: None } => Ok(()),
            HostKeyPolicy::AcceptNew {
                recorded: Some(expected),
            }
            | HostKeyPolicy::Fingerprint(expected) => {
                if expected.trim() == fp {
                    Ok(())
                } else {
                    Err(mismatch(expected))
                }
            }
            HostKeyPolicy::KnownHosts(path) => {
                match russh::keys::check_known_hosts_path(&self.host, self.port, key, path) {
                    Ok(true) => Ok(()),
                    Ok(false) => Err(SshError::HostKeyUnknown {
                        host: self.label.clone(),
                        fingerprint: fp.to_string(),
                        known_hosts: path.display().to_string(),
                    }),
                    Err(russh::keys::Error::KeyChanged { line }) => Err(mismatch(&format!(
                        "the key on line {line} of {}",
                        path.display()
                    ))),
                    Err(e) => Err(SshError::HostKeyUnknown {
                        host: self.label.clone(),
                        fingerprint: fp.to_string(),
                        known_hosts: format!("{} ({e})", path.display()),
                    }),
                }
            }
        }
    }
}

impl client::Handler for Checker {
    type Error = russh::Error;

    async fn check_server_key(
        &mut self,
        server_public_key: &PublicKeyOrCertificate,
    ) -> Result<bool, Self::Error> {
        let PublicKeyOrCertificate::PublicKey { key, .. } = server_public_key else {
            *lock(&self.problem) = Some(SshError::HostKeyUnknown {
                host: self.label.clone(),
                fingerprint: "(a host certificate)".into(),
                known_hosts: "host certificates are not supported".into(),
            });
            return Ok(false);
        };
        let fp = key.fingerprint(HashAlg::Sha256).to_string();
        *lock(&self.seen) = Some(fp.clone());
        match self.verdict(key, &fp) {
            Ok(()) => Ok(true),
            Err(e) => {
                *lock(&self.problem) = Some(e);
                Ok(false)
            }
        }
    }
}

/// One attempt's failure: worth retrying or not.
enum Attempt {
    Retry(String),
    Fatal(SshError),
}

/// An authenticated SSH connection to one host.
pub struct Session {
    handle: Handle<Checker>,
    label: String,
    fingerprint: String,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("host", &self.label)
            .field("host_key", &self.fingerprint)
            .finish_non_exhaustive()
    }
}

static UPLOADS: AtomicU64 = AtomicU64::new(0);

impl Session {
    /// Connects and authenticates, retrying connection failures as `options` says (a VM
    /// whose sshd is not up yet refuses or resets connections).
    pub async fn connect(
        target: &SshTarget,
        options: &ConnectOptions,
    ) -> Result<Session, SshError> {
        let label = target.label();
        let started = Instant::now();
        let mut attempts = 0;
        loop {
            attempts += 1;
            let last = match tokio::time::timeout(
                options.attempt_timeout,
                Self::attempt(target, options.kex_order),
            )
            .await
            {
                Ok(Ok(s)) => {
                    tracing::debug!(host = %label, attempts, "SSH session established");
                    return Ok(s);
                }
                Ok(Err(Attempt::Fatal(e))) => return Err(e),
                Ok(Err(Attempt::Retry(m))) => m,
                Err(_) => format!(
                    "no session within {} s",
                    options.attempt_timeout.as_secs_f32()
                ),
            };
            let elapsed = started.elapsed();
            if elapsed + options.retry_interval > options.retry_for {
                return Err(SshError::Connect {
                    host: label,
                    attempts,
                    elapsed,
                    message: last,
                });
            }
            tracing::debug!(host = %label, attempts, error = %last, "SSH connection failed; retrying");
            tokio::time::sleep(options.retry_interval).await;
        }
    }

    async fn attempt(target: &SshTarget, kex_order: KexOrder) -> Result<Session, Attempt> {
        let label = target.label();
        let config = Arc::new(client::Config {
            keepalive_interval: Some(Duration::from_secs(15)),
            nodelay: true,
            preferred: russh::Preferred {
                kex: Cow::Owned(kex_methods(kex_order)),
                ..Default::default()
            },
            ..Default::default()
        });
        let seen = Arc::new(Mutex::new(None));
        let problem = Arc::new(Mutex::new(None));
        let checker = Checker {
            policy: target.host_key.clone(),
            host: target.host.clone(),
            port: target.port,
            label: label.clone(),
            seen: seen.clone(),
            problem: problem.clone(),
        };
        let mut handle =
            match client::connect(config, (target.host.as_str(), target.port), checker).await {
                Ok(h) => h,
                Err(e) => {
                    return Err(match lock(&problem).take() {
                        Some(p) => Attempt::Fatal(p),
                        None => Attempt::Retry(e.to_string()),
                    });
                }
            };
        let fingerprint = lock(&seen).clone().unwrap_or_default();
        let (method, result) = match &target.auth {
            Auth::Password(p) => (
                "password",
                handle
                    .authenticate_password(target.user.clone(), p.expose())
                    .await,
            ),
            Auth::Key { .. } | Auth::KeyFile(_) => {
                let key = load_key(&target.auth).map_err(|source| {
                    Attempt::Fatal(SshError::Key {
                        host: label.clone(),
                        source,
                    })
                })?;
                let hash = if key.algorithm().is_rsa() {
                    handle
                        .best_supported_rsa_hash()
                        .await
                        .ok()
                        .flatten()
                        .flatten()
                } else {
                    None
                };
                (
                    "publickey",
                    handle
                        .authenticate_publickey(
                            target.user.clone(),
                            PrivateKeyWithHashAlg::new(Arc::new(key), hash),
                        )
                        .await,
                )
            }
        };
        match result {
            Ok(r) if r.success() => Ok(Session {
                handle,
                label,
                fingerprint,
            }),
            Ok(_) => Err(Attempt::Fatal(SshError::AuthRejected {
                host: label,
                user: target.user.clone(),
                method,
            })),
            Err(e) => Err(Attempt::Retry(format!("authentication failed: {e}"))),
        }
    }

    /// `user@host:port`.
    pub fn host(&self) -> &str {
        &self.label
    }

    /// SHA-256 fingerprint of the host's key (`SHA256:...`), to record with
    /// [`HostKeyPolicy::AcceptNew`].
    pub fn host_key_fingerprint(&self) -> &str {
        &self.fingerprint
    }

    fn channel_err(&self, what: &str, e: impl std::fmt::Display) -> SshError {
        SshError::Channel {
            host: self.label.clone(),
            what: what.to_string(),
            message: e.to_string(),
        }
    }

    /// Runs `command`, with its output collected separately, within `timeout`.
    pub async fn exec(
        &self,
        command: &RemoteCommand,
        timeout: Duration,
    ) -> Result<Output, SshError> {
        self.exec_with_input(command, &[], timeout).await
    }

    /// Runs `command` with `input` as its standard input (a way to hand it a secret without
    /// putting it on the command line), within `timeout`.
    pub async fn exec_with_input(
        &self,
        command: &RemoteCommand,
        input: &[u8],
        timeout: Duration,
    ) -> Result<Output, SshError> {
        let what = command.describe();
        let run = async {
            let mut ch = self
                .handle
                .channel_open_session()
                .await
                .map_err(|e| self.channel_err(&what, e))?;
            ch.exec(true, command.to_command_line())
                .await
                .map_err(|e| self.channel_err(&what, e))?;
            if !input.is_empty() {
                ch.data(input)
                    .await
                    .map_err(|e| self.channel_err(&what, e))?;
            }
            ch.eof().await.map_err(|e| self.channel_err(&what, e))?;
            let mut out = Output::default();
            while let Some(msg) = ch.wait().await {
                match msg {
                    ChannelMsg::Data { data } => append(&mut out.stdout, &data, &mut out.truncated),
                    ChannelMsg::ExtendedData { data, ext: 1 } => {
                        append(&mut out.stderr, &data, &mut out.truncated)
                    }
                    ChannelMsg::ExitStatus { exit_status } => out.status = Some(exit_status),
                    ChannelMsg::ExitSignal { signal_name, .. } => {
                        out.signal = Some(format!("{signal_name:?}"))
                    }
                    _ => {}
                }
            }
            Ok(out)
        };
        tokio::time::timeout(timeout, run)
            .await
            .map_err(|_| SshError::Timeout {
                host: self.label.clone(),
                what: format!("`{what}`"),
                after: timeout,
            })?
    }

    /// Runs `command` and fails with [`SshError::CommandFailed`] unless it exits with 0.
    pub async fn run(
        &self,
        command: &RemoteCommand,
        timeout: Duration,
    ) -> Result<Output, SshError> {
        self.exec(command, timeout)
            .await?
            .check(&self.label, command)
    }

    /// Writes `content` to `remote_path` over SFTP with permissions `mode`, creating the
    /// parent directory. The file is written under a temporary name and renamed, so a reader
    /// (or a script already running from the old file) never sees a partial file.
    pub async fn upload(
        &self,
        content: &[u8],
        remote_path: &str,
        mode: u32,
        timeout: Duration,
    ) -> Result<(), SshError> {
        let sftp_err = |what: &'static str, path: &str, e: &dyn std::fmt::Display| SshError::Sftp {
            host: self.label.clone(),
            what,
            path: path.to_string(),
            message: e.to_string(),
        };
        let tmp = format!(
            "{remote_path}.upload-{}-{}",
            std::process::id(),
            UPLOADS.fetch_add(1, Ordering::Relaxed)
        );
        let run = async {
            if let Some((dir, _)) = remote_path.rsplit_once('/')
                && !dir.is_empty()
            {
                self.run(
                    &RemoteCommand::new("mkdir").arg("-p").arg("--").arg(dir),
                    timeout,
                )
                .await?;
            }
            let ch = self
                .handle
                .channel_open_session()
                .await
                .map_err(|e| self.channel_err("opening an SFTP channel", e))?;
            ch.request_subsystem(true, "sftp")
                .await
                .map_err(|e| self.channel_err("starting SFTP", e))?;
            let sftp = SftpSession::new(ch.into_stream())
                .await
                .map_err(|e| sftp_err("start", remote_path, &e))?;
            let attrs = FileAttributes {
                permissions: Some(mode),
                ..FileAttributes::empty()
            };
            let mut file = sftp
                .open_with_flags_and_attributes(
                    tmp.clone(),
                    OpenFlags::CREATE | OpenFlags::TRUNCATE | OpenFlags::WRITE,
                    attrs.clone(),
                )
                .await
                .map_err(|e| sftp_err("open", &tmp, &e))?;
            file.write_all(content)
                .await
                .map_err(|e| sftp_err("write", &tmp, &e))?;
            file.close()
                .await
                .map_err(|e| sftp_err("close", &tmp, &e))?;
            // The server's umask may have cut the mode at creation.
            sftp.set_metadata(tmp.clone(), attrs)
                .await
                .map_err(|e| sftp_err("chmod", &tmp, &e))?;
            let _ = sftp.close().await;
            // SFTP v3 rename refuses an existing target; mv replaces it atomically.
            self.run(
                &RemoteCommand::new("mv")
                    .arg("-f")
                    .arg("--")
                    .arg(&tmp)
                    .arg(remote_path),
                timeout,
            )
            .await?;
            Ok(())
        };
        tokio::time::timeout(timeout, run)
            .await
            .map_err(|_| SshError::Timeout {
                host: self.label.clone(),
                what: format!("upload of {remote_path}"),
                after: timeout,
            })?
    }

    /// Ends the session politely.
    pub async fn close(self) {
        let _ = self
            .handle
            .disconnect(Disconnect::ByApplication, "", "en")
            .await;
    }
}

fn append(buf: &mut Vec<u8>, data: &[u8], truncated: &mut bool) {
    let room = OUTPUT_LIMIT.saturating_sub(buf.len());
    if data.len() > room {
        *truncated = true;
    }
    buf.extend_from_slice(&data[..data.len().min(room)]);
}

fn load_key(auth: &Auth) -> Result<russh::keys::PrivateKey, KeyError> {
    let decode = |e| KeyError::Decode(Arc::new(e));
    match auth {
        Auth::Key {
            private_key,
            passphrase,
        } => russh::keys::decode_secret_key(
            private_key.expose(),
            passphrase.as_ref().map(|p| p.expose()),
        )
        .map_err(decode),
        Auth::KeyFile(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| KeyError::Read {
                path: path.display().to_string(),
                source: Arc::new(e),
            })?;
            russh::keys::decode_secret_key(&text, None).map_err(decode)
        }
        Auth::Password(_) => Err(KeyError::NotAKey),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreadable_key_file_keeps_the_io_error() {
        use std::error::Error as _;
        let missing = std::path::PathBuf::from("/nonexistent/vnfm-ssh-test/id_ed25519");
        let err = load_key(&Auth::KeyFile(missing)).unwrap_err();
        assert!(matches!(&err, KeyError::Read { path, .. } if path.ends_with("id_ed25519")));
        let io = err
            .source()
            .unwrap()
            .downcast_ref::<Arc<std::io::Error>>()
            .unwrap();
        assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
        let garbage = load_key(&Auth::Key {
            private_key: crate::Secret::new("not a key"),
            passphrase: None,
        })
        .unwrap_err();
        assert!(matches!(garbage, KeyError::Decode(_)));
    }

    fn names(order: KexOrder) -> Vec<String> {
        kex_methods(order)
            .iter()
            .map(|n| n.as_ref().to_owned())
            .collect()
    }

    #[test]
    fn kex_orders_keep_the_hybrid_first_and_place_p256_around_x25519() {
        let p256 = names(KexOrder::NistP256First);
        assert_eq!(
            p256[..3],
            [
                "mlkem768x25519-sha256",
                "ecdh-sha2-nistp256",
                "curve25519-sha256"
            ]
        );
        let x25519 = names(KexOrder::Curve25519First);
        assert_eq!(
            x25519[..3],
            [
                "mlkem768x25519-sha256",
                "curve25519-sha256",
                "ecdh-sha2-nistp256"
            ]
        );
        // The same methods otherwise, each once.
        let mut a = p256.clone();
        let mut b = x25519.clone();
        a.sort();
        b.sort();
        assert_eq!(a, b);
        a.dedup();
        assert_eq!(a.len(), p256.len());
        assert!(p256.contains(&"ext-info-c".to_owned()));
    }
}
