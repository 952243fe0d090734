//! Requests hyper cannot parse, answered with ProblemDetails.
//!
//! hyper answers a request head it cannot parse itself, before any service sees it, with a
//! bodiless status line: 400 (a malformed request line or header field, HTTP/0.9, TLS bytes on
//! the plain port), 414 (a target too long for a URI, over 64 KiB) or 431 (more header fields
//! than it parses, or a head larger than its read buffer). It then closes the connection, and
//! offers no hook to change that answer.
//!
//! [`Answering`] wraps a connection's stream and recognises that automatic answer on its way
//! out: a write that ends with exactly such a head (a status line of one of those three, and
//! only `Content-Length: 0`, `Date` and `Connection` fields) is held back. If hyper then shuts
//! the connection down, as it always does after an automatic answer, the held head is replaced
//! by a ProblemDetails answer of the same status; if hyper goes on reading or writing, the held
//! bytes were part of an ordinary response (a body that happens to end with such bytes) and go
//! out unchanged before anything else. After a replaced answer, the connection is closed the
//! way HTTP servers close after an error while the client may still be sending (RFC 9112
//! clause 9.6, "lingering close"): the sending side first, then what the client still sends
//! is read and dropped (for at most [`LINGER`] and [`LINGER_BYTES`]), so that a client still
//! writing a 1 MB head reads the answer instead of a connection reset.
//!
//! What stays without an answer, as HTTP allows: a connection closed or timed out before its
//! request head was complete (nothing to answer), and an HTTP/2 preface on this HTTP/1.1
//! server (hyper closes the connection; an HTTP/2 client cannot read an HTTP/1.1 answer).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use axum::http::StatusCode;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::error::{ApiError, PROBLEM_JSON};

/// The first byte of a TLS handshake record.
const TLS_HANDSHAKE: u8 = 0x16;

/// The statuses hyper answers by itself (`hyper::proto::h1::role::Server::on_error`).
const AUTOMATIC: [StatusCode; 3] = [
    StatusCode::BAD_REQUEST,
    StatusCode::URI_TOO_LONG,
    StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
];

/// Longest automatic answer recognised (status line, `Content-Length`, `Date`, `Connection`).
const MAX_AUTOMATIC: usize = 256;

/// Longest time what a client still sends after a replaced answer is read and dropped.
pub(crate) const LINGER: std::time::Duration = std::time::Duration::from_secs(2);
/// Most bytes read and dropped after a replaced answer.
pub(crate) const LINGER_BYTES: usize = 4 * 1024 * 1024;

/// The lingering close after a replaced answer.
struct Linger {
    deadline: Pin<Box<tokio::time::Sleep>>,
    shut: bool,
    dropped: usize,
    done: bool,
}

/// A connection's stream whose automatic parse-error answers from hyper become ProblemDetails
/// (see the [module docs](self)).
pub(crate) struct Answering<T> {
    inner: T,
    /// A suspected automatic answer, not yet sent.
    held: Option<Vec<u8>>,
    /// Bytes to send before anything else, and how many of them went out.
    pending: Vec<u8>,
    sent: usize,
    /// The first byte the client sent, when it sent one.
    first_byte: Option<u8>,
    /// Set once an automatic answer was replaced.
    linger: Option<Linger>,
}

impl<T> Answering<T> {
    /// Wraps `inner`.
    pub(crate) fn new(inner: T) -> Answering<T> {
        Answering {
            inner,
            held: None,
            pending: Vec::new(),
            sent: 0,
            first_byte: None,
            linger: None,
        }
    }
}

impl<T: AsyncWrite + Unpin> Answering<T> {
    /// Adds `bytes` to what goes out before anything else.
    fn queue(&mut self, bytes: &[u8]) {
        self.pending.drain(..self.sent);
        self.sent = 0;
        self.pending.extend_from_slice(bytes);
    }

    /// Sends `pending` (and before it, held bytes that turned out to be ordinary ones).
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if let Some(held) = self.held.take() {
            self.queue(&held);
        }
        while self.sent < self.pending.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.pending[self.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        self.pending.clear();
        self.sent = 0;
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin> AsyncRead for Answering<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        // hyper reads again: what it wrote last was an ordinary response.
        ready!(this.poll_drain(cx))?;
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        if this.first_byte.is_none() {
            this.first_byte = buf.filled().get(before).copied();
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Answering<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        ready!(this.poll_drain(cx))?;
        match automatic_answer_at(buf) {
            Some(0) => {
                this.held = Some(buf.to_vec());
                Poll::Ready(Ok(buf.len()))
            }
            // What precedes it goes first; hyper writes the rest again.
            Some(start) => Pin::new(&mut this.inner).poll_write(cx, &buf[..start]),
            None => Pin::new(&mut this.inner).poll_write(cx, buf),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.held.is_none() {
            ready!(this.poll_drain(cx))?;
        }
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if let Some(held) = this.held.take() {
            // hyper closes after its automatic answer: this was one.
            let tls = this.first_byte == Some(TLS_HANDSHAKE);
            this.queue(&problem_answer(&held, tls));
            this.linger = Some(Linger {
                deadline: Box::pin(tokio::time::sleep(LINGER)),
                shut: false,
                dropped: 0,
                done: false,
            });
        }
        ready!(this.poll_drain(cx))?;
        ready!(Pin::new(&mut this.inner).poll_flush(cx))?;
        let Some(linger) = this.linger.as_mut() else {
            return Pin::new(&mut this.inner).poll_shutdown(cx);
        };
        if !linger.shut {
            ready!(Pin::new(&mut this.inner).poll_shutdown(cx))?;
            linger.shut = true;
        }
        let mut scratch = [0u8; 4096];
        while !linger.done {
            if linger.deadline.as_mut().poll(cx).is_ready() || linger.dropped >= LINGER_BYTES {
                break;
            }
            let mut read = ReadBuf::new(&mut scratch);
            match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(())) if !read.filled().is_empty() => {
                    linger.dropped += read.filled().len();
                }
                // The client closed its side, or the connection failed: nothing more to wait for.
                Poll::Ready(_) => break,
            }
        }
        linger.done = true;
        Poll::Ready(Ok(()))
    }
}

/// Where in `buf` an automatic answer of hyper starts, when `buf` ends with one.
fn automatic_answer_at(buf: &[u8]) -> Option<usize> {
    if !buf.ends_with(b"\r\n\r\n") {
        return None;
    }
    let tail_start = buf.len().saturating_sub(MAX_AUTOMATIC);
    let tail = &buf[tail_start..];
    let at = memchr::memmem::rfind(tail, b"HTTP/1.")?;
    automatic_status(&tail[at..]).map(|_| tail_start + at)
}

/// The status of `head` when it is exactly an automatic answer of hyper.
fn automatic_status(head: &[u8]) -> Option<StatusCode> {
    let text = std::str::from_utf8(head).ok()?;
    let mut lines = text.strip_suffix("\r\n\r\n")?.split("\r\n");
    let status_line = lines.next()?;
    let status = AUTOMATIC.into_iter().find(|s| {
        ["HTTP/1.1", "HTTP/1.0"].iter().any(|v| {
            status_line == format!("{v} {} {}", s.as_u16(), s.canonical_reason().unwrap_or(""))
        })
    })?;
    for line in lines {
        let (name, value) = line.split_once(':')?;
        let value = value.trim();
        let known = if name.eq_ignore_ascii_case("content-length") {
            value == "0"
        } else {
            name.eq_ignore_ascii_case("date") || name.eq_ignore_ascii_case("connection")
        };
        if !known {
            return None;
        }
    }
    Some(status)
}

/// The ProblemDetails answer replacing the automatic answer `head`.
fn problem_answer(head: &[u8], tls: bool) -> Vec<u8> {
    let status = automatic_status(head).unwrap_or(StatusCode::BAD_REQUEST);
    let date = std::str::from_utf8(head)
        .ok()
        .and_then(|h| {
            h.split("\r\n").find_map(|l| {
                l.split_once(':')
                    .filter(|(n, _)| n.eq_ignore_ascii_case("date"))
            })
        })
        .map(|(_, v)| v.trim().to_owned());
    let error = match status {
        StatusCode::URI_TOO_LONG => ApiError::UriTooLong(format!(
            "the request target is longer than this server can read; it accepts at most {} bytes (send long filters as fewer terms)",
            crate::limits::MAX_URI_BYTES
        )),
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => ApiError::HeadersTooLarge(format!(
            "the request head is larger than this server reads; it accepts at most {} header fields of {} bytes",
            crate::limits::MAX_HEADERS,
            crate::limits::MAX_HEADER_BYTES
        )),
        _ if tls => ApiError::bad_request(
            "the connection began with a TLS handshake, but this port speaks plain HTTP: use http://, or start the server with --tls-cert and --tls-key",
        ),
        _ => ApiError::bad_request(
            "the request could not be read as HTTP/1.1: its request line or a header field is malformed (this server speaks HTTP/1.1)",
        ),
    };
    let body = serde_json::to_vec(&error.problem()).unwrap_or_default();
    let mut answer = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {PROBLEM_JSON}\r\nContent-Length: {}\r\nConnection: close\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    );
    if let Some(date) = date {
        answer.push_str(&format!("Date: {date}\r\n"));
    }
    answer.push_str("\r\n");
    let mut bytes = answer.into_bytes();
    bytes.extend(body);
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD_431: &[u8] = b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nDate: Fri, 27 Nov 2026 03:00:00 GMT\r\n\r\n";

    #[test]
    fn only_bodiless_automatic_heads_are_recognised() {
        assert_eq!(automatic_answer_at(HEAD_431), Some(0));
        let mut after_body = b"{\"a\":1}".to_vec();
        after_body.extend_from_slice(HEAD_431);
        assert_eq!(automatic_answer_at(&after_body), Some(7));
        // An answer of the API: a body, another field.
        assert_eq!(
            automatic_answer_at(
                b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/problem+json\r\nContent-Length: 0\r\n\r\n"
            ),
            None
        );
        assert_eq!(
            automatic_answer_at(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
            None
        );
        assert_eq!(
            automatic_answer_at(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 2\r\n\r\n"),
            None
        );
    }

    #[test]
    fn the_replacement_is_a_problem_details_of_the_same_status() {
        let answer = String::from_utf8(problem_answer(HEAD_431, false)).unwrap();
        assert!(
            answer.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"),
            "{answer}"
        );
        assert!(answer.contains("Content-Type: application/problem+json\r\n"));
        assert!(answer.contains("Date: Fri, 27 Nov 2026 03:00:00 GMT\r\n"));
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("Content-Length: {}", body.len())));
        let p: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(p["status"], 431);
        let tls = String::from_utf8(problem_answer(
            b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
            true,
        ))
        .unwrap();
        assert!(tls.contains("TLS handshake"), "{tls}");
    }
}
