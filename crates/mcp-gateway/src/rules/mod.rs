//! The gateway file's `rules`: who, by the claims of its access token, may see and call which
//! upstreams and tools, and how often (issue 24 §2). Rules judge the caller the `auth` block
//! found, so a file with rules and no `auth` is refused at load: there would be no one to
//! judge.
//!
//! Rules are read in order. Every `deny` and `hide` rule comes first (the first that matches
//! decides), then the first `allow` that matches; a call no rule allows is hidden. `hide`
//! takes the tool out of the caller's lists and answers a call to it as for a tool that does
//! not exist; `deny` leaves it listed and refuses a call with `PermissionDenied`, naming the
//! rule. No rules at all: everything is allowed, as before rules existed.
//!
//! An `allow` rule may carry a rate limit (calls per minute, per tool or per upstream, for
//! each caller). The counters are behind [`RateStore`]: in this process ([`LocalRates`]), or
//! in Redis when the file has a `store` block ([`RedisRates`], `redis.rs`), so that replicas
//! share one count per caller.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mcp_host::inbound::Caller;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::glob::glob;
use crate::sync::lock;

mod admit;
mod redis;
#[cfg(test)]
mod tests;

pub(crate) use admit::Refusal;
pub(crate) use redis::RedisRates;

/// One rule of `rules`: whom it is about (`when`), what (`upstreams`, `tools`), and its effect.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[non_exhaustive]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rule {
    /// The name refusals and the log give the rule (default `rules[N]`, its place).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `allow`, `deny` (listed, a call refused naming this rule) or `hide` (neither listed
    /// nor callable: a call reads as one to a tool that does not exist).
    pub effect: Effect,
    /// Which callers: every claim given must match (default: every caller).
    #[serde(default)]
    pub when: When,
    /// Upstream ids, or globs of them (`*` any run, `?` one character); default all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub upstreams: Vec<String>,
    /// Tool names as the upstream names them, or globs of them; default all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// Only on `allow`: how many calls a caller may make in any minute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<RateLimit>,
}

/// What a rule does with the calls it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[non_exhaustive]
#[serde(rename_all = "lowercase")]
pub enum Effect {
    /// Listed and callable.
    Allow,
    /// Listed, but a call is refused with `PermissionDenied` naming the rule.
    Deny,
    /// Neither listed nor callable; a call is answered as for an unknown tool.
    Hide,
}

/// The claims a rule is about. Each is a list of values or globs; a claim matches when one of
/// the token's values matches one of them (`groups`, `roles` and `scope` hold several).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[non_exhaustive]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct When {
    /// `sub`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sub: Vec<String>,
    /// `groups`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// `roles`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<String>,
    /// The scopes of `scope` (or `scp`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scope: Vec<String>,
    /// `client_id` (or `azp`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub client_id: Vec<String>,
}

/// How often one caller may call under an `allow` rule.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[non_exhaustive]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RateLimit {
    /// Calls in any 60 seconds.
    #[schemars(range(min = 1, max = 100000))]
    pub calls_per_minute: u32,
    /// What is counted: each `tool` apart (the default), or all of an `upstream`'s tools together.
    #[serde(default)]
    pub per: Per,
}

/// What one rate-limit counter counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[non_exhaustive]
#[serde(rename_all = "lowercase")]
pub enum Per {
    /// Each tool has its own count.
    #[default]
    Tool,
    /// An upstream's tools share one count.
    Upstream,
}

/// The name a refusal gives rule `index` (0-based).
fn rule_name(rules: &[Rule], index: usize) -> String {
    rules
        .get(index)
        .and_then(|r| r.name.clone())
        .unwrap_or_else(|| format!("rules[{index}]"))
}

/// Checks `rules` at load, naming the first wrong rule and field: there must be an `auth`
/// block to find callers, globs must not be empty, an upstream named without a glob must be
/// one of `servers`, names must be unique, and only `allow` rules may limit rates.
pub(crate) fn check<'s>(
    rules: &[Rule],
    has_auth: bool,
    servers: impl Iterator<Item = &'s str> + Clone,
) -> Result<(), String> {
    if rules.is_empty() {
        return Ok(());
    }
    if !has_auth {
        return Err(
            "rules: needs an `auth` block (rules judge the caller its access token names)"
                .to_owned(),
        );
    }
    let mut names = Vec::new();
    for (i, rule) in rules.iter().enumerate() {
        let at = match &rule.name {
            Some(name) => format!("rules[{i}] (`{name}`)"),
            None => format!("rules[{i}]"),
        };
        if let Some(name) = &rule.name {
            if name.trim().is_empty() {
                return Err(format!("{at}.name: must not be empty"));
            }
            if names.contains(&name) {
                return Err(format!("{at}.name: another rule has this name"));
            }
            names.push(name);
        }
        let lists = [
            ("when.sub", &rule.when.sub),
            ("when.groups", &rule.when.groups),
            ("when.roles", &rule.when.roles),
            ("when.scope", &rule.when.scope),
            ("when.clientId", &rule.when.client_id),
            ("upstreams", &rule.upstreams),
            ("tools", &rule.tools),
        ];
        for (field, values) in lists {
            if values.iter().any(|v| v.trim().is_empty()) {
                return Err(format!("{at}.{field}: an empty value matches nothing"));
            }
        }
        for id in &rule.upstreams {
            let is_glob = id.contains(['*', '?']);
            if !is_glob && !servers.clone().any(|s| s == id) {
                return Err(format!(
                    "{at}.upstreams: `{id}` is not a key of `mcpServers`"
                ));
            }
        }
        if let Some(limit) = &rule.rate_limit {
            if rule.effect != Effect::Allow {
                return Err(format!("{at}.rateLimit: only an `allow` rule limits rates"));
            }
            if limit.calls_per_minute == 0 {
                return Err(format!(
                    "{at}.rateLimit.callsPerMinute: at least 1 (use `deny` to refuse every call)"
                ));
            }
        }
    }
    Ok(())
}

/// One claim against a rule's patterns: none given matches everyone.
fn claim_matches<'v>(patterns: &[String], mut values: impl Iterator<Item = &'v str>) -> bool {
    patterns.is_empty() || values.any(|v| patterns.iter().any(|p| glob(p, v)))
}

/// The claims rules look at, borrowed from a validated token's [`Caller`] (which only
/// `mcp-oauth` builds; tests build this instead).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Who<'a> {
    pub(crate) issuer: &'a str,
    pub(crate) sub: Option<&'a str>,
    pub(crate) client_id: Option<&'a str>,
    pub(crate) groups: &'a [String],
    pub(crate) roles: &'a [String],
    pub(crate) scopes: &'a [String],
}

impl<'a> From<&'a Caller> for Who<'a> {
    fn from(c: &'a Caller) -> Self {
        Self {
            issuer: &c.issuer,
            sub: c.subject.as_deref(),
            client_id: c.client_id.as_deref(),
            groups: &c.groups,
            roles: &c.roles,
            scopes: &c.scopes,
        }
    }
}

impl Rule {
    /// Whether this rule is about `who`.
    fn is_for(&self, who: Who<'_>) -> bool {
        let w = &self.when;
        claim_matches(&w.sub, who.sub.into_iter())
            && claim_matches(&w.groups, who.groups.iter().map(String::as_str))
            && claim_matches(&w.roles, who.roles.iter().map(String::as_str))
            && claim_matches(&w.scope, who.scopes.iter().map(String::as_str))
            && claim_matches(&w.client_id, who.client_id.into_iter())
    }

    /// Whether this rule is about `server`'s tool `tool`.
    fn covers(&self, server: &str, tool: &str) -> bool {
        (self.upstreams.is_empty() || self.upstreams.iter().any(|p| glob(p, server)))
            && (self.tools.is_empty() || self.tools.iter().any(|p| glob(p, tool)))
    }
}

/// What the rules say of one caller and one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Allowed, by rule `index` (`None`: there are no rules).
    Allow(Option<usize>),
    /// Listed, but calling it is refused by the rule named.
    Deny(String),
    /// Not there for this caller.
    Hide,
}

impl Verdict {
    /// Whether the tool is in this caller's lists.
    pub(crate) fn is_listed(&self) -> bool {
        !matches!(self, Self::Hide)
    }
}

/// Judges `caller`'s access to `server`'s `tool`. Without a caller (stdio, or a gateway
/// without `auth`, where rules are refused) there is no one to judge and all is allowed.
pub(crate) fn judge(rules: &[Rule], caller: Option<Who<'_>>, server: &str, tool: &str) -> Verdict {
    let Some(caller) = caller.filter(|_| !rules.is_empty()) else {
        return Verdict::Allow(None);
    };
    let applies = |r: &Rule| r.is_for(caller) && r.covers(server, tool);
    let refusing = rules
        .iter()
        .enumerate()
        .find(|(_, r)| r.effect != Effect::Allow && applies(r));
    if let Some((i, rule)) = refusing {
        return match rule.effect {
            Effect::Deny => Verdict::Deny(rule_name(rules, i)),
            _ => Verdict::Hide,
        };
    }
    rules
        .iter()
        .position(|r| r.effect == Effect::Allow && applies(r))
        .map_or(Verdict::Hide, |i| Verdict::Allow(Some(i)))
}

/// Who a caller is for its rate-limit counters: its issuer and subject (or client).
fn caller_key(who: Who<'_>) -> String {
    format!(
        "{}\n{}\n{}",
        who.issuer,
        who.sub.unwrap_or_default(),
        who.client_id.unwrap_or_default()
    )
}

/// A call over its rate limit: the rule that sets it, and how long until one is free (or,
/// `unavailable`, why the count could not be kept: the call is refused then, see
/// [`RateStore`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Limited {
    pub(crate) rule: String,
    pub(crate) calls_per_minute: u32,
    pub(crate) retry_after: Duration,
    pub(crate) unavailable: Option<String>,
}

impl Limited {
    /// The wait in whole seconds, rounded up (at least 1), for a client to sleep on.
    pub(crate) fn retry_after_secs(&self) -> u64 {
        let d = self.retry_after;
        (d.as_secs() + u64::from(d.subsec_nanos() > 0)).max(1)
    }
}

/// Takes one call of `caller` on `server`'s `tool` from the allowance of the `allow` rule
/// that let it through (`rule`), if that rule limits rates.
pub(crate) async fn take(
    rules: &[Rule],
    rule: usize,
    caller: Who<'_>,
    server: &str,
    tool: &str,
    store: &dyn RateStore,
    now: Instant,
) -> Result<(), Limited> {
    let Some(limit) = rules.get(rule).and_then(|r| r.rate_limit.as_ref()) else {
        return Ok(());
    };
    let tool = match limit.per {
        Per::Tool => tool,
        Per::Upstream => "",
    };
    let key = format!("{rule}\n{}\n{server}\n{tool}", caller_key(caller));
    let limited = |retry_after, unavailable| Limited {
        rule: rule_name(rules, rule),
        calls_per_minute: limit.calls_per_minute,
        retry_after,
        unavailable,
    };
    match store.take(&key, limit.calls_per_minute, MINUTE, now).await {
        Ok(()) => Ok(()),
        Err(Over::Limit(retry_after)) => Err(limited(retry_after, None)),
        Err(Over::Unavailable(why)) => Err(limited(UNAVAILABLE_RETRY, Some(why))),
    }
}

const MINUTE: Duration = Duration::from_secs(60);

/// What a caller refused because the counters cannot be reached is told to wait.
const UNAVAILABLE_RETRY: Duration = Duration::from_secs(5);

/// Why a call is not counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Over {
    /// The limit is reached; one call leaves the window after this long.
    Limit(Duration),
    /// The shared counters cannot be reached (why, naming the store and the phase).
    Unavailable(String),
}

/// What [`RateStore::take`] returns.
pub(crate) type Taken<'a> = std::pin::Pin<Box<dyn Future<Output = Result<(), Over>> + Send + 'a>>;

/// Where the rate-limit counters live: in this process ([`LocalRates`]), or in Redis
/// ([`RedisRates`]), shared by several gateways so that a caller's minute is the same
/// whichever it reaches. A store that cannot count says so ([`Over::Unavailable`]) and the
/// call is refused: a limit is a protection, and letting calls through uncounted while the
/// store is down would lift every limit silently.
pub(crate) trait RateStore: fmt::Debug + Send + Sync {
    /// Counts one call under `key` if fewer than `limit` were counted in the `window` before
    /// `now`; otherwise counts nothing and says how long until one leaves the window. Never
    /// blocks the runtime (a shared store waits for its network on a blocking thread).
    fn take<'a>(&'a self, key: &'a str, limit: u32, window: Duration, now: Instant) -> Taken<'a>;
}

/// Above this many counters, those with no call left in their window are dropped.
const PRUNE_ABOVE: usize = 4096;

/// Counters in this process: each key's calls in the last window (a sliding window, so that
/// no burst of twice the limit straddles a boundary).
#[derive(Debug, Default)]
pub(crate) struct LocalRates {
    calls: Mutex<HashMap<String, VecDeque<Instant>>>,
}

impl RateStore for LocalRates {
    fn take<'a>(&'a self, key: &'a str, limit: u32, window: Duration, now: Instant) -> Taken<'a> {
        Box::pin(std::future::ready(
            self.take_now(key, limit, window, now).map_err(Over::Limit),
        ))
    }
}

impl LocalRates {
    fn take_now(
        &self,
        key: &str,
        limit: u32,
        window: Duration,
        now: Instant,
    ) -> Result<(), Duration> {
        let mut calls = lock(&self.calls);
        if calls.len() > PRUNE_ABOVE {
            calls.retain(|_, c| c.back().is_some_and(|t| now.duration_since(*t) < window));
        }
        let times = calls.entry(key.to_owned()).or_default();
        while times
            .front()
            .is_some_and(|t| now.duration_since(*t) >= window)
        {
            times.pop_front();
        }
        if times.len() >= limit as usize {
            let oldest = times.front().copied().unwrap_or(now);
            return Err((oldest + window).saturating_duration_since(now));
        }
        times.push_back(now);
        Ok(())
    }
}
