//! OAuth 2.1 for MCP clients (spec `basic/authorization.mdx`, SPEC.md §5), without I/O: it
//! parses and decides, the caller fetches and stores.
//!
//! Today: `WWW-Authenticate` challenges ([`challenge`]), where to find protected resource and
//! authorization server metadata and what to accept from them ([`discovery`]: RFC 9728 and RFC
//! 8414 / OpenID Connect in the spec's orders, resource and issuer checks, the canonical
//! `resource` of RFC 8707), PKCE S256 ([`Pkce`], from random bytes the caller supplies), and
//! secret types that never print ([`AccessToken`] and friends), and the authorization-code grant
//! as requests to build and answers to check ([`flow`]: the authorization URL, the redirect's
//! state and RFC 9207 `iss`, token requests with client authentication, token answers with
//! `invalid_grant` told apart), client identity and registration ([`registration`]), and the
//! token store's contents ([`store`]; the host reads and writes the file).
//!
//! The MCP 2026-07-28 rules hold throughout: the strings that name servers (the protected
//! resource's `resource`, the authorization server's `issuer`, the redirect's RFC 9207 `iss`)
//! are compared and echoed byte for byte, never re-serialised through [`Url`]; registrations
//! state their `application_type`; credentials are bound to the `issuer` of the authorization
//! server that issued them (registrations are kept by issuer, a pre-registered client refuses
//! another one); step-up asks for the union of scopes; `offline_access` is asked for only where
//! the authorization server lists it.
//!
//! On top of those parts, [`Authorizer`] drives the whole flow for one protected server over
//! seams the caller implements ([`HttpClient`], [`UserAgent`], [`Randomness`], [`Clock`], and
//! optionally [`ClientAssertionSigner`]): discovery, client identity, the browser round trip,
//! tokens (the browser is sent only to `https` or loopback `http` URLs, [`flow::check_openable`];
//! a request the caller's client refuses for where it leads is [`AuthError::Refused`]), refresh
//! ahead of expiry, 401/403 challenges with step-up and a retry limit, and the
//! grants without a browser: the `client_credentials` extension, RFC 7523 `jwt-bearer` with a
//! workload's JWT, and enterprise-managed authorization (SEP-990: the user's ID token exchanged
//! at the identity provider, RFC 8693, for an assertion the `jwt-bearer` grant presents). Its
//! errors are [`AuthError`].
//!
//! For a machine no browser can come back to, the person's login can go through the device
//! authorization grant instead ([`device`]: RFC 8628, a user code entered on another device,
//! with a [`DeviceUserAgent`] the caller supplies), where the authorization server offers it.
//!
//! Tokens can be bound to a key the client holds ([`dpop`]: RFC 9449 DPoP, with a
//! [`DpopSigner`] the caller supplies): proofs at the token endpoint and, through
//! [`Credentials`], on every request to the MCP server, with the servers' nonces.
//!
//! The server side is [`resource`] (feature `resource`): an MCP server as an OAuth protected
//! resource, which checks JWT access tokens against its issuer's keys (RFC 9068, RFC 8707
//! audiences), says what it is in an RFC 9728 document, and refuses with RFC 6750 challenges.
//!
//! mcp-oauth depends on no other workspace crate and reads no clock or OS randomness: it does
//! no I/O itself, and its futures run on whatever executor the caller's seams need.
//!
//! # Cancel safety
//!
//! Dropping an [`Authorizer`] future leaves it usable; tokens change only once a token answer
//! has been read whole.
//!
//! # Optional features
//!
//! - `resource`: the protected-resource side ([`resource`]), with ring to verify signatures.
//! - `full`: all of the above.
//!
//! # Stability
//!
//! Pre-1.0: the API may change between minor versions.

mod authorizer;
pub mod challenge;
pub mod device;
pub mod discovery;
pub mod dpop;
mod error;
pub mod flow;
mod http;
mod jws;
mod pkce;
mod preflight;
pub mod registration;
#[cfg(feature = "resource")]
pub mod resource;
mod secret;
pub mod store;

// The public interface is:
pub use authorizer::{Authorizer, GrantType, IdentityProvider, MetadataSource, Services, Settings};
pub use challenge::BearerChallenge;
pub use dpop::{Credentials, DpopKey};
pub use error::{AuthError, Error, SeamError};
pub use http::{
    BoxError, BoxFuture, ClientAssertionSigner, Clock, DeviceUserAgent, DpopSigner, HttpClient,
    HttpRequest, HttpResponse, Randomness, TransportError, UserAgent,
};
pub use jws::jws_compact;
pub use pkce::{Pkce, state_from_random};
pub use secret::{
    AccessToken, AuthorizationCode, ClientSecret, DeviceCode, JwtAssertion, PkceVerifier,
    RefreshToken,
};
pub use url::Url;
