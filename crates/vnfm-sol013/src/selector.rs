//! Attribute selectors (ETSI GS NFV-SOL 013 clause 5.3): `all_fields`, `fields`,
//! `exclude_fields` and `exclude_default`, and their application to a resource representation.
//!
//! SOL013 Table 5.3.2-2 says what a response contains for each allowed combination:
//!
//! | parameters | the response contains |
//! |---|---|
//! | none | the same as `exclude_default` |
//! | `all_fields` | all attributes |
//! | `fields=<list>` | all attributes except the complex attributes with lower cardinality 0 not in `<list>` |
//! | `exclude_fields=<list>` | all attributes except the complex attributes with lower cardinality 0 in `<list>` |
//! | `exclude_default` | all attributes except the complex attributes with lower cardinality 0 in the resource's default exclude set |
//! | `exclude_default` and `fields=<list>` | all attributes except those of the default exclude set that are not in `<list>` |
//!
//! Any other combination is refused. Here a *complex* attribute is one whose JSON value is an
//! object or an array; simple attributes (strings, numbers, booleans) are never removed.
//! Attributes with lower cardinality 1 are given by the caller as *mandatory* paths and are
//! never removed either.

use std::fmt;

use serde_json::{Map, Value};

use crate::error::{Sol013Error, found_at};
use crate::filter::{Segment, parse_segment, write_escaped_name};
use crate::schema;

/// Longest accepted `fields`/`exclude_fields` value, in bytes.
pub const MAX_SELECTOR_LEN: usize = 4096;
/// Most attribute paths in one `fields`/`exclude_fields` list.
pub const MAX_SELECTOR_PATHS: usize = 64;

/// Complex attributes kept by [`Selector::apply`] whatever the selector: `_links` has lower
/// cardinality 1 in every SOL002/SOL003/SOL005 resource that supports attribute selectors.
pub const ALWAYS_MANDATORY: &[&str] = &["_links"];

/// An attribute path in a selector: attribute names from the top level of the resource.
pub type AttrPath = Vec<String>;

/// The attribute selection requested by a GET on a list (or individual) resource.
///
/// ```
/// use vnfm_sol013::{Selector, defaults};
/// use serde_json::json;
///
/// let mut doc = json!({
///     "id": "i1", "vnfInstanceName": "web",
///     "instantiatedVnfInfo": {"flavourId": "small"},
///     "metadata": {"owner": "ops"},
///     "_links": {"self": {"href": "/vnflcm/v2/vnf_instances/i1"}}
/// });
/// // No selector parameter: the resource's default exclude set is removed.
/// let sel = Selector::from_params(false, None, None, false)?;
/// sel.apply(&mut doc, defaults::v2::VNF_INSTANCE_EXCLUDED);
/// assert_eq!(doc, json!({
///     "id": "i1", "vnfInstanceName": "web",
///     "_links": {"self": {"href": "/vnflcm/v2/vnf_instances/i1"}}
/// }));
/// # Ok::<(), vnfm_sol013::Sol013Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum Selector {
    /// No selector parameter given: behaves as [`Selector::ExcludeDefault`] (SOL013 5.3.2).
    #[default]
    Default,
    /// `all_fields`: nothing is removed.
    AllFields,
    /// `exclude_default`: the resource's default exclude set is removed.
    ExcludeDefault,
    /// `fields=<list>`, possibly with `exclude_default`.
    Fields {
        /// The listed paths (deduplicated, in the order given).
        fields: Vec<AttrPath>,
        /// Whether `exclude_default` was given too.
        exclude_default: bool,
    },
    /// `exclude_fields=<list>`.
    ExcludeFields(Vec<AttrPath>),
}

impl Selector {
    /// Builds the selector from the four query parameters; `fields`/`exclude_fields` are the
    /// percent-decoded values.
    ///
    /// # Errors
    /// [`Sol013Error::SelectorCombination`] for a combination SOL013 Table 5.3.2-2 does not
    /// allow; [`Sol013Error::SelectorSyntax`] or [`Sol013Error::SelectorTooLarge`] for a
    /// malformed list.
    pub fn from_params(
        all_fields: bool,
        fields: Option<&str>,
        exclude_fields: Option<&str>,
        exclude_default: bool,
    ) -> Result<Selector, Sol013Error> {
        let allowed = matches!(
            (
                all_fields,
                fields.is_some(),
                exclude_fields.is_some(),
                exclude_default
            ),
            (false, false, false, _)
                | (true, false, false, false)
                | (false, true, false, _)
                | (false, false, true, false)
        );
        if !allowed {
            let given: Vec<&str> = [
                (all_fields, "all_fields"),
                (fields.is_some(), "fields"),
                (exclude_fields.is_some(), "exclude_fields"),
                (exclude_default, "exclude_default"),
            ]
            .into_iter()
            .filter_map(|(on, name)| on.then_some(name))
            .collect();
            return Err(Sol013Error::SelectorCombination {
                given: given.join(" and "),
            });
        }
        Ok(
            match (all_fields, fields, exclude_fields, exclude_default) {
                (true, ..) => Selector::AllFields,
                (_, Some(list), _, ed) => Selector::Fields {
                    fields: parse_list("fields", list)?,
                    exclude_default: ed,
                },
                (_, _, Some(list), _) => {
                    Selector::ExcludeFields(parse_list("exclude_fields", list)?)
                }
                (_, _, _, true) => Selector::ExcludeDefault,
                _ => Selector::Default,
            },
        )
    }

    /// Checks that every path in `fields`/`exclude_fields` names an attribute of the resource
    /// whose JSON Schema is given (see [`crate::Filter::check_attributes`] for the schema rules).
    ///
    /// # Errors
    /// [`Sol013Error::UnknownAttribute`] naming the parameter and the path.
    pub fn check_attributes(&self, schema: &Value) -> Result<(), Sol013Error> {
        let (parameter, paths) = match self {
            Selector::Fields { fields, .. } => ("fields", fields),
            Selector::ExcludeFields(paths) => ("exclude_fields", paths),
            _ => return Ok(()),
        };
        for p in paths {
            let segs: Vec<Segment> = p.iter().cloned().map(Segment::Name).collect();
            schema::lookup(schema, &segs, parameter, || path_to_string(p))?;
        }
        Ok(())
    }

    /// Removes from `doc` what this selector excludes. `default_excluded` is the resource's
    /// default exclude set (see [`crate::defaults`]), as `/`-separated paths. `_links` is
    /// never removed ([`ALWAYS_MANDATORY`]); use [`Selector::apply_with`] to protect other
    /// mandatory complex attributes.
    pub fn apply(&self, doc: &mut Value, default_excluded: &[&str]) {
        self.apply_with(doc, default_excluded, ALWAYS_MANDATORY);
    }

    /// As [`Selector::apply`], with `mandatory` listing (as `/`-separated paths) the complex
    /// attributes with lower cardinality 1 that must stay whatever the selector says.
    pub fn apply_with(&self, doc: &mut Value, default_excluded: &[&str], mandatory: &[&str]) {
        let ctx = Ctx { mandatory };
        match self {
            Selector::AllFields => {}
            Selector::Default | Selector::ExcludeDefault => {
                for d in default_excluded {
                    ctx.remove(doc, &split(d), 0);
                }
            }
            Selector::ExcludeFields(paths) => {
                for p in paths {
                    let segs: Vec<&str> = p.iter().map(String::as_str).collect();
                    ctx.remove(doc, &segs, 0);
                }
            }
            Selector::Fields {
                fields,
                exclude_default: false,
            } => {
                let fields: Vec<Vec<&str>> = fields
                    .iter()
                    .map(|f| f.iter().map(String::as_str).collect())
                    .collect();
                ctx.keep_only(doc, &mut Vec::new(), &fields);
            }
            Selector::Fields {
                fields,
                exclude_default: true,
            } => {
                let fields: Vec<Vec<&str>> = fields
                    .iter()
                    .map(|f| f.iter().map(String::as_str).collect())
                    .collect();
                for d in default_excluded {
                    let d = split(d);
                    if fields.iter().any(|f| d.starts_with(f)) {
                        // Listed (or inside a listed attribute): kept whole.
                    } else if fields.iter().any(|f| f.starts_with(&d)) {
                        // Partly listed: inside it, the fields rule applies.
                        ctx.at_path(doc, &d, 0, &mut |node| {
                            ctx.keep_only(node, &mut d.clone(), &fields)
                        });
                    } else {
                        ctx.remove(doc, &d, 0);
                    }
                }
            }
        }
    }

    /// `true` for [`Selector::Default`] (no selector parameter given).
    pub fn is_default(&self) -> bool {
        matches!(self, Selector::Default)
    }
}

impl fmt::Display for Selector {
    /// The selector as query parameters in canonical form (`fields=a,b/c&exclude_default`);
    /// empty for [`Selector::Default`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |f: &mut fmt::Formatter<'_>, paths: &[AttrPath]| -> fmt::Result {
            for (i, p) in paths.iter().enumerate() {
                if i > 0 {
                    f.write_str(",")?;
                }
                f.write_str(&path_to_string(p))?;
            }
            Ok(())
        };
        match self {
            Selector::Default => Ok(()),
            Selector::AllFields => f.write_str("all_fields"),
            Selector::ExcludeDefault => f.write_str("exclude_default"),
            Selector::Fields {
                fields,
                exclude_default,
            } => {
                f.write_str("fields=")?;
                list(f, fields)?;
                if *exclude_default {
                    f.write_str("&exclude_default")?;
                }
                Ok(())
            }
            Selector::ExcludeFields(paths) => {
                f.write_str("exclude_fields=")?;
                list(f, paths)
            }
        }
    }
}

fn path_to_string(p: &[String]) -> String {
    let mut s = String::new();
    for (i, n) in p.iter().enumerate() {
        if i > 0 {
            s.push('/');
        }
        let _ = write_escaped_name(&mut s, n);
    }
    s
}

fn split(p: &str) -> Vec<&str> {
    p.split('/').collect()
}

/// Parses `a,b/c,d` into paths, with the attribute-name escapes of filters (`~1` for `/`,
/// `~a` for `,`, ...).
fn parse_list(parameter: &'static str, list: &str) -> Result<Vec<AttrPath>, Sol013Error> {
    if list.len() > MAX_SELECTOR_LEN {
        return Err(Sol013Error::SelectorTooLarge {
            parameter,
            what: "the length in bytes",
            limit: MAX_SELECTOR_LEN,
        });
    }
    let syntax = |offset: usize, expected: &'static str| Sol013Error::SelectorSyntax {
        parameter,
        offset,
        expected,
        found: found_at(list, offset),
    };
    let mut paths: Vec<AttrPath> = Vec::new();
    let mut pos = 0;
    loop {
        let mut path = Vec::new();
        loop {
            if path.len() == crate::filter::MAX_PATH_DEPTH {
                return Err(Sol013Error::SelectorTooLarge {
                    parameter,
                    what: "the attribute path depth",
                    limit: crate::filter::MAX_PATH_DEPTH,
                });
            }
            let (seg, end) =
                parse_segment(list, pos, false).map_err(|(at, what)| syntax(at, what))?;
            if let Segment::Name(n) = seg {
                path.push(n);
            }
            pos = end;
            if list.as_bytes().get(pos) == Some(&b'/') {
                pos += 1;
            } else {
                break;
            }
        }
        if !paths.contains(&path) {
            if paths.len() == MAX_SELECTOR_PATHS {
                return Err(Sol013Error::SelectorTooLarge {
                    parameter,
                    what: "the number of paths",
                    limit: MAX_SELECTOR_PATHS,
                });
            }
            paths.push(path);
        }
        match list.as_bytes().get(pos) {
            None => return Ok(paths),
            Some(b',') => pos += 1,
            Some(_) => {
                return Err(syntax(
                    pos,
                    "',' and another attribute name, or the end of the list",
                ));
            }
        }
    }
}

fn is_complex(v: &Value) -> bool {
    matches!(v, Value::Object(_) | Value::Array(_))
}

struct Ctx<'m> {
    mandatory: &'m [&'m str],
}

impl Ctx<'_> {
    fn is_mandatory(&self, prefix: &[&str], key: &str) -> bool {
        self.mandatory.iter().any(|m| {
            let mut segs = m.split('/');
            prefix.iter().all(|p| segs.next() == Some(*p))
                && segs.next() == Some(key)
                && segs.next().is_none()
        })
    }

    /// Calls `f` on every node `path` reaches from `v` (looking through arrays).
    fn at_path(&self, v: &mut Value, path: &[&str], at: usize, f: &mut dyn FnMut(&mut Value)) {
        match v {
            Value::Array(items) => items.iter_mut().for_each(|i| self.at_path(i, path, at, f)),
            Value::Object(map) if at < path.len() => {
                if let Some(child) = map.get_mut(path[at]) {
                    self.at_path(child, path, at + 1, f);
                }
            }
            Value::Object(_) => f(v),
            _ => {}
        }
    }

    /// Removes the complex attribute at `path` (in every element of arrays on the way),
    /// unless it is mandatory.
    fn remove(&self, v: &mut Value, path: &[&str], at: usize) {
        let Some((last, parent)) = path.split_last() else {
            return;
        };
        if self.is_mandatory(parent, last) {
            return;
        }
        match v {
            Value::Array(items) => items.iter_mut().for_each(|i| self.remove(i, path, at)),
            Value::Object(map) if at + 1 == path.len() => {
                // retain keeps the order of the remaining attributes.
                map.retain(|k, child| !(k == last && is_complex(child)));
            }
            Value::Object(map) => {
                if let Some(child) = map.get_mut(path[at]) {
                    self.remove(child, path, at + 1);
                }
            }
            _ => {}
        }
    }

    /// Applies the `fields` rule at the object `v` whose path is `prefix`: listed attributes
    /// stay whole, attributes on the way to a listed one are filtered recursively, other
    /// complex attributes go unless mandatory.
    fn keep_only<'a>(&self, v: &mut Value, prefix: &mut Vec<&'a str>, fields: &[Vec<&'a str>]) {
        match v {
            Value::Array(items) => items
                .iter_mut()
                .for_each(|i| self.keep_only(i, prefix, fields)),
            Value::Object(map) => self.keep_only_object(map, prefix, fields),
            _ => {}
        }
    }

    fn keep_only_object<'a>(
        &self,
        map: &mut Map<String, Value>,
        prefix: &mut Vec<&'a str>,
        fields: &[Vec<&'a str>],
    ) {
        let d = prefix.len();
        map.retain(|key, child| {
            let mut listed = false;
            let mut below: Option<&'a str> = None;
            for f in fields
                .iter()
                .filter(|f| f.len() > d && f[..d] == prefix[..] && f[d] == key.as_str())
            {
                if f.len() == d + 1 {
                    listed = true;
                } else {
                    below = Some(f[d]);
                }
            }
            if listed {
                true
            } else if let Some(seg) = below {
                prefix.push(seg);
                self.keep_only(child, prefix, fields);
                prefix.pop();
                true
            } else {
                !is_complex(child) || self.is_mandatory(prefix, key)
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const DEFAULTS: &[&str] = &["big", "other", "deep/inner"];

    fn doc() -> Value {
        json!({
            "id": "1",
            "name": "n",
            "count": 3,
            "big": {"a": 1, "b": {"c": 2}},
            "other": [{"x": 1, "y": {"z": 1}}, {"x": 2, "y": {"z": 2}}],
            "deep": {"inner": {"q": 1}, "keep": "s", "side": {"w": 1}},
            "free": {"k": "v"},
            "_links": {"self": {"href": "/x"}}
        })
    }

    fn sel(all: bool, fields: Option<&str>, excl: Option<&str>, ed: bool) -> Selector {
        match Selector::from_params(all, fields, excl, ed) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        }
    }

    fn applied(s: &Selector) -> Value {
        let mut d = doc();
        s.apply(&mut d, DEFAULTS);
        d
    }

    #[test]
    fn allowed_and_refused_combinations() {
        let mut allowed = 0;
        for all in [false, true] {
            for fields in [None, Some("a")] {
                for excl in [None, Some("b")] {
                    for ed in [false, true] {
                        let r = Selector::from_params(all, fields, excl, ed);
                        let count = usize::from(all)
                            + usize::from(fields.is_some())
                            + usize::from(excl.is_some())
                            + usize::from(ed);
                        let expected_ok = count <= 1 || (fields.is_some() && ed && count == 2);
                        assert_eq!(
                            r.is_ok(),
                            expected_ok,
                            "{all} {fields:?} {excl:?} {ed}: {r:?}"
                        );
                        if let Err(e) = r {
                            assert!(matches!(e, Sol013Error::SelectorCombination { .. }));
                        } else {
                            allowed += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(allowed, 6);
        let e = Selector::from_params(true, None, None, true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("all_fields and exclude_default"), "{e}");
    }

    #[test]
    fn default_and_exclude_default_remove_the_default_set() {
        let expected = json!({
            "id": "1", "name": "n", "count": 3,
            "deep": {"keep": "s", "side": {"w": 1}},
            "free": {"k": "v"},
            "_links": {"self": {"href": "/x"}}
        });
        assert_eq!(applied(&sel(false, None, None, false)), expected);
        assert_eq!(applied(&sel(false, None, None, true)), expected);
        assert!(sel(false, None, None, false).is_default());
    }

    #[test]
    fn all_fields_keeps_everything() {
        assert_eq!(applied(&sel(true, None, None, false)), doc());
    }

    #[test]
    fn fields_keeps_simple_listed_and_mandatory_attributes() {
        let got = applied(&sel(false, Some("big,other/y"), None, false));
        assert_eq!(
            got,
            json!({
                "id": "1", "name": "n", "count": 3,
                "big": {"a": 1, "b": {"c": 2}},
                "other": [{"x": 1, "y": {"z": 1}}, {"x": 2, "y": {"z": 2}}],
                "_links": {"self": {"href": "/x"}}
            })
        );
        let got = applied(&sel(false, Some("deep/side"), None, false));
        assert_eq!(
            got,
            json!({"id": "1", "name": "n", "count": 3, "deep": {"keep": "s", "side": {"w": 1}}, "_links": {"self": {"href": "/x"}}})
        );
        let mut d = doc();
        sel(false, Some("deep/side"), None, false).apply_with(
            &mut d,
            DEFAULTS,
            &["_links", "deep/inner", "free"],
        );
        assert_eq!(
            d["deep"],
            json!({"inner": {"q": 1}, "keep": "s", "side": {"w": 1}})
        );
        assert_eq!(d["free"], json!({"k": "v"}));
        assert!(d.get("big").is_none());
        // Without the mandatory list, _links would go too.
        let mut d = doc();
        sel(false, Some("big"), None, false).apply_with(&mut d, DEFAULTS, &[]);
        assert!(d.get("_links").is_none());
    }

    #[test]
    fn fields_with_exclude_default_only_touches_the_default_set() {
        let got = applied(&sel(false, Some("other,deep/inner/q"), None, true));
        assert_eq!(
            got,
            json!({
                "id": "1", "name": "n", "count": 3,
                "other": [{"x": 1, "y": {"z": 1}}, {"x": 2, "y": {"z": 2}}],
                "deep": {"inner": {"q": 1}, "keep": "s", "side": {"w": 1}},
                "free": {"k": "v"},
                "_links": {"self": {"href": "/x"}}
            })
        );
        // A partly listed default-excluded attribute keeps only the listed parts.
        let got = applied(&sel(false, Some("big/b"), None, true));
        assert_eq!(got["big"], json!({"a": 1, "b": {"c": 2}}));
        let got = applied(&sel(false, Some("other/x"), None, true));
        assert_eq!(got["other"], json!([{"x": 1}, {"x": 2}]));
    }

    #[test]
    fn exclude_fields_removes_listed_complex_attributes_only() {
        let got = applied(&sel(false, None, Some("free,other/y,name,_links"), false));
        assert_eq!(
            got,
            json!({
                "id": "1", "name": "n", "count": 3,
                "big": {"a": 1, "b": {"c": 2}},
                "other": [{"x": 1}, {"x": 2}],
                "deep": {"inner": {"q": 1}, "keep": "s", "side": {"w": 1}},
                "_links": {"self": {"href": "/x"}}
            })
        );
    }

    #[test]
    fn lists_are_parsed_strictly() {
        for bad in [
            "", ",", "a,", ",a", "a//b", "a/", " a", "a ", "a,(b", "a'b", "@key", "a~x",
        ] {
            assert!(
                matches!(
                    Selector::from_params(false, Some(bad), None, false),
                    Err(Sol013Error::SelectorSyntax { .. })
                ),
                "{bad:?}"
            );
        }
        let s = sel(false, None, Some("a~1b,c/d,c/d"), false);
        assert_eq!(
            s,
            Selector::ExcludeFields(vec![vec!["a/b".into()], vec!["c".into(), "d".into()]])
        );
        assert_eq!(s.to_string(), "exclude_fields=a~1b,c/d");
        let most = (0..MAX_SELECTOR_PATHS)
            .map(|i| format!("f{i}"))
            .collect::<Vec<_>>()
            .join(",");
        assert!(Selector::from_params(false, Some(&most), None, false).is_ok());
        let too_many = (0..=MAX_SELECTOR_PATHS)
            .map(|i| format!("f{i}"))
            .collect::<Vec<_>>()
            .join(",");
        assert!(matches!(
            Selector::from_params(false, Some(&too_many), None, false),
            Err(Sol013Error::SelectorTooLarge { .. })
        ));
    }

    #[test]
    fn display_is_canonical() {
        assert_eq!(sel(false, None, None, false).to_string(), "");
        assert_eq!(sel(true, None, None, false).to_string(), "all_fields");
        assert_eq!(sel(false, None, None, true).to_string(), "exclude_default");
        assert_eq!(
            sel(false, Some("a,b/c"), None, true).to_string(),
            "fields=a,b/c&exclude_default"
        );
    }
}
