//! Printing: aligned tables and field lists for people, the server's documents as JSON or
//! YAML for scripts.

use std::io::Write;

use serde_json::Value;

use super::config::OutputFormat;
use super::error::ClientError;

/// Writes `text` to stdout; a closed pipe (`| head`) ends quietly.
pub fn emit(text: &str) -> Result<(), ClientError> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(ClientError::Output(e)),
    }
}

/// The document as pretty JSON or YAML, with a final newline.
pub fn document(format: OutputFormat, value: &Value) -> String {
    match format {
        OutputFormat::Yaml => {
            let mut s = serde_saphyr::to_string(value).unwrap_or_else(|e| format!("# {e}\n"));
            if !s.ends_with('\n') {
                s.push('\n');
            }
            s
        }
        OutputFormat::Json | OutputFormat::Table => {
            let mut s = serde_json::to_string_pretty(value).unwrap_or_default();
            s.push('\n');
            s
        }
    }
}

/// Prints `value` as JSON/YAML, or the people's rendering `table` in table mode.
pub fn print(
    format: OutputFormat,
    value: &Value,
    table: impl FnOnce(&Value) -> String,
) -> Result<(), ClientError> {
    match format {
        OutputFormat::Table => emit(&table(value)),
        other => emit(&document(other, value)),
    }
}

/// A table with a header row; columns are aligned on character counts.
#[derive(Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column titles.
    pub fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|h| (*h).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row (missing cells are blank, extra cells are dropped).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The aligned text, one line per row, with a trailing newline.
    pub fn render(&self) -> String {
        let n = self.header.len();
        let cell = |row: &[String], i: usize| -> String {
            row.get(i)
                .map(|c| c.replace(['\n', '\r', '\t'], " "))
                .unwrap_or_default()
        };
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for r in &self.rows {
            for (i, w) in widths.iter_mut().enumerate() {
                *w = (*w).max(cell(r, i).chars().count());
            }
        }
        let mut out = String::new();
        let mut line = |cells: Vec<String>| {
            let mut l = String::new();
            for (i, c) in cells.iter().enumerate() {
                l.push_str(c);
                if i + 1 < n {
                    let pad = widths[i].saturating_sub(c.chars().count()) + 2;
                    l.extend(std::iter::repeat_n(' ', pad));
                }
            }
            out.push_str(l.trim_end());
            out.push('\n');
        };
        line(self.header.clone());
        for r in &self.rows {
            line((0..n).map(|i| cell(r, i)).collect());
        }
        out
    }
}

/// A two-column list of fields; empty values are left out.
pub fn fields(pairs: &[(&str, String)]) -> String {
    let width = pairs
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for (k, v) in pairs.iter().filter(|(_, v)| !v.is_empty()) {
        let pad = width - k.chars().count();
        let mut lines = v.lines();
        let first = lines.next().unwrap_or("");
        out.push_str(&format!("{k}:{} {first}\n", " ".repeat(pad)));
        for l in lines {
            out.push_str(&format!("{} {l}\n", " ".repeat(width + 1)));
        }
    }
    out
}

/// The string at a JSON pointer, numbers and booleans as text, else "".
pub fn s(v: &Value, pointer: &str) -> String {
    match v.pointer(pointer) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        _ => String::new(),
    }
}

/// The length of the array at a pointer (0 when absent).
pub fn count(v: &Value, pointer: &str) -> usize {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

/// A compact one-line JSON rendering of the value at a pointer ("" when absent or empty).
pub fn compact(v: &Value, pointer: &str) -> String {
    match v.pointer(pointer) {
        None | Some(Value::Null) => String::new(),
        Some(Value::Object(m)) if m.is_empty() => String::new(),
        Some(Value::Array(a)) if a.is_empty() => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// The value at a pointer as indented YAML ("" when absent or empty), for nested sections.
pub fn nested_yaml(v: &Value, pointer: &str) -> String {
    match v.pointer(pointer) {
        None | Some(Value::Null) => String::new(),
        Some(Value::Object(m)) if m.is_empty() => String::new(),
        Some(Value::Array(a)) if a.is_empty() => String::new(),
        Some(other) => document(OutputFormat::Yaml, other).trim_end().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn table_aligns_columns_on_the_widest_cell() {
        let mut t = Table::new(&["ID", "STATE"]);
        t.row(vec!["a".into(), "COMPLETED".into()]);
        t.row(vec!["long-id".into(), "FAILED_TEMP".into()]);
        t.row(vec!["x\ny".into()]);
        assert_eq!(
            t.render(),
            "ID       STATE\na        COMPLETED\nlong-id  FAILED_TEMP\nx y\n"
        );
    }

    #[test]
    fn fields_skip_empty_values_and_indent_continuations() {
        let text = fields(&[
            ("ID", "1".into()),
            ("Empty", String::new()),
            ("Details", "a: 1\nb: 2".into()),
        ]);
        assert_eq!(text, "ID:      1\nDetails: a: 1\n         b: 2\n");
    }

    #[test]
    fn yaml_and_json_documents_round_trip() {
        let v = json!({"id": "x", "n": 2, "list": ["a", "b"], "nested": {"yes": "yes"}});
        let y = document(OutputFormat::Yaml, &v);
        let back: Value = serde_saphyr::from_str(&y).unwrap();
        assert_eq!(back, v);
        let j = document(OutputFormat::Json, &v);
        assert_eq!(serde_json::from_str::<Value>(&j).unwrap(), v);
    }

    #[test]
    fn pointer_helpers() {
        let v = json!({"a": {"b": 3, "c": [1, 2], "d": {}}});
        assert_eq!(s(&v, "/a/b"), "3");
        assert_eq!(count(&v, "/a/c"), 2);
        assert_eq!(compact(&v, "/a/d"), "");
        assert_eq!(compact(&v, "/a/c"), "[1,2]");
        assert_eq!(s(&v, "/missing"), "");
    }
}
