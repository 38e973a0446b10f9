//! The gateway file's `rules` through the built binary: callers told apart by their tokens'
//! claims see different `tools/list`s, a `deny` rule's refusal names it, a hidden tool reads
//! exactly as one that does not exist, a rate limit refuses the call after the last allowed
//! with the wait, and the log says who was refused by what. A child of `inbound_auth`, whose
//! issuer, keys and HTTP helpers it uses.

use super::*;

#[path = "inbound_rules_resources.rs"]
mod resources;

/// The JSON-RPC response of an answer, sent as JSON or as an SSE event (after the
/// upstream's notifications, if any).
fn message(r: &Reply) -> Value {
    assert_eq!(r.status, 200, "{r:?}");
    let body = r.body.trim();
    if body.starts_with('{') {
        return serde_json::from_str(body).unwrap();
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|m| m.get("id").is_some())
        .unwrap_or_else(|| panic!("no response in {r:?}"))
}

/// A session of the caller holding `token`.
fn session(addr: &str, token: &str) -> String {
    let r = post(addr, Some(token), None, &initialize());
    assert_eq!(r.status, 200, "{r:?}");
    let session = r.header("mcp-session-id").unwrap();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = post(addr, Some(token), Some(&session), &initialized.to_string());
    assert_eq!(r.status, 202, "{r:?}");
    session
}

fn tool_names(addr: &str, token: &str, session: &str) -> Vec<String> {
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    let m = message(&post(addr, Some(token), Some(session), &list));
    let mut names: Vec<String> = m["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{m}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

fn call(addr: &str, token: &str, session: &str, name: &str) -> Value {
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": name, "arguments": {}}});
    message(&post(addr, Some(token), Some(session), &call.to_string()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_decide_what_each_caller_sees_and_may_call_and_how_often() {
    let public = mcp_testkit::fake_http::FakeHttp::start().await;
    let ops = mcp_testkit::fake_http::FakeHttp::start().await;
    let secret = mcp_testkit::fake_http::FakeHttp::start().await;
    let issuer = Issuer::start();
    let key = Key::new("k1");
    issuer.publish(&[&key]);
    let user = User::new();
    let file = user.project.path().join("gateway.json");
    let upstream =
        |url: &str| json!({"type": "http", "url": url, "permission": {"default": "allow"}});
    std::fs::write(
        &file,
        json!({
            "mode": "passthrough",
            "mcpServers": {"public": upstream(&public.url), "ops": upstream(&ops.url),
                "secret": upstream(&secret.url)},
            "auth": {"issuer": issuer.url},
            "rules": [
                {"name": "engineers", "effect": "allow", "when": {"groups": ["eng*"]}},
                {"name": "support-reads-ops", "effect": "deny", "when": {"groups": ["support"]},
                 "upstreams": ["ops"]},
                {"name": "support", "effect": "allow", "when": {"groups": ["support"]},
                 "upstreams": ["public", "ops"], "rateLimit": {"callsPerMinute": 2}}
            ]
        })
        .to_string(),
    )
    .unwrap();
    let (gateway, _user) =
        tokio::task::spawn_blocking(move || (Gateway::start(&user, &file), user))
            .await
            .unwrap();
    let addr = gateway.addr.clone();
    let resource = format!("http://{addr}/mcp");
    tokio::task::spawn_blocking(move || {
        let token = |sub: &str, groups: &[&str]| {
            key.sign(&json!({"iss": issuer.url, "aud": resource, "sub": sub,
                "client_id": "app", "groups": groups, "exp": now() + 300, "iat": now()}))
        };
        let alice = token("alice", &["engineering"]);
        let bob = token("bob", &["support"]);
        let (a, b) = (session(&addr, &alice), session(&addr, &bob));
        let all = ["mcp__ops__echo", "mcp__public__echo", "mcp__secret__echo"];
        // The upstreams join in the background: ask until alice sees all three.
        let mut seen = Vec::new();
        for _ in 0..100 {
            seen = tool_names(&addr, &alice, &a);
            if seen == all {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(seen, all, "alice, an engineer, sees every tool");
        // Bob sees what support may see: ops (denied, but listed) and public, not secret.
        assert_eq!(
            tool_names(&addr, &bob, &b),
            ["mcp__ops__echo", "mcp__public__echo"]
        );

        // A denied call is a tool error naming the rule, and never reached ops.
        let denied = call(&addr, &bob, &b, "mcp__ops__echo");
        let result = &denied["result"];
        assert_eq!(result["isError"], json!(true), "{denied}");
        assert_eq!(
            result["structuredContent"]["error"]["kind"],
            "PermissionDenied"
        );
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("rule `support-reads-ops`"), "{text}");
        assert!(!ops.seen().iter().any(|s| s.body["method"] == "tools/call"));

        // A hidden tool answers as a name no upstream has, word for word.
        let hidden = call(&addr, &bob, &b, "mcp__secret__echo");
        let missing = call(&addr, &bob, &b, "mcp__nothing__echo");
        assert!(missing["error"]["message"].is_string(), "{missing}");
        let unname = |v: &Value, name: &str| v.to_string().replace(name, "NAME");
        assert_eq!(
            unname(&hidden, "mcp__secret__echo"),
            unname(&missing, "mcp__nothing__echo")
        );
        assert!(
            !secret
                .seen()
                .iter()
                .any(|s| s.body["method"] == "tools/call")
        );

        // Bob's limit: two calls a minute on public's echo; the third is refused with a wait.
        for i in 0..2 {
            let ok = call(&addr, &bob, &b, "mcp__public__echo");
            assert_eq!(
                ok["result"]["content"][0]["text"], "called",
                "call {i}: {ok}"
            );
        }
        let limited = call(&addr, &bob, &b, "mcp__public__echo");
        let error = &limited["result"]["structuredContent"]["error"];
        assert_eq!(limited["result"]["isError"], json!(true), "{limited}");
        assert_eq!(error["kind"], "RateLimited", "{limited}");
        let wait = error["retryAfterSeconds"].as_u64().unwrap();
        assert!((1..=60).contains(&wait), "{limited}");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains("rule `support`")
        );
        // Alice's calls are hers: no limit on her rule, and bob's count is not hers.
        for _ in 0..3 {
            let ok = call(&addr, &alice, &a, "mcp__public__echo");
            assert_eq!(ok["result"]["content"][0]["text"], "called", "{ok}");
        }
        assert_eq!(
            call(&addr, &alice, &a, "mcp__secret__echo")["result"]["content"][0]["text"],
            "called"
        );
    })
    .await
    .unwrap();
    let stderr = gateway.stop();
    // The log says who was refused, and by which rule.
    for (line, why) in [
        (
            "mcp__ops__echo ops/echo refused by rule `support-reads-ops`",
            "denied",
        ),
        (
            "mcp__public__echo public/echo rate limited by rule `support`",
            "limited",
        ),
    ] {
        assert!(
            stderr
                .lines()
                .any(|l| l.contains(line) && l.contains(r#"sub="bob""#)),
            "{why}: {stderr}"
        );
    }
}

/// A meta tool's JSON answer (its text content, parsed) to the caller holding `token`.
fn meta(addr: &str, token: &str, session: &str, tool: &str, arguments: Value) -> Value {
    let call = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}});
    let m = message(&post(addr, Some(token), Some(session), &call.to_string()));
    m["result"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn meta_mode_lists_and_finds_only_what_the_rules_show_the_caller() {
    let public = mcp_testkit::fake_http::FakeHttp::start().await;
    let secret = mcp_testkit::fake_http::FakeHttp::start().await;
    let issuer = Issuer::start();
    let key = Key::new("k1");
    issuer.publish(&[&key]);
    let user = User::new();
    let file = user.project.path().join("gateway.json");
    let upstream =
        |url: &str| json!({"type": "http", "url": url, "permission": {"default": "allow"}});
    std::fs::write(
        &file,
        json!({
            "mode": "meta",
            "mcpServers": {"public": upstream(&public.url), "secret": upstream(&secret.url)},
            "auth": {"issuer": issuer.url},
            "rules": [
                {"effect": "hide", "when": {"sub": ["bob"]}, "upstreams": ["secret"]},
                {"effect": "allow"}
            ]
        })
        .to_string(),
    )
    .unwrap();
    let (gateway, _user) =
        tokio::task::spawn_blocking(move || (Gateway::start(&user, &file), user))
            .await
            .unwrap();
    let addr = gateway.addr.clone();
    let resource = format!("http://{addr}/mcp");
    tokio::task::spawn_blocking(move || {
        let token = |sub: &str| {
            key.sign(&json!({"iss": issuer.url, "aud": resource, "sub": sub,
                "exp": now() + 300, "iat": now()}))
        };
        let (alice, bob) = (token("alice"), token("bob"));
        let (a, b) = (session(&addr, &alice), session(&addr, &bob));
        let text = |r: &Value| -> Value {
            serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap()
        };
        let servers = |token: &str, session: &str| -> Vec<String> {
            let r = meta(&addr, token, session, "list-servers", json!({}));
            let mut ids: Vec<String> = text(&r)["servers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["id"].as_str().unwrap().to_owned())
                .collect();
            ids.sort();
            ids
        };
        let tools = |token: &str, session: &str| -> Vec<String> {
            let r = meta(&addr, token, session, "list-tools", json!({}));
            text(&r)["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| {
                    format!(
                        "{}/{}",
                        t["server"].as_str().unwrap(),
                        t["name"].as_str().unwrap()
                    )
                })
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect()
        };
        // The upstreams join in the background: ask until alice sees both.
        let mut seen = Vec::new();
        for _ in 0..100 {
            seen = tools(&alice, &a);
            if seen.len() == 2 {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(seen, ["public/echo", "secret/echo"]);
        assert_eq!(servers(&alice, &a), ["public", "secret"]);
        // Bob is shown neither the hidden upstream nor its tool.
        assert_eq!(tools(&bob, &b), ["public/echo"]);
        assert_eq!(servers(&bob, &b), ["public"]);
        // Calling it, or listing its tools, reads as for a server that does not exist.
        for (tool, args, other) in [
            (
                "call-tool",
                json!({"server": "secret", "tool": "echo", "arguments": {}}),
                json!({"server": "nowhere", "tool": "echo", "arguments": {}}),
            ),
            (
                "list-tools",
                json!({"server": "secret"}),
                json!({"server": "nowhere"}),
            ),
        ] {
            let hidden = meta(&addr, &bob, &b, tool, args);
            let missing = meta(&addr, &bob, &b, tool, other);
            assert_eq!(missing["isError"], json!(true), "{missing}");
            assert_eq!(
                hidden.to_string().replace("secret", "NAME"),
                missing.to_string().replace("nowhere", "NAME"),
                "{tool}"
            );
        }
        assert!(
            !secret
                .seen()
                .iter()
                .any(|s| s.body["method"] == "tools/call")
        );
        // Alice calls it.
        let r = meta(
            &addr,
            &alice,
            &a,
            "call-tool",
            json!({"server": "secret", "tool": "echo", "arguments": {}}),
        );
        assert_eq!(r["content"][0]["text"], "called", "{r}");
    })
    .await
    .unwrap();
    drop(gateway);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_category_neither_lists_nor_finds_a_tool_the_rules_hide() {
    let public = mcp_testkit::fake_http::FakeHttp::start().await;
    let secret = mcp_testkit::fake_http::FakeHttp::start().await;
    let issuer = Issuer::start();
    let key = Key::new("k1");
    issuer.publish(&[&key]);
    let user = User::new();
    let file = user.project.path().join("gateway.json");
    let upstream =
        |url: &str| json!({"type": "http", "url": url, "permission": {"default": "allow"}});
    std::fs::write(
        &file,
        json!({
            "mode": "category",
            "mcpServers": {"public": upstream(&public.url), "secret": upstream(&secret.url)},
            "categories": {"all": {"description": "everything", "servers": ["public", "secret"],
                "tools": {"includePatterns": ["*"]}}},
            "auth": {"issuer": issuer.url},
            "rules": [
                {"effect": "hide", "when": {"sub": ["bob"]}, "upstreams": ["secret"]},
                {"effect": "allow"}
            ]
        })
        .to_string(),
    )
    .unwrap();
    let (gateway, _user) =
        tokio::task::spawn_blocking(move || (Gateway::start(&user, &file), user))
            .await
            .unwrap();
    let addr = gateway.addr.clone();
    let resource = format!("http://{addr}/mcp");
    tokio::task::spawn_blocking(move || {
        let token = |sub: &str| {
            key.sign(&json!({"iss": issuer.url, "aud": resource, "sub": sub,
                "exp": now() + 300, "iat": now()}))
        };
        let (alice, bob) = (token("alice"), token("bob"));
        let (a, b) = (session(&addr, &alice), session(&addr, &bob));
        let listed = |token: &str, session: &str| -> Vec<String> {
            let r = meta(
                &addr,
                token,
                session,
                "get-category-tools",
                json!({"category": "all"}),
            );
            let mut names: Vec<String> = r["structuredContent"]["tools"]
                .as_object()
                .unwrap_or_else(|| panic!("{r}"))
                .keys()
                .cloned()
                .collect();
            names.sort();
            names
        };
        let mut seen = Vec::new();
        for _ in 0..100 {
            seen = listed(&alice, &a);
            if seen.len() == 2 {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(seen, ["mcp__public__echo", "mcp__secret__echo"]);
        assert_eq!(listed(&bob, &b), ["mcp__public__echo"]);
        let call = |token: &str, session: &str, name: &str| {
            meta(
                &addr,
                token,
                session,
                "call-category-tool",
                json!({"category": "all", "name": name, "args": {}}),
            )
        };
        let hidden = call(&bob, &b, "mcp__secret__echo");
        let missing = call(&bob, &b, "mcp__secret__nothing");
        assert_eq!(missing["isError"], json!(true), "{missing}");
        assert_eq!(
            hidden.to_string().replace("echo", "NAME"),
            missing.to_string().replace("nothing", "NAME")
        );
        assert!(
            !secret
                .seen()
                .iter()
                .any(|s| s.body["method"] == "tools/call")
        );
        let r = call(&alice, &a, "mcp__secret__echo");
        assert_eq!(r["content"][0]["text"], "called", "{r}");
    })
    .await
    .unwrap();
    drop(gateway);
}
