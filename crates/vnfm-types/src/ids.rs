//! Typed identifiers and the `DateTime` string type.
//!
//! SOL003 identifiers are opaque strings. Wrapping each kind in its own newtype keeps a
//! `VnfInstanceId` from being passed where a `VnfLcmOpOccId` is meant; on the wire they are
//! plain JSON strings. Their JSON Schema is a non-empty string.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize};

use crate::Error;

macro_rules! typed_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        impl $name {
            /// Wraps a string as this identifier.
            pub fn new(id: impl Into<String>) -> Self {
                Self(id.into())
            }

            /// The identifier as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self(s.to_owned())
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                Self(s)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl JsonSchema for $name {
            fn inline_schema() -> bool {
                true
            }

            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!({ "type": "string", "minLength": 1 })
            }
        }
    };
}

typed_id!(
    /// Identifier of a VNF instance (`vnfInstanceId`).
    VnfInstanceId
);
typed_id!(
    /// Identifier of a VNF lifecycle management operation occurrence (`vnfLcmOpOccId`).
    VnfLcmOpOccId
);
typed_id!(
    /// Identifier of a lifecycle change notification subscription.
    SubscriptionId
);
typed_id!(
    /// Identifier of a VNF descriptor (`vnfdId`).
    VnfdId
);
typed_id!(
    /// Identifier of a VIM (`vimId`), as known to the NFVO.
    VimId
);
typed_id!(
    /// Identifier of a grant (`grantId`).
    GrantId
);
typed_id!(
    /// Identifier of an on-boarded VNF package (`vnfPkgId`, SOL003 v2.6.1 only).
    VnfPkgId
);
typed_id!(
    /// Identifier of a notification (`id` of a notification body).
    NotificationId
);

/// A point in time: an RFC 3339 `date-time` string such as `2021-09-06T07:07:15Z`.
///
/// The string is kept as received, so a value re-serializes byte for byte. Deserializing
/// checks the RFC 3339 shape (date, `T`, time, optional fraction, `Z` or a `±hh:mm` offset)
/// and rejects anything else, e.g. the space-separated timestamps some v1 peers emit.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct DateTime(String);

impl DateTime {
    /// Checks `s` as an RFC 3339 date-time and wraps it.
    pub fn parse(s: &str) -> Result<Self, Error> {
        if is_rfc3339(s) {
            Ok(Self(s.to_owned()))
        } else {
            Err(Error::InvalidDateTime {
                value: crate::truncate(s, 40),
            })
        }
    }

    /// The current time in UTC, with second precision (`YYYY-MM-DDThh:mm:ssZ`).
    pub fn now() -> Self {
        Self(crate::time::format_utc_seconds(
            crate::time::Timestamp::now(),
        ))
    }

    /// The UTC date-time `secs` seconds after 1970-01-01T00:00:00Z (the last second of
    /// 9999 when `secs` is later).
    pub fn from_unix_seconds(secs: u64) -> Self {
        let at = i64::try_from(secs)
            .ok()
            .and_then(|s| crate::time::Timestamp::from_second(s).ok())
            .unwrap_or(crate::time::Timestamp::MAX);
        Self(crate::time::format_utc_seconds(at))
    }

    /// The date-time string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DateTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for DateTime {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if is_rfc3339(&s) {
            Ok(Self(s))
        } else {
            Err(serde::de::Error::custom(format!(
                "invalid date-time {:?}: expected RFC 3339, e.g. 2021-09-06T07:07:15Z",
                crate::truncate(&s, 40)
            )))
        }
    }
}

impl JsonSchema for DateTime {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "DateTime".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "string", "format": "date-time" })
    }
}

/// RFC 3339 `date-time`: `full-date "T" full-time`, with `T`/`Z` accepted in either case
/// (the space some producers put between date and time is not RFC 3339's `date-time`).
fn is_rfc3339(s: &str) -> bool {
    matches!(s.as_bytes().get(10), Some(b'T' | b't')) && crate::time::parse_rfc3339(s).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_accepts_spec_forms() {
        for ok in [
            "2021-09-06T07:07:15Z",
            "2021-09-06t07:07:15z",
            "2021-09-06T07:07:15.123456Z",
            "2021-09-06T07:07:15+09:00",
            "2016-12-31T23:59:60Z",
        ] {
            assert!(is_rfc3339(ok), "{ok}");
        }
    }

    #[test]
    fn rfc3339_rejects_non_rfc_forms() {
        for bad in [
            "",
            "2021-01-22 13:41:30.869833+00:00",
            "2020-08-02T06:50:50.883373",
            "2021-13-06T07:07:15Z",
            "2021-09-06T24:07:15Z",
            "2021-09-06T07:07:15.Z",
            "2021-09-06T07:07:15+0900",
            "2021-09-06T07:07:15Zjunk",
            "20210906T070715Z",
            "2021-02-29T07:07:15Z",
        ] {
            assert!(!is_rfc3339(bad), "{bad}");
        }
    }

    #[test]
    fn from_unix_seconds_formats_utc() {
        assert_eq!(
            DateTime::from_unix_seconds(0).as_str(),
            "1970-01-01T00:00:00Z"
        );
        assert_eq!(
            DateTime::from_unix_seconds(1_630_912_035).as_str(),
            "2021-09-06T07:07:15Z"
        );
        // 2000-02-29 exercises the leap-day branch.
        assert_eq!(
            DateTime::from_unix_seconds(951_782_400).as_str(),
            "2000-02-29T00:00:00Z"
        );
        assert!(is_rfc3339(DateTime::now().as_str()));
    }

    #[test]
    fn deserialize_rejects_bad_timestamp_with_clear_message() {
        let err = serde_json::from_str::<DateTime>("\"2021-01-22 13:41:30+00:00\"")
            .unwrap_err()
            .to_string();
        assert!(err.contains("expected RFC 3339"), "{err}");
    }
}
