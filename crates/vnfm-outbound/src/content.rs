//! [`HttpContentFetcher`]: the HTTP implementation of the content port (packages uploaded
//! from a URI).

use std::time::Duration;

use async_trait::async_trait;
use reqwest::Client;
use vnfm_driver_api::{ContentError, ContentFetcher, ContentRequest, ContentSink};

use crate::OutboundError;
use crate::auth::{client_builder, describe};

/// Fetches content over HTTP(S) with `GET`, optionally with HTTP Basic, streaming the body to
/// the sink. Redirects are not followed: the caller's allow-list checked the URI asked for,
/// not where a redirect would lead.
pub struct HttpContentFetcher {
    http: Client,
}

impl std::fmt::Debug for HttpContentFetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpContentFetcher").finish_non_exhaustive()
    }
}

impl HttpContentFetcher {
    /// A fetcher whose connections are established within `connect_timeout`.
    pub fn new(connect_timeout: Duration) -> Result<HttpContentFetcher, OutboundError> {
        let http = client_builder(connect_timeout)
            .build()
            .map_err(OutboundError::Client)?;
        Ok(HttpContentFetcher { http })
    }
}

#[async_trait]
impl ContentFetcher for HttpContentFetcher {
    async fn fetch(
        &self,
        request: ContentRequest<'_>,
        sink: &mut dyn ContentSink,
    ) -> Result<(), ContentError> {
        let transfer = async {
            let mut get = self.http.get(request.uri);
            if let Some((user, password)) = request.basic {
                get = get.basic_auth(user, Some(password));
            }
            let mut response = get.send().await.map_err(|e| ContentError::Unreachable {
                message: describe(&e),
                source: Some(Box::new(e.without_url())),
            })?;
            if !response.status().is_success() {
                return Err(ContentError::Status(response.status().to_string()));
            }
            while let Some(chunk) = response.chunk().await.map_err(|e| ContentError::Read {
                message: describe(&e),
                source: Some(Box::new(e.without_url())),
            })? {
                sink.push(&chunk).await.map_err(ContentError::Sink)?;
            }
            Ok(())
        };
        tokio::time::timeout(request.timeout, transfer)
            .await
            .unwrap_or_else(|_| {
                Err(ContentError::Unreachable {
                    message: format!("not complete within {} s", request.timeout.as_secs()),
                    source: None,
                })
            })
    }
}
