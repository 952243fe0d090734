//! RFC 3339 date-times as instants ([`jiff::Timestamp`]): one parser for every crate that
//! compares, orders or ages timestamps (attribute filters, notification delivery, Keystone
//! token expiry), and the UTC form the VNFM writes. The calendar (valid days, leap years,
//! offsets) is jiff's; this module only holds the RFC 3339 grammar, which is stricter than the
//! ISO 8601 / Temporal forms jiff's own parser also accepts (`20210101T000000Z`,
//! `2021-01-01T00:00Z`, `+0100`, `[UTC]` annotations, ...).
//!
//! ```
//! use vnfm_types::time::parse_rfc3339;
//!
//! let t = parse_rfc3339("1970-01-01T01:00:00.5+01:00").unwrap();
//! assert_eq!(t, jiff::Timestamp::new(0, 500_000_000).unwrap());
//! assert!(parse_rfc3339("2021-02-29T00:00:00Z").is_none()); // not a leap year
//! ```

use jiff::SignedDuration;
use jiff::civil::{Date, DateTime, Time};
use jiff::tz::Offset;

/// An instant: what [`parse_rfc3339`] returns (jiff's type; instants order as time does).
pub use jiff::Timestamp;

/// Parses an RFC 3339 date-time, `YYYY-MM-DD(T|t| )hh:mm:ss[.fraction](Z|z|±hh:mm)`: a real
/// calendar day, hours to 23, minutes to 59, seconds to 60 (a leap second, read as the first
/// second of the next minute), and an offset of hours to 23; fraction digits past nanoseconds
/// are ignored. Anything else is `None`, with a cheap rejection first, as filters call this
/// for every string they compare.
pub fn parse_rfc3339(s: &str) -> Option<Timestamp> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    if !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let (year, month, day) = (digits(b, 0, 4)?, digits(b, 5, 2)?, digits(b, 8, 2)?);
    let (hour, minute, second) = (digits(b, 11, 2)?, digits(b, 14, 2)?, digits(b, 17, 2)?);
    if second > 60 {
        return None;
    }
    let mut at = 19;
    let mut nanos: i32 = 0;
    if b.get(at) == Some(&b'.') {
        at += 1;
        let start = at;
        let mut scale = 100_000_000;
        while let Some(c) = b.get(at).filter(|c| c.is_ascii_digit()) {
            nanos += i32::from(c - b'0') * scale;
            scale /= 10;
            at += 1;
        }
        if at == start {
            return None;
        }
    }
    let offset = match b.get(at)? {
        b'Z' | b'z' if at + 1 == b.len() => 0,
        sign @ (b'+' | b'-') if at + 6 == b.len() && b[at + 3] == b':' => {
            let (oh, om) = (digits(b, at + 1, 2)?, digits(b, at + 4, 2)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let off = oh * 3600 + om * 60;
            if *sign == b'+' { off } else { -off }
        }
        _ => return None,
    };
    let small = |v: i32| i8::try_from(v).ok();
    let date = Date::new(i16::try_from(year).ok()?, small(month)?, small(day)?).ok()?;
    let time = Time::new(small(hour)?, small(minute)?, small(second.min(59))?, nanos).ok()?;
    let instant = Offset::from_seconds(offset)
        .ok()?
        .to_timestamp(DateTime::from_parts(date, time))
        .ok()?;
    if second == 60 {
        instant.checked_add(SignedDuration::from_secs(1)).ok()
    } else {
        Some(instant)
    }
}

/// The `n` ASCII digits at `at` (at most four), as a number.
fn digits(b: &[u8], at: usize, n: usize) -> Option<i32> {
    b.get(at..at + n)?.iter().try_fold(0i32, |v, &c| {
        c.is_ascii_digit().then(|| v * 10 + i32::from(c - b'0'))
    })
}

/// `t` in the UTC form the VNFM writes, with second precision: `YYYY-MM-DDThh:mm:ssZ`.
pub fn format_utc_seconds(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64, nanos: i32) -> Option<Timestamp> {
        Some(Timestamp::new(seconds, nanos).unwrap())
    }

    #[test]
    fn parses_offsets_fractions_and_separators() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), at(0, 0));
        assert_eq!(parse_rfc3339("1970-01-01T01:00:00+01:00"), at(0, 0));
        assert_eq!(parse_rfc3339("1969-12-31T23:00:00-01:00"), at(0, 0));
        assert_eq!(parse_rfc3339("1970-01-01 00:00:01.5z"), at(1, 500_000_000));
        assert_eq!(
            parse_rfc3339("2021-08-24T02:26:46.796695+00:00"),
            at(1_629_772_006, 796_695_000)
        );
        assert_eq!(
            parse_rfc3339("2021-08-24T02:26:46.1234567891Z"),
            at(1_629_772_006, 123_456_789)
        );
        assert_eq!(parse_rfc3339("2000-02-29T00:00:00Z"), at(951_782_400, 0));
        assert_eq!(parse_rfc3339("2016-12-31T23:59:60Z"), at(1_483_228_800, 0));
        assert_eq!(
            parse_rfc3339("2021-09-06T09:07:15.25+02:00").map(Timestamp::as_millisecond),
            Some(1_630_912_035_250)
        );
        assert!(
            parse_rfc3339("1969-12-31T23:59:59.5Z").unwrap()
                < parse_rfc3339("1970-01-01T00:00:00Z").unwrap()
        );
    }

    #[test]
    fn rejects_what_is_not_a_date_time() {
        for s in [
            "",
            "abc",
            "2021-01-01",
            "2021-02-29T00:00:00Z",
            "2021-04-31T00:00:00Z",
            "2021-13-01T00:00:00Z",
            "2021-01-00T00:00:00Z",
            "2021-01-01T24:00:00Z",
            "2021-01-01T00:60:00Z",
            "2021-01-01T00:00:61Z",
            "2021-01-01T00:00:00",
            "2021-01-01T00:00:00.Z",
            "2021-01-01T00:00:00+0100",
            "2021-01-01T00:00:00+24:00",
            "2021-01-01T00:00:00-",
            "2021-01-01X00:00:00Z",
            "2021-01-01T00:00:00Zjunk",
            "99999999999-01-01T00:00:00Z",
            "٢٠٢١-01-01T00:00:00Z",
            "２０21-09-06T07:07:15Z",
            // Forms jiff's own parser accepts, but RFC 3339 does not.
            "20210101T000000Z",
            "2021-01-01T00:00Z",
            "2021-01-01T00:00:00,5Z",
            "2021-01-01T00:00:00Z[UTC]",
            "+002021-01-01T00:00:00Z",
        ] {
            assert_eq!(parse_rfc3339(s), None, "{s}");
        }
    }

    #[test]
    fn formats_utc_with_second_precision() {
        assert_eq!(
            format_utc_seconds(Timestamp::new(0, 999_000_000).unwrap()),
            "1970-01-01T00:00:00Z"
        );
        assert_eq!(
            format_utc_seconds(parse_rfc3339("2021-09-06T09:07:15.25+02:00").unwrap()),
            "2021-09-06T07:07:15Z"
        );
        assert_eq!(
            format_utc_seconds(Timestamp::from_second(-1).unwrap()),
            "1969-12-31T23:59:59Z"
        );
    }
}
