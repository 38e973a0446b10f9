//! Where an OAuth-protected server is, and what its OAuth requests may therefore reach: the
//! class of the server's own address decides the [`AddressPolicy`] of the fetcher that does
//! its discovery, registration and token requests, and whether its tokens may travel in plain
//! http (only to a server on loopback).
//!
//! The class is that of the address literal in the server's URL, loopback for `localhost`,
//! and otherwise that of the addresses its name resolves to when it is first needed (all of
//! one class, or public when they differ or cannot be found). A context may fix it instead
//! ([`OAuthContext::server_class`](crate::oauth::OAuthContext::server_class)).

use std::net::IpAddr;

use mcp_http::{AddressClass, AddressPolicy, FetchError, FetchOptions, Fetcher};
use mcp_oauth::{BoxFuture, HttpClient, HttpRequest, HttpResponse, TransportError, Url};
use tokio::sync::OnceCell;

/// One server's place: its host and port, and its address class once known.
#[derive(Debug)]
pub(crate) struct ServerPlace {
    host: String,
    port: u16,
    class: OnceCell<AddressClass>,
}

impl ServerPlace {
    /// The place of the server at `url`; its class is `fixed`, or known at once for an
    /// address literal or `localhost`, or found later by [`class`](Self::class).
    pub(crate) fn new(url: &Url, fixed: Option<AddressClass>) -> Self {
        let host = url.host_str().unwrap_or_default();
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = url.port_or_known_default().unwrap_or(443);
        let literal = host.parse::<IpAddr>().ok().map(AddressClass::of);
        let local = is_localhost(&host).then_some(AddressClass::Loopback);
        let class = OnceCell::new_with(fixed.or(literal).or(local));
        Self { host, port, class }
    }

    /// The class, if already known.
    pub(crate) fn known(&self) -> Option<AddressClass> {
        self.class.get().copied()
    }

    /// The class, resolving the server's name the first time.
    pub(crate) async fn class(&self) -> AddressClass {
        *self
            .class
            .get_or_init(|| async {
                let found: Vec<AddressClass> =
                    match tokio::net::lookup_host((self.host.as_str(), self.port)).await {
                        Ok(addresses) => addresses.map(|a| AddressClass::of(a.ip())).collect(),
                        Err(_) => Vec::new(),
                    };
                match found.split_first() {
                    Some((first, rest)) if rest.iter().all(|c| c == first) => *first,
                    _ => AddressClass::Public,
                }
            })
            .await
    }

    /// Whether this server's tokens may go to it in a request to `url`: over https always,
    /// over plain http only when the server is known to be on loopback.
    pub(crate) fn may_carry_tokens(&self, url: &http::Uri) -> bool {
        url.scheme_str() != Some("http") || self.known() == Some(AddressClass::Loopback)
    }
}

/// `localhost` and names under it, which resolve to loopback (RFC 6761 §6.3).
fn is_localhost(host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    host == "localhost" || host.ends_with(".localhost")
}

/// `mcp-oauth`'s HTTP client for one server: `mcp-http`'s fetcher with the address policy of
/// the server's class, made when the first request needs it (a connection pool of its own, so
/// that no connection made for one server's policy serves another's).
pub(crate) struct PolicyFetch {
    place: std::sync::Arc<ServerPlace>,
    fetcher: OnceCell<Fetcher>,
}

impl PolicyFetch {
    pub(crate) fn new(place: std::sync::Arc<ServerPlace>) -> Self {
        Self {
            place,
            fetcher: OnceCell::new(),
        }
    }
}

impl HttpClient for PolicyFetch {
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, TransportError>> {
        Box::pin(async move {
            let fetcher = self
                .fetcher
                .get_or_try_init(|| async {
                    let mut options = FetchOptions::default();
                    options.address_policy = Some(AddressPolicy::beside(self.place.class().await));
                    Fetcher::new(options).map_err(|e| TransportError::new(e.to_string()))
                })
                .await?;
            fetcher.send(request).await.map_err(|e| match e {
                FetchError::Refused { rule, .. } => TransportError::refused(rule.to_string()),
                e => TransportError::new(e.to_string()),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_servers_class_is_known_at_once_from_its_url_when_it_can_be() {
        let place = |url: &str, fixed| ServerPlace::new(&Url::parse(url).unwrap(), fixed).known();
        assert_eq!(
            place("http://127.0.0.1:80/mcp", None),
            Some(AddressClass::Loopback)
        );
        assert_eq!(
            place("http://[::1]:80/mcp", None),
            Some(AddressClass::Loopback)
        );
        assert_eq!(
            place("http://LocalHost./mcp", None),
            Some(AddressClass::Loopback)
        );
        assert_eq!(
            place("http://a.localhost/mcp", None),
            Some(AddressClass::Loopback)
        );
        assert_eq!(
            place("https://10.1.2.3/mcp", None),
            Some(AddressClass::Private)
        );
        assert_eq!(place("https://mcp.example.com/mcp", None), None);
        assert_eq!(
            place("http://127.0.0.1/mcp", Some(AddressClass::Public)),
            Some(AddressClass::Public)
        );
        let local = ServerPlace::new(&Url::parse("http://127.0.0.1/mcp").unwrap(), None);
        assert!(local.may_carry_tokens(&"http://127.0.0.1/mcp".parse().unwrap()));
        let public = ServerPlace::new(&Url::parse("http://10.0.0.1/mcp").unwrap(), None);
        assert!(!public.may_carry_tokens(&"http://10.0.0.1/mcp".parse().unwrap()));
        assert!(public.may_carry_tokens(&"https://10.0.0.1/mcp".parse().unwrap()));
    }
}
