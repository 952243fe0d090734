//! The content port: how the VNFM fetches content it is pointed at (a VNF package uploaded
//! from a URI, SOL005 `upload_from_uri`).
//!
//! The caller decides whether a URI may be fetched (the allow-list) and where the bytes go; a
//! [`ContentFetcher`] fetches them and hands them to a [`ContentSink`] chunk by chunk, so a
//! large package is never held in memory. The HTTP implementation lives outside the core
//! (`vnfm-outbound`).

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

use async_trait::async_trait;

/// What to fetch.
#[derive(Clone, Copy)]
pub struct ContentRequest<'a> {
    /// Where the content is.
    pub uri: &'a str,
    /// HTTP Basic credentials (user name, password), when the source needs them.
    pub basic: Option<(&'a str, &'a str)>,
    /// Time limit of the whole transfer.
    pub timeout: Duration,
}

impl fmt::Debug for ContentRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The password stays out.
        f.debug_struct("ContentRequest")
            .field("uri", &self.uri)
            .field("user", &self.basic.map(|(user, _)| user))
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// Where fetched content goes, chunk by chunk.
#[async_trait]
pub trait ContentSink: Send {
    /// Takes the next chunk; an error stops the transfer and is returned by
    /// [`ContentFetcher::fetch`] as [`ContentError::Sink`] (e.g. a size limit passed).
    async fn push(&mut self, chunk: &[u8]) -> Result<(), Box<dyn StdError + Send + Sync>>;
}

/// Why fetching content failed. Messages name the URI's source and statuses, never the
/// credentials.
#[derive(Debug, thiserror::Error)]
pub enum ContentError {
    /// The request could not be sent or got no answer in time.
    #[error("fetching failed: {message}")]
    Unreachable {
        /// What failed.
        message: String,
        /// The underlying error, when there is one.
        #[source]
        source: Option<Box<dyn StdError + Send + Sync>>,
    },
    /// The source answered with an error status (`404 Not Found`).
    #[error("the source answered {0}")]
    Status(String),
    /// The body broke off.
    #[error("reading failed: {message}")]
    Read {
        /// What failed.
        message: String,
        /// The underlying error.
        #[source]
        source: Option<Box<dyn StdError + Send + Sync>>,
    },
    /// The sink refused a chunk.
    #[error("{0}")]
    Sink(#[source] Box<dyn StdError + Send + Sync>),
}

/// Fetches content from URIs.
#[async_trait]
pub trait ContentFetcher: Send + Sync {
    /// Fetches `request.uri` and hands the body to `sink`, chunk by chunk, in order.
    async fn fetch(
        &self,
        request: ContentRequest<'_>,
        sink: &mut dyn ContentSink,
    ) -> Result<(), ContentError>;
}

/// A [`ContentFetcher`] that fetches nothing (embedders that never upload from a URI): every
/// fetch fails with [`ContentError::Unreachable`].
#[derive(Debug, Clone, Copy, Default)]
pub struct NoContent;

#[async_trait]
impl ContentFetcher for NoContent {
    async fn fetch(
        &self,
        request: ContentRequest<'_>,
        _sink: &mut dyn ContentSink,
    ) -> Result<(), ContentError> {
        Err(ContentError::Unreachable {
            message: format!(
                "this VNFM has no content fetcher configured, so {} cannot be fetched",
                request.uri
            ),
            source: None,
        })
    }
}
