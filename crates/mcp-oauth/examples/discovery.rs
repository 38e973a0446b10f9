//! The first steps of an MCP login, without I/O: the MCP server's 401 challenge, where to look
//! for its protected resource metadata, the check of the document found there, where to look
//! for the authorization server's metadata, and the PKCE pair of the authorization request.
//! The caller fetches each URL with its own HTTP client; [`mcp_oauth::Authorizer`] drives the
//! whole flow over such a client.
//!
//! ```text
//! cargo run -p mcp-oauth --example discovery
//! ```

// A command-line example that reports on its standard output.
#![allow(clippy::print_stdout)]

use std::error::Error;

use mcp_oauth::discovery::{self, ProtectedResourceMetadata};
use mcp_oauth::{BearerChallenge, Pkce, Url};

fn main() -> Result<(), Box<dyn Error>> {
    let server = Url::parse("https://mcp.example.com/mcp")?;

    // 1. The MCP server answered 401 with this `WWW-Authenticate` header.
    let header = r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="files:read""#;
    let challenge = BearerChallenge::find([header]).ok_or("no Bearer challenge")?;
    println!("scope asked for: {:?}", challenge.scope);

    // 2. Where its protected resource metadata may be, in the order the spec gives.
    let named = challenge.resource_metadata.as_deref();
    for url in discovery::protected_resource_metadata_urls(&server, named) {
        println!("resource metadata: {url}");
    }

    // 3. The document fetched from the first of them, accepted only if it is this server's.
    let body = br#"{"resource": "https://mcp.example.com/mcp",
                    "authorization_servers": ["https://auth.example.com"]}"#;
    let metadata = ProtectedResourceMetadata::parse(body, &server)?;

    // 4. Where the authorization server's own metadata may be.
    let first = metadata
        .authorization_servers
        .first()
        .ok_or("no authorization server")?;
    let issuer = Url::parse(first)?;
    for url in discovery::authorization_server_metadata_urls(&issuer) {
        println!("authorization server metadata: {url}");
    }

    // 5. PKCE from 32 random bytes the caller supplies (this crate reads no OS randomness).
    let pkce = Pkce::from_random([7; 32]);
    println!(
        "code_challenge={}&code_challenge_method=S256",
        pkce.challenge
    );
    Ok(())
}
