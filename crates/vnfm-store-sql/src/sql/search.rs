//! Searching the stored documents' JSON text for the strings a filter needs
//! ([`vnfm_sol013::RequiredStrings`]), in the statement that pages a list by id, at most a
//! given number of rows per statement.

use vnfm_sol013::RequiredStrings;
use vnfm_store::{Page, StoreError};

use super::{Arg, Col, Dialect, SqlConn, columns, limit_clause, page};

/// The strings a list's documents must hold, and how many rows one statement may search.
pub(crate) struct DocumentSearch {
    /// For each requirement, the JSON texts one of which the document holds.
    fragments: Vec<Vec<String>>,
    scan_limit: Option<u32>,
    /// The last row the statement may read, once [`DocumentSearch::push`] found it (kept
    /// here: the statement's arguments borrow it).
    searched_to: std::sync::OnceLock<String>,
}

impl DocumentSearch {
    /// The search for `required` (none: no search), at most `scan_limit` rows per statement.
    pub(crate) fn new(required: &[RequiredStrings], scan_limit: Option<u32>) -> Self {
        DocumentSearch {
            fragments: required
                .iter()
                .map(RequiredStrings::json_fragments)
                .collect(),
            scan_limit,
            searched_to: std::sync::OnceLock::new(),
        }
    }

    /// Appends the search to `sql`, a `SELECT ... FROM {table} WHERE {conds}` whose `conds`
    /// (with `args`, which the search extends) select the rows in id order after the page's
    /// cursor. Returns the last row the search may read, when the scan limit stops it before
    /// the end: the statement reads no row after it.
    pub(crate) async fn push<'a, C: SqlConn>(
        &'a self,
        conn: &mut C,
        table: &str,
        conds: &str,
        sql: &mut String,
        args: &mut Vec<Arg<'a>>,
    ) -> Result<Option<String>, StoreError> {
        if self.fragments.is_empty() {
            return Ok(None);
        }
        if let Some(scan) = self.scan_limit {
            // The offset is written into the statement, not bound: see `limit_clause`.
            let bound = format!(
                "SELECT id FROM {table} WHERE {conds} ORDER BY id{} OFFSET {}",
                limit_clause(1),
                i64::from(scan.max(1)) - 1
            );
            let last = conn
                .rows(&bound, args, &[Col::Text])
                .await?
                .into_iter()
                .next()
                .map(|row| {
                    let [id] = columns(row)?;
                    id.text()
                })
                .transpose()?;
            if let Some(last) = last {
                let last = self.searched_to.get_or_init(|| last);
                args.push(last.as_str().into());
                sql.push_str(&format!(" AND id <= ${}", args.len()));
            }
        }
        for any_of in &self.fragments {
            push_text_contains("doc", any_of, C::DIALECT, sql, args);
        }
        Ok(self.searched_to.get().cloned())
    }
}

/// The page of `items` (read with a probe of one more than `limit`), ending at
/// `searched_to` (the last row a bounded search read) when it is not full.
pub(crate) fn searched_page<T>(
    items: Vec<T>,
    limit: i64,
    key: impl Fn(&T) -> String,
    searched_to: Option<String>,
) -> Page<T> {
    let full = items.len() as i64 > limit;
    let mut page = page(items, limit, key);
    if !full {
        page.next = searched_to;
    }
    page
}

/// Appends the condition that `column` contains one of `any_of` (none: no row matches), as a
/// substring search: SQLite's `instr`, PostgreSQL's `strpos` (no pattern to escape).
fn push_text_contains<'a>(
    column: &str,
    any_of: &'a [String],
    dialect: Dialect,
    sql: &mut String,
    args: &mut Vec<Arg<'a>>,
) {
    let function = match dialect {
        Dialect::Sqlite => "instr",
        Dialect::Postgres => "strpos",
    };
    let mut alternatives = Vec::with_capacity(any_of.len());
    for fragment in any_of {
        args.push(fragment.as_str().into());
        alternatives.push(format!("{function}({column}, ${}) > 0", args.len()));
    }
    if alternatives.is_empty() {
        alternatives.push("1 = 0".to_owned());
    }
    sql.push_str(&format!(" AND ({})", alternatives.join(" OR ")));
}
