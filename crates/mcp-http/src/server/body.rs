//! Response bodies fed from a channel: an SSE stream that ends when every sender is gone, and
//! the JSON answer collected from one.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderValue};
use http::{Response, StatusCode};
use http_body::{Body, Frame};
use http_body_util::Full;
use tokio::sync::mpsc;

use super::ResponseBody;

/// An SSE response body: each chunk a channel delivers, until the channel closes.
#[derive(Debug)]
pub struct SseBody {
    rx: mpsc::UnboundedReceiver<Bytes>,
}

impl SseBody {
    pub(crate) fn new(rx: mpsc::UnboundedReceiver<Bytes>) -> Self {
        Self { rx }
    }
}

impl Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.rx
            .poll_recv(cx)
            .map(|chunk| chunk.map(|c| Ok(Frame::data(c))))
    }
}

/// The JSON body of a POST whose requests are answered in JSON: every answer the channel
/// delivers (one, or an array for a batch).
pub(crate) async fn json_from(mut rx: mpsc::UnboundedReceiver<Bytes>) -> Response<ResponseBody> {
    let mut answers = Vec::new();
    while let Some(chunk) = rx.recv().await {
        answers.push(chunk);
    }
    let body = match answers.len() {
        1 => answers.remove(0),
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
