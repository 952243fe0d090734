//! A client of Prometheus' HTTP query API: `/api/v1/query` (instant) and
//! `/api/v1/query_range` (range), with typed results.
//!
//! Requests are `POST`s with a form body (long PromQL does not hit URL length limits), each
//! bounded by the request timeout of [`ClientOptions`]; answers are read up to a size limit.
//! Credentials ([`Auth`]) are sent as an `Authorization` header and never appear in `Debug`
//! output or errors.
//!
//! ```no_run
//! use std::time::Duration;
//! use vnfm_prometheus::{ClientOptions, InstantResult, PrometheusClient};
//!
//! # async fn run() -> Result<(), vnfm_prometheus::Error> {
//! let prometheus = PrometheusClient::new(
//!     "http://127.0.0.1:9090",
//!     ClientOptions { timeout: Duration::from_secs(5), ..ClientOptions::default() },
//! )?;
//! if let InstantResult::Vector(samples) = prometheus.query("up", None).await?.result {
//!     for s in samples {
//!         println!("{:?} = {}", s.labels, s.value);
//!     }
//! }
//! # Ok(())
//! # }
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use jiff::Timestamp;
use reqwest::{StatusCode, Url};
use serde::Deserialize;

use crate::Error;

/// Labels of a series, sorted by name.
pub type Labels = BTreeMap<String, String>;

/// How the client authenticates to Prometheus (or to the proxy in front of it).
#[derive(Clone, PartialEq, Eq)]
pub enum Auth {
    /// `Authorization: Bearer <token>`.
    Bearer {
        /// The token.
        token: String,
    },
    /// HTTP basic authentication.
    Basic {
        /// The user name.
        username: String,
        /// The password.
        password: String,
    },
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::Bearer { .. } => f.debug_struct("Bearer").field("token", &"***").finish(),
            Auth::Basic { username, .. } => f
                .debug_struct("Basic")
                .field("username", username)
                .field("password", &"***")
                .finish(),
        }
    }
}

/// Settings of a [`PrometheusClient`].
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// The time one request may take, from sending to the last byte of the answer.
    pub timeout: Duration,
    /// Credentials, if Prometheus asks for any.
    pub auth: Option<Auth>,
    /// Extra CA certificates (PEM) to trust for `https` URLs, besides the system's.
    pub ca_pem: Option<String>,
    /// The largest answer read, in bytes.
    pub max_response_bytes: usize,
}

impl Default for ClientOptions {
    /// 30 s timeout, no credentials, the system's CAs, answers up to 64 MiB.
    fn default() -> Self {
        ClientOptions {
            timeout: Duration::from_secs(30),
            auth: None,
            ca_pem: None,
            max_response_bytes: 64 << 20,
        }
    }
}

/// One value of a series at one instant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// When (Prometheus' millisecond precision).
    pub at: Timestamp,
    /// The value (`NaN`, `+Inf` and `-Inf` included).
    pub value: f64,
}

/// One series of an instant vector: its labels and its value at the evaluation time.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The series' labels (`__name__` included when the expression kept it).
    pub labels: Labels,
    /// The evaluation time.
    pub at: Timestamp,
    /// The value.
    pub value: f64,
}

/// One series of a range query's matrix: its labels and its values, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The series' labels.
    pub labels: Labels,
    /// The values at each step where the series had one.
    pub points: Vec<Point>,
}

/// The result of an instant query, by the expression's type.
#[derive(Debug, Clone, PartialEq)]
pub enum InstantResult {
    /// An instant vector: zero or more series.
    Vector(Vec<Sample>),
    /// A matrix (the expression is a range vector selector such as `up[5m]`).
    Matrix(Vec<Series>),
    /// A scalar, such as `time()` or `scalar(...)`.
    Scalar(Point),
    /// A string literal.
    String {
        /// The evaluation time.
        at: Timestamp,
        /// The string.
        value: String,
    },
}

/// The answer to an instant query.
#[derive(Debug, Clone, PartialEq)]
pub struct InstantAnswer {
    /// The result.
    pub result: InstantResult,
    /// Warnings Prometheus attached (a partial answer, for instance).
    pub warnings: Vec<String>,
}

/// The answer to a range query.
#[derive(Debug, Clone, PartialEq)]
pub struct RangeAnswer {
    /// The series, each with its values at the steps.
    pub series: Vec<Series>,
    /// Warnings Prometheus attached.
    pub warnings: Vec<String>,
}

/// The time range and resolution of a range query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeQuery {
    /// The first evaluation time.
    pub start: Timestamp,
    /// The last evaluation time (inclusive).
    pub end: Timestamp,
    /// The time between evaluations.
    pub step: Duration,
}

/// A client of one Prometheus server. Cheap to clone (the connection pool is shared).
#[derive(Clone)]
pub struct PrometheusClient {
    http: reqwest::Client,
    base: Url,
    options: ClientOptions,
}

impl fmt::Debug for PrometheusClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrometheusClient")
            .field("base", &self.base.as_str())
            .field("options", &self.options)
            .finish()
    }
}

/// The `http` or `https` URL to use, with a trailing `/` so that API paths are appended to
/// any path prefix (`http://host/prometheus/` + `api/v1/query`).
fn base_url(url: &str) -> Result<Url, Error> {
    let invalid = |shown: &str, reason: &str| Error::InvalidUrl {
        url: shown.into(),
        reason: reason.into(),
    };
    let mut parsed = Url::parse(url).map_err(|e| {
        // The text may carry user information: show it only when it has none.
        let shown = if url.contains('@') {
            "<not shown>"
        } else {
            url
        };
        invalid(shown, &e.to_string())
    })?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        let _ = parsed.set_username("");
        let _ = parsed.set_password(None);
        return Err(invalid(
            parsed.as_str(),
            "credentials in the URL are not accepted; give them as `auth`",
        ));
    }
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(invalid(parsed.as_str(), "the scheme must be http or https"));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(invalid(
            parsed.as_str(),
            "the URL must not have a query or fragment",
        ));
    }
    if !parsed.path().ends_with('/') {
        let path = format!("{}/", parsed.path());
        parsed.set_path(&path);
    }
    Ok(parsed)
}

impl PrometheusClient {
    /// A client of the Prometheus at `url` (`http://host:9090`, or with a path prefix when
    /// it is served under one). No request is made yet. Installs ring as the process's
    /// rustls provider if none is installed (see STACK.md).
    pub fn new(url: &str, options: ClientOptions) -> Result<PrometheusClient, Error> {
        let base = base_url(url)?;
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = reqwest::Client::builder()
            .connect_timeout(options.timeout.min(Duration::from_secs(10)))
            // A redirect could carry the credentials to another host.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("vnfm-prometheus/", env!("CARGO_PKG_VERSION")));
        if let Some(pem) = &options.ca_pem {
            let certs = reqwest::Certificate::from_pem_bundle(pem.as_bytes())
                .map_err(Error::CaCertificates)?;
            builder = builder.tls_certs_merge(certs);
        }
        let http = builder.build().map_err(Error::ClientBuild)?;
        Ok(PrometheusClient {
            http,
            base,
            options,
        })
    }

    /// The base URL, with its trailing `/`.
    pub fn url(&self) -> &str {
        self.base.as_str()
    }

    /// Evaluates `promql` at `at` (Prometheus' current time when `None`).
    pub async fn query(&self, promql: &str, at: Option<Timestamp>) -> Result<InstantAnswer, Error> {
        let mut form = vec![("query", promql.to_string())];
        if let Some(at) = at {
            form.push(("time", rfc3339(at)));
        }
        let (url, data, warnings) = self.call("api/v1/query", &form).await?;
        let result = match data {
            RawData::Vector(v) => InstantResult::Vector(
                v.into_iter()
                    .map(|s| {
                        let p = point(&url, s.value)?;
                        Ok(Sample {
                            labels: s.metric,
                            at: p.at,
                            value: p.value,
                        })
                    })
                    .collect::<Result<_, Error>>()?,
            ),
            RawData::Matrix(m) => InstantResult::Matrix(series(&url, m)?),
            RawData::Scalar(p) => InstantResult::Scalar(point(&url, Some(p))?),
            RawData::String((t, value)) => InstantResult::String {
                at: timestamp(&url, t)?,
                value,
            },
        };
        Ok(InstantAnswer { result, warnings })
    }

    /// Evaluates `promql` at every `range.step` from `range.start` to `range.end`.
    pub async fn query_range(
        &self,
        promql: &str,
        range: &RangeQuery,
    ) -> Result<RangeAnswer, Error> {
        let form = [
            ("query", promql.to_string()),
            ("start", rfc3339(range.start)),
            ("end", rfc3339(range.end)),
            ("step", format!("{}", range.step.as_secs_f64())),
        ];
        let (url, data, warnings) = self.call("api/v1/query_range", &form).await?;
        match data {
            RawData::Matrix(m) => Ok(RangeAnswer {
                series: series(&url, m)?,
                warnings,
            }),
            other => Err(Error::BadResponse {
                url,
                reason: format!(
                    "a range query answered with a {}, not a matrix",
                    other.kind()
                ),
                source: None,
            }),
        }
    }

    /// Sends one API request; answers the URL called, the result and the warnings.
    async fn call(
        &self,
        path: &str,
        form: &[(&str, String)],
    ) -> Result<(String, RawData, Vec<String>), Error> {
        let endpoint = self.base.join(path).map_err(|e| Error::InvalidUrl {
            url: self.base.to_string(),
            reason: e.to_string(),
        })?;
        let url = endpoint.to_string();
        let mut request = self
            .http
            .post(endpoint)
            .timeout(self.options.timeout)
            .header(reqwest::header::ACCEPT, "application/json")
            .form(form);
        request = match &self.options.auth {
            Some(Auth::Bearer { token }) => request.bearer_auth(token),
            Some(Auth::Basic { username, password }) => {
                request.basic_auth(username, Some(password))
            }
            None => request,
        };
        let transport = |e: reqwest::Error, url: &str| {
            let e = e.without_url();
            if e.is_timeout() {
                Error::Timeout {
                    url: url.into(),
                    timeout: self.options.timeout,
                    source: e,
                }
            } else {
                Error::Unreachable {
                    url: url.into(),
                    source: e,
                }
            }
        };
        let mut response = request.send().await.map_err(|e| transport(e, &url))?;
        let status = response.status();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| transport(e, &url))? {
            if body.len() + chunk.len() > self.options.max_response_bytes {
                return Err(Error::BadResponse {
                    url,
                    reason: format!(
                        "the answer is larger than {} bytes",
                        self.options.max_response_bytes
                    ),
                    source: None,
                });
            }
            body.extend_from_slice(&chunk);
        }
        interpret(url, status, &body)
    }
}

/// Reads an answer of the query API.
fn interpret(
    url: String,
    status: StatusCode,
    body: &[u8],
) -> Result<(String, RawData, Vec<String>), Error> {
    let parsed = serde_json::from_slice::<RawResponse>(body);
    match parsed {
        Ok(RawResponse {
            status: ApiStatus::Error,
            error_type,
            error,
            ..
        }) => Err(Error::Promql {
            error_type: error_type.unwrap_or_else(|| "unknown".into()),
            message: error.unwrap_or_else(|| format!("HTTP {}", status.as_u16())),
        }),
        _ if !status.is_success() => Err(Error::Http {
            url,
            status: status.as_u16(),
            body: excerpt(body),
        }),
        Ok(RawResponse {
            status: ApiStatus::Success,
            data: Some(data),
            warnings,
            ..
        }) => Ok((url, data, warnings)),
        Ok(_) => Err(Error::BadResponse {
            url,
            reason: "\"status\" is \"success\" but there is no \"data\"".into(),
            source: None,
        }),
        Err(e) => Err(Error::BadResponse {
            url,
            reason: format!("not a query API answer: {e}"),
            source: Some(e),
        }),
    }
}

/// The start of a body, for an error message.
fn excerpt(body: &[u8]) -> String {
    const MAX: usize = 300;
    let text = String::from_utf8_lossy(&body[..body.len().min(MAX)]);
    let mut s = text.trim().to_string();
    if body.len() > MAX {
        s.push_str("...");
    }
    if s.is_empty() {
        "(empty body)".into()
    } else {
        s
    }
}

/// A timestamp as the API takes it (RFC 3339).
fn rfc3339(t: Timestamp) -> String {
    t.to_string()
}

fn timestamp(url: &str, seconds: f64) -> Result<Timestamp, Error> {
    let ms = (seconds * 1000.0).round();
    Timestamp::from_millisecond(ms as i64).map_err(|e| Error::BadResponse {
        url: url.into(),
        reason: format!("timestamp {seconds} is out of range: {e}"),
        source: None,
    })
}

/// A sample value as Prometheus writes it (Go's `strconv.FormatFloat`: `NaN`, `+Inf`, `-Inf`
/// or a decimal number).
pub(crate) fn parse_value(s: &str) -> Option<f64> {
    match s {
        "NaN" => Some(f64::NAN),
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        _ => s.parse().ok().filter(|v: &f64| v.is_finite()),
    }
}

fn point(url: &str, raw: Option<(f64, String)>) -> Result<Point, Error> {
    let Some((t, v)) = raw else {
        return Err(Error::BadResponse {
            url: url.into(),
            reason: "a sample has no \"value\" (native histograms are not supported)".into(),
            source: None,
        });
    };
    Ok(Point {
        at: timestamp(url, t)?,
        value: parse_value(&v).ok_or_else(|| Error::BadResponse {
            url: url.into(),
            reason: format!("sample value {v:?} is not a number"),
            source: None,
        })?,
    })
}

fn series(url: &str, raw: Vec<RawSeries>) -> Result<Vec<Series>, Error> {
    raw.into_iter()
        .map(|s| {
            if s.values.is_empty() && s.histograms.is_some() {
                return Err(Error::BadResponse {
                    url: url.into(),
                    reason: "a series has only native histogram values (not supported)".into(),
                    source: None,
                });
            }
            Ok(Series {
                labels: s.metric,
                points: s
                    .values
                    .into_iter()
                    .map(|p| point(url, Some(p)))
                    .collect::<Result<_, _>>()?,
            })
        })
        .collect()
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
enum ApiStatus {
    Success,
    Error,
}

#[derive(Debug, Deserialize)]
struct RawResponse {
    status: ApiStatus,
    data: Option<RawData>,
    #[serde(rename = "errorType")]
    error_type: Option<String>,
    error: Option<String>,
    #[serde(default)]
    warnings: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "resultType", content = "result", rename_all = "lowercase")]
enum RawData {
    Vector(Vec<RawSample>),
    Matrix(Vec<RawSeries>),
    Scalar((f64, String)),
    String((f64, String)),
}

impl RawData {
    fn kind(&self) -> &'static str {
        match self {
            RawData::Vector(_) => "vector",
            RawData::Matrix(_) => "matrix",
            RawData::Scalar(_) => "scalar",
            RawData::String(_) => "string",
        }
    }
}

#[derive(Debug, Deserialize)]
struct RawSample {
    #[serde(default)]
    metric: Labels,
    value: Option<(f64, String)>,
}

#[derive(Debug, Deserialize)]
struct RawSeries {
    #[serde(default)]
    metric: Labels,
    #[serde(default)]
    values: Vec<(f64, String)>,
    histograms: Option<serde_json::Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(body: &str) -> RawData {
        interpret("u".into(), StatusCode::OK, body.as_bytes())
            .unwrap()
            .1
    }

    #[test]
    fn special_values_parse() {
        assert!(parse_value("NaN").unwrap().is_nan());
        assert_eq!(parse_value("+Inf"), Some(f64::INFINITY));
        assert_eq!(parse_value("-Inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_value("1.5e-3"), Some(0.0015));
        assert_eq!(parse_value("-0"), Some(-0.0));
        assert_eq!(parse_value("abc"), None);
        // Go never writes these spellings; they are not taken for numbers.
        assert_eq!(parse_value("infinity"), None);
    }

    #[test]
    fn vector_and_matrix_are_read() {
        let RawData::Vector(v) = ok(r#"{"status":"success","data":{"resultType":"vector",
            "result":[{"metric":{"__name__":"up","job":"a"},"value":[1700000000.123,"NaN"]}]}}"#)
        else {
            panic!("not a vector")
        };
        let p = point("u", v[0].value.clone()).unwrap();
        assert!(p.value.is_nan());
        assert_eq!(p.at.as_millisecond(), 1_700_000_000_123);
        assert_eq!(v[0].metric["job"], "a");

        let RawData::Matrix(m) = ok(r#"{"status":"success","data":{"resultType":"matrix",
            "result":[{"metric":{},"values":[[1,"1"],[2,"+Inf"]]}]}}"#)
        else {
            panic!("not a matrix")
        };
        let s = series("u", m).unwrap();
        assert_eq!(s[0].points[1].value, f64::INFINITY);
        assert_eq!(s[0].points[0].at.as_second(), 1);
    }

    #[test]
    fn error_body_is_a_promql_error_whatever_the_status() {
        let body = br#"{"status":"error","errorType":"bad_data","error":"1:5: parse error: unclosed left parenthesis"}"#;
        for status in [StatusCode::BAD_REQUEST, StatusCode::UNPROCESSABLE_ENTITY] {
            match interpret("u".into(), status, body) {
                Err(Error::Promql {
                    error_type,
                    message,
                }) => {
                    assert_eq!(error_type, "bad_data");
                    assert!(message.contains("unclosed left parenthesis"));
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn http_error_without_prometheus_body() {
        match interpret(
            "u".into(),
            StatusCode::BAD_GATEWAY,
            b"<html>bad gateway</html>",
        ) {
            Err(Error::Http { status, body, .. }) => {
                assert_eq!(status, 502);
                assert_eq!(body, "<html>bad gateway</html>");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn success_status_with_garbage_is_a_bad_response() {
        match interpret("u".into(), StatusCode::OK, b"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"value\":[1]}]}}") {
            Err(Error::BadResponse { source: Some(_), .. }) => {}
            other => panic!("{other:?}"),
        }
        match interpret("u".into(), StatusCode::OK, b"{\"status\":\"success\"}") {
            Err(Error::BadResponse { reason, .. }) => assert!(reason.contains("no \"data\"")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn urls_keep_their_prefix_and_refuse_credentials() {
        assert_eq!(
            base_url("http://h:9090").unwrap().as_str(),
            "http://h:9090/"
        );
        assert_eq!(
            base_url("https://h/prom")
                .unwrap()
                .join("api/v1/query")
                .unwrap()
                .as_str(),
            "https://h/prom/api/v1/query"
        );
        let e = base_url("http://alice:s3cret@h:9090")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("s3cret") && !e.contains("alice"), "{e}");
        assert!(base_url("ftp://h").is_err());
        let e = base_url("http://alice:s3cret@[bad")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("s3cret"), "{e}");
    }

    #[test]
    fn credentials_stay_out_of_debug() {
        let client = PrometheusClient::new(
            "http://127.0.0.1:9",
            ClientOptions {
                auth: Some(Auth::Basic {
                    username: "alice".into(),
                    password: "s3cret".into(),
                }),
                ..ClientOptions::default()
            },
        )
        .unwrap();
        let shown = format!("{client:?}");
        assert!(
            shown.contains("alice") && !shown.contains("s3cret"),
            "{shown}"
        );
        let token = format!(
            "{:?}",
            Auth::Bearer {
                token: "t0ken".into()
            }
        );
        assert!(!token.contains("t0ken"), "{token}");
    }

    #[test]
    fn times_are_rfc3339() {
        assert_eq!(
            rfc3339(Timestamp::from_millisecond(1_700_000_000_005).unwrap()),
            "2023-11-14T22:13:20.005Z"
        );
    }
}
