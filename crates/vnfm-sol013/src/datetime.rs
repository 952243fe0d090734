//! Just enough RFC 3339 to order two date-time strings by the instant they denote, so that
//! `(gt,startTime,2024-01-01T00:00:00+01:00)` compares instants and not characters.

/// An instant as (seconds since 1970-01-01T00:00:00Z, nanoseconds).
pub(crate) type Instant = (i64, u32);

fn digits(b: &[u8], at: usize, n: usize) -> Option<i64> {
    let s = b.get(at..at + n)?;
    let mut v = 0i64;
    for &c in s {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + i64::from(c - b'0');
    }
    Some(v)
}

/// Days from 1970-01-01 to the given proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        4 | 6 | 9 | 11 => 30,
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    }
}

/// Parses `YYYY-MM-DD(T|t| )hh:mm:ss[.fraction](Z|z|±hh:mm)`; anything else is `None`.
pub(crate) fn parse(s: &str) -> Option<Instant> {
    let b = s.as_bytes();
    // Cheap rejection first: this runs for every string comparison in a filter.
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    if !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let year = digits(b, 0, 4)?;
    let month = digits(b, 5, 2)?;
    let day = digits(b, 8, 2)?;
    let hour = digits(b, 11, 2)?;
    let minute = digits(b, 14, 2)?;
    let second = digits(b, 17, 2)?;
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
            let oh = digits(b, at + 1, 2)?;
            let om = digits(b, at + 4, 2)?;
            if oh > 23 || om > 59 {
                return None;
            }
            let off = oh * 3600 + om * 60;
            if *sign == b'+' { off } else { -off }
        }
        _ => return None,
    };
    let secs =
        days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset;
    Some((secs, nanos))
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn parses_offsets_fractions_and_separators() {
        assert_eq!(parse("1970-01-01T00:00:00Z"), Some((0, 0)));
        assert_eq!(parse("1970-01-01T01:00:00+01:00"), Some((0, 0)));
        assert_eq!(parse("1970-01-01 00:00:01.5z"), Some((1, 500_000_000)));
        assert_eq!(
            parse("2021-08-24T02:26:46.796695+00:00"),
            Some((1_629_772_006, 796_695_000))
        );
        assert_eq!(
            parse("2000-02-29T00:00:00Z").map(|t| t.0),
            Some(951_782_400)
        );
    }

    #[test]
    fn rejects_what_is_not_a_date_time() {
        for s in [
            "",
            "abc",
            "2021-02-29T00:00:00Z",
            "2021-13-01T00:00:00Z",
            "2021-01-01T00:00:00",
            "2021-01-01T00:00:00.Z",
            "2021-01-01T00:00:00+0100",
            "2021-01-01X00:00:00Z",
            "2021-01-01T00:00:00Zjunk",
            "٢٠٢١-01-01T00:00:00Z",
        ] {
            assert_eq!(parse(s), None, "{s}");
        }
    }
}
