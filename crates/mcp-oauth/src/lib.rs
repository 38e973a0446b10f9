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
//! mcp-oauth depends on no other workspace crate and reads no clock or OS randomness.
//!
//! # Optional features
//!
//! None yet; `full` is accepted for uniformity.
//!
//! # Stability
//!
//! Pre-1.0: the API may change between minor versions.

pub mod challenge;
pub mod discovery;
mod error;
pub mod flow;
mod pkce;
pub mod registration;
mod secret;
pub mod store;

// The public interface is:
pub use challenge::BearerChallenge;
pub use error::Error;
pub use pkce::{Pkce, state_from_random};
pub use secret::{AccessToken, AuthorizationCode, ClientSecret, PkceVerifier, RefreshToken};
pub use url::Url;
