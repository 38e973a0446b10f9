//! What a protected resource says about itself: the RFC 9728 document, and the
//! `WWW-Authenticate` challenge (RFC 6750 §3, with RFC 9728 §5.1's `resource_metadata`) of a
//! refusal.

use serde::Serialize;
use url::Url;

/// Where the RFC 9728 document of `resource` is (§3.1): the well-known name inserted between
/// the host and the path, `https://host/.well-known/oauth-protected-resource/mcp` for
/// `https://host/mcp`.
pub fn metadata_url(resource: &Url) -> String {
    format!(
        "{}/.well-known/oauth-protected-resource{}",
        resource.origin().ascii_serialization(),
        resource.path().trim_end_matches('/')
    )
}

/// The protected resource metadata document (RFC 9728 §2), served at
/// `/.well-known/oauth-protected-resource` and its path-suffixed form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ResourceMetadata {
    /// The resource's identifier, the audience its tokens must carry.
    pub resource: String,
    /// The issuers whose tokens it accepts.
    pub authorization_servers: Vec<String>,
    /// The scopes a client may ask for.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scopes_supported: Vec<String>,
    /// How tokens are presented: the `Authorization` header only.
    pub bearer_methods_supported: Vec<String>,
    /// The algorithms tokens may be signed with.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resource_signing_alg_values_supported: Vec<String>,
}

impl ResourceMetadata {
    /// The document of `resource`, protected by `issuer`, tokens in the header only.
    pub fn new(resource: impl Into<String>, issuer: impl Into<String>) -> Self {
        Self {
            resource: resource.into(),
            authorization_servers: vec![issuer.into()],
            scopes_supported: Vec::new(),
            bearer_methods_supported: vec!["header".to_owned()],
            resource_signing_alg_values_supported: Vec::new(),
        }
    }

    /// The document as JSON.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// Appends `name="value"` with the value's `"` and `\` escaped (RFC 9110 §5.6.4).
fn param(out: &mut String, name: &str, value: &str) {
    if !out.ends_with("Bearer") {
        out.push(',');
    }
    out.push(' ');
    out.push_str(name);
    out.push_str("=\"");
    for c in value.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        // A header value holds visible characters only.
        if c == ' ' || c.is_ascii_graphic() {
            out.push(c);
        }
    }
    out.push('"');
}

/// The `WWW-Authenticate` value of a refusal: `Bearer resource_metadata="..."`, the `scope`
/// the client should ask for (when there is one), and for a token that was presented, the
/// `error` code and its description (RFC 6750 §3.1: none when no token was).
pub fn challenge(resource_metadata: &str, scope: &[String], error: Option<(&str, &str)>) -> String {
    let mut out = String::from("Bearer");
    if let Some((code, _)) = error {
        param(&mut out, "error", code);
    }
    if let Some((_, description)) = error {
        param(&mut out, "error_description", description);
    }
    param(&mut out, "resource_metadata", resource_metadata);
    if !scope.is_empty() {
        param(&mut out, "scope", &scope.join(" "));
    }
    out
}
