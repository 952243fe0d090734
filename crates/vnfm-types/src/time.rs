//! RFC 3339 date-times as instants, and the proleptic Gregorian calendar arithmetic behind
//! them: one implementation for every crate that compares, orders or ages timestamps
//! (attribute filters, notification delivery, Keystone token expiry).
//!
//! ```
//! use vnfm_types::time::{UnixInstant, parse_rfc3339};
//!
//! let t = parse_rfc3339("1970-01-01T01:00:00.5+01:00").unwrap();
//! assert_eq!(t, UnixInstant { seconds: 0, nanos: 500_000_000 });
//! assert!(parse_rfc3339("2021-02-29T00:00:00Z").is_none()); // not a leap year
//! ```

/// An instant: whole seconds since 1970-01-01T00:00:00Z, and nanoseconds within the second.
/// Instants order as time does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UnixInstant {
    /// Seconds since the epoch (negative before it).
    pub seconds: i64,
    /// Nanoseconds within the second, below 1,000,000,000.
    pub nanos: u32,
}

impl UnixInstant {
    /// Milliseconds since the epoch (the fraction truncated).
    pub fn millis(self) -> i64 {
        self.seconds * 1000 + i64::from(self.nanos / 1_000_000)
    }
}

/// Parses an RFC 3339 date-time, `YYYY-MM-DD(T|t| )hh:mm:ss[.fraction](Z|z|±hh:mm)`: a real
/// calendar day, hours to 23, minutes to 59, seconds to 60 (a leap second), and an offset of
/// hours to 23; fraction digits past nanoseconds are ignored. Anything else is `None`, with a
/// cheap rejection first, as filters call this for every string they compare.
pub fn parse_rfc3339(s: &str) -> Option<UnixInstant> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    if !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let (year, month, day) = (digits(b, 0, 4)?, digits(b, 5, 2)?, digits(b, 8, 2)?);
    let (hour, minute, second) = (digits(b, 11, 2)?, digits(b, 14, 2)?, digits(b, 17, 2)?);
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut at = 19;
    let mut nanos: u32 = 0;
    if b.get(at) == Some(&b'.') {
        at += 1;
        let start = at;
        let mut scale = 100_000_000u32;
        while let Some(c) = b.get(at).filter(|c| c.is_ascii_digit()) {
            nanos += u32::from(c - b'0') * scale;
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
    let seconds = days_from_civil(year, month as u32, day as u32) * 86_400
        + hour * 3600
        + minute * 60
        + second
        - offset;
    Some(UnixInstant { seconds, nanos })
}

/// The `n` ASCII digits at `at`, as a number.
fn digits(b: &[u8], at: usize, n: usize) -> Option<i64> {
    b.get(at..at + n)?.iter().try_fold(0i64, |v, &c| {
        c.is_ascii_digit().then(|| v * 10 + i64::from(c - b'0'))
    })
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    }
}

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm); `month` is
/// 1 to 12.
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let (month, day) = (i64::from(month), i64::from(day));
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The proleptic Gregorian (year, month, day) `days` after 1970-01-01; the inverse of
/// [`days_from_civil`].
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64, nanos: u32) -> Option<UnixInstant> {
        Some(UnixInstant { seconds, nanos })
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
            parse_rfc3339("2021-09-06T09:07:15.25+02:00").map(UnixInstant::millis),
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
        ] {
            assert_eq!(parse_rfc3339(s), None, "{s}");
        }
    }

    #[test]
    fn calendar_conversions_are_inverse() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(1969, 12, 31), -1);
        for days in (-800_000..800_000).step_by(997) {
            let (y, m, d) = civil_from_days(days);
            assert!((1..=12).contains(&m) && (1..=31).contains(&d));
            assert_eq!(days_from_civil(y, m, d), days, "{y}-{m}-{d}");
        }
    }
}
