//! Several writes sent to PostgreSQL as one statement of data-modifying common table
//! expressions (`WITH a AS (INSERT ...), b AS (UPDATE ...) SELECT ...`): each statement is a
//! round trip to the server, so a lifecycle step whose writes are chained costs one round
//! trip (plus `BEGIN` and `COMMIT`) instead of one per write. SQLite has no data-modifying
//! `WITH`, and its statements are calls within the process, so it runs the same writes one
//! by one.
//!
//! Each write is written once, with its own placeholders `$1`, `$2`, ..., and renumbered when
//! it joins a chain. The writes of a chain all see the database as it was before the
//! statement and run in an order PostgreSQL chooses; a write that depends on another reads it
//! by name (`FROM occ_moved`). Writes whose order matters (outbox rows, numbered by their
//! insertion) are not chained.

use std::fmt::Write as _;

use super::Arg;

/// A statement being composed of named writes.
#[derive(Debug, Default)]
pub(crate) struct Chain<'a> {
    sql: String,
    args: Vec<Arg<'a>>,
}

impl<'a> Chain<'a> {
    /// An empty chain.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Adds `sql`, whose placeholders `$1`..`$n` are `args`, as the expression `name`, which
    /// the writes added after it and the final `SELECT` may read.
    pub(crate) fn push(&mut self, name: &str, sql: &str, args: &[Arg<'a>]) {
        self.push_as(name, "", sql, args);
    }

    /// [`Chain::push`] of a read that is evaluated once, on its own, before the expressions
    /// that read it (`AS MATERIALIZED`): a `SELECT ... FOR UPDATE` whose row lock the writes
    /// reading it must find taken.
    pub(crate) fn push_materialized(&mut self, name: &str, sql: &str, args: &[Arg<'a>]) {
        self.push_as(name, " MATERIALIZED", sql, args);
    }

    fn push_as(&mut self, name: &str, how: &str, sql: &str, args: &[Arg<'a>]) {
        self.sql
            .push_str(if self.sql.is_empty() { "WITH " } else { ", " });
        // Writing to a String cannot fail.
        let _ = write!(self.sql, "{name} AS{how} (");
        renumber_into(&mut self.sql, sql, self.args.len());
        self.sql.push(')');
        self.args.extend_from_slice(args);
    }

    /// The statement, answering `select` (which names the chain's expressions and binds no
    /// argument), and its arguments.
    pub(crate) fn finish(mut self, select: &str) -> (String, Vec<Arg<'a>>) {
        self.sql.push(' ');
        self.sql.push_str(select);
        (self.sql, self.args)
    }
}

/// Appends to `out` the text `sql` with each placeholder `$n` made `$(n + offset)`; quoted
/// text and identifiers are copied as they are (a `$` in them is not a placeholder). The text
/// between placeholders is copied a run at a time (a chain is composed for every write).
fn renumber_into(out: &mut String, sql: &str, offset: usize) {
    let bytes = sql.as_bytes();
    let mut quote: Option<u8> = None;
    // The start of the text not yet copied.
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match (quote, b) {
            (Some(q), b) if b == q => quote = None,
            (Some(_), _) => {}
            (None, b'\'' | b'"') => quote = Some(b),
            (None, b'$') => {
                let digits = bytes[i + 1..]
                    .iter()
                    .take_while(|d| d.is_ascii_digit())
                    .count();
                if let Ok(n) = sql[i + 1..i + 1 + digits].parse::<usize>() {
                    out.push_str(&sql[copied..i]);
                    let _ = write!(out, "${}", n + offset);
                    copied = i + 1 + digits;
                }
                i += 1 + digits;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out.push_str(&sql[copied..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn renumbered(sql: &str, offset: usize) -> String {
        let mut out = String::new();
        renumber_into(&mut out, sql, offset);
        out
    }

    #[test]
    fn placeholders_are_renumbered_outside_quotes() {
        assert_eq!(
            renumbered(
                "UPDATE t SET a = $1, b = '$2', \"c$3\" = $10 WHERE d = $2",
                3
            ),
            "UPDATE t SET a = $4, b = '$2', \"c$3\" = $13 WHERE d = $5"
        );
        assert_eq!(
            renumbered("SELECT 'it''s $1' || $1", 1),
            "SELECT 'it''s $1' || $2"
        );
        assert_eq!(renumbered("SELECT $ || $x", 5), "SELECT $ || $x");
    }

    #[test]
    fn writes_are_numbered_one_after_another() {
        let mut chain = Chain::new();
        chain.push(
            "a",
            "INSERT INTO t VALUES ($1, $2)",
            &["x".into(), 1i64.into()],
        );
        chain.push("b", "UPDATE u SET v = $1 FROM a", &["y".into()]);
        let (sql, args) = chain.finish("SELECT 1");
        assert_eq!(
            sql,
            "WITH a AS (INSERT INTO t VALUES ($1, $2)), b AS (UPDATE u SET v = $3 FROM a) SELECT 1"
        );
        assert_eq!(args.len(), 3);
        assert!(matches!(args[2], Arg::Text("y")));
    }
}
