//! The query conventions of ETSI GS NFV-SOL 013 (v3.x) that every list endpoint of the
//! SOL002/SOL003/SOL005 APIs uses, as pure logic over `serde_json` values:
//!
//! - [`Filter`]: attribute-based filtering, the `filter` parameter (clause 5.2);
//! - [`Selector`]: attribute selectors, `all_fields`, `fields`, `exclude_fields`,
//!   `exclude_default` (clause 5.3), with per-resource default exclude sets in [`defaults`];
//! - [`Marker`] and [`next_link`]: paging with `nextpage_opaque_marker` and the `Link` header
//!   (clause 5.4.2);
//! - [`ListParams`]: all of the above read from a raw query string;
//! - [`Sol013Error`]: one error type whose messages are ready for a ProblemDetails `detail`
//!   (status 400).
//!
//! ```
//! use vnfm_sol013::{ListParams, Marker, defaults, next_link};
//! use serde_json::json;
//!
//! let query = "filter=(eq,instantiationState,INSTANTIATED);(gt,instantiatedVnfInfo/scaleStatus/scaleLevel,1)";
//! let params = ListParams::from_query(query)?;
//! let filter = params.filter.as_ref().expect("a filter was given");
//!
//! let mut docs = vec![
//!     json!({"id": "a", "instantiationState": "INSTANTIATED",
//!            "instantiatedVnfInfo": {"scaleStatus": [{"aspectId": "x", "scaleLevel": 0},
//!                                                    {"aspectId": "y", "scaleLevel": 2}]},
//!            "_links": {"self": {"href": "/vnflcm/v2/vnf_instances/a"}}}),
//!     json!({"id": "b", "instantiationState": "NOT_INSTANTIATED",
//!            "_links": {"self": {"href": "/vnflcm/v2/vnf_instances/b"}}}),
//! ];
//! docs.retain(|d| filter.matches(d));
//! for d in &mut docs {
//!     params.selector.apply(d, defaults::v2::VNF_INSTANCE_EXCLUDED);
//! }
//! assert_eq!(docs, [json!({"id": "a", "instantiationState": "INSTANTIATED",
//!                          "_links": {"self": {"href": "/vnflcm/v2/vnf_instances/a"}}})]);
//!
//! // More items than fit on the page: a marker for the next one, bound to this query.
//! let marker = Marker::encode("a", &params.fingerprint());
//! let link = next_link("/vnflcm/v2/vnf_instances", query, &marker);
//! assert!(link.ends_with(&format!("&nextpage_opaque_marker={marker}>; rel=\"next\"")));
//! let next = ListParams::from_query(&format!("{query}&nextpage_opaque_marker={marker}"))?;
//! assert_eq!(Marker::decode(next.marker.as_deref().unwrap_or(""), &next.fingerprint())?, "a");
//! # Ok::<(), vnfm_sol013::Sol013Error>(())
//! ```
//!
//! # Semantics where the specification leaves room
//!
//! - **Arrays.** A path looks through arrays at every step, the last included: a term
//!   matches when *some* value the path reaches satisfies it. This holds for the negated
//!   operators too: `(neq,parts/color,green)` matches a document with at least one part
//!   that is not green, and `(nin,...)`/`(ncont,...)` likewise. Each term is evaluated on
//!   its own, so `(eq,parts/color,red);(eq,parts/size,2)` may be satisfied by two different
//!   parts.
//! - **Absent attributes.** An attribute that is absent or `null` satisfies no operator,
//!   `neq`, `nin` and `ncont` included: there is no value that differs. This is what a
//!   database does with `NULL` (`col <> 'x'` is not true for `NULL`), so terms pushed
//!   down to SQL and terms evaluated here agree.
//! - **Types.** The type of the attribute in the document decides the comparison: numbers
//!   compare numerically (the value must be a JSON-style number; `10` equals `10.0`),
//!   booleans with `true`/`false`, strings byte-wise and case-sensitively. Two strings that
//!   are both RFC 3339 date-times compare as instants (so `+01:00` and `Z` forms compare
//!   correctly, for `eq` too). `cont`/`ncont` apply to strings only; ordering to strings
//!   and numbers; a structured attribute (object) satisfies nothing.
//! - **Attribute names.** `~0`, `~1`, `~a`, `~b` escape `~`, `/`, `,`, `@`; `@key` (last
//!   segment only) stands for the keys of a map. Names with leading or trailing spaces or
//!   with `(`, `)`, `'`, `;` are refused, so `(eq , id ,x)` is a syntax error, not a filter
//!   on an attribute named `" id "`.
//! - **Values.** An unquoted value may contain spaces, `(` and `;` but not `,`, `)` or `'`;
//!   the empty string is written `''`.
//! - **Selectors.** Only complex attributes (JSON objects and arrays) are removed by
//!   `fields`/`exclude_fields`/`exclude_default`, as SOL013 Table 5.3.2-2 says; simple
//!   attributes always stay. `fields=a/b` keeps `a` with its simple attributes, its
//!   mandatory complex ones and `b`. Mandatory (lower cardinality 1) attributes are given by
//!   the caller ([`defaults`]); `_links` always stays. The flags `all_fields` and
//!   `exclude_default` take no value.
//! - **Paging markers** are not secret, but carry a digest of the query fingerprint and of
//!   the id, so a marker replayed with another filter or selector, or edited, is refused.

pub mod defaults;
mod error;
mod filter;
mod paging;
mod query;
mod schema;
mod selector;

pub use error::{MAX_ECHO_CHARS, Sol013Error};
pub use filter::{
    Filter, MAX_FILTER_LEN, MAX_PATH_DEPTH, MAX_TERMS, MAX_VALUES, Op, RequiredStrings, Segment,
    Term,
};
pub use paging::{MAX_MARKER_ID_LEN, MAX_MARKER_LEN, Marker, next_link};
pub use query::{ListParams, MAX_QUERY_LEN, MAX_QUERY_PARAMS};
pub use selector::{ALWAYS_MANDATORY, AttrPath, MAX_SELECTOR_LEN, MAX_SELECTOR_PATHS, Selector};
