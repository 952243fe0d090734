//! Paging (ETSI GS NFV-SOL 013 clause 5.4.2, alternative 2): the opaque
//! `nextpage_opaque_marker` and the `Link: <...>; rel="next"` header value.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use crate::error::Sol013Error;
use crate::query::{encode_component, split_pair};

/// Longest marker accepted by [`Marker::decode`], in characters.
pub const MAX_MARKER_LEN: usize = 1024;
/// Longest last-id [`Marker::encode`] is meant for, in bytes (markers stay under
/// [`MAX_MARKER_LEN`]).
pub const MAX_MARKER_ID_LEN: usize = 700;

const VERSION: u8 = 1;
const QUERY_TAG: usize = 4;
const ID_TAG: usize = 8;
const HEADER: usize = 1 + QUERY_TAG + ID_TAG;

/// The opaque paging marker: base64url of a version byte, a digest of the query it belongs
/// to, a digest binding the id to that query, and the id of the last item of the page.
///
/// The marker is not secret (it only says where the next page starts); the digests make a
/// marker used with another query, or altered, fail with a clear error.
///
/// ```
/// use vnfm_sol013::Marker;
///
/// let fp = "filter=(eq,instantiationState,INSTANTIATED)";
/// let m = Marker::encode("3f2a-last-id", fp);
/// assert_eq!(Marker::decode(&m, fp)?, "3f2a-last-id");
/// assert!(Marker::decode(&m, "another query").is_err());
/// # Ok::<(), vnfm_sol013::Sol013Error>(())
/// ```
pub struct Marker;

fn query_tag(fingerprint: &str) -> [u8; QUERY_TAG] {
    let d = Sha256::new()
        .chain_update(b"sol013-marker-query\0")
        .chain_update(fingerprint)
        .finalize();
    let mut out = [0u8; QUERY_TAG];
    out.copy_from_slice(&d[..QUERY_TAG]);
    out
}

fn id_tag(fingerprint: &str, id: &[u8]) -> [u8; ID_TAG] {
    let d = Sha256::new()
        .chain_update(b"sol013-marker-id\0")
        .chain_update((fingerprint.len() as u64).to_be_bytes())
        .chain_update(fingerprint)
        .chain_update(id)
        .finalize();
    let mut out = [0u8; ID_TAG];
    out.copy_from_slice(&d[..ID_TAG]);
    out
}

impl Marker {
    /// Encodes the id of the last item returned, bound to `query_fingerprint` (use
    /// [`crate::ListParams::fingerprint`]: the canonical filter and selector of the request).
    pub fn encode(last_id: &str, query_fingerprint: &str) -> String {
        let mut raw = Vec::with_capacity(HEADER + last_id.len());
        raw.push(VERSION);
        raw.extend_from_slice(&query_tag(query_fingerprint));
        raw.extend_from_slice(&id_tag(query_fingerprint, last_id.as_bytes()));
        raw.extend_from_slice(last_id.as_bytes());
        URL_SAFE_NO_PAD.encode(raw)
    }

    /// Decodes a marker issued by [`Marker::encode`] for the same query fingerprint and
    /// returns the last id.
    ///
    /// # Errors
    /// [`Sol013Error::InvalidMarker`] when the marker is too long, not base64url, of an
    /// unknown version, issued for another query, or altered.
    pub fn decode(marker: &str, query_fingerprint: &str) -> Result<String, Sol013Error> {
        let invalid = |reason| Sol013Error::InvalidMarker { reason };
        if marker.len() > MAX_MARKER_LEN {
            return Err(invalid("the marker is longer than any this server issues"));
        }
        let raw = URL_SAFE_NO_PAD
            .decode(marker.as_bytes())
            .map_err(|_| invalid("the marker is not base64url text as this server issues it"))?;
        if raw.len() < HEADER || raw[0] != VERSION {
            return Err(invalid("the marker is not one this server issued"));
        }
        if raw[1..1 + QUERY_TAG] != query_tag(query_fingerprint) {
            return Err(invalid(
                "the marker belongs to a query with another filter or other attribute selectors",
            ));
        }
        let id = &raw[HEADER..];
        if raw[1 + QUERY_TAG..HEADER] != id_tag(query_fingerprint, id) {
            return Err(invalid("the marker was altered"));
        }
        String::from_utf8(id.to_vec()).map_err(|_| invalid("the marker was altered"))
    }
}

/// The value of the `Link` header pointing at the next page:
/// `<path?query&nextpage_opaque_marker=marker>; rel="next"`.
///
/// `original_query` is the raw query string of the request (without `?`); its parameters are
/// kept in order and re-encoded (percent-encoding everything but RFC 3986 unreserved
/// characters), and any `nextpage_opaque_marker` in it is replaced. `path` is used as given
/// (a path or an absolute URI without query), except that characters that cannot appear in a
/// `Link` target (`<`, `>`, `"`, spaces, controls) are percent-encoded.
///
/// ```
/// use vnfm_sol013::next_link;
///
/// let link = next_link(
///     "/vnflcm/v2/vnf_instances",
///     "filter=(eq,vnfProvider,'A%2CB')&nextpage_opaque_marker=old&exclude_default",
///     "NEW",
/// );
/// assert_eq!(
///     link,
///     "</vnflcm/v2/vnf_instances?filter=%28eq%2CvnfProvider%2C%27A%2CB%27%29&exclude_default\
///      &nextpage_opaque_marker=NEW>; rel=\"next\""
/// );
/// ```
pub fn next_link(path: &str, original_query: &str, marker: &str) -> String {
    let mut out = String::with_capacity(path.len() + original_query.len() + marker.len() + 48);
    out.push('<');
    for c in path.chars() {
        if c == '<' || c == '>' || c == '"' || c.is_whitespace() || c.is_control() {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    out.push('?');
    for pair in original_query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = split_pair(pair);
        // Undecodable parts are dropped from the link rather than echoed in a header.
        let Ok(name) = crate::query::decode_component(name, String::new, "parameter name") else {
            continue;
        };
        if name == "nextpage_opaque_marker" {
            continue;
        }
        let value = match value.map(|v| crate::query::decode_component(v, String::new, "value")) {
            Some(Ok(v)) => Some(v),
            Some(Err(_)) => continue,
            None => None,
        };
        encode_component(&mut out, &name);
        if let Some(v) = value {
            out.push('=');
            encode_component(&mut out, &v);
        }
        out.push('&');
    }
    out.push_str("nextpage_opaque_marker=");
    encode_component(&mut out, marker);
    out.push_str(">; rel=\"next\"");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_round_trips_and_binds_the_query() {
        for id in [
            "",
            "a",
            "6fc3539c-e602-4afa-8e13-962fb5a7d81f",
            "é/?&=",
            &"x".repeat(MAX_MARKER_ID_LEN),
        ] {
            let m = Marker::encode(id, "fp");
            assert!(m.len() <= MAX_MARKER_LEN, "{}", m.len());
            assert!(
                m.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
                "{m}"
            );
            assert_eq!(Marker::decode(&m, "fp").as_deref(), Ok(id));
        }
        let m = Marker::encode("id-1", "fp");
        assert_eq!(
            Marker::decode(&m, "other"),
            Err(Sol013Error::InvalidMarker {
                reason: "the marker belongs to a query with another filter or other attribute selectors"
            })
        );
    }

    #[test]
    fn tampered_or_foreign_markers_are_refused() {
        let m = Marker::encode("id-1", "fp");
        // Change the id part (re-encoded properly) keeping the tags.
        let mut raw = URL_SAFE_NO_PAD.decode(&m).expect("valid");
        let last = raw.len() - 1;
        raw[last] = b'2';
        let forged = URL_SAFE_NO_PAD.encode(&raw);
        assert_eq!(
            Marker::decode(&forged, "fp"),
            Err(Sol013Error::InvalidMarker {
                reason: "the marker was altered"
            })
        );
        // Flip characters anywhere: never accepted as another id.
        for i in 0..m.len() {
            let mut b = m.clone().into_bytes();
            b[i] = if b[i] == b'A' { b'B' } else { b'A' };
            let s = String::from_utf8(b).expect("ascii");
            assert!(Marker::decode(&s, "fp").is_err() || s == m, "{i}");
        }
        for bad in ["", "!!!", "AAAA", &"A".repeat(MAX_MARKER_LEN + 1), "id-1"] {
            assert!(
                matches!(
                    Marker::decode(bad, "fp"),
                    Err(Sol013Error::InvalidMarker { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn next_link_keeps_other_parameters_and_replaces_the_marker() {
        assert_eq!(
            next_link("/p", "", "M"),
            "</p?nextpage_opaque_marker=M>; rel=\"next\""
        );
        assert_eq!(
            next_link("/p", "a=1&&b&nextpage_opaque_marker=x&c=d+e%20f", "M"),
            "</p?a=1&b&c=d%20e%20f&nextpage_opaque_marker=M>; rel=\"next\""
        );
        assert_eq!(
            next_link("/p", "fields=a/b,c&x=%2B%26%3D", "M"),
            "</p?fields=a%2Fb%2Cc&x=%2B%26%3D&nextpage_opaque_marker=M>; rel=\"next\""
        );
        // Malformed pairs are dropped, a hostile path cannot close the <...> early.
        assert_eq!(
            next_link("/p> x", "a=%zz&b=é", "M"),
            "</p%3E%20x?b=%C3%A9&nextpage_opaque_marker=M>; rel=\"next\""
        );
    }
}
