//! The conformance client: `mcp-conformance-client <server-url>`, with the scenario in
//! `MCP_CONFORMANCE_SCENARIO`. It connects as a host would and does what the scenario's user
//! would ask for; every protocol behaviour comes from the library. Exits 0 on success.

use std::sync::Arc;

use mcp_host::oauth::{
    AutoFollow, ClientSecret, Es256Signer, GrantType, IdentityProvider, JwtAssertion, OAuthContext,
    Settings, Url,
};
use mcp_host::permission::AllowAll;
use mcp_host::{AcceptDefaults, CallOptions, Connect, Host, HostOptions, ServerEntry, ServerState};
use mcp_http::HttpConfig;
use mcp_protocol::schema::Implementation;

/// The one server's name in errors.
const SERVER: &str = "conformance";

fn main() {
    mcp_conformance::exit_with("mcp-conformance-client", run());
}

/// The Client ID Metadata Document URL the suite's authorization servers accept: for this
/// client it stands where a released host would publish its own document.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

async fn run() -> Result<(), String> {
    let url = std::env::args()
        .next_back()
        .ok_or("usage: mcp-conformance-client <server-url>")?;
    let scenario = mcp_conformance::scenario();
    let context = mcp_conformance::context();
    let info = Implementation::new(
        "mcp-host-conformance".into(),
        env!("CARGO_PKG_VERSION").into(),
    );
    // A host with nobody at the keyboard: every call is allowed, and a form is answered with
    // the defaults the server proposed.
    let mut options = HostOptions::new(info, Arc::new(AllowAll));
    options.requests = Some(Arc::new(AcceptDefaults::new()));
    let host = Host::new(options);

    // OAuth as a host with no person at the keyboard: the authorization server's redirect
    // is followed automatically, and tokens live for this run only.
    let mut oauth = OAuthContext::new(None).map_err(|e| e.to_string())?;
    let follow = AutoFollow::new(oauth.fetcher().clone());
    oauth = oauth.with_user_agent(Arc::new(follow));
    oauth.client_metadata_url = Some(CLIENT_METADATA_URL.to_owned());
    let parsed = Url::parse(&url).map_err(|e| format!("{url:?}: {e}"))?;
    let mut settings = Settings::new(parsed.clone());
    let text = |key: &str| context.get(key).and_then(|v| v.as_str()).map(str::to_owned);
    settings.client_id = text("client_id");
    settings.client_secret = text("client_secret").map(ClientSecret::new);
    // Pre-registered credentials belong to one authorization server.
    settings.client_issuer = text("issuer");
    // The machine grants, configured from the credentials the scenario hands out.
    if scenario.starts_with("auth/client-credentials") {
        settings.grant = GrantType::ClientCredentials;
    } else if let (Some(endpoint), Some(idp_client), Some(id_token)) = (
        text("idp_token_endpoint"),
        text("idp_client_id"),
        text("idp_id_token"),
    ) {
        settings.grant = GrantType::IdentityAssertion;
        settings.identity_provider = Some(IdentityProvider::new(
            endpoint,
            idp_client,
            JwtAssertion::new(id_token),
        ));
    } else if let Some(jwt) = text("valid_jwt") {
        settings.grant = GrantType::JwtBearer;
        settings.assertion = Some(JwtAssertion::new(jwt));
    }
    let signer = match text("private_key_pem") {
        Some(pem) => {
            Some(Arc::new(Es256Signer::from_pkcs8_pem(&pem).map_err(|e| e.to_string())?) as Arc<_>)
        }
        None => None,
    };
    let hook = oauth.hook_with_signer(SERVER, parsed, settings, signer);

    let mut entry = ServerEntry::new(SERVER, Connect::Http(HttpConfig::new(SERVER, url)));
    entry.oauth = Some(Arc::new(hook));
    // The revision the harness asks for, as a user would pin it in the configuration;
    // negotiated when unset.
    entry.protocol_version = mcp_conformance::protocol_version();
    host.start(vec![entry]).await;
    let outcome = match host.server_status(SERVER) {
        Some(status) if status.state == ServerState::Ready => act(&host, &scenario, &context).await,
        Some(status) => Err(format!(
            "the server is {}: {}",
            status.state,
            status.last_error.unwrap_or_default()
        )),
        None => Err("the server was not started".to_owned()),
    };
    host.shutdown().await;
    outcome
}

/// What the scenario's user asks of the host, through the host's own API: the catalogue it
/// built when it connected, and calls that pass its permission check and bounds.
async fn act(
    host: &Host,
    scenario: &str,
    context: &serde_json::Map<String, serde_json::Value>,
) -> Result<(), String> {
    let call = |name: String, args: serde_json::Value| async move {
        let name = name.as_str();
        let arguments = args.as_object().cloned().unwrap_or_default();
        let output = host
            .call_tool(
                SERVER,
                name,
                arguments.into_iter().collect(),
                CallOptions::default(),
            )
            .await
            .map_err(|e| e.to_string())?;
        if output.is_tool_error() {
            return Err(format!("{name} failed: {:?}", output.result));
        }
        Ok(())
    };
    let listed = |name: &str| {
        host.catalog()
            .server_tools(SERVER)
            .find(|t| t.tool == name)
            .map(|t| t.parameters.clone())
    };
    match scenario {
        "initialize" => Ok(()),
        "tools_call" => {
            listed("add_numbers").ok_or("the server lists no add_numbers tool")?;
            call(
                "add_numbers".to_owned(),
                serde_json::json!({"a": 5, "b": 3}),
            )
            .await
        }
        "elicitation-sep1034-client-defaults" => {
            call(
                "test_client_elicitation_defaults".to_owned(),
                serde_json::json!({}),
            )
            .await
        }
        "json-schema-2020-12-preservation" => {
            // The user asks the echo tool to repeat the other tool's input schema as the host
            // offers it to a model: the server's own value, kept raw by the catalogue.
            let schema = listed("json_schema_2020_12_tool")
                .ok_or("the server lists no json_schema_2020_12_tool")?;
            call(
                "json_schema_echo".to_owned(),
                serde_json::json!({ "schema": *schema }),
            )
            .await
        }
        "sse-retry" => call("test_reconnection".to_owned(), serde_json::json!({})).await,
        "sep-2322-client-request-state" => {
            // Each tool answers with input_required in its own way; the session drives the
            // retries and the host's form answers the elicitations.
            for tool in [
                "test_mrtr_echo_state",
                "test_mrtr_no_state",
                "test_mrtr_unrelated",
                "test_mrtr_no_result_type",
            ] {
                call(tool.to_owned(), serde_json::json!({})).await?;
            }
            Ok(())
        }
        "http-custom-headers" => {
            // The calls the scenario asks for, with their arguments as given.
            let calls = context
                .get("toolCalls")
                .and_then(|c| c.as_array())
                .ok_or("the scenario context has no toolCalls")?;
            for c in calls {
                let name = c["name"].as_str().ok_or("a tool call without a name")?;
                call(name.to_owned(), c["arguments"].clone()).await?;
            }
            Ok(())
        }
        "http-invalid-tool-headers" => {
            // The malformed tools were dropped from the catalogue; the valid one still works.
            listed("valid_tool").ok_or("valid_tool was dropped with the invalid ones")?;
            call(
                "valid_tool".to_owned(),
                serde_json::json!({"region": "us-west1"}),
            )
            .await
        }
        "http-standard-headers" => {
            // One request of each kind that carries Mcp-Name.
            call("test_headers".to_owned(), serde_json::json!({})).await?;
            for resource in host
                .list_resources(SERVER)
                .await
                .map_err(|e| e.to_string())?
            {
                host.read_resource(SERVER, &resource.uri)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            for prompt in host.list_prompts(SERVER).await.map_err(|e| e.to_string())? {
                host.get_prompt(SERVER, &prompt.name, Default::default())
                    .await
                    .map_err(|e| e.to_string())?;
            }
            Ok(())
        }
        "sep-2640-client-no-prefetch" => {
            // The user looks at what skills the server offers and loads none: nothing of any
            // skill is read.
            let skills = host.list_skills(SERVER).await.map_err(|e| e.to_string())?;
            if skills.is_empty() {
                return Err("the server lists no skills".to_owned());
            }
            Ok(())
        }
        "sep-2640-client-verify-digest"
        | "sep-2640-client-verify-size"
        | "sep-2640-client-verify-frontmatter" => load_skill_and_use_it(host).await,
        _ => {
            // What a user of an authorized connection does: look at the tools, use one.
            if listed("test-tool").is_some() {
                call("test-tool".to_owned(), serde_json::json!({})).await?;
            }
            Ok(())
        }
    }
}

/// The skills scenarios' user: loads the server's first skill, and once it is loaded, reads
/// the files its instructions point to. A skill that does not verify is refused by the host
/// and never used, which is this run's success: the refusal goes to stderr.
// The refusal goes to the run's log on stderr: why the skill was not used.
#[allow(clippy::print_stderr)]
async fn load_skill_and_use_it(host: &Host) -> Result<(), String> {
    let skills = host.list_skills(SERVER).await.map_err(|e| e.to_string())?;
    let entry = skills
        .into_iter()
        .next()
        .ok_or("the server lists no skills")?;
    let skill = match host.load_listed_skill(SERVER, entry).await {
        Ok(skill) => skill,
        Err(e) if e.is_refused() => {
            eprintln!("mcp-conformance-client: {e}");
            return Ok(());
        }
        Err(e) => return Err(e.to_string()),
    };
    let others: Vec<String> = skill
        .entry
        .resources
        .files()
        .unwrap_or_default()
        .iter()
        .filter(|f| f.uri != skill.entry.uri)
        .map(|f| f.uri.clone())
        .collect();
    for uri in others {
        host.read_skill_file(&skill, &uri)
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}
