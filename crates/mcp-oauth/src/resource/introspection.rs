//! RFC 7662 token introspection, for access tokens a resource cannot read itself (opaque
//! ones): the request that asks the issuer, the reading of its answer against the same
//! [`TokenPolicy`] as a JWT's claims, and a short cache of the positive answers. As elsewhere
//! in this module nothing is fetched here: the caller sends the request and brings the answer
//! and the time.

use std::collections::HashMap;

use serde_json::Value;
use sha2::{Digest as _, Sha256};
use url::form_urlencoded;

use super::jwt::{Claims, caller_of};
use super::{Caller, Rejection, TokenPolicy};
use crate::error::Error;
use crate::flow::{ClientAuth, form_post};
use crate::secret::ClientSecret;

/// The largest introspection answer read (bytes): a real one is a few hundred.
pub const MAX_INTROSPECTION_BYTES: usize = 64 << 10;

/// The POST that asks the issuer's introspection endpoint about `token` (RFC 7662 §2.1), as
/// `client_id` with its secret in HTTP Basic (RFC 6749 §2.3.1): an introspection endpoint
/// answers only callers it knows, or anyone could probe which tokens are live.
pub fn introspection_request(
    endpoint: &str,
    client_id: &str,
    secret: &ClientSecret,
    token: &str,
) -> Result<http::Request<Vec<u8>>, Error> {
    let mut form = form_urlencoded::Serializer::new(String::new());
    form.append_pair("token", token)
        .append_pair("token_type_hint", "access_token");
    form_post(
        endpoint,
        form,
        client_id,
        &ClientAuth::Basic(secret.clone()),
        "introspection_endpoint",
    )
}

/// An introspection endpoint's answer, read but not yet judged.
pub struct IntrospectionAnswer {
    active: bool,
    /// `token_type`, when stated.
    token_type: Option<String>,
    /// Whether the token is bound to a key (`cnf`, RFC 7800 / RFC 9449): a proof this
    /// resource does not ask for, so it is not taken as a bearer token.
    bound: bool,
    claims: Option<Claims>,
}

// Whether it is active, never its claims.
impl std::fmt::Debug for IntrospectionAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntrospectionAnswer")
            .field("active", &self.active)
            .finish_non_exhaustive()
    }
}

impl IntrospectionAnswer {
    /// Reads the body of a 200 answer. Something that is not an introspection answer (not
    /// JSON, no boolean `active`, too long) is an error: the endpoint failed, which says
    /// nothing about the token.
    pub fn parse(body: &[u8]) -> Result<Self, Error> {
        let invalid = |detail: &str| Error::InvalidMetadata {
            what: "token introspection answer",
            detail: detail.to_owned(),
        };
        if body.len() > MAX_INTROSPECTION_BYTES {
            return Err(invalid("larger than the limit"));
        }
        let value: Value =
            serde_json::from_slice(body).map_err(|_| invalid("not a JSON object"))?;
        let Some(active) = value.get("active").and_then(Value::as_bool) else {
            return Err(invalid("no boolean `active`"));
        };
        if !active {
            return Ok(Self {
                active,
                token_type: None,
                bound: false,
                claims: None,
            });
        }
        let token_type = value
            .get("token_type")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let bound = value.get("cnf").is_some_and(|c| !c.is_null());
        let claims: Claims =
            serde_json::from_value(value).map_err(|_| invalid("not a JSON object"))?;
        Ok(Self {
            active,
            token_type,
            bound,
            claims: Some(claims),
        })
    }

    /// Judges the answer against `policy` at `now` (seconds since the Unix epoch): an
    /// inactive token is refused; an active one must be a bearer token (its `token_type`, if
    /// stated, `Bearer`; no `cnf` key binding), for this resource (`aud`), of the policy's
    /// issuer when it states one (`iss` is optional in RFC 7662, and the answer comes from
    /// the issuer's own endpoint), unexpired (`exp` required, as for a JWT: it bounds how long
    /// the answer is kept), with the required scopes.
    pub fn judge(self, policy: &TokenPolicy, now: u64) -> Result<Caller, Rejection> {
        let Some(claims) = self.claims.filter(|_| self.active) else {
            return Err(Rejection::Inactive);
        };
        if self.bound
            || self
                .token_type
                .is_some_and(|t| !t.eq_ignore_ascii_case("bearer"))
        {
            return Err(Rejection::NotBearer);
        }
        caller_of(claims, policy, now, false)
    }
}

/// One kept answer.
#[derive(Debug, Clone)]
struct Kept {
    caller: Caller,
    /// Kept while `now` is before this (seconds).
    until: u64,
}

/// The callers of tokens introspected lately, so that a client's every request does not
/// cost the issuer one: positive answers only, each kept [`max_age_secs`](Self::max_age_secs)
/// at most and never past its token's `exp`, at most [`max_entries`](Self::max_entries) of
/// them. Tokens are kept as their SHA-256, never as themselves. A token revoked at the
/// issuer is still taken for up to `max_age_secs`: the price of not asking every time.
#[derive(Debug, Clone)]
pub struct IntrospectionCache {
    kept: HashMap<[u8; 32], Kept>,
    /// How long an answer is kept, in seconds (default 60; 0 keeps none).
    pub max_age_secs: u64,
    /// How many answers are kept (default 4096); when full, the one that would go first
    /// makes room.
    pub max_entries: usize,
}

impl Default for IntrospectionCache {
    fn default() -> Self {
        Self::new()
    }
}

fn key(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl IntrospectionCache {
    /// Empty: answers kept 60 s, 4096 of them at most.
    pub fn new() -> Self {
        Self {
            kept: HashMap::new(),
            max_age_secs: 60,
            max_entries: 4096,
        }
    }

    /// The caller of `token` if an answer about it is still kept at `now`.
    pub fn get(&mut self, token: &str, now: u64) -> Option<Caller> {
        let k = key(token);
        match self.kept.get(&k) {
            Some(kept) if now < kept.until => Some(kept.caller.clone()),
            Some(_) => {
                self.kept.remove(&k);
                None
            }
            None => None,
        }
    }

    /// Keeps the positive answer `caller` about `token`, got at `now`.
    pub fn insert(&mut self, token: &str, caller: Caller, now: u64) {
        let until = now.saturating_add(self.max_age_secs).min(caller.expires_at);
        if until <= now || self.max_entries == 0 {
            return;
        }
        let k = key(token);
        if self.kept.len() >= self.max_entries && !self.kept.contains_key(&k) {
            self.kept.retain(|_, kept| now < kept.until);
            if self.kept.len() >= self.max_entries
                && let Some(first) = self
                    .kept
                    .iter()
                    .min_by_key(|(_, kept)| kept.until)
                    .map(|(k, _)| *k)
            {
                self.kept.remove(&first);
            }
        }
        self.kept.insert(k, Kept { caller, until });
    }

    /// How many answers are kept.
    pub fn len(&self) -> usize {
        self.kept.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }
}

/// Tokens the issuer refused lately (inactive, or judged unfit: wrong audience, expired,
/// without the scopes), so that a client sending one bad token again and again costs the
/// issuer one request per [`max_age_secs`](Self::max_age_secs), not one each. Kept as the
/// token's SHA-256 with the rejection, never as the token; at most
/// [`max_entries`](Self::max_entries), apart from the positive answers, so that a flood of
/// bad tokens never pushes a good one out. Kept briefly (10 s by default): a refusal that
/// stops being true (a token whose `nbf` passes) is believed only that long.
#[derive(Debug, Clone)]
pub struct RefusedCache {
    kept: HashMap<[u8; 32], (Rejection, u64)>,
    /// How long a refusal is kept, in seconds (default 10; 0 keeps none).
    pub max_age_secs: u64,
    /// How many refusals are kept (default 4096); when full, the oldest makes room.
    pub max_entries: usize,
}

impl Default for RefusedCache {
    fn default() -> Self {
        Self::new()
    }
}

impl RefusedCache {
    /// Empty: refusals kept 10 s, 4096 of them at most.
    pub fn new() -> Self {
        Self {
            kept: HashMap::new(),
            max_age_secs: 10,
            max_entries: 4096,
        }
    }

    /// Why `token` was refused, if that is still kept at `now`.
    pub fn get(&mut self, token: &str, now: u64) -> Option<Rejection> {
        let k = key(token);
        match self.kept.get(&k) {
            Some((rejection, until)) if now < *until => Some(rejection.clone()),
            Some(_) => {
                self.kept.remove(&k);
                None
            }
            None => None,
        }
    }

    /// Keeps the refusal of `token`, judged at `now`.
    pub fn insert(&mut self, token: &str, rejection: Rejection, now: u64) {
        let until = now.saturating_add(self.max_age_secs);
        if until <= now || self.max_entries == 0 {
            return;
        }
        let k = key(token);
        if self.kept.len() >= self.max_entries && !self.kept.contains_key(&k) {
            self.kept.retain(|_, (_, u)| now < *u);
            if self.kept.len() >= self.max_entries
                && let Some(first) = self
                    .kept
                    .iter()
                    .min_by_key(|(_, (_, u))| *u)
                    .map(|(k, _)| *k)
            {
                self.kept.remove(&first);
            }
        }
        self.kept.insert(k, (rejection, until));
    }

    /// How many refusals are kept.
    pub fn len(&self) -> usize {
        self.kept.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const ISSUER: &str = "https://issuer.example";
    const AUDIENCE: &str = "https://gateway.example/mcp";
    const NOW: u64 = 1_800_000_000;

    fn policy() -> TokenPolicy {
        let mut p = TokenPolicy::new(ISSUER, AUDIENCE);
        p.required_scopes = vec!["mcp:tools".to_owned()];
        p
    }

    fn active() -> Value {
        json!({"active": true, "iss": ISSUER, "aud": AUDIENCE, "sub": "alice",
            "client_id": "app", "scope": "openid mcp:tools", "exp": NOW + 600,
            "iat": NOW - 10, "token_type": "Bearer"})
    }

    fn judged(answer: &Value) -> Result<Caller, Rejection> {
        IntrospectionAnswer::parse(answer.to_string().as_bytes())
            .expect("an answer")
            .judge(&policy(), NOW)
    }

    fn with(field: &str, value: Value) -> Value {
        let mut a = active();
        a[field] = value;
        a
    }

    fn without(field: &str) -> Value {
        let mut a = active();
        a.as_object_mut().unwrap().remove(field);
        a
    }

    #[test]
    fn an_active_answer_for_this_resource_gives_its_caller() {
        let caller = judged(&active()).expect("taken");
        assert_eq!(caller.subject.as_deref(), Some("alice"));
        assert_eq!(caller.client_id.as_deref(), Some("app"));
        assert_eq!(caller.scopes, ["openid", "mcp:tools"]);
        assert_eq!(caller.expires_at, NOW + 600);
        assert_eq!(caller.issuer, ISSUER);
        // `iss` is optional in an introspection answer; `aud` as an array.
        assert!(judged(&without("iss")).is_ok());
        assert!(judged(&with("aud", json!(["other", format!("{AUDIENCE}/")]))).is_ok());
        assert!(judged(&with("token_type", json!("bearer"))).is_ok());
    }

    #[test]
    fn each_fault_of_an_answer_is_its_own_rejection() {
        assert!(judged(&active()).is_ok());
        for (answer, want) in [
            (json!({"active": false}), Rejection::Inactive),
            (with("active", json!(false)), Rejection::Inactive),
            (
                with("iss", json!("https://other.example")),
                Rejection::Issuer,
            ),
            (with("iss", json!(7)), Rejection::Issuer),
            (
                with("aud", json!("https://other.example/mcp")),
                Rejection::Audience,
            ),
            (without("aud"), Rejection::Audience),
            (
                {
                    let mut a = without("sub");
                    a.as_object_mut().unwrap().remove("client_id");
                    a
                },
                Rejection::Anonymous,
            ),
            (with("exp", json!(NOW - 3600)), Rejection::Expired),
            (without("exp"), Rejection::Expired),
            (with("nbf", json!(NOW + 3600)), Rejection::NotYetValid),
            (with("token_type", json!("DPoP")), Rejection::NotBearer),
            (with("cnf", json!({"jkt": "abc"})), Rejection::NotBearer),
            (
                with("scope", json!("openid")),
                Rejection::InsufficientScope(vec!["mcp:tools".to_owned()]),
            ),
        ] {
            assert_eq!(judged(&answer), Err(want), "{answer}");
        }
    }

    #[test]
    fn what_is_not_an_answer_is_an_error_not_a_rejection() {
        assert!(IntrospectionAnswer::parse(br#"{"active": false}"#).is_ok());
        for body in [&b"<html>"[..], b"[]", b"{}", br#"{"active": "true"}"#] {
            let e = IntrospectionAnswer::parse(body);
            assert!(e.is_err(), "{}", String::from_utf8_lossy(body));
        }
        let long = format!(
            r#"{{"active": true, "x": "{}"}}"#,
            "a".repeat(MAX_INTROSPECTION_BYTES)
        );
        assert!(IntrospectionAnswer::parse(long.as_bytes()).is_err());
        // A claim of the wrong type is judged by the rule it breaks, as in a JWT.
        assert_eq!(
            judged(&with("scope", json!(7))),
            Err(Rejection::InsufficientScope(vec!["mcp:tools".to_owned()]))
        );
    }

    #[test]
    fn the_request_authenticates_the_resource_and_names_the_token_only_in_its_body() {
        let secret = ClientSecret::new("s3cr:t");
        let r = introspection_request(
            "https://issuer.example/introspect",
            "gateway",
            &secret,
            "opaque+token",
        )
        .expect("a request");
        assert_eq!(r.method(), http::Method::POST);
        assert_eq!(r.uri(), "https://issuer.example/introspect");
        let body = String::from_utf8(r.body().clone()).unwrap();
        assert_eq!(body, "token=opaque%2Btoken&token_type_hint=access_token");
        let basic = r.headers()[http::header::AUTHORIZATION].to_str().unwrap();
        // RFC 6749 §2.3.1: id and secret form-encoded, then joined and base64'd.
        use base64::Engine as _;
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(basic.strip_prefix("Basic ").expect("Basic"))
            .unwrap();
        assert_eq!(decoded, b"gateway:s3cr%3At");
        assert!(r.headers()[http::header::AUTHORIZATION].is_sensitive());
        assert!(!r.uri().to_string().contains("opaque"));
    }

    fn caller(exp: u64) -> Caller {
        judged(&with("exp", json!(exp))).expect("taken")
    }

    #[test]
    fn the_cache_keeps_an_answer_until_its_age_or_the_tokens_exp_whichever_is_first() {
        let mut cache = IntrospectionCache::new();
        cache.insert("a", caller(NOW + 600), NOW);
        assert_eq!(
            cache.get("a", NOW + 59).map(|c| c.expires_at),
            Some(NOW + 600)
        );
        assert!(cache.get("b", NOW).is_none());
        assert!(cache.get("a", NOW + 60).is_none());
        assert!(cache.is_empty());
        // A token that expires in 10 s is kept 10 s, not 60.
        cache.insert("soon", caller(NOW + 10), NOW);
        assert!(cache.get("soon", NOW + 9).is_some());
        assert!(cache.get("soon", NOW + 10).is_none());
        // 0 keeps nothing.
        cache.max_age_secs = 0;
        cache.insert("a", caller(NOW + 600), NOW);
        assert!(cache.get("a", NOW).is_none());
    }

    #[test]
    fn the_cache_is_bounded_and_makes_room_with_the_answer_that_would_go_first() {
        let mut cache = IntrospectionCache::new();
        cache.max_entries = 3;
        cache.insert("t1", caller(NOW + 30), NOW);
        cache.insert("t2", caller(NOW + 600), NOW);
        cache.insert("t3", caller(NOW + 600), NOW);
        assert_eq!(cache.len(), 3);
        cache.insert("t4", caller(NOW + 600), NOW);
        assert_eq!(cache.len(), 3);
        assert!(cache.get("t1", NOW).is_none());
        for t in ["t2", "t3", "t4"] {
            assert!(cache.get(t, NOW).is_some(), "{t}");
        }
        // The cache holds hashes: no token in what it shows.
        assert!(!format!("{cache:?}").contains("t2"));
    }

    #[test]
    fn refusals_are_kept_briefly_bounded_and_apart_from_the_answers() {
        let mut refused = RefusedCache::new();
        refused.insert("bad", Rejection::Inactive, NOW);
        assert_eq!(refused.get("bad", NOW + 9), Some(Rejection::Inactive));
        assert_eq!(refused.get("other", NOW), None);
        assert_eq!(refused.get("bad", NOW + 10), None);
        assert!(refused.is_empty());
        // Bounded: the oldest makes room, and a flood of refusals leaves the answers alone.
        let mut kept = IntrospectionCache::new();
        kept.insert("good", caller(NOW + 600), NOW);
        refused.max_entries = 2;
        refused.insert("r1", Rejection::Inactive, NOW);
        refused.insert("r2", Rejection::NotBearer, NOW + 1);
        refused.insert("r3", Rejection::Inactive, NOW + 2);
        assert_eq!(refused.len(), 2);
        assert_eq!(refused.get("r1", NOW + 2), None);
        assert_eq!(refused.get("r2", NOW + 2), Some(Rejection::NotBearer));
        assert!(kept.get("good", NOW + 2).is_some());
        // Kept as hashes: no token in what it shows.
        assert!(!format!("{refused:?}").contains("r2"));
        refused.max_age_secs = 0;
        refused.insert("r4", Rejection::Inactive, NOW);
        assert_eq!(refused.get("r4", NOW), None);
    }
}
