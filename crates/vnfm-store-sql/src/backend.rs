//! Driver errors as [`StoreError`]s, and store URLs with their passwords hidden.

use vnfm_store::StoreError;

/// Maps a driver error to [`StoreError::Backend`]. sqlx errors carry no bound values, and
/// connection errors are produced before any URL is echoed (see `redact_url`).
pub(crate) fn backend(e: sqlx::Error) -> StoreError {
    match &e {
        sqlx::Error::Database(db) => {
            let code = db
                .code()
                .map(|c| format!(" (code {c})"))
                .unwrap_or_default();
            StoreError::Backend(format!("{}{code}", db.message()))
        }
        _ => StoreError::Backend(e.to_string()),
    }
}

/// `url` with any password replaced by `***`, for error messages.
pub(crate) fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_owned();
    };
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let Some(at) = authority.rfind('@') else {
        return url.to_owned();
    };
    let userinfo = &authority[..at];
    let user = userinfo.split(':').next().unwrap_or("");
    let redacted = if userinfo.contains(':') {
        format!("{user}:***")
    } else {
        user.to_owned()
    };
    format!(
        "{}://{redacted}{}",
        &url[..scheme_end],
        &rest[at..] // keeps '@' and everything after
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_url_hides_password_only() {
        assert_eq!(
            redact_url("postgres://vnfm:s3cret@db:5432/vnfm?sslmode=disable"),
            "postgres://vnfm:***@db:5432/vnfm?sslmode=disable"
        );
        assert_eq!(
            redact_url("postgres://vnfm@db/vnfm"),
            "postgres://vnfm@db/vnfm"
        );
        assert_eq!(redact_url("sqlite::memory:"), "sqlite::memory:");
        // An '@' in the path is not userinfo.
        assert_eq!(redact_url("postgres://db/x@y"), "postgres://db/x@y");
    }
}
