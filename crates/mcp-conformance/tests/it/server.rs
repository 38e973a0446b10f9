//! The everything server answers what the suite's server scenarios ask, as our own HTTP
//! client sees it.

use mcp_conformance::server::{Everything, config};
use mcp_http::{HttpConfig, HttpServerConfig};
use mcp_protocol::schema::{CallToolParams, GetPromptParams, Implementation};
use mcp_protocol::{ClientConfig, RequestOptions};
use serde_json::{Value, json};

async fn start() -> String {
    let (listener, addr) = mcp_http::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    tokio::spawn(mcp_http::serve_http(
        listener,
        HttpServerConfig::new(config()),
        Everything::new(),
    ));
    format!("http://127.0.0.1:{}/mcp", addr.port())
}

fn check(value: &impl serde::Serialize, pointer: &str, expected: Value) {
    let json = serde_json::to_value(value).unwrap();
    assert_eq!(
        json.pointer(pointer),
        Some(&expected),
        "{pointer} in {json}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_resources_prompts_as_the_scenarios_describe_them() {
    let url = start().await;
    let session = ClientConfig::new(Implementation::new("it".into(), "0".into()));
    let client = mcp_http::connect(HttpConfig::new("everything", url), session)
        .await
        .unwrap();

    let tools = client.list_all_tools().await.unwrap();
    for tool in &tools {
        // tools-list needs a description on every tool.
        assert!(
            tool.description.is_some(),
            "{} has no description",
            tool.name
        );
    }
    let schema = tools
        .iter()
        .find(|t| t.name == "json_schema_2020_12_tool")
        .unwrap();
    check(
        &schema.input_schema,
        "/$defs/address/$anchor",
        json!("addressDef"),
    );

    let call = |name: &str| CallToolParams::new(name.to_owned());
    let text = client
        .call_tool(call("test_simple_text"), RequestOptions::DEFAULT)
        .await
        .unwrap();
    check(
        &text,
        "/content/0/text",
        json!("This is a simple text response for testing."),
    );
    let error = client
        .call_tool(call("test_error_handling"), RequestOptions::DEFAULT)
        .await
        .unwrap();
    assert!(error.is_tool_error());

    let template = client
        .read_resource("test://template/123/data")
        .await
        .unwrap();
    check(&template, "/contents/0/mimeType", json!("application/json"));
    let missing = client.read_resource("test://nowhere").await;
    assert!(missing.is_err());

    let mut params = GetPromptParams::new("test_prompt_with_arguments".into());
    params.arguments = Some(
        [("arg1", "hello"), ("arg2", "world")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
    );
    let prompt = client.get_prompt(params).await.unwrap();
    check(
        &prompt,
        "/messages/0/content/text",
        json!("Prompt with arguments: arg1='hello', arg2='world'"),
    );
}
