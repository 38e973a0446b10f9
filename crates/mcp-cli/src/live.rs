//! The commands that run servers: `test`, `status`, `tools`, `call`, `resources`, `read`,
//! `prompts`, `get`, `login`, `logout`. Each starts a host for the servers it needs, does its
//! one thing, and shuts the host down; the renderers are shared with `shell` and `demo`.
//! This file is long because it holds ten commands and the renderers they share; each command is
//! short, and they share one host start-up and one set of output helpers.

use std::collections::BTreeMap;
use std::future::Future;
use std::io::IsTerminal as _;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mcp_host::auth_store::AuthStore;
use mcp_host::oauth::{BoxError, Loopback, OAuthContext, Pasted, Url, UserAgent};
use mcp_host::permission::{AllowAll, AskAlways, CallRequest};
use mcp_host::{
    CallOptions, Host, LoadedConfig, Phase, Policy, Prompter, ServerState, ServerStatus,
    ToolOutput, setup,
};
use mcp_protocol::JsonObject;
use mcp_protocol::schema::{
    CallToolResult, ContentBlock, GetPromptResult, Implementation, ReadResourceResult,
};
use serde_json::{Value, json};

use crate::args::{CallArgs, ModelApi, ReadScope};
use crate::exit::{Code, Failure};
use crate::manage::{self, Context};
use crate::output::{Out, Spinner, Table, cell, clean};
use crate::remember::{Answer, Remembered};

/// How a host for one command is set up.
#[derive(Default)]
pub(crate) struct Setup {
    /// Allow every call the configuration does not deny (`--yes`).
    pub(crate) yes: bool,
    /// Who is asked when the policy says ask (a terminal, the shell).
    pub(crate) prompter: Option<Arc<dyn Prompter>>,
    /// How a person logs in when a server asks for OAuth authorization; without one, such a
    /// server waits in `auth_required` for `mcp-host login`.
    pub(crate) user_agent: Option<Arc<dyn UserAgent>>,
    /// How a person logs in on another device (the device flow), where it is offered.
    pub(crate) device_agent: Option<Arc<dyn mcp_host::oauth::DeviceUserAgent>>,
    /// What the spinner says while the servers connect.
    pub(crate) spinner: SpinnerText,
    /// The token store to use instead of this user's (a gateway file's `store`).
    pub(crate) store: Option<AuthStore>,
}

/// The spinner's line while servers connect.
#[derive(Default)]
pub(crate) enum SpinnerText {
    /// How many servers have settled.
    #[default]
    Count,
    /// A fixed line.
    Say(&'static str),
    /// No spinner: the terminal's line is someone else's (a question being answered).
    Off,
}

/// A running host.
pub(crate) struct Live {
    pub(crate) host: Host,
    /// How long the servers took to connect, from after the approval question (`test`
    /// reports it as the server's time).
    pub(crate) connected_in: Duration,
}

/// This program as MCP servers see it.
pub(crate) fn client_info() -> Implementation {
    Implementation::new("mcp-host".into(), env!("CARGO_PKG_VERSION").into())
}

/// The OAuth context of this user: tokens in the store the user's `mcp.credentials_store`
/// chooses (the OS keyring, or the file beside the global configuration).
pub(crate) fn oauth(cx: &Context) -> Result<OAuthContext, Failure> {
    let store = token_store(cx)?;
    OAuthContext::new(store).map_err(|e| Failure::new(Code::Other, format!("OAuth: {e}")))
}

/// This user's token store, where `mcp.credentials_store` (or `MCP_HOST_CREDENTIALS_STORE`)
/// says; `None` when no location for it is known.
fn token_store(cx: &Context) -> Result<Option<AuthStore>, Failure> {
    let Some(path) = AuthStore::default_path(&cx.paths, &cx.env) else {
        return Ok(None);
    };
    let setting = mcp_host::config::CredentialsStore::for_user(&cx.paths, &cx.env);
    AuthStore::open(setting, path, &cx.env)
        .map(Some)
        .map_err(|e| {
            Failure::config(format!("OAuth: {e}")).hint(
                "set mcp.credentials_store to \"file\" (or \"auto\") in your global file, or MCP_HOST_CREDENTIALS_STORE=file",
            )
        })
}

/// Fails unless `id` is a valid id (exit code 2) configured in `loaded` (exit code 3), whether
/// its entry is valid or not.
fn known(loaded: &LoadedConfig, id: &str) -> Result<(), Failure> {
    if !mcp_host::config::is_valid_server_id(id) {
        return Err(Failure::from(
            mcp_host::config::ConfigError::InvalidServerId { id: id.to_owned() },
        ));
    }
    if loaded.server(id).is_some() || loaded.rejected.iter().any(|r| r.id == id) {
        return Ok(());
    }
    let mut failure = Failure::config(format!("no server `{id}` is configured"));
    let ids: Vec<&str> = loaded.servers.iter().map(|s| s.id.as_str()).collect();
    failure = if ids.is_empty() {
        failure.hint("no servers are configured: add one with `mcp-host add`")
    } else {
        failure.hint(format!("configured servers: {}", ids.join(", ")))
    };
    Err(failure)
}

/// Starts a host for the servers of `loaded` (only `only`, if given), with a spinner while
/// they connect.
pub(crate) async fn start(
    cx: &Context,
    out: &Out,
    loaded: LoadedConfig,
    only: Option<&str>,
    setup: Setup,
) -> Result<Live, Failure> {
    if let Some(id) = only {
        known(&loaded, id)?;
    }
    let approvals = crate::trust::review(cx, out, &loaded, only).await?;
    let mut oauth = oauth(cx)?;
    if let Some(store) = setup.store {
        oauth.store = Some(store);
    }
    if let Some(agent) = setup.user_agent {
        oauth = oauth.with_user_agent(agent);
    }
    if let Some(agent) = setup.device_agent {
        oauth = oauth.with_device_agent(agent);
    }
    let mut entries = setup::entries(&loaded, Some(&oauth), &approvals);
    if let Some(id) = only {
        entries.retain(|e| e.id == id);
    }
    let policy: Arc<dyn Policy> = if setup.yes {
        Arc::new(AllowAll)
    } else {
        Arc::new(AskAlways)
    };
    let mut options = setup::host_options(&loaded, client_info(), policy);
    options.prompter = setup.prompter;
    options.era_file = setup::era_file(&cx.paths);
    options.task_file = setup::task_file(&cx.paths);
    let host = Host::new(options);
    let began = Instant::now();
    connect(&host, entries, setup.spinner).await;
    Ok(Live {
        host,
        connected_in: began.elapsed(),
    })
}

/// How long a command waits, once its work is done and printed, for its servers to end
/// politely (stdin closed, an HTTP session deleted): a server that ignores that would
/// otherwise hold the person for the whole close-then-SIGTERM sequence (4 s) after the answer.
const SHUTDOWN_BOUND: Duration = Duration::from_millis(300);

/// Ends the servers of a command that is done: politely for at most [`SHUTDOWN_BOUND`]; a
/// server still running then is killed with its process group (its handles are dropped, and
/// its keeper kills the group when this process exits in any case).
pub(crate) async fn finish(host: &Host) {
    let _ = tokio::time::timeout(SHUTDOWN_BOUND, host.shutdown()).await;
}

/// Starts `entries` on `host` with a spinner (by default one that counts them as they
/// settle).
pub(crate) async fn connect(host: &Host, entries: Vec<mcp_host::ServerEntry>, text: SpinnerText) {
    let total = entries.iter().filter(|e| e.enabled).count();
    let watched = host.clone();
    let spinner = match text {
        SpinnerText::Off => {
            host.start(entries).await;
            return;
        }
        SpinnerText::Say(line) => Spinner::start(move || line.to_owned()),
        SpinnerText::Count => Spinner::start(move || {
            let status = watched.status();
            let settled = status
                .iter()
                .filter(|s| s.enabled && s.state != ServerState::Connecting)
                .count();
            let ready = status
                .iter()
                .filter(|s| s.state == ServerState::Ready)
                .count();
            format!("connecting to {total} server(s): {settled} settled, {ready} ready")
        }),
    };
    host.start(entries).await;
    spinner.stop().await;
}

/// A terminal prompter when stdin and stderr are terminals: `--yes` is not needed by a person
/// who can answer.
pub(crate) fn terminal_prompter(cx: &Context) -> Option<Arc<dyn Prompter>> {
    if crate::output::can_ask() {
        Some(Arc::new(TerminalPrompter {
            remembered: Remembered::new(cx),
        }))
    } else {
        None
    }
}

/// Asks on the terminal: the server, the tool and the arguments, then `[y/N/always]` for a
/// tool (`always` is kept: see `remember.rs`), `[y/N]` for an operation.
struct TerminalPrompter {
    remembered: Remembered,
}

impl Prompter for TerminalPrompter {
    fn confirm<'a>(
        &'a self,
        call: &'a CallRequest<'a>,
    ) -> Pin<Box<dyn Future<Output = bool> + Send + 'a>> {
        let question = question(call);
        Box::pin(async move {
            if self.remembered.allows(call) {
                return true;
            }
            if !crate::remember::offers_always(call) {
                return crate::output::ask(format!("{question} [y/N] ")).await;
            }
            let line = crate::output::ask_line(format!("{question} [y/N/always] ")).await;
            match Answer::parse(&line) {
                Answer::Yes => true,
                Answer::No => false,
                Answer::Always => {
                    let kept = self.remembered.keep(call);
                    eprintln!("{}", clean(&kept));
                    true
                }
            }
        })
    }
}

/// The permission question for `call`, server text cleaned.
pub(crate) fn question(call: &CallRequest<'_>) -> String {
    let args = serde_json::to_string(call.arguments).unwrap_or_default();
    let what = match call.kind {
        mcp_host::CallKind::Tool => "tool",
        _ => "operation",
    };
    format!(
        "allow {what} `{}` on server `{}` with arguments {}?",
        cell(call.tool, 80),
        call.server,
        cell(&args, 400)
    )
}

/// `test`.
pub(crate) async fn test(
    cx: &Context,
    out: &Out,
    id: &str,
    scope: ReadScope,
) -> Result<(), Failure> {
    let loaded = cx.load(scope);
    manage::report_problems(out, &loaded);
    let live = start(cx, out, loaded, Some(id), Setup::default()).await?;
    let status = live.host.server_status(id);
    // From the connection's start: the time a person took at the approval question is theirs,
    // not the server's.
    let elapsed = live.connected_in;
    let tool_names: Vec<String> = live
        .host
        .catalog()
        .server_tools(id)
        .map(|t| t.tool.clone())
        .collect();
    finish(&live.host).await;
    let Some(status) = status else {
        return Err(Failure::config(format!("no server `{id}` is configured")));
    };
    let ms = elapsed.as_millis() as u64;
    if status.state == ServerState::Ready {
        if out.is_json() {
            let mut v = status_json(&status);
            v["ok"] = json!(true);
            v["elapsed_ms"] = json!(ms);
            v["tool_names"] = json!(tool_names.iter().map(|t| clean(t)).collect::<Vec<_>>());
            out.json(&v);
        } else {
            let info = status
                .server_info
                .as_ref()
                .map(|i| format!("{} {}", cell(&i.name, 60), cell(&i.version, 30)))
                .unwrap_or_default();
            out.text(&format!(
                "ok: server `{id}` ({}) answered in {ms} ms\n  server:    {info}\n  protocol:  {} ({} era)\n  why:       {}\n  tools:     {}",
                status.transport,
                status.protocol_version.as_deref().unwrap_or("?"),
                status.era.map_or("?", mcp_protocol::Era::as_str),
                status.negotiation.as_deref().map_or("-".to_owned(), |n| cell(n, 300)),
                status.tools
            ));
        }
        return Ok(());
    }
    if out.is_json() {
        let mut v = status_json(&status);
        v["ok"] = json!(false);
        v["elapsed_ms"] = json!(ms);
        out.json(&v);
    }
    Err(not_ready(&status))
}

/// Why a server is not usable, with what to do about it.
pub(crate) fn not_ready(status: &ServerStatus) -> Failure {
    let id = &status.id;
    let why = status
        .last_error
        .as_deref()
        .map(|e| format!(": {}", clean(e)))
        .unwrap_or_default();
    match status.state {
        ServerState::Disabled => Failure::config(format!("server `{id}` is disabled"))
            .hint(format!("`mcp-host enable {id}` (with --scope global if it is defined there)")),
        ServerState::AuthRequired => Failure::new(
            Code::Auth,
            format!("server `{id}` needs authorization{why}"),
        )
        .login(id),
        _ if status.last_error_phase == Some(Phase::Trust) => Failure::config(format!(
            "server `{id}` is not approved in this project{why}"
        ))
        .hint(format!(
            "read what it runs with `mcp-host trust`, then approve it with `mcp-host trust {id}`"
        )),
        _ if status.last_error_phase == Some(Phase::Configuration) => {
            Failure::config(format!("server `{id}` is not usable{why}"))
                .hint("fix the entry (see `mcp-host list`)")
        }
        state => Failure::new(
            Code::Connection,
            format!("server `{id}` did not become ready (state {state}){why}"),
        )
        .hint(format!(
            "check the server's command or URL with `mcp-host list`; `mcp-host status {id}` shows details"
        )),
    }
}

/// `status`.
pub(crate) async fn status(cx: &Context, out: &Out, id: Option<&str>) -> Result<(), Failure> {
    let loaded = cx.load(ReadScope::Effective);
    manage::report_problems(out, &loaded);
    if id.is_none() && loaded.servers.is_empty() && loaded.rejected.is_empty() {
        if out.is_json() {
            out.json(&json!({ "servers": [] }));
        } else {
            out.text("no MCP servers configured");
        }
        return Ok(());
    }
    let live = start(cx, out, loaded, id, Setup::default()).await?;
    let statuses = live.host.status();
    finish(&live.host).await;
    match id {
        Some(id) => match statuses.iter().find(|s| s.id == id) {
            Some(s) => show_detail(out, s),
            None => return Err(Failure::config(format!("no server `{id}` is configured"))),
        },
        None => show_statuses(out, &statuses),
    }
    Ok(())
}

/// The `/mcp` table (seed 000 §5.4).
pub(crate) fn show_statuses(out: &Out, statuses: &[ServerStatus]) {
    if out.is_json() {
        out.json(&json!({ "servers": statuses.iter().map(status_json).collect::<Vec<_>>() }));
        return;
    }
    if statuses.is_empty() {
        out.text("no MCP servers configured");
        return;
    }
    out.text(&status_table(statuses));
}

/// The `/mcp` table as text.
pub(crate) fn status_table(statuses: &[ServerStatus]) -> String {
    let mut table = Table::new(&[
        "ID",
        "TRANSPORT",
        "SOURCE",
        "ENABLED",
        "STATE",
        "TOOLS",
        "REASON",
    ]);
    for s in statuses {
        table.row(vec![
            // A refused entry keeps its id as written, which may be the invalid part.
            cell(&s.id, 64),
            s.transport.to_string(),
            s.source.clone(),
            manage::yes_no(s.enabled),
            s.state.as_str().to_owned(),
            s.tools.to_string(),
            reason(s),
        ]);
    }
    table.render()
}

/// Why a server is where it is, in a table cell: the wait for a turn under the connection
/// limit, or the failure of one in `error` or `auth_required` (`status <id>` says it whole).
fn reason(s: &ServerStatus) -> String {
    match (&s.waiting, s.state) {
        (Some(waiting), _) => cell(waiting, 80),
        (None, ServerState::Error | ServerState::AuthRequired) => s
            .last_error
            .as_deref()
            .map_or("-".to_owned(), |e| cell(e, 80)),
        _ => "-".to_owned(),
    }
}

/// The `/mcp <id>` view.
pub(crate) fn show_detail(out: &Out, s: &ServerStatus) {
    if out.is_json() {
        out.json(&status_json(s));
    } else {
        out.text(&detail_text(s));
    }
}

/// The `/mcp <id>` view as text.
pub(crate) fn detail_text(s: &ServerStatus) -> String {
    let mut lines = vec![
        format!("id:                {}", cell(&s.id, 64)),
        format!("transport:         {}", s.transport),
        format!("source:            {}", s.source),
        format!("enabled:           {}", manage::yes_no(s.enabled)),
        format!("state:             {}", s.state),
        format!("tools:             {}", s.tools),
        format!("operations:        {}", operations_text(&s.operations)),
        format!(
            "last_error:        {}",
            s.last_error
                .as_deref()
                .map_or("-".to_owned(), |e| match s.last_error_phase {
                    Some(phase) => format!("[{phase}] {}", clean(e)),
                    None => clean(e),
                })
        ),
        format!(
            "last_connected_at: {}",
            s.last_connected_at.map_or("-".to_owned(), rfc3339)
        ),
        format!(
            "protocol_version:  {}",
            s.protocol_version.as_deref().unwrap_or("-")
        ),
        format!(
            "era:               {}",
            s.era.map_or("-", mcp_protocol::Era::as_str)
        ),
        format!(
            "negotiation:       {}",
            s.negotiation
                .as_deref()
                .map_or("-".to_owned(), |n| cell(n, 300))
        ),
        format!(
            "server:            {}",
            s.server_info.as_ref().map_or("-".to_owned(), |i| format!(
                "{} {}",
                cell(&i.name, 60),
                cell(&i.version, 30)
            ))
        ),
        format!(
            "session:           {}",
            s.session_id
                .as_deref()
                .map_or("-".to_owned(), short_session)
        ),
        format!(
            "token_expires_at:  {}",
            s.token_expires_at.map_or("-".to_owned(), rfc3339)
        ),
    ];
    if s.reconnect_attempts > 0 {
        lines.push(format!("reconnect_attempts: {}", s.reconnect_attempts));
    }
    if let Some(waiting) = &s.waiting {
        lines.push(format!("waiting:           {}", cell(waiting, 300)));
    }
    for d in &s.diagnostics {
        lines.push(format!("note: {}", cell(d, 300)));
    }
    lines.join("\n")
}

/// The resource and prompt operations offered for a server, by method (`-` for none).
fn operations_text(ops: &[mcp_host::Operation]) -> String {
    if ops.is_empty() {
        return "-".to_owned();
    }
    let methods: Vec<&str> = ops.iter().map(|o| o.method()).collect();
    methods.join(" ")
}

/// A session id shown as its first characters: enough to match it in a server's log, not
/// enough to take the session over.
fn short_session(id: &str) -> String {
    let head: String = clean(id).chars().take(8).collect();
    format!("{head}…")
}

/// One server's status for `--json`; the field names are stable (docs/cli.md).
pub(crate) fn status_json(s: &ServerStatus) -> Value {
    json!({
        "id": s.id,
        "transport": s.transport.as_str(),
        "source": s.source,
        "enabled": s.enabled,
        "state": s.state.as_str(),
        "tools": s.tools,
        "operations": s.operations.iter().map(|o| o.method()).collect::<Vec<_>>(),
        "last_error": s.last_error.as_deref().map(clean),
        "last_error_phase": s.last_error_phase.map(Phase::as_str),
        "last_connected_at": s.last_connected_at.map(rfc3339),
        "protocol_version": s.protocol_version,
        "era": s.era.map(mcp_protocol::Era::as_str),
        "negotiation": s.negotiation.as_deref().map(clean),
        "server_info": s.server_info.as_ref().map(|i| json!({"name": clean(&i.name), "version": clean(&i.version)})),
        "session": s.session_id.as_deref().map(short_session),
        "token_expires_at": s.token_expires_at.map(rfc3339),
        "reconnect_attempts": s.reconnect_attempts,
        "waiting": s.waiting.as_deref().map(clean),
        "diagnostics": s.diagnostics.iter().map(|d| clean(d)).collect::<Vec<_>>(),
    })
}

/// `tools`.
pub(crate) async fn tools(
    cx: &Context,
    out: &Out,
    id: Option<&str>,
    format: Option<ModelApi>,
) -> Result<(), Failure> {
    let loaded = cx.load(ReadScope::Effective);
    manage::report_problems(out, &loaded);
    let live = start(cx, out, loaded, id, Setup::default()).await?;
    let outcome = match format {
        Some(api) => show_model_tools(out, &live.host, id, api),
        None => show_tools(out, &live.host, id),
    };
    finish(&live.host).await;
    outcome
}

/// The catalogue as `api`'s `tools` field, JSON on stdout whatever `--json` says; each tool
/// rewritten or left out is named on stderr with the reason.
fn show_model_tools(
    out: &Out,
    host: &Host,
    id: Option<&str>,
    api: ModelApi,
) -> Result<(), Failure> {
    if let Some(id) = id {
        ready(host, id)?;
    }
    let catalog = host.catalog();
    let tools = catalog
        .model_tools()
        .filter(|t| id.is_none_or(|i| i == t.server()));
    let export = mcp_host::export::export(tools, api.into());
    for d in &export.diagnostics {
        out.note(&format!("{}: {}", d.server, d.message));
    }
    out.json(&export.tools);
    Ok(())
}

/// The catalogue as a table or JSON; servers that are not ready are named on stderr.
pub(crate) fn show_tools(out: &Out, host: &Host, id: Option<&str>) -> Result<(), Failure> {
    match id {
        Some(id) => ready(host, id)?,
        None => {
            for s in host.status() {
                if s.enabled && s.state != ServerState::Ready {
                    out.note(&not_ready(&s).message);
                }
            }
        }
    }
    let catalog = host.catalog();
    let tools: Vec<_> = catalog
        .tools()
        .iter()
        .filter(|t| id.is_none_or(|i| i == t.server))
        .collect();
    // The resource and prompt operations a model is offered beside the tools.
    let operations: Vec<_> = catalog
        .operations()
        .iter()
        .filter(|o| id.is_none_or(|i| i == o.server))
        .collect();
    if out.is_json() {
        out.json(&json!({
            "tools": tools.iter().map(|t| json!({
                "name": t.name,
                "server": t.server,
                "tool": clean(&t.tool),
                "description": t.description,
                "input_schema": *t.parameters,
            })).collect::<Vec<_>>(),
            "operations": operations.iter().map(|o| json!({
                "name": o.name,
                "server": o.server,
                "operation": o.operation.method(),
                "description": o.description,
                "input_schema": *o.parameters,
            })).collect::<Vec<_>>(),
        }));
        return Ok(());
    }
    if tools.is_empty() && operations.is_empty() {
        out.text("no tools");
        return Ok(());
    }
    let mut table = Table::new(&["NAME", "SERVER", "TOOL", "DESCRIPTION"]);
    for t in tools {
        table.row(vec![
            t.name.clone(),
            t.server.clone(),
            cell(&t.tool, 40),
            cell(&t.description, 70),
        ]);
    }
    for o in operations {
        table.row(vec![
            o.name.clone(),
            o.server.clone(),
            format!("({})", o.operation.method()),
            cell(&o.description, 70),
        ]);
    }
    out.text(&table.render());
    Ok(())
}

/// Parses `--args`: a JSON object, or nothing.
pub(crate) fn parse_args(text: Option<&str>) -> Result<JsonObject, Failure> {
    parse_args_as(
        text,
        "--args",
        "'{\"path\": \"a.txt\"}'",
        Some("quote the object for the shell: --args '{\"key\": \"value\"}'"),
    )
}

/// Parses the JSON typed after `/call ID TOOL` in the shell: its errors say nothing of the
/// command line's `--args` or of quoting for a shell, neither of which is there.
pub(crate) fn parse_shell_args(text: Option<&str>) -> Result<JsonObject, Failure> {
    parse_args_as(
        text,
        "the arguments",
        "{\"path\": \"a.txt\"}",
        Some(
            "type the arguments as one JSON object after the tool: /call ID TOOL {\"key\": \"value\"}",
        ),
    )
}

fn parse_args_as(
    text: Option<&str>,
    what: &str,
    example: &str,
    hint: Option<&str>,
) -> Result<JsonObject, Failure> {
    let Some(text) = text else {
        return Ok(JsonObject::new());
    };
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map.into_iter().collect()),
        Ok(_) => Err(Failure::usage(format!(
            "{what} must be a JSON object, like {example}"
        ))),
        Err(e) => {
            let f = Failure::usage(format!(
                "{what} {} not valid JSON (line {}, column {})",
                if what.starts_with("--") { "is" } else { "are" },
                e.line(),
                e.column()
            ));
            Err(match hint {
                Some(h) => f.hint(h),
                None => f,
            })
        }
    }
}

/// `call`.
pub(crate) async fn call(cx: &Context, out: &Out, a: CallArgs) -> Result<(), Failure> {
    let arguments = parse_args(a.args.as_deref())?;
    let loaded = cx.load(ReadScope::Effective);
    manage::report_problems(out, &loaded);
    let setup = Setup {
        yes: a.yes,
        prompter: if a.yes { None } else { terminal_prompter(cx) },
        ..Setup::default()
    };
    let live = start(cx, out, loaded, Some(&a.id), setup).await?;
    let outcome = call_on(out, &live.host, &a.id, &a.tool, arguments, a.timeout_ms).await;
    finish(&live.host).await;
    outcome
}

/// Calls one tool on a started host and shows the result; shared with the shell and demo.
pub(crate) async fn call_on(
    out: &Out,
    host: &Host,
    id: &str,
    tool: &str,
    arguments: JsonObject,
    timeout_ms: Option<u64>,
) -> Result<(), Failure> {
    if let Some(s) = host.server_status(id)
        && s.state != ServerState::Ready
    {
        return Err(not_ready(&s));
    }
    // An exposed name (`mcp_<server>_…`) works as well as the server's own name; the exposed
    // name of a resource or prompt operation runs the operation, as a model's call would.
    let operation = host
        .catalog()
        .resolve_operation(tool)
        .filter(|o| o.server == id)
        .map(|o| o.operation);
    let tool = host
        .catalog()
        .resolve(tool)
        .filter(|t| t.server == id)
        .map_or_else(|| tool.to_owned(), |t| t.tool.clone());
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut options = CallOptions::default().progress(tx);
    if let Some(ms) = timeout_ms {
        options = options.timeout(Duration::from_millis(ms));
    }
    let show_progress = out.is_direct() && std::io::stderr().is_terminal();
    // In the shell the prompt line is the person's: progress is a line above it, the first
    // at once and then at most one a second, naming the call (several may run).
    let shell_progress = (!out.is_direct() && !out.is_json()).then(|| out.clone());
    let label = format!("`{}` on `{id}`", cell(&tool, 80));
    let progress = tokio::spawn(async move {
        let mut shown: Option<Instant> = None;
        while let Some(p) = rx.recv().await {
            let total = p.total.map(|t| format!("/{t}")).unwrap_or_default();
            let message = p
                .message
                .as_deref()
                .map(|m| format!(" {}", cell(m, 80)))
                .unwrap_or_default();
            if show_progress {
                eprint!("\rprogress {}{total}{message}\x1b[K", p.progress);
            }
            if let Some(out) = &shell_progress
                && shown.is_none_or(|t| t.elapsed() >= Duration::from_secs(1))
            {
                shown = Some(Instant::now());
                out.note(&format!("progress {label}: {}{total}{message}", p.progress));
            }
        }
        if show_progress {
            eprint!("\r\x1b[K");
        }
    });
    let result = match operation {
        Some(op) => host.call_operation(id, op, arguments, options).await,
        None => host.call_tool(id, &tool, arguments, options).await,
    };
    let _ = progress.await;
    match result {
        Ok(output) => show_call(out, id, &tool, &output),
        Err(e) => Err(Failure::from(&e)),
    }
}

/// A tool result: text blocks as text, other blocks summarised, `isError` as exit code 5.
pub(crate) fn show_call(
    out: &Out,
    id: &str,
    tool: &str,
    output: &ToolOutput,
) -> Result<(), Failure> {
    if out.is_json() {
        let mut v = serde_json::to_value(&output.result).unwrap_or(Value::Null);
        if let Value::Object(m) = &mut v {
            m.insert("truncated".into(), json!(output.truncated));
        }
        out.json(&v);
    } else {
        out.text(&result_text(&output.result));
        if output.truncated {
            out.note("note: the result was cut to the configured max_result_bytes");
        }
    }
    if output.is_tool_error() {
        return Err(Failure::new(
            Code::Tool,
            format!(
                "tool `{}` on server `{id}` reported an error",
                cell(tool, 80)
            ),
        ));
    }
    Ok(())
}

/// A call result as text for a terminal.
pub(crate) fn result_text(result: &CallToolResult) -> String {
    let mut parts: Vec<String> = result.content.iter().map(block_text).collect();
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(serde_json::to_string_pretty(structured).unwrap_or_default());
    }
    clean(&parts.join("\n"))
}

fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(b) => {
            format!("[image {}, {} bytes of base64]", b.mime_type, b.data.len())
        }
        ContentBlock::Audio(b) => {
            format!("[audio {}, {} bytes of base64]", b.mime_type, b.data.len())
        }
        ContentBlock::ResourceLink(l) => format!("[resource link {} ({})]", l.uri, l.name),
        ContentBlock::Resource(r) => match &r.resource.text {
            Some(text) => format!("[resource {}]\n{text}", r.resource.uri),
            None => format!("[resource {}, binary]", r.resource.uri),
        },
        _ => "[content of a kind this version does not show]".to_owned(),
    }
}

/// Fails unless the server `id` is on `host` and ready: a server named explicitly that is
/// unknown (exit code 3), disabled (3) or not connected (4) is an error, not an empty list.
pub(crate) fn ready(host: &Host, id: &str) -> Result<(), Failure> {
    match host.server_status(id) {
        None => Err(Failure::config(format!("no server `{id}` is configured"))
            .hint("`mcp-host list` shows the configured servers")),
        Some(s) if s.state != ServerState::Ready => Err(not_ready(&s)),
        Some(_) => Ok(()),
    }
}

/// The ids of the ready servers `id` selects; without an id, the enabled servers that are not
/// ready are named on stderr.
fn ready_ids(host: &Host, out: &Out, id: Option<&str>) -> Result<Vec<String>, Failure> {
    if let Some(id) = id {
        ready(host, id)?;
        return Ok(vec![id.to_owned()]);
    }
    let mut ids = Vec::new();
    for s in host.status() {
        if !s.enabled {
            continue;
        }
        if s.state == ServerState::Ready {
            ids.push(s.id.clone());
        } else {
            out.note(&not_ready(&s).message);
        }
    }
    Ok(ids)
}

/// `resources`.
pub(crate) async fn resources(cx: &Context, out: &Out, id: Option<&str>) -> Result<(), Failure> {
    let loaded = cx.load(ReadScope::Effective);
    manage::report_problems(out, &loaded);
    let live = start(cx, out, loaded, id, Setup::default()).await?;
    let outcome = show_resources(out, &live.host, id).await;
    finish(&live.host).await;
    outcome
}

/// Resources and templates of the ready servers.
pub(crate) async fn show_resources(
    out: &Out,
    host: &Host,
    id: Option<&str>,
) -> Result<(), Failure> {
    let mut rows = Vec::new();
    for server in ready_ids(host, out, id)? {
        let supports = host
            .client(&server)
            .map(|c| c.server_info().capabilities.resources.is_some())
            .unwrap_or(false);
        if !supports {
            continue;
        }
        for r in host
            .list_resources(&server)
            .await
            .map_err(|e| Failure::from(&e))?
        {
            rows.push((
                server.clone(),
                "resource",
                r.uri,
                r.name,
                r.mime_type,
                r.description,
            ));
        }
        if let Ok(templates) = host.list_resource_templates(&server).await {
            for t in templates {
                rows.push((
                    server.clone(),
                    "template",
                    t.uri_template,
                    t.name,
                    t.mime_type,
                    t.description,
                ));
            }
        }
    }
    if out.is_json() {
        out.json(&json!({
            "resources": rows.iter().map(|(s, kind, uri, name, mime, desc)| json!({
                "server": s, "kind": kind, "uri": clean(uri), "name": clean(name),
                "mime_type": mime.as_deref().map(clean), "description": desc.as_deref().map(clean),
            })).collect::<Vec<_>>()
        }));
    } else if rows.is_empty() {
        out.text("no resources");
    } else {
        let mut table = Table::new(&["SERVER", "KIND", "URI", "NAME", "MIME"]);
        for (s, kind, uri, name, mime, _) in &rows {
            table.row(vec![
                s.clone(),
                (*kind).to_owned(),
                cell(uri, 80),
                cell(name, 40),
                mime.as_deref().map_or("-".to_owned(), |m| cell(m, 40)),
            ]);
        }
        out.text(&table.render());
    }
    Ok(())
}

/// `read`.
pub(crate) async fn read(cx: &Context, out: &Out, id: &str, uri: &str) -> Result<(), Failure> {
    let loaded = cx.load(ReadScope::Effective);
    manage::report_problems(out, &loaded);
    let live = start(cx, out, loaded, Some(id), Setup::default()).await?;
    let outcome = read_on(out, &live.host, id, uri).await;
    finish(&live.host).await;
    outcome
}

/// Reads one resource on a started host and shows it.
pub(crate) async fn read_on(out: &Out, host: &Host, id: &str, uri: &str) -> Result<(), Failure> {
    if let Some(s) = host.server_status(id)
        && s.state != ServerState::Ready
    {
        return Err(not_ready(&s));
    }
    let result = host
        .read_resource(id, uri)
        .await
        .map_err(|e| Failure::from(&e))?;
    if out.is_json() {
        out.json(&serde_json::to_value(&result).unwrap_or(Value::Null));
    } else {
        out.text(&contents_text(&result));
    }
    Ok(())
}

/// Resource contents as text: text as is, binaries summarised.
pub(crate) fn contents_text(result: &ReadResourceResult) -> String {
    let parts: Vec<String> = result
        .contents
        .iter()
        .map(|c| match (&c.text, &c.blob) {
            (Some(text), _) => clean(text),
            (None, Some(blob)) => format!(
                "[{} bytes of base64{}]",
                blob.len(),
                c.mime_type
                    .as_deref()
                    .map(|m| format!(", {}", cell(m, 40)))
                    .unwrap_or_default()
            ),
            (None, None) => "[empty]".to_owned(),
        })
        .collect();
    parts.join("\n")
}

/// `prompts`.
pub(crate) async fn prompts(cx: &Context, out: &Out, id: Option<&str>) -> Result<(), Failure> {
    let loaded = cx.load(ReadScope::Effective);
    manage::report_problems(out, &loaded);
    let live = start(cx, out, loaded, id, Setup::default()).await?;
    let outcome = show_prompts(out, &live.host, id).await;
    finish(&live.host).await;
    outcome
}

pub(crate) async fn show_prompts(out: &Out, host: &Host, id: Option<&str>) -> Result<(), Failure> {
    let mut rows = Vec::new();
    for server in ready_ids(host, out, id)? {
        let supports = host
            .client(&server)
            .map(|c| c.server_info().capabilities.prompts.is_some())
            .unwrap_or(false);
        if !supports {
            continue;
        }
        for p in host
            .list_prompts(&server)
            .await
            .map_err(|e| Failure::from(&e))?
        {
            rows.push((server.clone(), p));
        }
    }
    if out.is_json() {
        out.json(&json!({
            "prompts": rows.iter().map(|(s, p)| json!({
                "server": s,
                "name": clean(&p.name),
                "description": p.description.as_deref().map(clean),
                "arguments": p.arguments.iter().flatten().map(|a| json!({
                    "name": clean(&a.name), "required": a.required.unwrap_or(false),
                    "description": a.description.as_deref().map(clean),
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>()
        }));
    } else if rows.is_empty() {
        out.text("no prompts");
    } else {
        let mut table = Table::new(&["SERVER", "NAME", "ARGUMENTS", "DESCRIPTION"]);
        for (s, p) in &rows {
            let args: Vec<String> = p
                .arguments
                .iter()
                .flatten()
                .map(|a| {
                    let name = cell(&a.name, 30);
                    if a.required.unwrap_or(false) {
                        name
                    } else {
                        format!("[{name}]")
                    }
                })
                .collect();
            table.row(vec![
                s.clone(),
                cell(&p.name, 40),
                if args.is_empty() {
                    "-".into()
                } else {
                    args.join(" ")
                },
                p.description
                    .as_deref()
                    .map_or("-".to_owned(), |d| cell(d, 70)),
            ]);
        }
        out.text(&table.render());
    }
    Ok(())
}

/// `get`.
pub(crate) async fn get(
    cx: &Context,
    out: &Out,
    id: &str,
    prompt: &str,
    args: Vec<(String, String)>,
) -> Result<(), Failure> {
    let loaded = cx.load(ReadScope::Effective);
    manage::report_problems(out, &loaded);
    let live = start(cx, out, loaded, Some(id), Setup::default()).await?;
    let outcome = get_on(out, &live.host, id, prompt, args.into_iter().collect()).await;
    finish(&live.host).await;
    outcome
}

/// Gets a prompt on a started host and shows its messages.
pub(crate) async fn get_on(
    out: &Out,
    host: &Host,
    id: &str,
    prompt: &str,
    args: BTreeMap<String, String>,
) -> Result<(), Failure> {
    if let Some(s) = host.server_status(id)
        && s.state != ServerState::Ready
    {
        return Err(not_ready(&s));
    }
    let result = host
        .get_prompt(id, prompt, args)
        .await
        .map_err(|e| Failure::from(&e))?;
    if out.is_json() {
        out.json(&serde_json::to_value(&result).unwrap_or(Value::Null));
    } else {
        out.text(&prompt_text(&result));
    }
    Ok(())
}

fn prompt_text(result: &GetPromptResult) -> String {
    let mut lines = Vec::new();
    if let Some(d) = &result.description {
        lines.push(format!("# {}", cell(d, 200)));
    }
    for m in &result.messages {
        let role = serde_json::to_value(&m.role)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        lines.push(format!("{role}: {}", clean(&block_text(&m.content))));
    }
    lines.join("\n")
}

/// `login`.
pub(crate) async fn login(
    cx: &Context,
    out: &Out,
    id: &str,
    no_browser: bool,
    device: bool,
) -> Result<(), Failure> {
    let loaded = cx.load(ReadScope::Effective);
    manage::report_problems(out, &loaded);
    login_to(cx, out, loaded, id, no_browser, device).await
}

/// `login` to server `id` of `loaded`: the configuration, or a gateway file's upstream
/// servers (`login --gateway`), whose tokens go to the same store under the same id and URL.
pub(crate) async fn login_to(
    cx: &Context,
    out: &Out,
    loaded: LoadedConfig,
    id: &str,
    no_browser: bool,
    device: bool,
) -> Result<(), Failure> {
    login_to_store(cx, out, loaded, id, no_browser, device, None).await
}

/// [`login_to`], the tokens kept in `store` when given (a gateway file's `store`) instead
/// of this user's token store.
pub(crate) async fn login_to_store(
    cx: &Context,
    out: &Out,
    loaded: LoadedConfig,
    id: &str,
    no_browser: bool,
    device: bool,
    store: Option<AuthStore>,
) -> Result<(), Failure> {
    known(&loaded, id)?;
    let Some(server) = loaded.server(id) else {
        return Err(Failure::config(format!(
            "server `{id}` has an invalid entry (see above)"
        )));
    };
    if server.transport.kind() == "stdio" {
        return Err(Failure::usage(format!(
            "server `{id}` runs over stdio: it takes its credentials from its environment, not OAuth"
        ))
        .hint("set them with `mcp-host add … --env NAME=VALUE` or `--env-from NAME=VAR`"));
    }
    // The library decides which servers OAuth applies to; asking it keeps `login` from
    // claiming a login for a server that sends its configured `Authorization` header instead
    // (with or without `oauth` settings beside it).
    if oauth(cx)?.hook(server).is_none() {
        return Err(Failure::usage(format!(
            "server `{id}` has a configured Authorization header: it does not use OAuth"
        ))
        .hint(format!(
            "remove the header from `{id}`'s entry to log in with OAuth"
        )));
    }
    // The device flow where the server offers it: asked for, or no browser here.
    let device_agent = (device || no_browser || crate::device::no_browser_here())
        .then(|| crate::device::prompt(id));
    let agent: Option<Arc<dyn UserAgent>> = if device {
        None
    } else if no_browser {
        Some(Arc::new(Pasted::new(show_url, || {
            Box::pin(async {
                eprint!("paste the address the browser ended on: ");
                tokio::task::spawn_blocking(|| {
                    let mut line = String::new();
                    std::io::stdin()
                        .read_line(&mut line)
                        .map_err(|e| format!("cannot read stdin: {e}"))?;
                    Ok(line)
                })
                .await
                .unwrap_or_else(|e| Err(format!("reading stdin failed: {e}").into()))
            })
        })))
    } else {
        Some(Arc::new(
            Loopback::bind(open_browser, Duration::from_secs(300))
                .await
                .map_err(|e| {
                    Failure::new(
                        Code::Other,
                        format!("cannot listen on loopback for the browser: {e}"),
                    )
                })?
                .for_server(id)
                .with_notices(show_notice),
        ))
    };
    // Connecting with a user agent: the server's 401 starts discovery, and the person logs in.
    // Without a browser the person pastes on the terminal's line, so no spinner redraws it.
    let setup = Setup {
        user_agent: agent,
        device_agent,
        spinner: if no_browser {
            SpinnerText::Off
        } else if device {
            SpinnerText::Say("waiting for the login to be approved on the other device")
        } else {
            SpinnerText::Say("connecting; log in in the browser if asked (up to 5 minutes)")
        },
        store,
        ..Setup::default()
    };
    let live = start(cx, out, loaded, Some(id), setup).await?;
    let status = live.host.server_status(id);
    finish(&live.host).await;
    let Some(status) = status else {
        return Err(Failure::config(format!("no server `{id}` is configured")));
    };
    if status.state == ServerState::Disabled {
        return Err(not_ready(&status));
    }
    if status.state != ServerState::Ready {
        return Err(Failure::new(
            Code::Connection,
            format!(
                "server `{id}`: login failed{}",
                status.last_error.as_deref().map(|e| format!(": {}", clean(e))).unwrap_or_default()
            ),
        )
        .hint("check the server's URL and OAuth settings with `mcp-host list`; on a machine without a browser use --device or --no-browser"));
    }
    if out.is_json() {
        let mut v = status_json(&status);
        v["logged_in"] = json!(true);
        out.json(&v);
    } else {
        out.text(&format!(
            "logged in to `{id}`; server state: {}",
            status.state
        ));
    }
    Ok(())
}

/// Shows the authorization URL (the user agent's `show`).
fn show_url(url: &Url) -> Result<(), BoxError> {
    // On a terminal, start from a clean line: the spinner may be on it.
    let clear = if std::io::stderr().is_terminal() {
        "\r\x1b[K"
    } else {
        ""
    };
    eprintln!("{clear}open this address in a browser to log in:\n  {url}");
    Ok(())
}

/// Tells the person what the login does on its own (a new client registration, and why).
fn show_notice(message: &str) {
    let clear = if std::io::stderr().is_terminal() {
        "\r\x1b[K"
    } else {
        ""
    };
    eprintln!("{clear}{message}");
}

/// Shows the URL and tries a browser: `$BROWSER`, else `xdg-open`, only for `https` or
/// loopback `http` URLs. A missing browser is not an error: the address is on the screen.
fn open_browser(url: &Url) -> Result<(), BoxError> {
    // The user agent checked it already; a browser is never handed anything else.
    mcp_host::oauth::check_openable(url)?;
    show_url(url)?;
    let program = std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| "xdg-open".to_owned());
    let _ = std::process::Command::new(program)
        .arg(url.as_str())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    Ok(())
}

/// `logout`.
pub(crate) fn logout(cx: &Context, out: &Out, id: &str) -> Result<(), Failure> {
    let loaded = cx.load(ReadScope::Effective);
    known(&loaded, id)?;
    forget(cx, out, id)
}

/// Removes server `id`'s tokens from the token store, and says so (`logout`, also of a
/// gateway's upstream).
pub(crate) fn forget(cx: &Context, out: &Out, id: &str) -> Result<(), Failure> {
    forget_in(cx, out, id, None)
}

/// [`forget`], in `store` when given (a gateway file's `store`).
pub(crate) fn forget_in(
    cx: &Context,
    out: &Out,
    id: &str,
    store: Option<AuthStore>,
) -> Result<(), Failure> {
    let store = match store {
        Some(store) => Some(store),
        None => token_store(cx)?,
    };
    let Some(store) = store else {
        return Err(Failure::config(
            "no token store: set MCP_HOST_CONFIG, XDG_CONFIG_HOME or HOME",
        ));
    };
    let removed = store
        .remove(id)
        .map_err(|e| Failure::new(Code::Other, format!("server `{id}`: the token store: {e}")))?;
    if out.is_json() {
        out.json(&json!({ "id": id, "removed_tokens": removed }));
    } else if removed {
        out.text(&format!("logged out of `{id}`: its tokens were deleted"));
    } else {
        out.text(&format!("no stored tokens for `{id}`"));
    }
    Ok(())
}

/// A time as RFC 3339 in UTC (`2026-11-21T08:15:00Z`).
pub(crate) fn rfc3339(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_795_245_300);
        assert_eq!(rfc3339(t), "2026-11-21T07:15:00Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn args_must_be_a_json_object() {
        assert!(parse_args(None).unwrap().is_empty());
        assert_eq!(parse_args(Some(r#"{"a":1}"#)).unwrap().len(), 1);
        assert_eq!(parse_args(Some("[1]")).unwrap_err().code, Code::Usage);
        assert_eq!(parse_args(Some("{oops")).unwrap_err().code, Code::Usage);
    }
}
