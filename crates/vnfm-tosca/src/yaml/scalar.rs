//! YAML 1.2 core-schema resolution of scalars: which plain scalars are null, booleans, integers
//! and floats, and what explicit core tags (`!!str`, `!!int`...) demand.
//!
//! Booleans are the strict YAML 1.2 ones (`true`/`false` in any case); YAML 1.1's `yes`, `on`
//! and their kin stay strings, as TOSCA requires.

use granit_parser::{ScalarStyle, Tag};

use super::Value;

/// The handle of the YAML core schema's tags (`!!str` is `tag:yaml.org,2002:str`).
const CORE_HANDLE: &str = "tag:yaml.org,2002:";

/// The value of a scalar written as `text` in `style`, under `tag` when it has one. An error
/// names what the tag demanded and the text did not give.
pub(super) fn resolve(
    text: &str,
    style: ScalarStyle,
    tag: Option<&Tag>,
) -> Result<Value, crate::Error> {
    if let Some(tag) = tag {
        if tag.handle() == CORE_HANDLE {
            return resolve_core(text, tag.suffix());
        }
        // The non-specific tag `!` makes any scalar a string; other tags carry no meaning for
        // a descriptor and are read past.
        if tag.handle().is_empty() && tag.suffix() == "!" {
            return Ok(Value::Str(text.to_owned()));
        }
    }
    if style != ScalarStyle::Plain {
        return Ok(Value::Str(text.to_owned()));
    }
    Ok(resolve_plain(text))
}

/// A scalar under an explicit core tag.
fn resolve_core(text: &str, kind: &str) -> Result<Value, crate::Error> {
    let invalid = |what| crate::Error::CoreTag {
        text: text.to_owned(),
        what,
        tag: kind.to_owned(),
    };
    match kind {
        "null" => Ok(Value::Null),
        "bool" => match bool_of(text) {
            Some(b) => Ok(Value::Bool(b)),
            None => Err(invalid("a boolean")),
        },
        "int" => int_of(text).ok_or_else(|| invalid("an integer")),
        "float" => float_of(text).ok_or_else(|| invalid("a number")),
        // `!!binary` and the rest: kept as written (a descriptor has no use for bytes).
        _ => Ok(Value::Str(text.to_owned())),
    }
}

/// An untagged plain scalar: null, boolean, integer, float, or else a string.
fn resolve_plain(text: &str) -> Value {
    if text.is_empty() || text == "~" || text.eq_ignore_ascii_case("null") {
        return Value::Null;
    }
    if let Some(b) = bool_of(text) {
        return Value::Bool(b);
    }
    // Only numeral-shaped text can be a number; this keeps the common case (words) cheap.
    let numeral = text
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.'));
    if numeral && let Some(v) = int_of(text).or_else(|| float_of(text)) {
        return v;
    }
    Value::Str(text.to_owned())
}

fn bool_of(text: &str) -> Option<bool> {
    if text.eq_ignore_ascii_case("true") {
        Some(true)
    } else if text.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

/// An integer: optional sign, then decimal without a redundant leading zero, or `0x`, `0o`,
/// `0b` digits; `_` may separate digits. A magnitude beyond `i64` is kept as a float.
fn int_of(text: &str) -> Option<Value> {
    let (negative, rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (radix, digits) = if let Some(d) = strip_prefix_either(rest, "0x") {
        (16, d)
    } else if let Some(d) = strip_prefix_either(rest, "0o") {
        (8, d)
    } else if let Some(d) = strip_prefix_either(rest, "0b") {
        (2, d)
    } else {
        if rest.starts_with('0') && rest != "0" {
            return None;
        }
        (10, rest)
    };
    let magnitude = digits_of(digits, radix)?;
    let value = if negative {
        0i128.checked_sub(i128::try_from(magnitude).ok()?)?
    } else {
        i128::try_from(magnitude).ok()?
    };
    Some(match i64::try_from(value) {
        Ok(i) => Value::Int(i),
        Err(_) => Value::Float(value as f64),
    })
}

fn strip_prefix_either<'a>(text: &'a str, lower: &str) -> Option<&'a str> {
    text.strip_prefix(lower)
        .or_else(|| text.strip_prefix(&lower.to_ascii_uppercase()))
}

/// Digits in `radix`, with single `_` allowed between digits.
fn digits_of(digits: &str, radix: u32) -> Option<u128> {
    let bytes = digits.as_bytes();
    let mut value: u128 = 0;
    let mut any = false;
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'_' {
            let between =
                i > 0 && bytes[i - 1] != b'_' && bytes.get(i + 1).is_some_and(|n| *n != b'_');
            if !between {
                return None;
            }
            continue;
        }
        let digit = char::from(b).to_digit(radix)?;
        value = value
            .checked_mul(u128::from(radix))?
            .checked_add(u128::from(digit))?;
        any = true;
    }
    any.then_some(value)
}

/// A float: `.inf`, `-.inf`, `.nan` in any case, or a finite decimal numeral. A numeral beyond
/// `f64` (`1e999`) is infinite.
fn float_of(text: &str) -> Option<Value> {
    let lower = text.to_ascii_lowercase();
    let value = match lower.as_str() {
        ".nan" | "+.nan" | "-.nan" => f64::NAN,
        ".inf" | "+.inf" => f64::INFINITY,
        "-.inf" => f64::NEG_INFINITY,
        _ => {
            // Rust's parser also takes `inf` and `nan` spelled out, which YAML keeps as words.
            let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
            if !unsigned
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_digit() || b == b'.')
            {
                return None;
            }
            let v: f64 = text.parse().ok()?;
            if v.is_nan() {
                return None;
            }
            v
        }
    };
    Some(Value::Float(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(text: &str) -> Value {
        resolve(text, ScalarStyle::Plain, None).unwrap()
    }

    #[test]
    fn plain_scalars_follow_the_core_schema() {
        assert_eq!(plain(""), Value::Null);
        assert_eq!(plain("~"), Value::Null);
        assert_eq!(plain("NULL"), Value::Null);
        assert_eq!(plain("True"), Value::Bool(true));
        assert_eq!(plain("yes"), Value::Str("yes".into()));
        assert_eq!(plain("12"), Value::Int(12));
        assert_eq!(plain("-12"), Value::Int(-12));
        assert_eq!(plain("+12"), Value::Int(12));
        assert_eq!(plain("1_000"), Value::Int(1000));
        assert_eq!(plain("1__0"), Value::Str("1__0".into()));
        assert_eq!(plain("0x1F"), Value::Int(31));
        assert_eq!(plain("0o17"), Value::Int(15));
        assert_eq!(plain("0b101"), Value::Int(5));
        // A redundant leading zero is not a YAML 1.2 integer; the text still reads as a float.
        assert_eq!(plain("0127"), Value::Float(127.0));
        assert_eq!(plain("1.5"), Value::Float(1.5));
        assert_eq!(plain(".5"), Value::Float(0.5));
        assert_eq!(plain("1e3"), Value::Float(1000.0));
        assert_eq!(plain(".inf"), Value::Float(f64::INFINITY));
        assert_eq!(plain("-.INF"), Value::Float(f64::NEG_INFINITY));
        assert_eq!(plain("1e999"), Value::Float(f64::INFINITY));
        assert_eq!(plain("inf"), Value::Str("inf".into()));
        assert_eq!(plain("nan"), Value::Str("nan".into()));
        assert_eq!(
            plain("9223372036854775808"),
            Value::Float(9.223372036854776e18)
        );
        assert_eq!(plain("1.0.0"), Value::Str("1.0.0".into()));
        assert_eq!(plain("-"), Value::Str("-".into()));
    }

    #[test]
    fn quoted_scalars_and_the_str_tag_stay_strings() {
        let quoted = resolve("12", ScalarStyle::SingleQuoted, None).unwrap();
        assert_eq!(quoted, Value::Str("12".into()));
        let tagged = resolve(
            "12",
            ScalarStyle::Plain,
            Some(&Tag::new(CORE_HANDLE, "str")),
        )
        .unwrap();
        assert_eq!(tagged, Value::Str("12".into()));
        let bang = resolve("true", ScalarStyle::Plain, Some(&Tag::new("", "!"))).unwrap();
        assert_eq!(bang, Value::Str("true".into()));
    }

    #[test]
    fn core_tags_demand_their_type() {
        let int = Tag::new(CORE_HANDLE, "int");
        assert_eq!(
            resolve("7", ScalarStyle::DoubleQuoted, Some(&int)).unwrap(),
            Value::Int(7)
        );
        let err = resolve("seven", ScalarStyle::Plain, Some(&int)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "`seven` is not an integer, as its tag `!!int` requires"
        );
        let null = Tag::new(CORE_HANDLE, "null");
        assert_eq!(
            resolve("x", ScalarStyle::Plain, Some(&null)).unwrap(),
            Value::Null
        );
    }
}
