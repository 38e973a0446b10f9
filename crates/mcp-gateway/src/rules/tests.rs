//! Rules judged as tables: deny before allow, hidden by default, claims and globs, rate limits.

use super::*;

fn rules(json: serde_json::Value) -> Vec<Rule> {
    serde_json::from_value(json).expect("rules parse")
}

fn who<'a>(sub: &'a str, groups: &'a [String]) -> Who<'a> {
    Who {
        issuer: "https://id.example",
        sub: Some(sub),
        client_id: Some("app"),
        groups,
        roles: &[],
        scopes: &[],
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn deny_and_hide_come_before_allow_and_nothing_allowed_is_hidden() {
    let rules = rules(serde_json::json!([
        {"effect": "allow", "when": {"groups": ["eng*"]}},
        {"name": "no-prod-writes", "effect": "deny", "upstreams": ["prod"], "tools": ["write_*"]},
        {"effect": "hide", "when": {"sub": ["intern-?"]}, "tools": ["secret"]},
        {"effect": "allow", "when": {"groups": ["support"]}, "upstreams": ["tickets"]},
    ]));
    let eng = strings(&["engineering"]);
    let support = strings(&["support"]);
    let none = strings(&[]);
    let cases = [
        (who("alice", &eng), "prod", "read", Verdict::Allow(Some(0))),
        (
            who("alice", &eng),
            "prod",
            "write_row",
            Verdict::Deny("no-prod-writes".to_owned()),
        ),
        (who("intern-1", &eng), "prod", "secret", Verdict::Hide),
        (
            who("intern-12", &eng),
            "prod",
            "secret",
            Verdict::Allow(Some(0)),
        ),
        (
            who("bob", &support),
            "tickets",
            "open",
            Verdict::Allow(Some(3)),
        ),
        (who("bob", &support), "prod", "read", Verdict::Hide),
        (who("eve", &none), "tickets", "open", Verdict::Hide),
    ];
    for (caller, server, tool, want) in cases {
        assert_eq!(
            judge(&rules, Some(caller), server, tool),
            want,
            "{caller:?} {server}/{tool}"
        );
    }
    assert!(Verdict::Deny("x".to_owned()).is_listed());
    assert!(!Verdict::Hide.is_listed());
    // No caller (stdio) or no rules: everything, as before rules existed.
    assert_eq!(judge(&rules, None, "prod", "secret"), Verdict::Allow(None));
    assert_eq!(
        judge(&[], Some(who("eve", &none)), "prod", "x"),
        Verdict::Allow(None)
    );
}

#[test]
fn every_claim_given_must_match() {
    let rules = rules(serde_json::json!([
        {"effect": "allow", "when": {"scope": ["mcp:admin"], "clientId": ["app"], "roles": ["ops"]}},
    ]));
    let (scopes, roles) = (strings(&["mcp:tools", "mcp:admin"]), strings(&["ops"]));
    let mut caller = who("x", &[]);
    caller.scopes = &scopes;
    caller.roles = &roles;
    assert_eq!(
        judge(&rules, Some(caller), "a", "t"),
        Verdict::Allow(Some(0))
    );
    caller.client_id = Some("other");
    assert_eq!(judge(&rules, Some(caller), "a", "t"), Verdict::Hide);
    caller.client_id = Some("app");
    caller.roles = &[];
    assert_eq!(judge(&rules, Some(caller), "a", "t"), Verdict::Hide);
}

#[test]
fn a_bad_rule_is_refused_naming_the_rule_and_field() {
    let servers = ["prod", "tickets"];
    let ok = rules(serde_json::json!([
        {"name": "eng", "effect": "allow", "upstreams": ["prod", "tick*"],
         "rateLimit": {"callsPerMinute": 5, "per": "upstream"}},
    ]));
    assert_eq!(check(&ok, true, servers.iter().copied()), Ok(()));
    assert_eq!(check(&[], false, servers.iter().copied()), Ok(()));
    let e = check(&ok, false, servers.iter().copied()).expect_err("no auth");
    assert!(e.starts_with("rules: needs an `auth` block"), "{e}");
    for (json, want) in [
        (
            serde_json::json!([{"effect": "allow"}, {"effect": "allow", "upstreams": ["nope"]}]),
            "rules[1].upstreams: `nope` is not a key of `mcpServers`",
        ),
        (
            serde_json::json!([{"name": "d", "effect": "deny", "rateLimit": {"callsPerMinute": 1}}]),
            "rules[0] (`d`).rateLimit: only an `allow` rule limits rates",
        ),
        (
            serde_json::json!([{"effect": "allow", "rateLimit": {"callsPerMinute": 0}}]),
            "rules[0].rateLimit.callsPerMinute: at least 1",
        ),
        (
            serde_json::json!([{"effect": "allow", "when": {"groups": [""]}}]),
            "rules[0].when.groups: an empty value matches nothing",
        ),
        (
            serde_json::json!([{"name": "a", "effect": "allow"}, {"name": "a", "effect": "hide"}]),
            "rules[1] (`a`).name: another rule has this name",
        ),
    ] {
        let e = check(&rules(json.clone()), true, servers.iter().copied()).expect_err("refused");
        assert!(e.starts_with(want), "{json}: {e}");
    }
    for json in [
        serde_json::json!([{"effect": "permit"}]),
        serde_json::json!([{"effect": "allow", "when": {"group": ["x"]}}]),
    ] {
        assert!(serde_json::from_value::<Vec<Rule>>(json).is_err());
    }
}

/// [`take`], waited for (the local store answers at once).
fn taken(
    rules: &[Rule],
    rule: usize,
    caller: Who<'_>,
    server: &str,
    tool: &str,
    store: &dyn RateStore,
    now: Instant,
) -> Result<(), Limited> {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(take(rules, rule, caller, server, tool, store, now))
}

#[test]
fn a_rate_limit_refuses_the_call_after_the_last_allowed_with_the_wait() {
    let rules = rules(serde_json::json!([
        {"name": "metered", "effect": "allow", "rateLimit": {"callsPerMinute": 3}},
        {"effect": "allow", "upstreams": ["free"]},
    ]));
    let store = LocalRates::default();
    let start = Instant::now();
    let alice = who("alice", &[]);
    for i in 0..3 {
        let now = start + Duration::from_secs(i * 10);
        assert_eq!(
            taken(&rules, 0, alice, "a", "t", &store, now),
            Ok(()),
            "call {i}"
        );
    }
    let now = start + Duration::from_secs(25);
    let limited = taken(&rules, 0, alice, "a", "t", &store, now).expect_err("the fourth");
    assert_eq!(limited.rule, "metered");
    assert_eq!(limited.calls_per_minute, 3);
    assert_eq!(limited.retry_after, Duration::from_secs(35));
    assert_eq!(limited.retry_after_secs(), 35);
    // Another tool, another caller and a rule without a limit have their own allowance.
    assert_eq!(taken(&rules, 0, alice, "a", "u", &store, now), Ok(()));
    assert_eq!(
        taken(&rules, 0, who("bob", &[]), "a", "t", &store, now),
        Ok(())
    );
    assert_eq!(taken(&rules, 1, alice, "free", "t", &store, now), Ok(()));
    // Once the first call leaves the window, one more is allowed.
    let later = start + Duration::from_secs(60);
    assert_eq!(taken(&rules, 0, alice, "a", "t", &store, later), Ok(()));
    assert!(taken(&rules, 0, alice, "a", "t", &store, later).is_err());
}

/// Counts what it is asked and answers as Redis down would.
#[derive(Debug, Default)]
struct DownRates {
    asked: std::sync::atomic::AtomicUsize,
}

impl RateStore for DownRates {
    fn take<'a>(&'a self, _: &'a str, _: u32, _: Duration, _: Instant) -> Taken<'a> {
        self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Box::pin(async { Err(Over::Unavailable("Redis at 127.0.0.1:1/0: connect".into())) })
    }
}

#[test]
fn a_limited_call_that_cannot_be_counted_is_refused_and_an_unlimited_one_never_asks() {
    let rules = rules(serde_json::json!([
        {"name": "metered", "effect": "allow", "rateLimit": {"callsPerMinute": 3}},
        {"name": "free", "effect": "allow", "upstreams": ["free"]},
    ]));
    let store = DownRates::default();
    let alice = who("alice", &[]);
    let limited = taken(&rules, 0, alice, "a", "t", &store, Instant::now())
        .expect_err("refused, not let through");
    assert_eq!(limited.rule, "metered");
    assert_eq!(limited.retry_after_secs(), 5);
    assert!(
        limited
            .unavailable
            .as_deref()
            .is_some_and(|w| w.contains("Redis")),
        "{limited:?}"
    );
    assert_eq!(store.asked.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(
        taken(&rules, 1, alice, "free", "t", &store, Instant::now()),
        Ok(())
    );
    assert_eq!(
        store.asked.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "an unlimited rule asked the store"
    );
}

/// The Redis store itself, with nothing listening where it points: unavailable, never a pass.
#[test]
fn redis_rates_that_cannot_reach_redis_say_so() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let redis = mcp_host::redis::Redis::new(&format!("redis://:pw-never-shown@127.0.0.1:{port}/0"))
        .expect("a URL");
    let store = RedisRates::new(redis, "t");
    let answer = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(store.take("k", 3, Duration::from_secs(60), Instant::now()));
    match answer {
        Err(Over::Unavailable(why)) => {
            assert!(why.contains(&format!("127.0.0.1:{port}")), "{why}");
            assert!(!why.contains("pw-never-shown"), "{why}");
        }
        other => panic!("not unavailable: {other:?}"),
    }
}
