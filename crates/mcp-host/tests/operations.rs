//! Resources and prompts as operation tools (seed 001, issue 28), against the testkit's fake
//! server as a child process: which servers get which operations, their names beside the
//! tools, the permission check by kind, results bounded like a tool's, list changes, and the
//! setting that turns them off.

// Test code: an unwrap that fails is a failed test, with its location.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_host::catalog::{MAX_NAME_LEN, exposed_name, operation_name};
use mcp_host::permission::{AllowAll, CallRequest};
use mcp_host::{
    CallError, CallKind, CallOptions, Connect, Decision, Host, HostOptions, ModelTool, Operation,
    Policy, Prompter, ServerEntry, ToolOutput,
};
use mcp_protocol::JsonObject;
use mcp_protocol::schema::{ContentBlock, Implementation};
use mcp_stdio::StdioConfig;
use serde_json::json;

fn fake(id: &str, flags: &[&str]) -> ServerEntry {
    let mut config = StdioConfig::new(
        id,
        mcp_testkit::fake_server().display().to_string(),
        flags.iter().copied(),
    );
    config.close_timeout = Duration::from_millis(300);
    config.term_timeout = Duration::from_millis(300);
    let mut entry = ServerEntry::new(id, Connect::Stdio(config));
    entry.request_timeout = Duration::from_secs(10);
    entry
}

fn options(policy: impl Policy) -> HostOptions {
    HostOptions::new(
        Implementation::new("operations-test".into(), "0".into()),
        Arc::new(policy),
    )
}

fn args(value: serde_json::Value) -> JsonObject {
    match value {
        serde_json::Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

fn texts(output: &ToolOutput) -> Vec<String> {
    output
        .result
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect()
}

/// The exposed name of `operation` on `server` in the host's catalogue now.
fn name_of(host: &Host, server: &str, operation: Operation) -> String {
    host.catalog()
        .server_operations(server)
        .find(|o| o.operation == operation)
        .unwrap_or_else(|| panic!("{server} offers no {operation}"))
        .name
        .clone()
}

fn offered(host: &Host, server: &str) -> Vec<Operation> {
    host.catalog()
        .server_operations(server)
        .map(|o| o.operation)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_server_is_offered_the_operations_it_declared_under_names_of_their_own() {
    // A server whose tools are named like the operations, to collide if anything could.
    let dir = mcp_testkit::TempDir::new("lookalikes");
    let file = dir.path().join("tools.json");
    let lookalikes = json!([
        {"name": "read_resource", "inputSchema": {"type": "object"}},
        {"name": "list_resources", "inputSchema": {"type": "object"}},
        {"name": "resources/read", "inputSchema": {"type": "object"}},
        {"name": "get_prompt", "inputSchema": {"type": "object"}},
    ]);
    std::fs::write(&file, lookalikes.to_string()).unwrap();
    let host = Host::new(options(AllowAll));
    let mut off = fake("off", &[]);
    off.expose_resources = false;
    host.start(vec![
        fake("full", &[]),
        fake("toolish", &["--tools-file", file.to_str().unwrap()]),
        fake("noprompts", &["--no-prompts"]),
        fake("bare", &["--no-resources", "--no-prompts"]),
        off,
    ])
    .await;

    use Operation::*;
    let every = vec![
        ListResources,
        ListResourceTemplates,
        ReadResource,
        ListPrompts,
        GetPrompt,
    ];
    assert_eq!(offered(&host, "full"), every);
    assert_eq!(offered(&host, "toolish"), every);
    assert_eq!(
        offered(&host, "noprompts"),
        [ListResources, ListResourceTemplates, ReadResource]
    );
    assert_eq!(offered(&host, "bare"), []);
    assert_eq!(offered(&host, "off"), [ListPrompts, GetPrompt]);
    // The status view shows them; the tool count is the server's tools alone.
    let status = host.server_status("noprompts").unwrap();
    assert_eq!(
        status.operations,
        [ListResources, ListResourceTemplates, ReadResource]
    );
    assert_eq!(status.tools, 18);
    assert!(host.server_status("bare").unwrap().operations.is_empty());

    let catalog = host.catalog();
    let names: Vec<&str> = catalog.model_tools().map(|m| m.name()).collect();
    let unique: BTreeSet<&str> = names.iter().copied().collect();
    assert_eq!(names.len(), 18 * 4 + 4 + 5 + 5 + 3 + 2);
    assert_eq!(unique.len(), names.len(), "no two share a name");
    assert!(names.iter().all(|n| n.len() <= MAX_NAME_LEN));
    // The lookalike tools keep the names they would have without operations, and each
    // operation has the name its rule gives, whatever the server's tools are called.
    for tool in [
        "read_resource",
        "list_resources",
        "resources/read",
        "get_prompt",
    ] {
        let t = catalog
            .server_tools("toolish")
            .find(|t| t.tool == tool)
            .unwrap();
        assert_eq!(t.name, exposed_name("toolish", tool));
    }
    for op in catalog.server_operations("toolish") {
        assert_eq!(op.name, operation_name("toolish", op.operation));
        assert!(
            op.name
                .starts_with(&format!("mcp_toolish_{}_", op.operation.slug()))
        );
        let schema = &*op.parameters;
        assert_eq!(schema["type"], "object");
        assert!(op.description.contains("untrusted"), "{}", op.description);
    }
    // A name resolves back to what it names: the lookalike tool is a tool, the operation an
    // operation.
    let tool = exposed_name("toolish", "read_resource");
    assert!(matches!(catalog.lookup(&tool), Some(ModelTool::Tool(t)) if t.tool == "read_resource"));
    let read = name_of(&host, "toolish", ReadResource);
    assert!(matches!(
        catalog.lookup(&read),
        Some(ModelTool::Operation(o)) if o.operation == ReadResource && o.server == "toolish"
    ));
    // Calling the lookalike runs the server's tool; calling the operation reads.
    let ran = host
        .call(
            &tool,
            args(json!({"uri": "fake://hello"})),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert!(
        texts(&ran)[0].contains("\"tool\":\"read_resource\""),
        "{:?}",
        texts(&ran)
    );
    let read = host
        .call(
            &read,
            args(json!({"uri": "fake://hello"})),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert!(
        matches!(&read.result.content[0], ContentBlock::Resource(r) if r.resource.text.as_deref() == Some("contents of fake://hello")),
        "{:?}",
        read.result
    );

    // An operation the setting turned off is not offered and does not run by its kind either.
    let err = host
        .call_operation(
            "off",
            ReadResource,
            args(json!({"uri": "fake://hello"})),
            CallOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not offered"), "{err}");
    let err = host
        .call_operation(
            "bare",
            ListPrompts,
            JsonObject::new(),
            CallOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not offered"), "{err}");
    host.shutdown().await;
    assert!(
        host.catalog().operations().is_empty(),
        "gone with the servers"
    );
}

/// Allows reading resources and asks about everything else.
struct ReadsOnly;

impl Policy for ReadsOnly {
    fn decide(&self, call: &CallRequest<'_>) -> Decision {
        match call.kind {
            CallKind::Operation(op) if op.is_resources() => Decision::Allow,
            _ => Decision::Ask,
        }
    }
}

/// Records what it was asked about and says no.
#[derive(Default)]
struct Refuser {
    asked: Mutex<Vec<(String, Option<Operation>)>>,
}

impl Prompter for Refuser {
    fn confirm<'a>(
        &'a self,
        call: &'a CallRequest<'a>,
    ) -> Pin<Box<dyn Future<Output = bool> + Send + 'a>> {
        let op = match call.kind {
            CallKind::Operation(op) => Some(op),
            _ => None,
        };
        self.asked.lock().unwrap().push((call.tool.to_owned(), op));
        Box::pin(async { false })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_can_allow_reading_resources_and_still_ask_for_tools() {
    let refuser = Arc::new(Refuser::default());
    let mut o = options(ReadsOnly);
    o.prompter = Some(refuser.clone());
    let host = Host::new(o);
    let mut configured = fake("cfg", &[]);
    // The configuration denies the prompts of this one, whatever the policy says.
    configured.rules.prompts = Some(Decision::Deny);
    host.start(vec![fake("s", &[]), configured]).await;

    // Reading is allowed without asking.
    let read = host
        .call(
            &name_of(&host, "s", Operation::ReadResource),
            args(json!({"uri": "fake://hello"})),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert!(!read.is_tool_error());
    // A tool is asked about, refused, and never sent.
    let echo = host
        .catalog()
        .server_tools("s")
        .find(|t| t.tool == "echo")
        .unwrap()
        .name
        .clone();
    let err = host
        .call(&echo, args(json!({"message": "x"})), CallOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Denied { .. }), "{err}");
    // A prompt is asked about too, with its kind, and refused.
    let err = host
        .call(
            &name_of(&host, "s", Operation::GetPrompt),
            args(json!({"name": "greet"})),
            CallOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, CallError::Denied { tool, .. } if tool == "prompts/get"),
        "{err}"
    );
    assert_eq!(
        *refuser.asked.lock().unwrap(),
        [
            ("echo".to_owned(), None),
            ("prompts/get".to_owned(), Some(Operation::GetPrompt))
        ]
    );
    // Denied by configuration: nobody is asked.
    let err = host
        .call(
            &name_of(&host, "cfg", Operation::ListPrompts),
            JsonObject::new(),
            CallOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Denied { .. }), "{err}");
    assert_eq!(refuser.asked.lock().unwrap().len(), 2);

    // A denied read never reaches the server: reading `fake://add/<name>` adds a resource, so
    // the server would list it had it seen the read.
    let mut deny_reads = fake("d", &[]);
    deny_reads.rules.resources = Some(Decision::Deny);
    host.start(vec![deny_reads]).await;
    let err = host
        .call(
            &name_of(&host, "d", Operation::ReadResource),
            args(json!({"uri": "fake://add/denied"})),
            CallOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(err.never_sent(), "{err}");
    let listed = host.list_resources("d").await.unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].uri, "fake://hello");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_are_ordinary_tool_results_bounded_like_any() {
    let host = Host::new(options(AllowAll));
    let mut entry = fake("s", &[]);
    entry.max_result_bytes = 1000;
    host.start(vec![entry]).await;
    let call = |op: Operation, a: serde_json::Value| {
        let host = host.clone();
        async move {
            host.call(&name_of(&host, "s", op), args(a), CallOptions::default())
                .await
        }
    };

    // Text: an embedded resource, whole when it fits.
    let read = call(Operation::ReadResource, json!({"uri": "fake://hello"}))
        .await
        .unwrap();
    assert!(!read.truncated);
    assert!(matches!(
        &read.result.content[..],
        [ContentBlock::Resource(r)] if r.resource.uri == "fake://hello"
            && r.resource.text.as_deref() == Some("contents of fake://hello")
    ));
    // Text over the limit: cut, with the host's marker.
    // 600 bytes of URI and 612 of text: the text is cut to the 400 bytes left.
    let long = format!("fake://{}", "x".repeat(593));
    let cut = call(Operation::ReadResource, json!({ "uri": long }))
        .await
        .unwrap();
    assert!(cut.truncated);
    let ContentBlock::Resource(r) = &cut.result.content[0] else {
        panic!("{:?}", cut.result);
    };
    let text = r.resource.text.as_deref().unwrap();
    assert!(text.starts_with("contents of fake://xxx"), "{text}");
    assert!(text.contains("cut by the host"), "{text}");
    // A blob that fits is passed on as an embedded resource with its data.
    let small = call(Operation::ReadResource, json!({"uri": "fake://blob/300"}))
        .await
        .unwrap();
    assert!(!small.truncated);
    assert!(matches!(
        &small.result.content[..],
        [ContentBlock::Resource(r)] if r.resource.blob.as_ref().is_some_and(|b| b.len() == 400)
            && r.resource.mime_type.as_deref() == Some("image/png")
    ));
    // A blob over the limit is summarised: its type and size, never its bytes.
    let big = call(Operation::ReadResource, json!({"uri": "fake://blob/3000"}))
        .await
        .unwrap();
    assert!(big.truncated);
    let summary = texts(&big);
    assert_eq!(summary.len(), 1, "{:?}", big.result);
    assert!(
        summary[0].contains(
            "resource fake://blob/3000 (image/png, about 3000 bytes) left out by the host"
        ),
        "{summary:?}"
    );
    assert!(
        !big.result
            .content
            .iter()
            .any(|b| matches!(b, ContentBlock::Resource(_)))
    );

    // Listings and prompts are text a model reads.
    let listed = call(Operation::ListResources, json!({})).await.unwrap();
    let t = texts(&listed);
    assert_eq!(t[0], "1 resource(s); this is the last page");
    let items: serde_json::Value = serde_json::from_str(&t[1]).unwrap();
    assert_eq!(
        items,
        json!([{"uri": "fake://hello", "name": "hello", "mimeType": "text/plain"}])
    );
    let templates = call(Operation::ListResourceTemplates, json!({}))
        .await
        .unwrap();
    assert!(texts(&templates)[1].contains("fake://{name}"));
    let prompts = call(Operation::ListPrompts, json!({})).await.unwrap();
    assert!(texts(&prompts)[1].contains("\"greet\""));
    let got = call(
        Operation::GetPrompt,
        json!({"name": "greet", "arguments": {"name": "Ada"}}),
    )
    .await
    .unwrap();
    assert_eq!(texts(&got)[1], "[user] Hello, Ada!");

    // Wrong arguments are a tool error the model can read; nothing is sent.
    let wrong = call(Operation::ReadResource, json!({"url": "fake://hello"}))
        .await
        .unwrap();
    assert!(wrong.is_tool_error());
    assert!(
        texts(&wrong)[0].contains("argument `uri` is required"),
        "{:?}",
        texts(&wrong)
    );
    // The server's refusal is the server's error, as for a tool.
    let err = call(Operation::ReadResource, json!({"uri": "other://x"}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, CallError::Rpc { what, .. } if what == "resources/read"),
        "{err}"
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_list_change_keeps_the_operations_and_the_next_listing_sees_it() {
    let host = Host::new(options(AllowAll));
    host.start(vec![fake("s", &["--page-size", "1"])]).await;
    let before: Vec<String> = host
        .catalog()
        .operations()
        .iter()
        .map(|o| o.name.clone())
        .collect();
    assert_eq!(before.len(), 5);
    let mut events = host.subscribe(Some(&["s"]), Some(&["resources/list_changed"]));
    let list = name_of(&host, "s", Operation::ListResources);
    // Reading `fake://add/new` adds `fake://new` and sends resources/list_changed.
    host.call(
        &name_of(&host, "s", Operation::ReadResource),
        args(json!({"uri": "fake://add/new"})),
        CallOptions::default(),
    )
    .await
    .unwrap();
    let event = tokio::time::timeout(Duration::from_secs(10), events.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(event.kind(), "resources/list_changed");
    // The operations are those of the capability seen at connect: unchanged.
    let after: Vec<String> = host
        .catalog()
        .operations()
        .iter()
        .map(|o| o.name.clone())
        .collect();
    assert_eq!(after, before);
    // Page by page, with the cursor the first page gave.
    let first = host
        .call(&list, JsonObject::new(), CallOptions::default())
        .await
        .unwrap();
    let head = &texts(&first)[0];
    assert!(
        head.starts_with("1 resource(s); more follow: call again with cursor "),
        "{head}"
    );
    let cursor: String = serde_json::from_str(head.rsplit("cursor ").next().unwrap()).unwrap();
    let second = host
        .call(
            &list,
            args(json!({ "cursor": cursor })),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert!(
        texts(&second)[0].ends_with("this is the last page"),
        "{:?}",
        texts(&second)
    );
    assert!(
        texts(&second)[1].contains("fake://new"),
        "{:?}",
        texts(&second)
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operation_times_out_and_is_cancelled_like_a_call() {
    let host = Host::new(options(AllowAll));
    let mut entry = fake("s", &[]);
    entry.request_timeout = Duration::from_millis(300);
    host.start(vec![entry]).await;
    let read = name_of(&host, "s", Operation::ReadResource);
    // The server's own timeout.
    let err = host
        .call(
            &read,
            args(json!({"uri": "fake://hang"})),
            CallOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, CallError::Timeout { server, what, .. } if server == "s" && what == "resources/read"),
        "{err}"
    );
    // A call's own timeout.
    let err = host
        .call(
            &read,
            args(json!({"uri": "fake://hang"})),
            CallOptions::default().timeout(Duration::from_millis(100)),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, CallError::Timeout { waited_ms, .. } if waited_ms < 300),
        "{err}"
    );
    // A dropped call is cancelled too.
    let dropped = tokio::time::timeout(
        Duration::from_millis(100),
        host.call(
            &read,
            args(json!({"uri": "fake://hang"})),
            CallOptions::default(),
        ),
    )
    .await;
    assert!(dropped.is_err(), "still waiting when dropped");
    // The server was told each time: three notifications/cancelled.
    let mut stats = String::new();
    for _ in 0..100 {
        let out = host
            .call_tool("s", "stats", JsonObject::new(), CallOptions::default())
            .await
            .unwrap();
        stats = texts(&out).join("");
        if stats == "cancelled=3" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(stats, "cancelled=3");
    host.shutdown().await;
}
