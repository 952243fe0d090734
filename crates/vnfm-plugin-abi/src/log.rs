//! [`LogRecord`]: one log line a plugin wrote.

use serde::{Deserialize, Serialize};

use crate::ffi::level;

/// One log line of a plugin: a [`level`] and the text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogRecord {
    /// One of [`level`] (`ERROR` = 1 ... `TRACE` = 5).
    pub level: u32,
    /// The text (UTF-8).
    pub message: String,
}

/// The name of a [`level`] (`"error"`, `"warn"`, `"info"`, `"debug"`, `"trace"`); levels
/// this version does not know are `"trace"`.
pub fn level_name(value: u32) -> &'static str {
    match value {
        level::ERROR => "error",
        level::WARN => "warn",
        level::INFO => "info",
        level::DEBUG => "debug",
        _ => "trace",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_ordered_and_named() {
        assert_eq!(
            [
                level::ERROR,
                level::WARN,
                level::INFO,
                level::DEBUG,
                level::TRACE
            ],
            [1, 2, 3, 4, 5]
        );
        assert_eq!(level_name(level::WARN), "warn");
        assert_eq!(level_name(42), "trace");
        let r: LogRecord = serde_json::from_str(r#"{"level": 3, "message": "m"}"#).unwrap();
        assert_eq!(r.level, level::INFO);
    }
}
