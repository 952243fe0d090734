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
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        Self::from_unix_seconds(secs)
    }

    /// The UTC date-time `secs` seconds after 1970-01-01T00:00:00Z.
    pub fn from_unix_seconds(secs: u64) -> Self {
        let days = secs / 86_400;
        let rem = secs % 86_400;
        let (y, m, d) = civil_from_days(days);
        Self(format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
            rem / 3600,
            (rem % 3600) / 60,
            rem % 60
        ))
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

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day) (H. Hinnant's algorithm).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// RFC 3339 `date-time`: `full-date "T" full-time`, with `T`/`Z` accepted in either case.
fn is_rfc3339(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| {
        b.get(r.clone())
            .is_some_and(|x| x.iter().all(u8::is_ascii_digit))
    };
    let num = |r: std::ops::Range<usize>| -> u32 {
        b[r].iter()
            .fold(0u32, |acc, c| acc * 10 + u32::from(c - b'0'))
    };
    if b.len() < 20
        || !digits(0..4)
        || b[4] != b'-'
        || !digits(5..7)
        || b[7] != b'-'
        || !digits(8..10)
        || !matches!(b[10], b'T' | b't')
        || !digits(11..13)
        || b[13] != b':'
        || !digits(14..16)
        || b[16] != b':'
        || !digits(17..19)
    {
        return false;
    }
    let (month, day) = (num(5..7), num(8..10));
    let (hour, minute, second) = (num(11..13), num(14..16), num(17..19));
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return false;
    }
    // Second 60 is a leap second, which RFC 3339 allows.
    if hour > 23 || minute > 59 || second > 60 {
        return false;
    }
    let mut i = 19;
    if b[i] == b'.' {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    match &b[i..] {
        [b'Z' | b'z'] => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] => {
            [h1, h2, m1, m2].iter().all(|c| c.is_ascii_digit())
                && (u32::from(h1 - b'0') * 10 + u32::from(h2 - b'0')) <= 23
                && (u32::from(m1 - b'0') * 10 + u32::from(m2 - b'0')) <= 59
        }
        _ => false,
    }
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
