//! VIM connections as drivers receive them: resolved, with their secrets.
//!
//! The core keeps VIM credentials encrypted and hands a driver a [`ResolvedVim`] per VIM
//! connection of the instance, with `accessInfo` decrypted. Its `Debug` output shows the
//! `accessInfo` keys but never the values, and [`ResolvedVim::redact`] scrubs secret values
//! from text (an HTTP error body, a command's output) before it goes into an error message.

use std::fmt;

use vnfm_types::{KeyValuePairs, VimConnectionInfo};

/// Substrings of `accessInfo` keys whose values are treated as secrets by
/// [`ResolvedVim::redact`] (compared case-insensitively).
pub const SECRET_KEY_MARKERS: &[&str] = &[
    "password",
    "passwd",
    "secret",
    "token",
    "key",
    "credential",
    "cert",
    "auth",
];

/// One VIM connection of an instance, with decrypted credentials.
#[derive(Clone, PartialEq)]
pub struct ResolvedVim {
    /// Key of the entry in the instance's `vimConnectionInfo`.
    pub connection_id: String,
    info: VimConnectionInfo,
}

impl ResolvedVim {
    /// Wraps the connection `connection_id` of an instance.
    pub fn new(connection_id: impl Into<String>, info: VimConnectionInfo) -> Self {
        ResolvedVim {
            connection_id: connection_id.into(),
            info,
        }
    }

    /// `vimType`, e.g. `ETSINFV.OPENSTACK_KEYSTONE.V_3` or `kubernetes`.
    pub fn vim_type(&self) -> &str {
        &self.info.vim_type
    }

    /// `vimId`, when known.
    pub fn vim_id(&self) -> Option<&str> {
        self.info.vim_id.as_ref().map(|v| v.as_str())
    }

    /// `interfaceInfo` (endpoints; not secret).
    pub fn interface_info(&self) -> Option<&KeyValuePairs> {
        self.info.interface_info.as_ref()
    }

    /// A string member of `interfaceInfo`.
    pub fn interface_str(&self, key: &str) -> Option<&str> {
        self.interface_info()?.get(key)?.as_str()
    }

    /// `extra`.
    pub fn extra(&self) -> Option<&KeyValuePairs> {
        self.info.extra.as_ref()
    }

    /// A string member of `accessInfo` (a user name, a password, a bearer token). Call sites
    /// that read secrets are the ones to audit.
    pub fn access_str(&self, key: &str) -> Option<&str> {
        self.info.access_info.as_ref()?.get(key)?.as_str()
    }

    /// The whole connection, secrets included.
    pub fn connection_info(&self) -> &VimConnectionInfo {
        &self.info
    }

    /// `text` with every secret value of `accessInfo` (values of keys containing one of
    /// [`SECRET_KEY_MARKERS`], at any depth) replaced by `***`.
    pub fn redact(&self, text: &str) -> String {
        let mut secrets = Vec::new();
        if let Some(access) = &self.info.access_info {
            collect_secrets(access, false, &mut secrets);
        }
        // Longest first, so a secret that contains another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        let mut out = text.to_string();
        for s in secrets {
            out = out.replace(s, "***");
        }
        out
    }
}

fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    SECRET_KEY_MARKERS.iter().any(|m| k.contains(m))
}

fn collect_secrets<'a>(map: &'a KeyValuePairs, inherited: bool, out: &mut Vec<&'a str>) {
    for (k, v) in map {
        collect_value(v, inherited || is_secret_key(k), out);
    }
}

fn collect_value<'a>(v: &'a serde_json::Value, secret: bool, out: &mut Vec<&'a str>) {
    match v {
        // Very short values (e.g. "1") would scrub unrelated text.
        serde_json::Value::String(s) if secret && s.len() >= 3 => out.push(s),
        serde_json::Value::Object(m) => collect_secrets(m, secret, out),
        serde_json::Value::Array(items) => {
            for i in items {
                collect_value(i, secret, out);
            }
        }
        _ => {}
    }
}

impl fmt::Debug for ResolvedVim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResolvedVim")
            .field("connection_id", &self.connection_id)
            .field("info", &RedactedVimInfo(&self.info))
            .finish()
    }
}

/// `Debug` for a [`VimConnectionInfo`] that lists `accessInfo` keys without their values.
pub struct RedactedVimInfo<'a>(pub &'a VimConnectionInfo);

impl fmt::Debug for RedactedVimInfo<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let access_keys: Option<Vec<&String>> =
            self.0.access_info.as_ref().map(|m| m.keys().collect());
        f.debug_struct("VimConnectionInfo")
            .field("vim_id", &self.0.vim_id)
            .field("vim_type", &self.0.vim_type)
            .field("interface_info", &self.0.interface_info)
            .field("access_info_keys", &access_keys)
            .field("extra", &self.0.extra)
            .finish()
    }
}

/// `Debug` for `(connection id, VimConnectionInfo)` pairs, redacted.
pub(crate) struct RedactedVims<'a>(pub Vec<(&'a str, &'a VimConnectionInfo)>);

impl<'a> RedactedVims<'a> {
    /// Collects the pairs of a map-like iterator.
    pub(crate) fn of(it: impl IntoIterator<Item = (&'a String, &'a VimConnectionInfo)>) -> Self {
        RedactedVims(it.into_iter().map(|(k, v)| (k.as_str(), v)).collect())
    }
}

impl fmt::Debug for RedactedVims<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(k, v)| (k, RedactedVimInfo(v))))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vim() -> ResolvedVim {
        let info: VimConnectionInfo = serde_json::from_value(json!({
            "vimId": "vim-1",
            "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3",
            "interfaceInfo": {"endpoint": "http://127.0.0.1:35000/v3"},
            "accessInfo": {
                "username": "nfv_user",
                "password": "s3cr3t-pa55",
                "project": "nfv",
                "nested": {"bearerToken": "tok-abcdef"}
            }
        }))
        .unwrap();
        ResolvedVim::new("vim1", info)
    }

    #[test]
    fn debug_never_shows_access_values() {
        let v = vim();
        let dbg = format!("{v:?}");
        assert!(!dbg.contains("s3cr3t-pa55"), "{dbg}");
        assert!(!dbg.contains("tok-abcdef"), "{dbg}");
        assert!(!dbg.contains("nfv_user"), "{dbg}");
        assert!(dbg.contains("\"password\""), "{dbg}");
        assert!(dbg.contains("http://127.0.0.1:35000/v3"), "{dbg}");
    }

    #[test]
    fn redact_scrubs_secret_values_at_any_depth() {
        let v = vim();
        let text = "POST failed: {\"password\": \"s3cr3t-pa55\", \"token\": \"tok-abcdef\", \"user\": \"nfv_user\"}";
        let r = v.redact(text);
        assert_eq!(
            r,
            "POST failed: {\"password\": \"***\", \"token\": \"***\", \"user\": \"nfv_user\"}"
        );
        assert_eq!(v.access_str("username"), Some("nfv_user"));
        assert_eq!(
            v.interface_str("endpoint"),
            Some("http://127.0.0.1:35000/v3")
        );
        assert_eq!(v.vim_id(), Some("vim-1"));
    }
}
