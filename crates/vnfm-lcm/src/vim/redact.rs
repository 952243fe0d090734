//! Secrets out of sight: which `accessInfo` members are secret by name, redaction of
//! `accessInfo`, connection entries and request bodies for display, and the merge patch of a
//! registered VIM that keeps the stored secrets where the patch holds `"***"`.

use serde_json::Value;
use vnfm_types::{KeyValuePairs, VimConnectionInfo};

use super::REDACTED;
use crate::plan::merge_object;

/// Whether the `accessInfo` member `key` holds a secret, judged by its name: it names a
/// password, secret, token, private key or credential, and not an id, URL, name or domain.
/// Used to redact entries that were not sealed into a registry (a registered VIM knows its
/// secrets exactly, see [`VimKind::secret_members`]).
///
/// [`VimKind::secret_members`]: vnfm_driver_api::VimKind::secret_members
pub fn is_secret_member(key: &str) -> bool {
    const MARKERS: &[&str] = &[
        "password",
        "passwd",
        "secret",
        "token",
        "private",
        "credential",
        "key",
    ];
    let k = key.to_ascii_lowercase();
    let names_something_public = ["id", "url", "uri", "name", "domain"]
        .iter()
        .any(|s| k.ends_with(s));
    !names_something_public && MARKERS.iter().any(|m| k.contains(m))
}

/// Replaces, in an `accessInfo` object, every value whose member name is secret
/// ([`is_secret_member`], at any depth) with `"***"`.
pub fn redact_access_info(access: &mut KeyValuePairs) {
    for (k, v) in access.iter_mut() {
        if v.is_null() {
            continue;
        }
        if is_secret_member(k) {
            *v = Value::String(REDACTED.into());
        } else {
            redact_nested(v);
        }
    }
}

fn redact_nested(v: &mut Value) {
    match v {
        Value::Object(m) => redact_access_info(m),
        Value::Array(items) => items.iter_mut().for_each(redact_nested),
        _ => {}
    }
}

/// `info` as shown to users: inline `accessInfo` secrets replaced by `"***"` (a reference to
/// a registered VIM has none), and the empty `accessInfo` that marks a reference to sealed
/// inline credentials left out.
pub fn redact_connection(info: &mut VimConnectionInfo) {
    if info.access_info.as_ref().is_some_and(|a| a.is_empty()) {
        info.access_info = None;
    }
    if let Some(a) = info.access_info.as_mut() {
        redact_access_info(a);
    }
}

/// Redacts the entries of a `vimConnectionInfo` member of a JSON object (a request body or
/// `changedInfo`) as [`redact_connection`] does; `null` entries (removals in a merge patch)
/// stay.
pub fn redact_vim_connections_in(doc: &mut KeyValuePairs) {
    let Some(Value::Object(map)) = doc.get_mut("vimConnectionInfo") else {
        return;
    };
    for entry in map.values_mut() {
        let Value::Object(entry) = entry else {
            continue;
        };
        match entry.get_mut("accessInfo") {
            Some(Value::Object(a)) if a.is_empty() => {
                entry.remove("accessInfo");
            }
            Some(Value::Object(a)) => redact_access_info(a),
            _ => {}
        }
    }
}

/// RFC 7396 merge of `patch` into `target`; with `keep_redacted`, members whose value is
/// `"***"` (at any depth of objects) are left as they are.
pub(super) fn merge_patch(target: &mut KeyValuePairs, patch: &KeyValuePairs, keep_redacted: bool) {
    if keep_redacted {
        let mut patch = patch.clone();
        drop_redacted(&mut patch);
        merge_object(target, &patch);
    } else {
        merge_object(target, patch);
    }
}

/// Removes the members whose value is `"***"` from `patch` and the objects in it.
fn drop_redacted(patch: &mut KeyValuePairs) {
    patch.retain(|_, v| match v {
        Value::String(s) => s != REDACTED,
        Value::Object(inner) => {
            drop_redacted(inner);
            true
        }
        _ => true,
    });
}
