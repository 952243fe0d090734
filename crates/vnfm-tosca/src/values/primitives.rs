//! The primitive types of TOSCA and the text forms of their values: scalar units (normalized
//! to their base unit), versions and timestamps.

use crate::yaml::Node;

/// The primitive types of TOSCA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Prim {
    String,
    Integer,
    Float,
    Boolean,
    Timestamp,
    Null,
    Version,
    Range,
    List,
    Map,
    Size,
    Time,
    Frequency,
    Bitrate,
}

impl Prim {
    pub fn parse(name: &str) -> Option<Prim> {
        let name = name.strip_prefix("tosca:").unwrap_or(name);
        Some(match name {
            "string" => Prim::String,
            "integer" => Prim::Integer,
            "float" => Prim::Float,
            "boolean" => Prim::Boolean,
            "timestamp" => Prim::Timestamp,
            "null" => Prim::Null,
            "version" => Prim::Version,
            "range" => Prim::Range,
            "list" => Prim::List,
            "map" => Prim::Map,
            "scalar-unit.size" => Prim::Size,
            "scalar-unit.time" => Prim::Time,
            "scalar-unit.frequency" => Prim::Frequency,
            "scalar-unit.bitrate" => Prim::Bitrate,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Prim::String => "string",
            Prim::Integer => "integer",
            Prim::Float => "float",
            Prim::Boolean => "boolean",
            Prim::Timestamp => "timestamp",
            Prim::Null => "null",
            Prim::Version => "version",
            Prim::Range => "range",
            Prim::List => "list",
            Prim::Map => "map",
            Prim::Size => "scalar-unit.size",
            Prim::Time => "scalar-unit.time",
            Prim::Frequency => "scalar-unit.frequency",
            Prim::Bitrate => "scalar-unit.bitrate",
        }
    }

    /// A value of the type as written in a template, for help texts.
    pub(super) fn example(self) -> &'static str {
        match self {
            Prim::String => "'text'",
            Prim::Integer => "3",
            Prim::Float => "1.5",
            Prim::Boolean => "true",
            Prim::Timestamp => "2024-01-31T12:00:00Z",
            Prim::Null => "~",
            Prim::Version => "'1.2.0'",
            Prim::Range => "[ 1, 5 ]",
            Prim::List => "[ a, b ]",
            Prim::Map => "{ key: value }",
            Prim::Size => "512 MB",
            Prim::Time => "30 s",
            Prim::Frequency => "2.4 GHz",
            Prim::Bitrate => "100 Mbps",
        }
    }
}

const SIZE_UNITS: &[(&str, f64)] = &[
    ("B", 1.0),
    ("kB", 1e3),
    ("KiB", 1024.0),
    ("MB", 1e6),
    ("MiB", 1_048_576.0),
    ("GB", 1e9),
    ("GiB", 1_073_741_824.0),
    ("TB", 1e12),
    ("TiB", 1_099_511_627_776.0),
];
const TIME_UNITS: &[(&str, f64)] = &[
    ("d", 86_400.0),
    ("h", 3_600.0),
    ("m", 60.0),
    ("s", 1.0),
    ("ms", 1e-3),
    ("us", 1e-6),
    ("ns", 1e-9),
];
const FREQUENCY_UNITS: &[(&str, f64)] = &[("Hz", 1.0), ("kHz", 1e3), ("MHz", 1e6), ("GHz", 1e9)];
const BITRATE_UNITS: &[(&str, f64)] = &[
    ("bps", 1.0),
    ("Kbps", 1e3),
    ("Kibps", 1024.0),
    ("Mbps", 1e6),
    ("Mibps", 1_048_576.0),
    ("Gbps", 1e9),
    ("Gibps", 1_073_741_824.0),
    ("Tbps", 1e12),
    ("Tibps", 1_099_511_627_776.0),
    ("Bps", 8.0),
    ("KBps", 8e3),
    ("KiBps", 8.0 * 1024.0),
    ("MBps", 8e6),
    ("MiBps", 8.0 * 1_048_576.0),
    ("GBps", 8e9),
    ("GiBps", 8.0 * 1_073_741_824.0),
    ("TBps", 8e12),
    ("TiBps", 8.0 * 1_099_511_627_776.0),
];

fn units(p: Prim) -> &'static [(&'static str, f64)] {
    match p {
        Prim::Size => SIZE_UNITS,
        Prim::Time => TIME_UNITS,
        Prim::Frequency => FREQUENCY_UNITS,
        Prim::Bitrate => BITRATE_UNITS,
        _ => &[],
    }
}

/// Parses a scalar-unit value (`"512 MB"`, `"1.5GHz"`) of the given kind into its base unit
/// (bytes, seconds, hertz, bits per second). Units are matched case-insensitively (bitrates
/// first exactly, since `bps` and `Bps` differ only in case).
pub(crate) fn parse_scalar(text: &str, kind: Prim) -> Result<f64, crate::Error> {
    let t = text.trim();
    let (number, unit) = match t.find(char::is_whitespace) {
        Some(i) => (t[..i].trim(), t[i..].trim()),
        None => {
            let i = t
                .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '+' | '-')))
                .unwrap_or(t.len());
            (&t[..i], &t[i..])
        }
    };
    let value: f64 = number
        .parse()
        .map_err(|source| crate::Error::ScalarNumber {
            number: number.to_string(),
            source,
        })?;
    if !value.is_finite() {
        return Err(crate::Error::ScalarNotFinite {
            number: number.to_string(),
        });
    }
    if unit.is_empty() {
        return Err(crate::Error::ScalarUnitMissing);
    }
    let table = units(kind);
    let factor = table
        .iter()
        .find(|(u, _)| *u == unit)
        .or_else(|| {
            if kind == Prim::Bitrate {
                None
            } else {
                table.iter().find(|(u, _)| u.eq_ignore_ascii_case(unit))
            }
        })
        .map(|(_, f)| *f)
        .ok_or_else(|| {
            let names: Vec<&str> = table.iter().map(|(u, _)| *u).collect();
            crate::Error::ScalarUnit {
                unit: unit.to_string(),
                kind: kind.name(),
                units: names.join(", "),
            }
        })?;
    Ok(value * factor)
}

/// A size in bytes, from a `scalar-unit.size` value.
pub(crate) fn size_bytes(node: &Node) -> Option<u64> {
    let bytes = parse_scalar(node.as_str()?, Prim::Size).ok()?;
    (bytes >= 0.0 && bytes < u64::MAX as f64).then(|| bytes.round() as u64)
}

/// A TOSCA version: `major.minor[.fix[.qualifier[-build]]]`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Version {
    numbers: [u64; 3],
    qualifier: String,
    build: u64,
}

pub(crate) fn parse_version(text: &str) -> Option<Version> {
    let (main, build) = match text.split_once('-') {
        Some((m, b)) => (m, b.parse().ok()?),
        None => (text, 0),
    };
    let parts: Vec<&str> = main.split('.').collect();
    if parts.len() < 2 || parts.len() > 4 {
        return None;
    }
    let mut numbers = [0u64; 3];
    for (i, p) in parts.iter().take(3).enumerate() {
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        numbers[i] = p.parse().ok()?;
    }
    let qualifier = parts.get(3).map(|q| q.to_string()).unwrap_or_default();
    if parts.len() == 4
        && (qualifier.is_empty() || !qualifier.bytes().all(|b| b.is_ascii_alphanumeric()))
    {
        return None;
    }
    if parts.len() < 4 && text.contains('-') {
        return None;
    }
    Some(Version {
        numbers,
        qualifier,
        build,
    })
}

/// Checks the shape of a YAML 1.1 / ISO 8601 timestamp (`2001-12-14`, `2001-12-14t21:59:43.10-05:00`,
/// `2001-12-14 21:59:43.10 -5`).
pub(crate) fn is_timestamp(text: &str) -> bool {
    let b = text.trim().as_bytes();
    let digits = |s: &[u8]| !s.is_empty() && s.iter().all(u8::is_ascii_digit);
    if b.len() < 10 || !digits(&b[0..4]) || b[4] != b'-' {
        return false;
    }
    let date = &text.trim()[5..];
    let (month, rest) = date.split_once('-').unwrap_or((date, ""));
    let day_len = rest.bytes().take_while(u8::is_ascii_digit).count();
    if !(1..=2).contains(&month.len()) || !digits(month.as_bytes()) || !(1..=2).contains(&day_len) {
        return false;
    }
    let time = &rest[day_len..];
    if time.is_empty() {
        return true;
    }
    let time = time
        .strip_prefix(['T', 't'])
        .or_else(|| Some(time.trim_start()))
        .unwrap_or(time);
    let mut it = time.splitn(3, ':');
    let (h, m, s) = (it.next(), it.next(), it.next());
    let (Some(h), Some(m), Some(s)) = (h, m, s) else {
        return false;
    };
    let sec_len = s
        .bytes()
        .take_while(|c| c.is_ascii_digit() || *c == b'.')
        .count();
    let zone = s[sec_len..].trim();
    digits(h.as_bytes())
        && h.len() <= 2
        && digits(m.as_bytes())
        && m.len() == 2
        && sec_len >= 2
        && (zone.is_empty()
            || zone == "Z"
            || zone
                .strip_prefix(['+', '-'])
                .is_some_and(|z| z.split(':').all(|p| digits(p.as_bytes()) && p.len() <= 2)))
}
