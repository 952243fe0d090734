//! [`Keyring`]: encryption of secrets at rest (VIM credentials, callback credentials).
//!
//! Secrets are sealed as [Fernet](https://github.com/fernet/spec) tokens (AES-128-CBC +
//! HMAC-SHA256 with a timestamp), the format Python's `cryptography` and OpenStack Tacker use,
//! so blobs move between the two both ways. A keyring holds several keys, newest first: the
//! newest encrypts, every key decrypts (the semantics of `cryptography`'s `MultiFernet`), so
//! keys are rotated by putting a new key at the top of the list, re-encrypting the stored blobs
//! ([`Keyring::rotate`]) and then dropping the old key.
//!
//! Keys come from a key file (one urlsafe-base64 key per line, `#` comments; a file that the
//! group or others may read is refused) or from an environment variable (comma-separated).
//! No error, `Debug` output or log line contains key material or plaintext.
//!
//! ```
//! use vnfm_lcm::secrets::Keyring;
//!
//! let old = Keyring::generate_key();
//! let new = Keyring::generate_key();
//! let before = Keyring::from_key_list(&old).unwrap();
//! let blob = before.encrypt(b"s3cret");
//!
//! // A new key at the top: old blobs still open, and rotate moves them to the new key.
//! let after = Keyring::from_key_list(&format!("{new},{old}")).unwrap();
//! assert_eq!(after.decrypt(&blob, "a test secret").unwrap(), b"s3cret");
//! assert!(!after.is_current(&blob));
//! let rotated = after.rotate(&blob, "a test secret").unwrap();
//! assert!(after.is_current(&rotated));
//! assert!(before.decrypt(&rotated, "a test secret").is_err());
//! ```

use std::fmt;
use std::io::Write as _;
use std::path::Path;

use base64::Engine as _;
use fernet::Fernet;

use crate::LcmError;

/// Default environment variable holding comma-separated keys.
pub const KEYS_ENV: &str = "VNFM_FERNET_KEYS";

/// Largest key file read (a key is 44 characters; this leaves room for comments).
const MAX_KEY_FILE: u64 = 64 * 1024;

/// A set of Fernet keys, newest first. Cheap to share behind an `Arc`.
pub struct Keyring {
    keys: Vec<Fernet>,
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyring")
            .field("keys", &self.keys.len())
            .finish_non_exhaustive()
    }
}

impl Keyring {
    /// A new random key, urlsafe-base64 encoded (44 characters).
    pub fn generate_key() -> String {
        Fernet::generate_key()
    }

    /// A keyring from keys given newest first. Fails on an empty list or a value that is not a
    /// urlsafe-base64 encoding of 32 bytes (the error names its position, not its value).
    pub fn from_keys<I, S>(keys: I) -> Result<Keyring, LcmError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut out = Vec::new();
        for (i, key) in keys.into_iter().enumerate() {
            out.push(parse_key(key.as_ref()).ok_or_else(|| {
                LcmError::keys(format!(
                    "key #{} is not a Fernet key (expected 32 bytes in urlsafe base64, 44 characters)",
                    i + 1
                ))
            })?);
        }
        if out.is_empty() {
            return Err(LcmError::keys("no encryption key configured"));
        }
        Ok(Keyring { keys: out })
    }

    /// A keyring from a comma-separated list of keys, newest first (the format of the
    /// environment variable).
    pub fn from_key_list(list: &str) -> Result<Keyring, LcmError> {
        let keys: Vec<&str> = list
            .split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .collect();
        Keyring::from_keys(keys)
    }

    /// A keyring from the environment variable `var` (comma-separated keys, newest first).
    pub fn from_env(var: &str) -> Result<Keyring, LcmError> {
        let value = std::env::var(var).map_err(|e| match e {
            std::env::VarError::NotPresent => {
                LcmError::keys(format!("environment variable {var} is not set"))
            }
            std::env::VarError::NotUnicode(_) => {
                LcmError::keys(format!("environment variable {var} is not valid UTF-8"))
            }
        })?;
        Keyring::from_key_list(&value).map_err(|e| {
            LcmError::keys(format!("environment variable {var}: {}", inner(&e))).because(e)
        })
    }

    /// A keyring from a key file: one key per line, newest first; blank lines and lines
    /// starting with `#` are ignored. On Unix, a file that the group or others may read (or
    /// write) is refused: it would expose every secret the VNFM stores.
    pub fn from_key_file(path: impl AsRef<Path>) -> Result<Keyring, LcmError> {
        let path = path.as_ref();
        let shown = path.display();
        let meta = std::fs::metadata(path)
            .map_err(|e| LcmError::keys(format!("cannot read key file {shown}: {e}")).because(e))?;
        if !meta.is_file() {
            return Err(LcmError::keys(format!(
                "key file {shown} is not a regular file"
            )));
        }
        check_private(path, &meta)?;
        if meta.len() > MAX_KEY_FILE {
            return Err(LcmError::keys(format!(
                "key file {shown} is {} bytes, larger than the {MAX_KEY_FILE} bytes a key file can be",
                meta.len()
            )));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| LcmError::keys(format!("cannot read key file {shown}: {e}")).because(e))?;
        let mut keys = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            keys.push(parse_key(line).ok_or_else(|| {
                LcmError::keys(format!(
                    "key file {shown}, line {}: not a Fernet key (expected 32 bytes in urlsafe base64, 44 characters)",
                    n + 1
                ))
            })?);
        }
        if keys.is_empty() {
            return Err(LcmError::keys(format!(
                "key file {shown} holds no key (one urlsafe-base64 key per line, newest first)"
            )));
        }
        Ok(Keyring { keys })
    }

    /// Creates the key file `path` with one new key, readable by its owner only (mode 0600),
    /// and returns its keyring. Refuses to overwrite an existing file.
    pub fn generate_key_file(path: impl AsRef<Path>) -> Result<Keyring, LcmError> {
        let path = path.as_ref();
        let shown = path.display();
        let key = Keyring::generate_key();
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(0o600);
        }
        let mut file = options.open(path).map_err(|e| {
            LcmError::keys(format!("cannot create key file {shown}: {e}")).because(e)
        })?;
        let text = format!(
            "# Fernet keys of the VNFM, newest first: the first encrypts, all decrypt.\n\
             # Keep this file secret; losing it makes the stored VIM and callback credentials unreadable.\n\
             {key}\n"
        );
        file.write_all(text.as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|e| {
                LcmError::keys(format!("cannot write key file {shown}: {e}")).because(e)
            })?;
        Keyring::from_keys([key])
    }

    /// How many keys the keyring holds.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Always false: a keyring holds at least one key.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// `plaintext` sealed with the newest key, as the ASCII bytes of a Fernet token.
    pub fn encrypt(&self, plaintext: &[u8]) -> Vec<u8> {
        self.primary().encrypt(plaintext).into_bytes()
    }

    /// Opens `blob` with whichever key sealed it. `what` names the secret in the error (e.g.
    /// `the credentials of VIM v1`).
    pub fn decrypt(&self, blob: &[u8], what: &str) -> Result<Vec<u8>, LcmError> {
        let fail = || LcmError::Decrypt {
            what: what.to_owned(),
            keys: self.keys.len(),
        };
        let token = std::str::from_utf8(blob).map_err(|_| fail())?;
        self.keys
            .iter()
            .find_map(|k| k.decrypt(token).ok())
            .ok_or_else(fail)
    }

    /// Whether `blob` is sealed with the newest key (so [`Keyring::rotate`] would change
    /// nothing).
    pub fn is_current(&self, blob: &[u8]) -> bool {
        std::str::from_utf8(blob)
            .ok()
            .is_some_and(|t| self.primary().decrypt(t).is_ok())
    }

    /// `blob` re-sealed with the newest key. (Unlike `MultiFernet.rotate`, the token gets a
    /// new timestamp: secrets at rest are never checked against a time-to-live.)
    pub fn rotate(&self, blob: &[u8], what: &str) -> Result<Vec<u8>, LcmError> {
        Ok(self.encrypt(&self.decrypt(blob, what)?))
    }

    fn primary(&self) -> &Fernet {
        // Every constructor refuses an empty key list.
        &self.keys[0]
    }
}

/// A new identifier of a stored resource: a time-ordered UUID (version 7, RFC 9562), its
/// first 48 bits the creation time in milliseconds and the rest random.
///
/// Every table keeps its rows in indexes ordered by id (the primary key, and `(state, id)`,
/// `(project, id)`, ... for keyset pages). Random ids would put each new row on a random leaf
/// of each of them: one more page changed, written to the WAL and read back per index and per
/// insert, across the whole index as it grows. Time-ordered ids land on the newest leaves,
/// which every insert shares.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// A new random UUID (version 4), for values that must say nothing about when they were made.
pub fn random_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// `bytes` as lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(2 * bytes.len());
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

/// A Fernet key from its urlsafe-base64 text (padded or not), or `None`.
fn parse_key(text: &str) -> Option<Fernet> {
    let text = text.trim();
    let bytes = base64::engine::general_purpose::URL_SAFE
        .decode(text)
        .or_else(|_| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(text))
        .ok()?;
    if bytes.len() != 32 {
        return None;
    }
    Fernet::new(&base64::engine::general_purpose::URL_SAFE.encode(bytes))
}

#[cfg(unix)]
fn check_private(path: &Path, meta: &std::fs::Metadata) -> Result<(), LcmError> {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(LcmError::keys(format!(
            "key file {0} has mode {mode:04o}: the group or others may access it; run `chmod 600 {0}`",
            path.display()
        )));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(_: &Path, _: &std::fs::Metadata) -> Result<(), LcmError> {
    Ok(())
}

/// The message of a [`LcmError::Keys`] without its prefix.
fn inner(e: &LcmError) -> String {
    match e {
        LcmError::Keys { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_validated_without_echoing_them() {
        let good = Keyring::generate_key();
        let bad = "c2hvcnQ=";
        let err = Keyring::from_keys([good.as_str(), bad]).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("key #2"), "{msg}");
        assert!(!msg.contains(bad), "{msg}");
        assert!(Keyring::from_key_list(" , ").is_err());
        // Unpadded keys are accepted.
        let unpadded = good.trim_end_matches('=');
        assert_eq!(Keyring::from_key_list(unpadded).unwrap().len(), 1);
    }

    #[test]
    fn garbage_blobs_fail_with_a_clear_error() {
        let k = Keyring::from_keys([Keyring::generate_key()]).unwrap();
        for blob in [&b""[..], b"not a token", &[0xff, 0xfe][..], b"gAAAAAB"] {
            let e = k.decrypt(blob, "the secrets of VIM v1").unwrap_err();
            assert_eq!(e.kind(), vnfm_types::ErrorKind::Internal);
            assert!(
                e.to_string()
                    .starts_with("cannot decrypt the secrets of VIM v1")
            );
        }
    }

    #[test]
    fn rotate_moves_a_blob_to_the_newest_key() {
        let old = Keyring::from_keys([Keyring::generate_key()]).unwrap();
        let blob = old.encrypt(b"x");
        let ring = Keyring {
            keys: vec![
                Fernet::new(&Keyring::generate_key()).unwrap(),
                old.keys.into_iter().next().unwrap(),
            ],
        };
        assert!(!ring.is_current(&blob));
        let rotated = ring.rotate(&blob, "x").unwrap();
        assert!(ring.is_current(&rotated));
        assert_eq!(ring.decrypt(&rotated, "x").unwrap(), b"x");
    }

    #[test]
    fn ids_are_uuids_that_sort_in_creation_order() {
        let ids: Vec<String> = (0..1000).map(|_| new_id()).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(sorted, ids, "a later id sorts after an earlier one");
        sorted.dedup();
        assert_eq!(sorted.len(), ids.len());
        let random = random_uuid();
        for (id, version) in [(&ids[0], "7"), (&random, "4")] {
            assert_eq!(id.len(), 36);
            assert_eq!(&id[14..15], version, "{id}");
            assert!("89ab".contains(&id[19..20]), "{id}");
            for (i, c) in id.char_indices() {
                if [8, 13, 18, 23].contains(&i) {
                    assert_eq!(c, '-', "{id}");
                } else {
                    assert!(c.is_ascii_digit() || ('a'..='f').contains(&c), "{id}");
                }
            }
        }
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
    }
}
