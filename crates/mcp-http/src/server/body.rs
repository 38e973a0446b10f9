//! Response bodies fed from a channel: an SSE stream that ends when every sender is gone, and
//! the JSON answer collected from one. A stateless-era stream is fed messages, which it
//! encodes as events itself, and keeps its request's session alive for as long as the client
//! reads it.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderValue};
use http::{Response, StatusCode};
use http_body::{Body, Frame};
use http_body_util::Full;
use mcp_protocol::Message;
use tokio::sync::mpsc;

use crate::sse;

use super::ResponseBody;

/// An SSE response body: each chunk a channel delivers, until the channel closes.
pub struct SseBody {
    source: Source,
    /// Dropped with the body: a stateless request's session, which ends (and aborts its
    /// handler) when the client stops reading, since closing the stream is the cancel.
    _keep: Option<Box<dyn Send + Sync>>,
}

/// Where the events come from.
enum Source {
    /// Encoded events, ready to go: `first`, then what the channel delivers.
    Bytes {
        first: Option<Bytes>,
        rx: mpsc::UnboundedReceiver<Bytes>,
    },
    /// Messages to encode, the first already received.
    Messages {
        first: Option<Message>,
        rx: mpsc::UnboundedReceiver<Message>,
    },
}

impl std::fmt::Debug for SseBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseBody").finish_non_exhaustive()
    }
}

impl SseBody {
    pub(crate) fn new(rx: mpsc::UnboundedReceiver<Bytes>) -> Self {
        Self {
            source: Source::Bytes { first: None, rx },
            _keep: None,
        }
    }

    /// A stream of `first` (encoded events already received, in one frame) and then every
    /// chunk `rx` delivers.
    pub(crate) fn starting_with(first: Bytes, rx: mpsc::UnboundedReceiver<Bytes>) -> Self {
        Self {
            source: Source::Bytes {
                first: Some(first),
                rx,
            },
            _keep: None,
        }
    }

    /// A stream of `first` and then every message `rx` delivers, each as one `message`
    /// event without an id (the stateless era has no resumption); `keep` lives as long.
    pub(crate) fn messages(
        first: Message,
        rx: mpsc::UnboundedReceiver<Message>,
        keep: Box<dyn Send + Sync>,
    ) -> Self {
        Self {
            source: Source::Messages {
                first: Some(first),
                rx,
            },
            _keep: Some(keep),
        }
    }
}

/// One message as an SSE `message` event, with `id` when the stream can be resumed.
pub(super) fn event(message: &Message, id: Option<&str>) -> Bytes {
    let mut data = Vec::new();
    message.encode_into(&mut data);
    let mut frame = Vec::new();
    sse::encode_event(
        &mut frame,
        Some("message"),
        id,
        &String::from_utf8_lossy(&data),
    );
    Bytes::from(frame)
}

impl Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut self.source {
            Source::Bytes { first, rx } => {
                if let Some(chunk) = first.take() {
                    return Poll::Ready(Some(Ok(Frame::data(chunk))));
                }
                rx.poll_recv(cx)
                    .map(|chunk| chunk.map(|c| Ok(Frame::data(c))))
            }
            Source::Messages { first, rx } => {
                if let Some(message) = first.take() {
                    return Poll::Ready(Some(Ok(Frame::data(event(&message, None)))));
                }
                rx.poll_recv(cx)
                    .map(|message| message.map(|m| Ok(Frame::data(event(&m, None)))))
            }
        }
    }
}

/// The JSON body of a POST whose requests are answered in JSON: every answer the channel
/// delivers, as one object for a lone request and as an array for a `batch`, however few of
/// its requests are answered (JSON-RPC 2.0 §6: the answer to a batch is an array).
pub(crate) async fn json_from(
    mut rx: mpsc::UnboundedReceiver<Bytes>,
    batch: bool,
) -> Response<ResponseBody> {
    let mut answers = Vec::new();
    while let Some(chunk) = rx.recv().await {
        answers.push(chunk);
    }
    let body = match answers.len() {
        // Every request of the POST was cancelled: nothing to answer. (For a batch too: one
        // with no responses gets nothing back, not an empty array.)
        0 => return super::empty(StatusCode::ACCEPTED),
        1 if !batch => answers.remove(0),
        _ => {
            let mut joined = b"[".to_vec();
            for (i, a) in answers.iter().enumerate() {
                if i > 0 {
                    joined.push(b',');
                }
                joined.extend_from_slice(a);
            }
            joined.push(b']');
            Bytes::from(joined)
        }
    };
    let mut r = Response::new(http_body_util::Either::Left(Full::new(body)));
    *r.status_mut() = StatusCode::OK;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}
