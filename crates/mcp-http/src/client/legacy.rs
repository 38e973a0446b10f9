//! The deprecated HTTP+SSE transport of 2024-11-05 (spec
//! `2024-11-05/basic/transports.mdx#http-with-sse`, SPEC.md §4.10): a GET opens an SSE stream
//! whose first event, `endpoint`, names the URL to POST every message to; everything the server
//! sends comes on that stream as `message` events.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use http::{Method, StatusCode, Uri};
use http_body_util::BodyExt as _;
use hyper::body::Incoming as Body;
use mcp_protocol::{ClientConfig, ClientSession, Message};
use mcp_session::{Client, Core, Pending, Sending, Transport};
use tokio::sync::{mpsc, watch};

use super::{ACCEPT_BOTH, ACCEPT_SSE, Base, HttpConfig, chain, read_body};
use crate::error::{Error, Result};
use crate::sse;

/// Opens the SSE stream, waits for the `endpoint` event, then runs the session.
pub(crate) async fn connect(
    base: Base,
    config: HttpConfig,
    session: ClientConfig,
) -> Result<Client> {
    let fail = |reason: String| Error::Config {
        server: config.name.clone(),
        reason: format!("HTTP+SSE: {reason}"),
    };
    let req = base.request(Method::GET, base.url(), ACCEPT_SSE, None);
    let resp = tokio::time::timeout(config.connect_timeout, base.pool().request(req))
        .await
        .map_err(|_| {
            fail(format!(
                "no answer to the GET within {:?}",
                config.connect_timeout
            ))
        })?
        .map_err(|e| fail(format!("the GET failed: {}", chain(&e))))?;
    let status = resp.status();
    let is_sse = resp
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"));
    if status != StatusCode::OK || !is_sse {
        let _ = resp.into_body().collect().await;
        return Err(fail(format!(
            "the GET got HTTP {status}, not an event stream"
        )));
    }
    let mut body = resp.into_body();
    let mut decoder = sse::Decoder::new(config.max_message_bytes);
    let endpoint = tokio::time::timeout(
        config.connect_timeout,
        first_endpoint(&mut body, &mut decoder),
    )
    .await
    .map_err(|_| {
        fail(format!(
            "no `endpoint` event within {:?}",
            config.connect_timeout
        ))
    })?
    .map_err(fail)?;
    let post_to = resolve(base.url(), &endpoint).map_err(fail)?;

    let (queue_tx, queue_rx) = mpsc::unbounded_channel();
    let (closed_tx, closed) = watch::channel(false);
    let inner = Arc::new(Inner {
        base,
        post_to,
        config,
        queue: queue_tx,
        closing: AtomicBool::new(false),
        closed_tx,
    });
    let pending = Pending::new(
        &inner.config.name,
        session,
        LegacyTransport(Arc::clone(&inner)),
    );
    let core = Arc::clone(pending.core());
    tokio::spawn(send_loop(Arc::clone(&inner), Arc::clone(&core), queue_rx));
    tokio::spawn(read_loop(body, decoder, core, closed));
    Ok(pending.connect(Arc::new(())).await?)
}

/// Reads the stream up to the `endpoint` event and returns its data.
async fn first_endpoint(body: &mut Body, decoder: &mut sse::Decoder) -> Result<String, String> {
    loop {
        if let Some(event) = decoder.next_event() {
            return match event {
                Ok(e) if e.event == "endpoint" => Ok(e.data.trim().to_owned()),
                Ok(e) => Err(format!("the first event was `{}`, not `endpoint`", e.event)),
                Err(e) => Err(e.to_string()),
            };
        }
        match body.frame().await {
            None => return Err("the stream ended before the `endpoint` event".to_owned()),
            Some(Err(e)) => return Err(format!("reading the stream failed: {e}")),
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    decoder.push(&data);
                }
            }
        }
    }
}

/// The POST URL from the `endpoint` event: an absolute URL on the same origin, an absolute
/// path, or a path relative to the stream's URL. Another origin is refused: the server does
/// not get to send the host's requests (and its credentials) elsewhere.
pub(crate) fn resolve(base: &Uri, endpoint: &str) -> Result<Uri, String> {
    if endpoint.starts_with("http://") || endpoint.starts_with("https://") {
        let uri: Uri = endpoint
            .parse()
            .map_err(|e| format!("bad `endpoint` URL: {e}"))?;
        if super::eras::origin(&uri) != super::eras::origin(base) {
            // Its query (a session id) is not shown.
            return Err(format!(
                "the `endpoint` {:?} is on another origin; refused",
                super::fetch::redacted(&uri)
            ));
        }
        return Ok(uri);
    }
    let path = if endpoint.starts_with('/') {
        endpoint.to_owned()
    } else {
        let dir = base.path().rsplit_once('/').map_or("", |(dir, _)| dir);
        format!("{dir}/{endpoint}")
    };
    let scheme = base.scheme_str().unwrap_or("http");
    let authority = base.authority().map_or("", |a| a.as_str());
    format!("{scheme}://{authority}{path}")
        .parse()
        .map_err(|e| format!("bad `endpoint`: {e}"))
}

struct Inner {
    base: Base,
    post_to: Uri,
    config: HttpConfig,
    queue: mpsc::UnboundedSender<Message>,
    closing: AtomicBool,
    closed_tx: watch::Sender<bool>,
}

struct LegacyTransport(Arc<Inner>);

impl Transport for LegacyTransport {
    fn transmit(&self, _core: &Arc<Core>, session: &mut ClientSession, _: &mut Vec<Sending>) {
        while let Some(message) = session.poll_transmit() {
            let _ = self.0.queue.send(message);
        }
    }

    fn close(&self) -> Pin<Box<dyn Future<Output = String> + Send + '_>> {
        let inner = Arc::clone(&self.0);
        Box::pin(async move {
            inner.closing.store(true, Ordering::SeqCst);
            let _ = inner.closed_tx.send(true);
            "closed".to_owned()
        })
    }
}

/// POSTs each message in order; answers arrive on the stream, not in the POST's body.
async fn send_loop(
    inner: Arc<Inner>,
    core: Arc<Core>,
    mut queue: mpsc::UnboundedReceiver<Message>,
) {
    while let Some(message) = queue.recv().await {
        if inner.closing.load(Ordering::SeqCst) {
            continue;
        }
        let id = match &message {
            Message::Request(r) => Some(r.id.clone()),
            _ => None,
        };
        let req = inner.base.request(
            Method::POST,
            &inner.post_to,
            ACCEPT_BOTH,
            Some(Bytes::from(message.encode())),
        );
        let outcome =
            match tokio::time::timeout(inner.config.post_timeout, inner.base.pool().request(req))
                .await
            {
                Ok(Ok(resp)) if resp.status().is_success() => {
                    let _ = resp.into_body().collect().await;
                    Ok(())
                }
                Ok(Ok(resp)) => {
                    let status = resp.status();
                    let text = read_body(resp.into_body(), 64 << 10)
                        .await
                        .unwrap_or_default();
                    Err(format!(
                        "HTTP {status}: {}",
                        String::from_utf8_lossy(&text[..text.len().min(300)])
                    ))
                }
                Ok(Err(e)) => Err(format!("POST failed: {}", chain(&e))),
                Err(_) => Err(format!(
                    "POST got no answer within {:?}",
                    inner.config.post_timeout
                )),
            };
        if let Err(detail) = outcome {
            match &id {
                Some(id) => {
                    core.fail_request(id, &detail);
                }
                None => core.diagnostic(detail),
            }
        }
    }
}

/// Feeds the stream's `message` events to the core until it ends; then the session ends.
async fn read_loop(
    mut body: Body,
    mut decoder: sse::Decoder,
    core: Arc<Core>,
    mut closed: watch::Receiver<bool>,
) {
    let end = loop {
        while let Some(event) = decoder.next_event() {
            match event {
                Ok(e) if e.event == "message" && !e.data.is_empty() => {
                    core.receive_frame(e.data.as_bytes())
                }
                Ok(_) => {}
                Err(e) => core.diagnostic(e.to_string()),
            }
        }
        let frame = tokio::select! {
            frame = body.frame() => frame,
            _ = closed.wait_for(|c| *c) => return,
        };
        match frame {
            None => break "the server closed the SSE stream".to_owned(),
            Some(Err(e)) => break format!("reading the SSE stream failed: {e}"),
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    decoder.push(&data);
                }
            }
        }
    };
    core.end(&end);
}

#[cfg(test)]
mod tests {
    use super::resolve;

    #[test]
    fn endpoints_resolve_on_the_same_origin_only() {
        let base: http::Uri = "http://127.0.0.1:8080/sse".parse().unwrap();
        assert_eq!(
            resolve(&base, "/messages?sessionId=1").unwrap(),
            "http://127.0.0.1:8080/messages?sessionId=1"
        );
        assert_eq!(
            resolve(&base, "messages?s=2").unwrap(),
            "http://127.0.0.1:8080/messages?s=2"
        );
        assert_eq!(
            resolve(&base, "http://127.0.0.1:8080/m").unwrap(),
            "http://127.0.0.1:8080/m"
        );
        assert!(
            resolve(&base, "http://evil.example/m")
                .unwrap_err()
                .contains("another origin")
        );
        let nested: http::Uri = "https://h.example/a/b/sse".parse().unwrap();
        assert_eq!(
            resolve(&nested, "post").unwrap(),
            "https://h.example/a/b/post"
        );
    }
}
