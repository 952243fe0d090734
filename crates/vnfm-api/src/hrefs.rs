//! Rewrites of the `href`s of `_links` between the prefixes of API versions.

use serde_json::Value;

/// Rewrites every `href` starting with `from` to start with `to`.
pub(crate) fn relink_between(doc: &mut Value, from: &str, to: &str) {
    match doc {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if k == "href"
                    && let Value::String(s) = v
                    && let Some(rest) = s.strip_prefix(from)
                {
                    *s = format!("{to}{rest}");
                } else {
                    relink_between(v, from, to);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| relink_between(i, from, to)),
        _ => {}
    }
}
