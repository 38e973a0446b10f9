//! The gateway file's `rules` over resources and prompts, through the built binary: a caller
//! that may call none of an upstream's tools neither sees nor reads its resources, resource
//! templates and prompts, and its reads and gets are answered exactly as for ones that do not
//! exist. A child of `inbound_rules`, whose helpers it uses.

use super::*;

fn ask(addr: &str, token: &str, session: &str, method: &str, params: Value) -> Value {
    let request = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    message(&post(
        addr,
        Some(token),
        Some(session),
        &request.to_string(),
    ))
}

/// The `key` field of each item of `list` in a list result.
fn listed(answer: &Value, list: &str, key: &str) -> Vec<String> {
    let mut names: Vec<String> = answer["result"][list]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|i| i[key].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_denied_an_upstream_neither_sees_nor_reads_its_resources_and_prompts() {
    let public = mcp_testkit::fake_http::FakeHttp::start().await;
    let issuer = Issuer::start();
    let key = Key::new("k1");
    issuer.publish(&[&key]);
    let user = User::new();
    let file = user.project.path().join("gateway.json");
    std::fs::write(
        &file,
        json!({
            "mode": "passthrough",
            "mcpServers": {
                "demo": {"command": bin(), "args": ["demo-server"],
                    "permission": {"default": "allow"}},
                "public": {"type": "http", "url": public.url,
                    "permission": {"default": "allow"}}
            },
            "auth": {"issuer": issuer.url},
            "rules": [
                {"name": "engineers", "effect": "allow", "when": {"groups": ["eng"]}},
                {"name": "support", "effect": "allow", "when": {"groups": ["support"]},
                 "upstreams": ["public"]}
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
        let token = |sub: &str, group: &str| {
            key.sign(&json!({"iss": issuer.url, "aud": resource, "sub": sub,
                "groups": [group], "exp": now() + 300, "iat": now()}))
        };
        let (alice, bob) = (token("alice", "eng"), token("bob", "support"));
        let (a, b) = (session(&addr, &alice), session(&addr, &bob));
        // The upstreams join in the background: ask until alice sees the demo server's notes.
        let notes = ["demo://notes/ideas", "demo://notes/shopping"];
        let mut seen = Vec::new();
        for _ in 0..100 {
            seen = listed(
                &ask(&addr, &alice, &a, "resources/list", json!({})),
                "resources",
                "uri",
            );
            if seen == notes {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(
            seen, notes,
            "alice, an engineer, sees the demo server's notes"
        );
        let templates = |t: &str, s: &str| {
            listed(
                &ask(&addr, t, s, "resources/templates/list", json!({})),
                "resourceTemplates",
                "uriTemplate",
            )
        };
        let prompts = |t: &str, s: &str| {
            listed(
                &ask(&addr, t, s, "prompts/list", json!({})),
                "prompts",
                "name",
            )
        };
        assert_eq!(templates(&alice, &a), ["demo://notes/{name}"]);
        assert_eq!(prompts(&alice, &a), ["mcp__demo__review"]);
        let read =
            |t: &str, s: &str, uri: &str| ask(&addr, t, s, "resources/read", json!({"uri": uri}));
        let got = read(&alice, &a, "demo://notes/shopping");
        assert!(got.to_string().contains("coffee"), "{got}");
        let get = |t: &str, s: &str, name: &str| {
            ask(
                &addr,
                t,
                s,
                "prompts/get",
                json!({"name": name, "arguments": {"topic": "gateways"}}),
            )
        };
        let got = get(&alice, &a, "mcp__demo__review");
        assert!(got["result"]["messages"].is_array(), "{got}");

        // Bob, allowed only `public`, sees none of it.
        assert!(
            listed(
                &ask(&addr, &bob, &b, "resources/list", json!({})),
                "resources",
                "uri"
            )
            .is_empty()
        );
        assert!(templates(&bob, &b).is_empty());
        assert!(prompts(&bob, &b).is_empty());
        // A read of a note that exists reads as one of a note that does not, word for word
        // but for the URI, and so does a get of the prompt.
        let unname = |v: &Value, name: &str| v.to_string().replace(name, "NAME");
        let existing = read(&bob, &b, "demo://notes/shopping");
        assert!(existing["error"]["message"].is_string(), "{existing}");
        assert!(!existing.to_string().contains("coffee"), "{existing}");
        assert_eq!(
            unname(&existing, "demo://notes/shopping"),
            unname(
                &read(&bob, &b, "demo://notes/nothing"),
                "demo://notes/nothing"
            )
        );
        let prompt = get(&bob, &b, "mcp__demo__review");
        assert!(prompt["error"]["message"].is_string(), "{prompt}");
        assert_eq!(
            unname(&prompt, "mcp__demo__review"),
            unname(
                &get(&bob, &b, "mcp__nothing__review"),
                "mcp__nothing__review"
            )
        );
        // Completing the prompt's argument or the template's variable suggests to alice what
        // the demo server suggests, and nothing to bob.
        let complete = |t: &str, s: &str, reference: Value, argument: &str| {
            let completed = ask(
                &addr,
                t,
                s,
                "completion/complete",
                json!({"ref": reference, "argument": {"name": argument, "value": "s"}}),
            );
            completed["result"]["completion"]["values"]
                .as_array()
                .unwrap_or_else(|| panic!("{completed}"))
                .clone()
        };
        let prompt = json!({"type": "ref/prompt", "name": "mcp__demo__review"});
        let template = json!({"type": "ref/resource", "uri": "demo://notes/{name}"});
        assert_eq!(
            complete(&alice, &a, prompt.clone(), "topic"),
            [json!("servers")]
        );
        assert_eq!(
            complete(&alice, &a, template.clone(), "name"),
            [json!("shopping")]
        );
        assert_eq!(complete(&bob, &b, prompt, "topic"), Vec::<Value>::new());
        assert_eq!(complete(&bob, &b, template, "name"), Vec::<Value>::new());
    })
    .await
    .unwrap();
    gateway.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_meta_mode_a_caller_denied_an_upstream_neither_lists_nor_reads_its_resources() {
    let issuer = Issuer::start();
    let key = Key::new("k1");
    issuer.publish(&[&key]);
    let user = User::new();
    let file = user.project.path().join("gateway.json");
    std::fs::write(
        &file,
        json!({
            "mode": "meta",
            "mcpServers": {"demo": {"command": bin(), "args": ["demo-server"],
                "permission": {"default": "allow"}}},
            "auth": {"issuer": issuer.url},
            // `deny` leaves the upstream listed for bob: only its tools' calls are refused,
            // and with them its resources.
            "rules": [
                {"name": "no-demo-for-bob", "effect": "deny", "when": {"sub": ["bob"]},
                 "upstreams": ["demo"]},
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
        let uris = |r: &Value| -> Vec<String> {
            let listed = &r["structuredContent"]["resources"];
            let mut uris: Vec<String> = listed
                .as_array()
                .unwrap_or_else(|| panic!("{r}"))
                .iter()
                .map(|i| i["uri"].as_str().unwrap().to_owned())
                .collect();
            uris.sort();
            uris
        };
        // The demo server joins in the background: ask until alice sees its notes.
        let notes = ["demo://notes/ideas", "demo://notes/shopping"];
        let mut seen = Vec::new();
        for _ in 0..100 {
            seen = uris(&meta(&addr, &alice, &a, "list-resources", json!({})));
            if seen == notes {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(seen, notes, "alice sees the demo server's notes");
        let read = |t: &str, s: &str| {
            meta(
                &addr,
                t,
                s,
                "read-resource",
                json!({"server": "demo", "uri": "demo://notes/shopping"}),
            )
        };
        let got = read(&alice, &a);
        assert!(got.to_string().contains("coffee"), "{got}");

        // Bob is shown the upstream (its tools are listed, their calls refused)...
        let servers = meta(&addr, &bob, &b, "list-servers", json!({}));
        assert!(servers.to_string().contains(r#""id":"demo""#), "{servers}");
        // ...but neither lists nor reads its resources.
        assert!(
            uris(&meta(&addr, &bob, &b, "list-resources", json!({}))).is_empty(),
            "bob listed the demo server's resources"
        );
        for refused in [
            meta(&addr, &bob, &b, "list-resources", json!({"server": "demo"})),
            read(&bob, &b),
        ] {
            assert_eq!(refused["isError"], json!(true), "{refused}");
            assert_eq!(
                refused["structuredContent"]["error"]["kind"], "PermissionDenied",
                "{refused}"
            );
            assert!(!refused.to_string().contains("coffee"), "{refused}");
            assert!(!refused.to_string().contains("notes/ideas"), "{refused}");
        }
    })
    .await
    .unwrap();
    gateway.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_denied_an_upstream_neither_lists_nor_reads_its_skills() {
    use mcp_testkit::fake_skills::FakeSkills;
    let (alpha, beta) = (FakeSkills::start().await, FakeSkills::start().await);
    alpha.add_skill("alpha", "The alpha skill", "alpha body.", &[]);
    beta.add_skill("beta", "The beta skill", "beta body.", &[]);
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
            "mcpServers": {"a": upstream(&alpha.url), "b": upstream(&beta.url)},
            "auth": {"issuer": issuer.url},
            "rules": [
                {"name": "engineers", "effect": "allow", "when": {"groups": ["eng"]}},
                {"name": "support", "effect": "allow", "when": {"groups": ["support"]},
                 "upstreams": ["b"]}
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
    let alpha_reads = alpha.clone();
    tokio::task::spawn_blocking(move || {
        let token = |sub: &str, group: &str| {
            key.sign(&json!({"iss": issuer.url, "aud": resource, "sub": sub,
                "groups": [group], "exp": now() + 300, "iat": now()}))
        };
        let (alice, bob) = (token("alice", "eng"), token("bob", "support"));
        let (a, b) = (session(&addr, &alice), session(&addr, &bob));
        let skills =
            |t: &str, s: &str| listed(&ask(&addr, t, s, "skills/list", json!({})), "skills", "uri");
        let both = ["skill://alpha/SKILL.md", "skill://beta/SKILL.md"];
        // The upstreams join in the background: ask until alice sees both skills.
        let mut seen = Vec::new();
        for _ in 0..100 {
            seen = skills(&alice, &a);
            if seen == both {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(
            seen, both,
            "alice, an engineer, sees every upstream's skills"
        );
        let alpha_md = json!({"uri": "skill://alpha/SKILL.md"});
        let got = ask(&addr, &alice, &a, "resources/read", alpha_md);
        assert!(got.to_string().contains("alpha body."), "{got}");
        let reads_of_alpha = alpha_reads.reads().len();
        assert!(reads_of_alpha >= 1, "alice's read reached alpha's upstream");
        let get = |t: &str, s: &str, uri: &str| ask(&addr, t, s, "skills/get", json!({"uri": uri}));
        let got = get(&alice, &a, "skill://alpha/SKILL.md");
        assert_eq!(
            got["result"]["skill"]["uri"], "skill://alpha/SKILL.md",
            "{got}"
        );
        assert_eq!(alpha_reads.gets(), ["skill://alpha/SKILL.md"]);

        // Bob, allowed only `b`, sees beta's skill and not alpha's...
        assert_eq!(skills(&bob, &b), ["skill://beta/SKILL.md"]);
        // ...and reading alpha's (which alice's listing routed to `a`) reads as a skill nobody
        // has, word for word but for the URI, and never reaches `a`.
        let unname = |v: &Value, name: &str| v.to_string().replace(name, "NAME");
        let read = |uri: &str| ask(&addr, &bob, &b, "resources/read", json!({"uri": uri}));
        let existing = read("skill://alpha/SKILL.md");
        assert!(existing["error"]["message"].is_string(), "{existing}");
        assert!(!existing.to_string().contains("alpha body"), "{existing}");
        assert_eq!(
            unname(&existing, "skill://alpha/SKILL.md"),
            unname(
                &read("skill://nothing/SKILL.md"),
                "skill://nothing/SKILL.md"
            )
        );
        // So is asking for it by `skills/get`.
        let existing = get(&bob, &b, "skill://alpha/SKILL.md");
        assert!(existing["error"]["message"].is_string(), "{existing}");
        assert_eq!(
            unname(&existing, "skill://alpha/SKILL.md"),
            unname(
                &get(&bob, &b, "skill://nothing/SKILL.md"),
                "skill://nothing/SKILL.md"
            )
        );
        assert_eq!(
            alpha_reads.reads().len(),
            reads_of_alpha,
            "bob's asks reached `a`"
        );
        assert_eq!(alpha_reads.gets().len(), 1, "bob's skills/get reached `a`");
    })
    .await
    .unwrap();
    gateway.stop();
}
