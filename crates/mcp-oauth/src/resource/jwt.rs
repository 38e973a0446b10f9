//! A JWT access token (RFC 9068 profile of RFC 7519, signed as a compact JWS, RFC 7515) read
//! and checked: the signature first, with a key of the issuer's set and an allowed algorithm,
//! then the claims.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use serde_json::Value;

use super::{Algorithm, JwkSet, TokenPolicy};

/// The longest token read (bytes); a longer one is refused before any decoding.
pub const MAX_TOKEN_BYTES: usize = 16 << 10;

/// Who a valid token says the caller is, for rules per caller: the claims a gateway decides
/// on. Built only by [`validate`] and [`IntrospectionAnswer::judge`](super::IntrospectionAnswer::judge), so
/// holding one means its token was checked.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Caller {
    /// `iss`, the policy's issuer.
    pub issuer: String,
    /// `sub`: the user (or the client, for a `client_credentials` token); never empty.
    pub subject: Option<String>,
    /// `client_id` (RFC 9068 §2.2), or `azp` where the issuer states that instead; never
    /// empty. A caller always has this or [`subject`](Self::subject).
    pub client_id: Option<String>,
    /// `scope` split on spaces (RFC 9068 §2.2.3), or an `scp` array.
    pub scopes: Vec<String>,
    /// `groups` (RFC 9068 §2.2.3.1 / RFC 7643), strings only.
    pub groups: Vec<String>,
    /// `roles`, strings only.
    pub roles: Vec<String>,
    /// `exp`, in seconds since the Unix epoch.
    pub expires_at: u64,
}

impl Caller {
    /// Whether the token granted `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }
}

/// Why a token is refused. The text names the rule and never quotes the token, its claims or
/// a key: it goes into `WWW-Authenticate` and logs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rejection {
    /// Not a compact JWS of three base64url parts with JSON header and claims, or too long.
    Malformed(&'static str),
    /// Its `alg` is not on the allow-list (`none` and the HMAC algorithms never are).
    Algorithm,
    /// Its `typ` is neither `at+jwt` (RFC 9068) nor `JWT`.
    Type,
    /// Its header has a `crit` member: extensions this resource does not understand.
    Critical,
    /// No key of the issuer's set has its `kid` (or fits its algorithm): the set may have
    /// changed since it was fetched ([`is_unknown_key`](Self::is_unknown_key)).
    UnknownKey,
    /// No key that fits verifies the signature.
    BadSignature,
    /// `iss` is missing or another issuer's.
    Issuer,
    /// `aud` is missing or does not contain this resource: a token for another resource.
    Audience,
    /// `exp` is missing or past.
    Expired,
    /// `nbf` is in the future.
    NotYetValid,
    /// `iat` is in the future.
    IssuedInFuture,
    /// Valid, but without these scopes the resource requires: a 403.
    InsufficientScope(Vec<String>),
    /// The issuer's introspection endpoint (RFC 7662) says the token is not active: revoked,
    /// expired, unknown, or not to be shown to this resource.
    Inactive,
    /// The issuer says the token is bound to a key (`cnf`) or of a `token_type` other than
    /// `Bearer`: it proves nothing without a proof this resource does not ask for.
    NotBearer,
    /// It names neither a subject (`sub`) nor a client (`client_id` or `azp`), which RFC 9068
    /// §2.2 requires of a JWT access token: a resource that binds sessions and tasks to their
    /// caller could tell no two such callers apart, so each would be every other's owner.
    Anonymous,
}

impl Rejection {
    /// Whether the caller may fetch the key set again and retry: the token names a key the
    /// set does not hold.
    pub fn is_unknown_key(&self) -> bool {
        matches!(self, Self::UnknownKey)
    }

    /// Whether this is a 403 `insufficient_scope`, not a 401 `invalid_token`.
    pub fn is_insufficient_scope(&self) -> bool {
        matches!(self, Self::InsufficientScope(_))
    }

    /// The RFC 6750 §3.1 error code.
    pub fn error_code(&self) -> &'static str {
        if self.is_insufficient_scope() {
            "insufficient_scope"
        } else {
            "invalid_token"
        }
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Malformed(what) => write!(f, "the token is not a signed JWT: {what}"),
            Self::Algorithm => f.write_str("the token's algorithm is not accepted"),
            Self::Type => f.write_str("the token's typ is not at+jwt"),
            Self::Critical => f.write_str("the token's header has critical extensions"),
            Self::UnknownKey => f.write_str("the token is signed with an unknown key"),
            Self::BadSignature => f.write_str("the token's signature does not verify"),
            Self::Issuer => f.write_str("the token is from another issuer"),
            Self::Audience => f.write_str("the token is not for this resource"),
            Self::Expired => f.write_str("the token has expired"),
            Self::NotYetValid => f.write_str("the token is not valid yet"),
            Self::IssuedInFuture => f.write_str("the token is issued in the future"),
            Self::InsufficientScope(missing) => {
                write!(f, "the token lacks the scopes {}", missing.join(" "))
            }
            Self::Inactive => f.write_str("the issuer says the token is not active"),
            Self::NotBearer => f.write_str("the token is not a bearer token"),
            Self::Anonymous => {
                f.write_str("the token names neither a subject (sub) nor a client (client_id)")
            }
        }
    }
}

impl std::error::Error for Rejection {}

#[derive(Deserialize)]
struct Header {
    alg: String,
    #[serde(default)]
    kid: Option<String>,
    #[serde(default)]
    typ: Option<String>,
    #[serde(default)]
    crit: Option<Value>,
}

/// Whether `aud` (a string, or an array of strings) contains `want`, compared without a
/// trailing `/`.
fn audience_contains(aud: Option<&Value>, want: &str) -> bool {
    let same = |a: &str| a.trim_end_matches('/') == want.trim_end_matches('/');
    match aud {
        Some(Value::String(s)) => same(s),
        Some(Value::Array(v)) => v.iter().any(|a| a.as_str().is_some_and(same)),
        _ => false,
    }
}

/// The claims read, each as any JSON so that a claim of the wrong type is judged by the rule
/// it breaks (another issuer, no audience) rather than failing the whole set.
#[derive(Deserialize)]
pub(super) struct Claims {
    #[serde(default)]
    iss: Option<Value>,
    #[serde(default)]
    sub: Option<Value>,
    #[serde(default)]
    aud: Option<Value>,
    #[serde(default)]
    exp: Option<Value>,
    #[serde(default)]
    nbf: Option<Value>,
    #[serde(default)]
    iat: Option<Value>,
    #[serde(default)]
    client_id: Option<Value>,
    #[serde(default)]
    azp: Option<Value>,
    #[serde(default)]
    scope: Option<Value>,
    #[serde(default)]
    scp: Option<Value>,
    #[serde(default)]
    groups: Option<Value>,
    #[serde(default)]
    roles: Option<Value>,
}

/// A claim naming someone (`sub`, `client_id`, `azp`): a non-empty string, since callers are
/// told apart by it and an empty one would name every caller whose token has one.
fn name(v: Option<Value>) -> Option<String> {
    match v {
        Some(Value::String(s)) if !s.is_empty() => Some(s),
        _ => None,
    }
}

/// A NumericDate (RFC 7519 §2): a non-negative number of seconds, fractions dropped.
fn numeric_date(v: &Value) -> Option<u64> {
    if let Some(n) = v.as_u64() {
        return Some(n);
    }
    let f = v.as_f64()?;
    // `as` saturates; the range check keeps a negative or enormous value out.
    (f.is_finite() && (0.0..1e15).contains(&f)).then_some(f as u64)
}

/// The strings of a claim that is a space-separated string or an array (others ignored).
fn strings(v: Option<&Value>, split: bool) -> Vec<String> {
    match v {
        Some(Value::String(s)) if split => s
            .split(' ')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|i| i.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

fn part(p: &str) -> Result<Vec<u8>, Rejection> {
    URL_SAFE_NO_PAD
        .decode(p.as_bytes())
        .map_err(|_| Rejection::Malformed("a part is not base64url"))
}

/// Checks `token` (the bearer value, without `Bearer `) against `policy` with the issuer's
/// `keys` at `now` (seconds since the Unix epoch): signature, `alg`, `typ`, `iss`, `aud`,
/// `exp`, `nbf`, `iat`, then the required scopes. Keys named in the token's own header (`jku`,
/// `jwk`, `x5u`) are never used.
pub fn validate(
    token: &str,
    policy: &TokenPolicy,
    keys: &JwkSet,
    now: u64,
) -> Result<Caller, Rejection> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err(Rejection::Malformed("longer than the limit"));
    }
    let mut parts = token.split('.');
    let (Some(h), Some(p), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Rejection::Malformed("not three parts"));
    };
    let header: Header = serde_json::from_slice(&part(h)?)
        .map_err(|_| Rejection::Malformed("the header is not a JWS header"))?;
    let alg = Algorithm::parse(&header.alg).map_err(|_| Rejection::Algorithm)?;
    if !policy.algorithms.contains(&alg) {
        return Err(Rejection::Algorithm);
    }
    if header.crit.is_some() {
        return Err(Rejection::Critical);
    }
    if let Some(typ) = &header.typ {
        let typ = typ.to_ascii_lowercase();
        let typ = typ.strip_prefix("application/").unwrap_or(&typ);
        if typ != "at+jwt" && typ != "jwt" {
            return Err(Rejection::Type);
        }
    }
    let signature = part(s)?;
    let signed = &token.as_bytes()[..h.len() + 1 + p.len()];
    let mut candidates = keys.candidates(alg, header.kid.as_deref()).peekable();
    if candidates.peek().is_none() {
        return Err(Rejection::UnknownKey);
    }
    if !candidates.any(|k| k.verifies(alg, signed, &signature)) {
        return Err(Rejection::BadSignature);
    }
    let claims: Claims = serde_json::from_slice(&part(p)?)
        .map_err(|_| Rejection::Malformed("the claims are not a JWT claims set"))?;
    caller_of(claims, policy, now, true)
}

/// Judges a claims set, from a verified JWT or an introspection answer, against `policy` at
/// `now`: `iss` (required when `require_issuer`, else checked only when present), `aud`,
/// `exp`, `nbf`, `iat`, then the required scopes.
pub(super) fn caller_of(
    claims: Claims,
    policy: &TokenPolicy,
    now: u64,
    require_issuer: bool,
) -> Result<Caller, Rejection> {
    match claims.iss.as_ref() {
        None if !require_issuer => {}
        iss => {
            if iss.and_then(Value::as_str) != Some(policy.issuer.as_str()) {
                return Err(Rejection::Issuer);
            }
        }
    }
    if !audience_contains(claims.aud.as_ref(), &policy.audience) {
        return Err(Rejection::Audience);
    }
    let leeway = policy.leeway_secs;
    let exp = claims
        .exp
        .as_ref()
        .and_then(numeric_date)
        .ok_or(Rejection::Expired)?;
    if exp.saturating_add(leeway) <= now {
        return Err(Rejection::Expired);
    }
    if let Some(nbf) = &claims.nbf {
        let nbf = numeric_date(nbf).ok_or(Rejection::Malformed("nbf is not a date"))?;
        if nbf > now.saturating_add(leeway) {
            return Err(Rejection::NotYetValid);
        }
    }
    if let Some(iat) = &claims.iat {
        let iat = numeric_date(iat).ok_or(Rejection::Malformed("iat is not a date"))?;
        if iat > now.saturating_add(leeway) {
            return Err(Rejection::IssuedInFuture);
        }
    }
    let mut scopes = strings(claims.scope.as_ref(), true);
    if scopes.is_empty() {
        scopes = strings(claims.scp.as_ref(), true);
    }
    let caller = Caller {
        issuer: policy.issuer.clone(),
        subject: name(claims.sub),
        client_id: name(claims.client_id).or(name(claims.azp)),
        scopes,
        groups: strings(claims.groups.as_ref(), false),
        roles: strings(claims.roles.as_ref(), false),
        expires_at: exp,
    };
    if caller.subject.is_none() && caller.client_id.is_none() {
        return Err(Rejection::Anonymous);
    }
    let missing: Vec<String> = policy
        .required_scopes
        .iter()
        .filter(|s| !caller.has_scope(s))
        .cloned()
        .collect();
    if !missing.is_empty() {
        return Err(Rejection::InsufficientScope(missing));
    }
    Ok(caller)
}
