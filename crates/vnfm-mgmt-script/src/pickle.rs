//! JSON values to and from Python pickles (`serde-pickle`).
//!
//! The input goes out as protocol 3 (what `serde-pickle` writes; every Python 3 reads it).
//! The output is read like Python's `pickle.loads`: any protocol from 0 to 5, and bytes after
//! the pickle's `STOP` are ignored.

use std::io::Cursor;

use serde_json::{Map, Number, Value as Json};
use serde_pickle::{DeOptions, HashableValue, SerOptions, Value};

use crate::ScriptError;

/// `value` as a pickle (objects become dicts, arrays lists, null `None`).
pub(crate) fn encode(value: &Json) -> Result<Vec<u8>, ScriptError> {
    serde_pickle::to_vec(value, SerOptions::new()).map_err(ScriptError::EncodeInput)
}

/// The value of the pickle at the start of `bytes`; `None` when `bytes` is empty (Tacker
/// takes an empty stdout as "no output").
pub(crate) fn decode(bytes: &[u8]) -> Result<Option<Json>, ScriptError> {
    if bytes.is_empty() {
        return Ok(None);
    }
    let mut de = serde_pickle::Deserializer::new(Cursor::new(bytes), DeOptions::new());
    let value = de.deserialize_value().map_err(ScriptError::DecodeOutput)?;
    to_json(value, "").map(Some)
}

fn shape(path: &str, what: &str) -> ScriptError {
    let at = if path.is_empty() { "(top level)" } else { path };
    ScriptError::OutputShape(format!("has {what} at {at}, which has no JSON form"))
}

fn to_json(value: Value, path: &str) -> Result<Json, ScriptError> {
    Ok(match value {
        Value::None => Json::Null,
        Value::Bool(b) => Json::Bool(b),
        Value::I64(i) => Json::from(i),
        Value::Int(big) => {
            let text = big.to_string();
            if let Ok(u) = text.parse::<u64>() {
                Json::from(u)
            } else {
                return Err(shape(path, "an integer too large for JSON"));
            }
        }
        Value::F64(f) => {
            Json::Number(Number::from_f64(f).ok_or_else(|| shape(path, "a NaN or infinite float"))?)
        }
        Value::String(s) => Json::String(s),
        Value::Bytes(_) => return Err(shape(path, "bytes")),
        Value::List(items) | Value::Tuple(items) => Json::Array(
            items
                .into_iter()
                .enumerate()
                .map(|(i, v)| to_json(v, &format!("{path}[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
        Value::Set(items) | Value::FrozenSet(items) => Json::Array(
            items
                .into_iter()
                .enumerate()
                .map(|(i, v)| to_json(v.into_value(), &format!("{path}[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
        Value::Dict(entries) => {
            let mut map = Map::new();
            for (k, v) in entries {
                let key = match k {
                    HashableValue::String(s) => s,
                    // As Python's json.dumps does with int keys.
                    HashableValue::I64(i) => i.to_string(),
                    _ => return Err(shape(path, "a dict key that is not a string")),
                };
                let child = format!("{path}.{key}");
                map.insert(key, to_json(v, &child)?);
            }
            Json::Object(map)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_round_trips_through_a_pickle_and_trailing_bytes_are_ignored() {
        let v = json!({"a": [1, -2, 2.5, true, null, "é"], "b": {"c": {}}});
        let mut bytes = encode(&v).unwrap();
        assert_eq!(bytes[0..2], [0x80, 3], "protocol 3 header");
        assert_eq!(decode(&bytes).unwrap(), Some(v.clone()));
        bytes.extend_from_slice(b"printed after the dump\n");
        assert_eq!(decode(&bytes).unwrap(), Some(v));
        assert_eq!(decode(b"").unwrap(), None);
    }

    #[test]
    fn garbage_and_values_without_json_form_are_errors() {
        assert!(matches!(
            decode(b"hello, I am not a pickle"),
            Err(ScriptError::DecodeOutput(_))
        ));
        let bytes = serde_pickle::value_to_vec(
            &Value::Dict([(HashableValue::String("x".into()), Value::Bytes(vec![1]))].into()),
            SerOptions::new(),
        )
        .unwrap();
        let err = decode(&bytes).unwrap_err().to_string();
        assert!(err.contains("bytes at .x"), "{err}");
    }
}
