//! Tacker's enhanced policy attributes: the caller's `area`, `vendor` and `tenant` from its
//! special roles, and the `all` special values, as Tacker's `_pre_enhanced_policy_check`
//! computes them.
//!
//! - A role `AREA_<v>`, `VENDOR_<v>` or `TENANT_<v>` (prefix in any case; the whole role is
//!   lower-cased) gives the caller the attribute value `<v>`; every caller also has `*`, which
//!   matches a resource whose attribute is `*` (not yet known: an instance not instantiated,
//!   a package not onboarded).
//! - `VENDOR_all` / `TENANT_all` stand for the resource's own value; `AREA_all@all` for the
//!   resource's area, `AREA_all@<region>` for it when the resource is in `<region>`. Area
//!   values are `area@region` (word characters each side; a value not of that shape is left
//!   as it is).
//! - A resource whose attribute itself is a special value (`all...`, `all@region`) is refused
//!   to everyone but an admin and a caller with the matching special role (Tacker's "target
//!   check").

use serde_json::{Map, Value};

/// The three enhanced attributes.
pub const ATTRIBUTES: [&str; 3] = ["area", "vendor", "tenant"];

/// The caller's attribute values from its roles: `{"area": ["*", ...], "vendor": [...],
/// "tenant": [...]}`, each value lower-cased, `*` first.
pub fn role_attributes<'a>(roles: impl IntoIterator<Item = &'a str>) -> Map<String, Value> {
    let mut attrs: Vec<Vec<String>> = vec![vec!["*".into()]; 3];
    for role in roles {
        let role = role.to_lowercase();
        for (i, key) in ATTRIBUTES.iter().enumerate() {
            if let Some(v) = role.strip_prefix(&format!("{key}_"))
                && !v.is_empty()
            {
                attrs[i].push(v.to_owned());
            }
        }
    }
    ATTRIBUTES
        .iter()
        .zip(attrs)
        .map(|(k, v)| ((*k).to_owned(), Value::from(v)))
        .collect()
}

/// Python's `\w`: a letter, a digit or `_`.
fn word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Tacker's `is_valid_area`: the value starts with `word@word` (`re.match(r'\w+@\w+')`).
pub fn is_valid_area(v: &str) -> bool {
    let head = v.chars().take_while(|c| word(*c)).count();
    let mut rest = v.chars().skip(head);
    head > 0 && rest.next() == Some('@') && rest.next().is_some_and(word)
}

/// Whether `v` is a special value of attribute `key` (Tacker matches a prefix:
/// `re.match('all', v)`, `re.match(r'all@\w+', v)`).
fn special(key: &str, v: &str) -> bool {
    match key {
        "area" => v
            .strip_prefix("all@")
            .is_some_and(|r| r.chars().next().is_some_and(word)),
        _ => v.starts_with("all"),
    }
}

/// A target's or a caller's attributes.
pub type Attrs = Map<String, Value>;

/// Why a target is refused before any rule is evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecialTarget {
    /// The attribute.
    pub key: String,
    /// Its special value.
    pub value: String,
}

/// The target and credentials the rules are evaluated with: the caller's attributes from
/// its roles (`creds["roles"]`) with the `all` special values replaced by the target's, and the
/// target's attributes lower-cased. With `target_check`, a target whose attribute is itself a
/// special value is refused unless `creds["is_admin"]` is true or the caller has the matching
/// special role.
pub fn prepare(
    target: &Map<String, Value>,
    creds: &Map<String, Value>,
    target_check: bool,
) -> Result<(Attrs, Attrs), SpecialTarget> {
    let roles = creds
        .get("roles")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str);
    let attrs = role_attributes(roles);
    let mut user: Vec<(String, Vec<String>)> = ATTRIBUTES
        .iter()
        .map(|k| {
            let values = attrs[*k]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect();
            ((*k).to_owned(), values)
        })
        .collect();
    let is_admin = creds.get("is_admin").and_then(Value::as_bool) == Some(true);
    let mut tgt = target.clone();
    if target_check && !is_admin {
        for (key, values) in &user {
            let Some(v) = tgt.get(key).and_then(Value::as_str) else {
                continue;
            };
            if !special(key, v) {
                continue;
            }
            let allowed = values.iter().any(|uv| {
                special(key, uv) && (key != "area" || uv == "all@all" || *uv == v.to_lowercase())
            });
            if !allowed {
                return Err(SpecialTarget {
                    key: key.clone(),
                    value: v.to_owned(),
                });
            }
        }
    }
    for (key, values) in &mut user {
        let Some(v) = tgt.get(key.as_str()).and_then(Value::as_str) else {
            continue;
        };
        let v = v.to_lowercase();
        tgt.insert(key.clone(), Value::from(v.clone()));
        if v == "*" {
            continue;
        }
        let original = values.clone();
        let mut removed = Vec::new();
        if key == "area" {
            if !is_valid_area(&v) {
                continue;
            }
            for attr in original.iter().filter(|a| is_valid_area(a)) {
                if attr == "all@all" {
                    removed.push(attr.clone());
                    values.push(v.clone());
                } else if let Some(region) = attr.strip_prefix("all@") {
                    removed.push(attr.clone());
                    let (t_area, t_region) = v.split_once('@').unwrap_or((&v, ""));
                    if region == t_region {
                        values.push(format!("{t_area}@{region}"));
                    }
                }
            }
        } else {
            for attr in original.iter().filter(|a| *a == "all") {
                removed.push(attr.clone());
                values.push(v.clone());
            }
        }
        for r in removed {
            if let Some(i) = values.iter().position(|x| *x == r) {
                values.remove(i);
            }
        }
    }
    let mut out: Map<String, Value> = user.into_iter().map(|(k, v)| (k, Value::from(v))).collect();
    for (k, v) in creds {
        out.insert(k.clone(), v.clone());
    }
    Ok((tgt, out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn special_roles_become_attributes() {
        let attrs = role_attributes([
            "AREA_tokyo@japan",
            "vendor_Company-A",
            "TENANT_default",
            "TENANT_",
            "member",
        ]);
        assert_eq!(
            Value::Object(attrs),
            json!({"area": ["*", "tokyo@japan"], "vendor": ["*", "company-a"], "tenant": ["*", "default"]})
        );
    }

    #[test]
    fn areas_are_word_at_word() {
        assert!(is_valid_area("tokyo@japan"));
        assert!(is_valid_area("all@all"));
        assert!(!is_valid_area("tokyo-1@japan"));
        assert!(!is_valid_area("@japan"));
        assert!(!is_valid_area("tokyo@"));
        assert!(!is_valid_area("tokyo"));
    }

    #[test]
    fn all_values_take_the_targets_value() {
        let creds = obj(json!({"roles": ["AREA_all@all", "VENDOR_all", "TENANT_all"]}));
        let target = obj(json!({"area": "Tokyo@Japan", "vendor": "company-a", "tenant": "ns1"}));
        let (t, c) = prepare(&target, &creds, true).unwrap();
        assert_eq!(t["area"], "tokyo@japan");
        assert_eq!(c["area"], json!(["*", "tokyo@japan"]));
        assert_eq!(c["vendor"], json!(["*", "company-a"]));
        assert_eq!(c["tenant"], json!(["*", "ns1"]));
        assert_eq!(c["roles"], creds["roles"]);

        let regional = obj(json!({"roles": ["AREA_all@japan"]}));
        let (_, c) = prepare(&target, &regional, true).unwrap();
        assert_eq!(c["area"], json!(["*", "tokyo@japan"]));
        let elsewhere = obj(json!({"area": "paris@france"}));
        let (_, c) = prepare(&elsewhere, &regional, true).unwrap();
        assert_eq!(c["area"], json!(["*"]));
        // An area not of the area@region shape is left as it is.
        let odd = obj(json!({"area": "tokyo-1@japan"}));
        let (_, c) = prepare(&odd, &creds, true).unwrap();
        assert_eq!(c["area"], json!(["*", "all@all"]));
    }

    #[test]
    fn a_target_with_a_special_value_needs_admin_or_the_special_role() {
        let target = obj(json!({"vendor": "all", "area": "all@japan"}));
        let plain = obj(json!({"roles": ["VENDOR_all"]}));
        let e = prepare(&target, &plain, true).unwrap_err();
        assert_eq!(e.key, "area");
        assert!(prepare(&target, &plain, false).is_ok());
        let admin = obj(json!({"roles": [], "is_admin": true}));
        assert!(prepare(&target, &admin, true).is_ok());
        let both = obj(json!({"roles": ["VENDOR_all", "AREA_all@japan"]}));
        assert!(prepare(&target, &both, true).is_ok());
        let other_region = obj(json!({"roles": ["VENDOR_all", "AREA_all@france"]}));
        assert!(prepare(&target, &other_region, true).is_err());
    }
}
