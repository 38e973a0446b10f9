//! Response bodies fed from a bounded channel (`queue`): an SSE stream that ends when its
//! sender is gone and is aborted when the channel was cut, and the JSON answer collected from
//! one. A stateless-era stream is fed encoded messages, which it frames as events itself, and
//! keeps its request's session alive for as long as the client reads it.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderValue};
use http::{Response, StatusCode};
use http_body::{Body, Frame};
use http_body_util::Full;
use mcp_protocol::Message;

use crate::sse;

use super::queue::{Receiver, StreamCut, Weigh};
use super::{ResponseBody, SERVER_BUSY, rpc_error};

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
        rx: Receiver<Bytes>,
    },
    /// Encoded messages to frame as events, the first already received.
    Messages {
        first: Option<Encoded>,
        rx: Receiver<Encoded>,
    },
}

/// One message of a stateless request, encoded once when it is sent.
pub(crate) struct Encoded {
    /// The HTTP status of a JSON body made of it, if it is an answer (a response or an
    /// error); `None` for a notification or a request to the client.
    pub(crate) answer: Option<StatusCode>,
    /// The message's JSON.
    pub(crate) json: Bytes,
}

impl Weigh for Encoded {
    fn weight(&self) -> usize {
        self.json.len()
    }
}

impl std::fmt::Debug for SseBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseBody").finish_non_exhaustive()
    }
}

impl SseBody {
    pub(crate) fn new(rx: Receiver<Bytes>) -> Self {
        Self {
            source: Source::Bytes { first: None, rx },
            _keep: None,
        }
    }

    /// A stream of `first` (encoded events already received, in one frame) and then every
    /// chunk `rx` delivers.
    pub(crate) fn starting_with(first: Bytes, rx: Receiver<Bytes>) -> Self {
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
        first: Encoded,
        rx: Receiver<Encoded>,
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

/// The room a frame starts with: a short call's answer and its event's fields fit.
pub(super) const FRAME_ROOM: usize = 256;

/// One message as an SSE `message` event, with `id` when the stream can be resumed.
pub(super) fn event(message: &Message, id: Option<&str>) -> Bytes {
    // Encoded straight into the frame: a 1 MiB result is written once, not written, checked
    // and copied. Room for a short answer from the start: grown from nothing, the frame of a
    // short call was re-allocated five times.
    let mut frame = Vec::with_capacity(FRAME_ROOM);
    sse::encode_event_in_place(&mut frame, Some("message"), id, |out| {
        message.encode_into(out);
    });
    Bytes::from(frame)
}

/// An encoded message as an SSE `message` event.
fn event_of_json(json: &[u8], id: Option<&str>) -> Bytes {
    let mut frame = Vec::with_capacity(json.len() + 32);
    sse::encode_event_in_place(&mut frame, Some("message"), id, |out| {
        out.extend_from_slice(json);
    });
    Bytes::from(frame)
}

/// A stream that was cut ends the body with an error, on which hyper aborts the response.
impl Body for SseBody {
    type Data = Bytes;
    type Error = StreamCut;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, StreamCut>>> {
        match &mut self.source {
            Source::Bytes { first, rx } => {
                if let Some(chunk) = first.take() {
                    return Poll::Ready(Some(Ok(Frame::data(chunk))));
                }
                rx.poll_recv(cx)
                    .map(|chunk| chunk.transpose().map(|c| c.map(Frame::data)))
            }
            Source::Messages { first, rx } => {
                if let Some(message) = first.take() {
                    return Poll::Ready(Some(Ok(Frame::data(event_of_json(&message.json, None)))));
                }
                rx.poll_recv(cx).map(|message| {
                    message
                        .transpose()
                        .map(|m| m.map(|m| Frame::data(event_of_json(&m.json, None))))
                })
            }
        }
    }
}

/// The JSON body of a POST whose requests are answered in JSON: every answer the channel
/// delivers, as one object for a lone request and as an array for a `batch`, however few of
/// its requests are answered (JSON-RPC 2.0 §6: the answer to a batch is an array).
///
/// The answers wait here until the last one, so they count against `limit` (the stream's
/// [`max_stream_buffer_bytes`](super::HttpServerConfig::max_stream_buffer_bytes)) as an SSE
/// stream's unread bytes do: past it (more than one answer) the POST is answered 500 instead,
/// and its other answers are dropped as they come.
pub(crate) async fn json_from(
    mut rx: Receiver<Bytes>,
    batch: bool,
    limit: usize,
) -> Response<ResponseBody> {
    let mut answers = Vec::new();
    let mut held = 0usize;
    loop {
        match rx.recv().await {
            Ok(Some(chunk)) => {
                held = held.saturating_add(chunk.len());
                if held > limit && !answers.is_empty() {
                    return rpc_error(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        mcp_protocol::code::INTERNAL_ERROR,
                        &format!(
                            "the answers to this request exceed {limit} bytes \
                             (max_stream_buffer_bytes); send fewer requests per batch"
                        ),
                    );
                }
                answers.push(chunk);
            }
            Ok(None) => break,
            Err(StreamCut { .. }) => {
                return rpc_error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    SERVER_BUSY,
                    "Service Unavailable: the server holds too many unread answers; try again later",
                );
            }
        }
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
