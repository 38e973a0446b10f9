//! HTTPS for the client: a connector that speaks plain TCP for `http` URLs and rustls (ring,
//! Mozilla's roots plus any the configuration adds) for `https` ones, with `TCP_NODELAY` on.
//! With an [`AddressPolicy`] it resolves names itself and connects only to the addresses the
//! policy allows, then checks the address actually connected once more.
//!
//! Without the `tls` feature the connector speaks plain TCP only, and refuses an `https` URL
//! with an error that names the feature.

use std::fmt;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
#[cfg(feature = "tls")]
use std::sync::Arc;
use std::task::{Context, Poll};

use http::Uri;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::TokioIo;
#[cfg(feature = "tls")]
use rustls::pki_types::ServerName;
#[cfg(feature = "tls")]
use rustls::pki_types::pem::PemObject as _;
use tokio::net::TcpStream;
#[cfg(feature = "tls")]
use tokio_rustls::TlsConnector;
#[cfg(feature = "tls")]
use tokio_rustls::client::TlsStream;

use super::policy::{AddressPolicy, Refusal};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The TLS client configuration, or nothing in a build without TLS.
#[cfg(feature = "tls")]
pub(crate) type TlsConfig = rustls::ClientConfig;
/// The TLS client configuration, or nothing in a build without TLS.
#[cfg(not(feature = "tls"))]
#[derive(Clone, Copy)]
pub(crate) struct TlsConfig;

/// What an `https` URL gets from a build without the `tls` feature.
#[cfg(not(feature = "tls"))]
pub(crate) const NO_TLS: &str =
    "https needs the `tls` feature of mcp-http, which this build left out";

/// Without TLS there is nothing to configure: the extra roots could only serve `https` URLs,
/// which fail at connection with [`NO_TLS`].
#[cfg(not(feature = "tls"))]
pub(crate) fn client_config(_extra_roots_pem: &[Vec<u8>]) -> Result<TlsConfig, String> {
    Ok(TlsConfig)
}

/// Builds the TLS client configuration: Mozilla's roots, plus the PEM certificates given (a
/// private CA, a test CA). Fails on a PEM that holds no certificate or one rustls refuses.
#[cfg(feature = "tls")]
pub(crate) fn client_config(extra_roots_pem: &[Vec<u8>]) -> Result<TlsConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    for pem in extra_roots_pem {
        let mut found = false;
        for cert in rustls::pki_types::CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| format!("a CA certificate could not be read: {e}"))?;
            roots
                .add(cert)
                .map_err(|e| format!("a CA certificate was refused: {e}"))?;
            found = true;
        }
        if !found {
            return Err("a CA file holds no PEM certificate".to_owned());
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(config)
}

/// Connects to `http` URLs in plain TCP and to `https` ones through TLS, to the addresses
/// `policy` allows when there is one.
#[derive(Clone)]
pub(crate) struct Connector {
    http: HttpConnector,
    #[cfg(feature = "tls")]
    tls: TlsConnector,
    policy: Option<AddressPolicy>,
}

impl Connector {
    pub(crate) fn new(
        mut http: HttpConnector,
        tls: TlsConfig,
        policy: Option<AddressPolicy>,
    ) -> Self {
        http.enforce_http(false);
        #[cfg(not(feature = "tls"))]
        let _: TlsConfig = tls;
        Self {
            http,
            #[cfg(feature = "tls")]
            tls: TlsConnector::from(Arc::new(tls)),
            policy,
        }
    }
}

/// A connection the [`AddressPolicy`] forbids: the origin asked for (never its path or query)
/// and the rule. The fetcher finds it among the causes of hyper's error.
#[derive(Debug)]
pub(crate) struct Refused {
    pub(crate) origin: String,
    pub(crate) rule: Refusal,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} refused: {}", self.origin, self.rule)
    }
}

impl std::error::Error for Refused {}

/// `scheme://host:port` of `uri`, with the default port when none is written.
fn origin(uri: &Uri, https: bool) -> String {
    let host = uri.host().unwrap_or_default();
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let scheme = if https { "https" } else { "http" };
    format!("{scheme}://{host}:{port}")
}

/// Resolves `host` (an IP literal is its own answer), keeps the addresses `policy` allows, and
/// connects to the first that answers; the peer address of the connection is checked again.
/// If every address is refused, the error is a [`Refused`] naming the first rule broken.
async fn connect_checked(
    mut http: HttpConnector,
    uri: &Uri,
    host: &str,
    https: bool,
    policy: AddressPolicy,
) -> Result<TcpStream, BoxError> {
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let addresses: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::net::lookup_host((host, port)).await?.collect(),
    };
    let refused = |rule| Refused {
        origin: origin(uri, https),
        rule,
    };
    let mut refusal = None;
    let mut failure: Option<BoxError> = None;
    for address in addresses {
        if let Err(rule) = policy.check(https, address.ip()) {
            refusal.get_or_insert(rule);
            continue;
        }
        // The connector gets the address itself, so it cannot resolve the name again.
        let target = Uri::builder()
            .scheme("http")
            .authority(address.to_string())
            .path_and_query("/")
            .build()?;
        match tower_service::Service::call(&mut http, target).await {
            Ok(io) => {
                let tcp = io.into_inner();
                let peer = tcp.peer_addr()?;
                policy.check(https, peer.ip()).map_err(refused)?;
                return Ok(tcp);
            }
            Err(e) => failure = Some(e.into()),
        }
    }
    match (failure, refusal) {
        (Some(e), _) => Err(e),
        (None, Some(rule)) => Err(refused(rule).into()),
        (None, None) => Err(format!("{host} resolves to no address").into()),
    }
}

impl tower_service::Service<Uri> for Connector {
    type Response = Stream;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Stream, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.http.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let https = uri.scheme_str() == Some("https");
        let host = uri
            .host()
            .unwrap_or_default()
            .trim_matches(['[', ']'])
            .to_owned();
        #[cfg(not(feature = "tls"))]
        if https {
            // Before any connection: the build cannot speak TLS, so nothing is sent.
            let origin = origin(&uri, https);
            return Box::pin(async move { Err(format!("{origin}: {NO_TLS}").into()) });
        }
        #[cfg(feature = "tls")]
        let tls = self.tls.clone();
        let connect: Pin<Box<dyn Future<Output = Result<TcpStream, BoxError>> + Send>> =
            match self.policy {
                None => {
                    let direct = self.http.call(uri);
                    Box::pin(async move { Ok(direct.await?.into_inner()) })
                }
                Some(policy) => {
                    let (http, host) = (self.http.clone(), host.clone());
                    Box::pin(async move { connect_checked(http, &uri, &host, https, policy).await })
                }
            };
        Box::pin(async move {
            let tcp = connect.await?;
            if !https {
                return Ok(Stream::Plain(TokioIo::new(tcp)));
            }
            #[cfg(feature = "tls")]
            {
                let name = ServerName::try_from(host.clone())
                    .map_err(|_| format!("{host:?} is not a valid TLS server name"))?;
                let stream = tls.connect(name, tcp).await?;
                Ok(Stream::Tls(Box::new(TokioIo::new(stream))))
            }
            #[cfg(not(feature = "tls"))]
            Err(format!("{host}: {NO_TLS}").into())
        })
    }
}

/// A connection: plain TCP or TLS over TCP.
pub(crate) enum Stream {
    Plain(TokioIo<TcpStream>),
    #[cfg(feature = "tls")]
    Tls(Box<TokioIo<TlsStream<TcpStream>>>),
}

impl Connection for Stream {
    fn connected(&self) -> Connected {
        match self {
            Self::Plain(s) => s.inner().connected(),
            #[cfg(feature = "tls")]
            Self::Tls(s) => s.inner().get_ref().0.connected(),
        }
    }
}

impl Read for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_read(cx, buf),
            #[cfg(feature = "tls")]
            Self::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl Write for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_write(cx, buf),
            #[cfg(feature = "tls")]
            Self::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_flush(cx),
            #[cfg(feature = "tls")]
            Self::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_shutdown(cx),
            #[cfg(feature = "tls")]
            Self::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
