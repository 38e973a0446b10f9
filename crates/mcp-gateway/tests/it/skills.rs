//! Skills (SEP-2640) through the gateway in passthrough mode: a host in front lists the
//! upstreams' skills and loads them, verified end to end, through one connection to the
//! gateway. With several upstreams the skills' URIs stay as the upstreams gave them, and each
//! skill's reads go to the upstream that listed it and to no other.

use std::sync::Arc;
use std::time::Duration;

use mcp_gateway::Gateway;
use mcp_host::permission::AllowAll;
use mcp_host::skills::{Refusal, SkillError};
use mcp_host::{Connect, Host, HostOptions, ServerEntry, ServerState};
use mcp_protocol::RequestOptions;
use mcp_protocol::schema::{CacheScope, Implementation, PaginatedParams, method};
use mcp_testkit::fake_skills::{FakeSkills, skill_md};
use serde_json::json;

use crate::support::{TempDir, http_upstream as http, serve_http, start_passthrough as start};

/// A host whose one server `gw` is the gateway over Streamable HTTP.
async fn host_in_front(gateway: &Gateway) -> Host {
    let url = serve_http(gateway, None).await;
    let host = Host::new(HostOptions::new(
        Implementation::new("skills-in-front".into(), "0".into()),
        Arc::new(AllowAll),
    ));
    let mut entry = ServerEntry::new("gw", Connect::Http(mcp_http::HttpConfig::new("gw", url)));
    entry.request_timeout = Duration::from_secs(10);
    host.start(vec![entry]).await;
    assert_eq!(host.server_status("gw").unwrap().state, ServerState::Ready);
    host
}

async fn upstream(name: &str, file: (&str, &str)) -> FakeSkills {
    let fake = FakeSkills::start().await;
    fake.add_skill(
        name,
        &format!("The {name} skill"),
        &format!("{name} body."),
        &[file],
    );
    fake
}

#[tokio::test]
async fn several_upstreams_skills_are_listed_as_given_and_read_where_they_were_listed() {
    let a = upstream("alpha", ("notes/A.md", "alpha notes\n")).await;
    let b = upstream("beta", ("notes/B.md", "beta notes\n")).await;
    let dir = TempDir::new("gateway-skills");
    let gateway = start(&dir, json!({"a": http(&a.url), "b": http(&b.url)})).await;
    let host = host_in_front(&gateway).await;

    let listed = host.list_skills("gw").await.unwrap();
    let mut uris: Vec<_> = listed.iter().map(|s| s.uri.clone()).collect();
    uris.sort();
    assert_eq!(uris, ["skill://alpha/SKILL.md", "skill://beta/SKILL.md"]);
    assert!(a.reads().is_empty() && b.reads().is_empty());

    let alpha = host.load_skill("gw", "alpha").await.unwrap();
    assert_eq!(alpha.body(), "\nalpha body.\n");
    let beta = host.load_skill("gw", "beta").await.unwrap();
    let notes = host.read_skill_file(&beta, "notes/B.md").await.unwrap();
    assert_eq!(notes.text(), Some("beta notes\n"));
    assert_eq!(a.reads(), ["skill://alpha/SKILL.md"]);
    assert_eq!(
        b.reads(),
        ["skill://beta/SKILL.md", "skill://beta/notes/B.md"]
    );

    // An upstream that serves other instructions than it listed is refused by the host in
    // front: the gateway passes the listing and the bytes through unchanged.
    b.serve(
        "skill://beta/SKILL.md",
        &skill_md("beta", "The beta skill", "beta BODY."),
    );
    match host.load_skill("gw", "beta").await.unwrap_err() {
        SkillError::Refused {
            server, refusal, ..
        } => {
            assert_eq!(server, "gw");
            assert!(matches!(refusal, Refusal::Digest { .. }), "{refusal}");
        }
        other => panic!("expected a refusal, got {other}"),
    }
    assert_eq!(a.reads(), ["skill://alpha/SKILL.md"]);
    host.shutdown().await;
    gateway.shutdown().await;
}

#[tokio::test]
async fn one_upstreams_skills_pass_through_as_sent() {
    let a = upstream("alpha", ("notes/A.md", "alpha notes\n")).await;
    a.add_skill("gamma", "The gamma skill", "gamma body.", &[]);
    let dir = TempDir::new("gateway-skills");
    let gateway = start(&dir, json!({"a": http(&a.url)})).await;
    let host = host_in_front(&gateway).await;
    // Two pages upstream, followed by the host through the gateway.
    let names: Vec<_> = host
        .list_skills("gw")
        .await
        .unwrap()
        .iter()
        .map(|s| s.name().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["alpha", "gamma"]);
    let alpha = host.load_skill("gw", "alpha").await.unwrap();
    host.read_skill_file(&alpha, "notes/A.md").await.unwrap();
    assert_eq!(
        a.reads(),
        ["skill://alpha/SKILL.md", "skill://alpha/notes/A.md"]
    );
    host.shutdown().await;
    gateway.shutdown().await;
}

/// With several upstreams the gateway's own `skills/list` comes in pages of 50, the cursor
/// taking a client through every skill once, and carries the strictest caching hints any
/// upstream gave (the shortest `ttlMs`, `private` over `public`).
#[tokio::test]
async fn the_merged_skill_list_comes_in_pages_with_the_strictest_caching_hints() {
    let a = FakeSkills::start().await;
    let b = FakeSkills::start().await;
    for i in 0..30 {
        a.add_skill(&format!("a{i:02}"), "An a skill", "a body.", &[]);
        b.add_skill(&format!("b{i:02}"), "A b skill", "b body.", &[]);
    }
    a.list_member("ttlMs", json!(60_000));
    a.list_member("cacheScope", json!("public"));
    b.list_member("ttlMs", json!(5_000));
    b.list_member("cacheScope", json!("private"));
    let dir = TempDir::new("gateway-skills");
    let gateway = start(&dir, json!({"a": http(&a.url), "b": http(&b.url)})).await;
    let host = host_in_front(&gateway).await;
    let client = host.client("gw").unwrap();

    let first = client
        .request::<method::ListSkills>(&PaginatedParams::new(), RequestOptions::DEFAULT)
        .await
        .unwrap();
    assert_eq!(first.skills.len(), 50);
    assert_eq!(first.next_cursor.as_deref(), Some("50"));
    assert_eq!(first.ttl_ms, Some(5_000));
    assert_eq!(first.cache_scope, Some(CacheScope::Private));
    let mut params = PaginatedParams::new();
    params.cursor.clone_from(&first.next_cursor);
    let second = client
        .request::<method::ListSkills>(&params, RequestOptions::DEFAULT)
        .await
        .unwrap();
    assert_eq!(second.skills.len(), 10);
    assert_eq!(second.next_cursor, None);
    let mut uris: Vec<_> = first
        .skills
        .iter()
        .chain(&second.skills)
        .map(|s| s.uri.clone())
        .collect();
    uris.sort();
    uris.dedup();
    assert_eq!(uris.len(), 60);
    assert!(uris.contains(&"skill://a00/SKILL.md".to_owned()));
    assert!(uris.contains(&"skill://b29/SKILL.md".to_owned()));

    // A cursor the gateway did not give is the client's error.
    params.cursor = Some("not-a-cursor".into());
    let err = client
        .request::<method::ListSkills>(&params, RequestOptions::DEFAULT)
        .await
        .unwrap_err();
    match err.protocol() {
        mcp_protocol::Error::Rpc { error, .. } => assert_eq!(error.code, -32602, "{error:?}"),
        other => panic!("expected -32602, got {other}"),
    }
    // A host follows the pages.
    assert_eq!(host.list_skills("gw").await.unwrap().len(), 60);
    host.shutdown().await;
    gateway.shutdown().await;
}
