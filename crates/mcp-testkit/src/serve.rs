//! The accept loop every in-process fake shares: HTTP/1.1 on a loopback listener, behind TLS
//! when asked, one task per connection, a handler that makes each response. Written once so
//! that the fakes differ only in what they answer.

use std::convert::Infallible;
use std::error::Error as StdError;
use std::future::Future;

use http::{Request, Response};
use hyper::body::{Body, Incoming};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

/// Serves `listener` in a background task until accepting fails (or the runtime stops): each
/// connection is HTTP/1.1, after a TLS handshake when `tls` is given, and each request is
/// answered by `answer`. A connection that fails (a reset, a failed handshake) is dropped
/// quietly: misbehaving clients are what the tests provoke.
pub fn spawn_http1<F, Fut, B>(listener: TcpListener, tls: Option<TlsAcceptor>, answer: F)
where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response<B>> + Send + 'static,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let tls = tls.clone();
            let answer = answer.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| {
                    let response = answer(req);
                    async move { Ok::<_, Infallible>(response.await) }
                });
                let builder = hyper::server::conn::http1::Builder::new();
                match tls {
                    Some(tls) => {
                        if let Ok(stream) = tls.accept(tcp).await {
                            let _ = builder
                                .serve_connection(TokioIo::new(stream), service)
                                .await;
                        }
                    }
                    None => {
                        let _ = builder.serve_connection(TokioIo::new(tcp), service).await;
                    }
                }
            });
        }
    });
}
