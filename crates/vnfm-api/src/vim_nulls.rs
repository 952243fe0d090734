//! `null` entries in the `vimConnectionInfo` map of a v2 INSTANTIATE request (v1's is an
//! array), which Tacker's request files carry (a connection left out by setting it to `null`): read with JSON Merge Patch
//! semantics (RFC 7396), as SOL003 merges a request's connections into the instance's, so an
//! entry set to `null` is not one the operation uses. The request goes on without them.

use axum::body::Bytes;
use serde_json::Value;

/// `body` without the `null` members of its top-level `vimConnectionInfo` object; the body
/// as it is when it has none (or is not a JSON object, which its parser then refuses).
pub(crate) fn without_null_connections(body: Bytes) -> Bytes {
    let Ok(Value::Object(mut request)) = serde_json::from_slice::<Value>(&body) else {
        return body;
    };
    let Some(Value::Object(connections)) = request.get_mut("vimConnectionInfo") else {
        return body;
    };
    let before = connections.len();
    connections.retain(|_, entry| !entry.is_null());
    if connections.len() == before {
        return body;
    }
    match serde_json::to_vec(&Value::Object(request)) {
        Ok(stripped) => Bytes::from(stripped),
        Err(_) => body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stripped(v: Value) -> Value {
        let out = without_null_connections(Bytes::from(serde_json::to_vec(&v).unwrap()));
        serde_json::from_slice(&out).unwrap()
    }

    #[test]
    fn null_connections_are_left_out_and_the_rest_kept() {
        assert_eq!(
            stripped(json!({"flavourId": "simple",
                "vimConnectionInfo": {"default": null, "vim1": {"vimId": "v", "vimType": "kubernetes"}}})),
            json!({"flavourId": "simple",
                "vimConnectionInfo": {"vim1": {"vimId": "v", "vimType": "kubernetes"}}})
        );
        assert_eq!(
            stripped(json!({"flavourId": "simple", "vimConnectionInfo": {"default": null}})),
            json!({"flavourId": "simple", "vimConnectionInfo": {}})
        );
        // A body without null connections, or not JSON, goes on byte for byte.
        for raw in [&b"{\"flavourId\": \"x\" }"[..], b"not json", b"[1]"] {
            assert_eq!(without_null_connections(Bytes::from_static(raw)), raw);
        }
    }
}
