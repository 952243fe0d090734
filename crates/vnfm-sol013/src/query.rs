//! Reading the SOL013 parameters of a list request from its raw URL query string.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use serde_json::Value;

use crate::error::{Sol013Error, echo};
use crate::filter::Filter;
use crate::paging::MAX_MARKER_LEN;
use crate::selector::Selector;

/// Longest accepted raw query string, in bytes.
pub const MAX_QUERY_LEN: usize = 32 * 1024;
/// Most `&`-separated parameters in one query string.
pub const MAX_QUERY_PARAMS: usize = 64;

/// The SOL013 parameters of a GET on a list resource, validated.
///
/// ```
/// use vnfm_sol013::{ListParams, Selector};
///
/// let p = ListParams::from_query(
///     "filter=(eq,vnfProvider,'ACME%2C%20Inc.')&fields=instantiatedVnfInfo&exclude_default&page=2",
/// )?;
/// assert_eq!(p.filter.as_ref().map(|f| f.terms()[0].values[0].as_str()), Some("ACME, Inc."));
/// assert!(matches!(p.selector, Selector::Fields { exclude_default: true, .. }));
/// // Parameters outside SOL013 are left for the caller to accept or refuse.
/// assert_eq!(p.other, [("page".to_owned(), Some("2".to_owned()))]);
/// # Ok::<(), vnfm_sol013::Sol013Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListParams {
    /// The `filter` parameter, parsed.
    pub filter: Option<Filter>,
    /// The attribute selector (`Selector::Default` when none was given).
    pub selector: Selector,
    /// The `nextpage_opaque_marker`, as given (decode it with [`crate::Marker::decode`] and
    /// [`ListParams::fingerprint`]).
    pub marker: Option<String>,
    /// Every other parameter, percent-decoded, in order: `(name, value)`, `None` for a
    /// parameter without `=`.
    pub other: Vec<(String, Option<String>)>,
}

impl ListParams {
    /// Parses a raw query string (without or with the leading `?`): `&`-separated
    /// `name[=value]` pairs, percent-encoded, `+` for a space.
    ///
    /// `all_fields` and `exclude_default` are flags and take no value (`exclude_default` or
    /// `exclude_default=`); `fields`, `exclude_fields` and `nextpage_opaque_marker` need a
    /// non-empty value; `filter` without a value (or empty) means no filter.
    ///
    /// # Errors
    /// [`Sol013Error::QuerySyntax`] (malformed percent-encoding, non-UTF-8, a flag with a
    /// value, a missing value, too long), [`Sol013Error::RepeatedParameter`], and the errors
    /// of [`Filter::parse`] and [`Selector::from_params`].
    pub fn from_query(query: &str) -> Result<ListParams, Sol013Error> {
        let query = query.strip_prefix('?').unwrap_or(query);
        if query.len() > MAX_QUERY_LEN {
            return Err(Sol013Error::QuerySyntax {
                parameter: "query".into(),
                reason: format!("the query string is longer than {MAX_QUERY_LEN} bytes"),
            });
        }
        let mut filter: Option<String> = None;
        let mut all_fields = false;
        let mut fields: Option<String> = None;
        let mut exclude_fields: Option<String> = None;
        let mut exclude_default = false;
        let mut marker: Option<String> = None;
        let mut other = Vec::new();
        let mut seen: Vec<&'static str> = Vec::new();
        for (count, pair) in query.split('&').filter(|p| !p.is_empty()).enumerate() {
            if count == MAX_QUERY_PARAMS {
                return Err(Sol013Error::QuerySyntax {
                    parameter: "query".into(),
                    reason: format!("more than {MAX_QUERY_PARAMS} parameters"),
                });
            }
            let (raw_name, raw_value) = split_pair(pair);
            let name = decode_component(raw_name, || echo(raw_name), "parameter name")?;
            let known: Option<&'static str> = [
                "filter",
                "all_fields",
                "fields",
                "exclude_fields",
                "exclude_default",
                "nextpage_opaque_marker",
            ]
            .into_iter()
            .find(|k| *k == name);
            let value = match raw_value {
                None => None,
                Some(v) => {
                    let parameter = || known.map_or_else(|| echo(&name), str::to_owned);
                    Some(decode_component(v, parameter, "value")?)
                }
            };
            let Some(known) = known else {
                other.push((name, value));
                continue;
            };
            if seen.contains(&known) {
                return Err(Sol013Error::RepeatedParameter { parameter: known });
            }
            seen.push(known);
            match known {
                "all_fields" | "exclude_default" => {
                    if value.as_deref().is_some_and(|v| !v.is_empty()) {
                        return Err(Sol013Error::QuerySyntax {
                            parameter: known.into(),
                            reason: format!(
                                "{known} is a flag and takes no value; give it as {known} alone"
                            ),
                        });
                    }
                    if known == "all_fields" {
                        all_fields = true;
                    } else {
                        exclude_default = true;
                    }
                }
                // A `filter` without a value filters nothing: the ETSI conformance suite for
                // SOL003 v2.6.1 (test 7.3.1.17.5) sends `?filter` and expects 200.
                "filter" if value.as_deref().is_none_or(str::is_empty) => {}
                _ => {
                    let v = value.filter(|v| !v.is_empty()).ok_or_else(|| {
                        Sol013Error::QuerySyntax {
                            parameter: known.into(),
                            reason: format!("{known} needs a value ({known}=...)"),
                        }
                    })?;
                    match known {
                        "filter" => filter = Some(v),
                        "fields" => fields = Some(v),
                        "exclude_fields" => exclude_fields = Some(v),
                        _ => {
                            if v.len() > MAX_MARKER_LEN {
                                return Err(Sol013Error::InvalidMarker {
                                    reason: "the marker is longer than any this server issues",
                                });
                            }
                            marker = Some(v);
                        }
                    }
                }
            }
        }
        Ok(ListParams {
            filter: filter.as_deref().map(Filter::parse).transpose()?,
            selector: Selector::from_params(
                all_fields,
                fields.as_deref(),
                exclude_fields.as_deref(),
                exclude_default,
            )?,
            marker,
            other,
        })
    }

    /// Checks the filter and the selector paths against the resource's JSON Schema (see
    /// [`Filter::check_attributes`]).
    ///
    /// # Errors
    /// The errors of [`Filter::check_attributes`] and [`Selector::check_attributes`].
    pub fn check_attributes(&self, schema: &Value) -> Result<(), Sol013Error> {
        if let Some(f) = &self.filter {
            f.check_attributes(schema)?;
        }
        self.selector.check_attributes(schema)
    }

    /// A canonical text of everything that decides which items a page holds and what they
    /// look like: the filter, the selector and the other parameters (sorted). Two requests
    /// that differ only in spelling (quoting, percent-encoding, parameter order, the marker)
    /// have the same fingerprint. Bind paging markers to it.
    pub fn fingerprint(&self) -> String {
        let mut s = String::from("filter=");
        if let Some(f) = &self.filter {
            s.push_str(&f.to_string());
        }
        s.push('\n');
        s.push_str(&self.selector.to_string());
        let mut other: Vec<String> = self
            .other
            .iter()
            .map(|(n, v)| match v {
                Some(v) => format!("\n{n:?}={v:?}"),
                None => format!("\n{n:?}"),
            })
            .collect();
        other.sort();
        other.into_iter().for_each(|o| s.push_str(&o));
        s
    }
}

/// Splits `name=value` at the first `=`; `None` for the value when there is no `=`.
pub(crate) fn split_pair(pair: &str) -> (&str, Option<&str>) {
    match pair.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (pair, None),
    }
}

/// Percent-decodes one query component (`+` is a space): the `part` (`parameter name` or
/// `value`) of the query parameter `parameter` (quoted, shortened), which errors name.
pub(crate) fn decode_component(
    s: &str,
    parameter: impl FnOnce() -> String,
    part: &'static str,
) -> Result<String, Sol013Error> {
    // The decoder passes a `%` without two hex digits through; a query with one is refused.
    let b = s.as_bytes();
    let hex_at = |i: usize| b.get(i).is_some_and(u8::is_ascii_hexdigit);
    if let Some(i) = (0..b.len()).find(|&i| b[i] == b'%' && !(hex_at(i + 1) && hex_at(i + 2))) {
        return Err(Sol013Error::MalformedPercentEncoding {
            parameter: parameter(),
            part,
            offset: i,
        });
    }
    let spaced = s.replace('+', " ");
    match percent_decode_str(&spaced).decode_utf8() {
        Ok(text) => Ok(text.into_owned()),
        Err(source) => Err(Sol013Error::NotUtf8 {
            parameter: parameter(),
            part,
            source,
        }),
    }
}

/// What [`encode_component`] leaves as it is: the RFC 3986 unreserved characters.
const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Appends `s` percent-encoded: everything but RFC 3986 unreserved characters is escaped.
pub(crate) fn encode_component(out: &mut String, s: &str) {
    out.extend(utf8_percent_encode(s, UNRESERVED));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_the_sol013_parameters() {
        let p = ListParams::from_query(
            "?filter=%28eq%2Cid%2Ca+b%29&all_fields&nextpage_opaque_marker=abc&x=1&y&x=2",
        )
        .expect("valid");
        assert_eq!(p.filter.expect("filter").terms()[0].values, ["a b"]);
        assert_eq!(p.selector, Selector::AllFields);
        assert_eq!(p.marker.as_deref(), Some("abc"));
        assert_eq!(
            p.other,
            [
                ("x".into(), Some("1".into())),
                ("y".into(), None),
                ("x".into(), Some("2".into()))
            ]
        );
        for q in ["filter", "filter="] {
            assert_eq!(ListParams::from_query(q).map(|p| p.filter), Ok(None), "{q}");
        }
        assert!(matches!(
            ListParams::from_query("filter&filter="),
            Err(Sol013Error::RepeatedParameter {
                parameter: "filter"
            })
        ));
        let p = ListParams::from_query("").expect("empty");
        assert_eq!(p, ListParams::default());
        assert!(p.selector.is_default());
        let p = ListParams::from_query("exclude_default=&fields=a,b/c").expect("valid");
        assert!(
            matches!(p.selector, Selector::Fields { exclude_default: true, ref fields } if fields.len() == 2)
        );
    }

    #[test]
    fn malformed_parameters_are_named() {
        for (q, param) in [
            ("filter=(eq,a,1)&filter=(eq,b,2)", "filter"),
            ("exclude_default&exclude_default", "exclude_default"),
            ("fields=a&fields=b", "fields"),
        ] {
            assert_eq!(
                ListParams::from_query(q),
                Err(Sol013Error::RepeatedParameter { parameter: param }),
                "{q}"
            );
        }
        for (q, param) in [
            ("filter=%2", "filter"),
            ("filter=%zz", "filter"),
            ("filter=%FF", "filter"),
            ("fields=", "fields"),
            ("exclude_fields", "exclude_fields"),
            ("nextpage_opaque_marker=", "nextpage_opaque_marker"),
            ("all_fields=true", "all_fields"),
            ("exclude_default=1", "exclude_default"),
        ] {
            match ListParams::from_query(q) {
                Err(
                    Sol013Error::QuerySyntax { parameter, .. }
                    | Sol013Error::MalformedPercentEncoding { parameter, .. }
                    | Sol013Error::NotUtf8 { parameter, .. },
                ) => {
                    assert_eq!(parameter, param, "{q}")
                }
                other => panic!("{q}: {other:?}"),
            }
        }
        assert!(matches!(
            ListParams::from_query("a%zz=1"),
            Err(Sol013Error::MalformedPercentEncoding {
                part: "parameter name",
                offset: 1,
                ..
            })
        ));
        assert!(matches!(
            ListParams::from_query("filter=%FF"),
            Err(Sol013Error::NotUtf8 { part: "value", .. })
        ));
        assert!(matches!(
            ListParams::from_query("all_fields&exclude_default"),
            Err(Sol013Error::SelectorCombination { .. })
        ));
        assert!(matches!(
            ListParams::from_query("filter=(eq,a"),
            Err(Sol013Error::FilterSyntax { .. })
        ));
        let long = "x=1&".repeat(MAX_QUERY_PARAMS + 1);
        assert!(matches!(
            ListParams::from_query(&long),
            Err(Sol013Error::QuerySyntax { .. })
        ));
        assert!(ListParams::from_query(&"a".repeat(MAX_QUERY_LEN + 1)).is_err());
    }

    #[test]
    fn fingerprint_ignores_spelling_and_the_marker() {
        let a =
            ListParams::from_query("filter=(eq,a,'x')&fields=b&x=1&y=2&nextpage_opaque_marker=m1")
                .expect("a");
        let b = ListParams::from_query("y=2&fields=b&filter=%28eq%2Ca%2Cx%29&x=1").expect("b");
        assert_eq!(a.fingerprint(), b.fingerprint());
        let c = ListParams::from_query("filter=(eq,a,y)&fields=b&x=1&y=2").expect("c");
        assert_ne!(a.fingerprint(), c.fingerprint());
        let d = ListParams::from_query("filter=(eq,a,x)&exclude_fields=b&x=1&y=2").expect("d");
        assert_ne!(a.fingerprint(), d.fingerprint());
    }

    #[test]
    fn percent_coding() {
        let decode = |s: &str| decode_component(s, || "'p'".into(), "value");
        assert_eq!(decode("a+b%20c%2B%e2%82%ac").as_deref(), Ok("a b c+€"));
        let mut s = String::new();
        encode_component(&mut s, "a b+€(,)'~");
        assert_eq!(s, "a%20b%2B%E2%82%AC%28%2C%29%27~");
        for (bad, at) in [("a%2", 1), ("%zz", 0), ("ok%25%", 5), ("%%41", 0)] {
            let err = decode(bad).unwrap_err().to_string();
            assert!(
                err.starts_with("query parameter 'p': the value has a malformed"),
                "{bad}: {err}"
            );
            assert!(err.contains(&format!("at byte {at} ")), "{bad}: {err}");
        }
        let err = decode("%ff%41").unwrap_err();
        assert!(matches!(err, Sol013Error::NotUtf8 { .. }), "{err}");
        assert!(
            err.to_string().contains("byte 0 of the decoded text"),
            "{err}"
        );
    }
}
