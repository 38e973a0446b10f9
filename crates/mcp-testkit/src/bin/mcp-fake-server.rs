//! A fake MCP server on stdio that misbehaves on demand: the peer the transport tests and
//! benchmarks run against. It uses `mcp-protocol`'s server session for the protocol, and
//! writes faults (garbage, huge lines, early notifications, crashes) straight to stdout.
//! This file is long because it is one binary with a flag per fault, each fault a few lines in the
//! one request loop, and the flags are documented here.
//!
//! Flags (all optional):
//!   --tools N               serve N extra generated tools (`tool_00000`, ...)
//!   --page-size N           paginate list results by N items
//!   --ignore-sigterm        survive SIGTERM (only SIGKILL ends it)
//!   --ignore-stdin-close    keep running after stdin ends
//!   --grandchild            start a grandchild process at start-up (like an npx launcher)
//!   --notify-before-init    send a log notification before the initialize result
//!   --hang-initialize       never answer initialize
//!   --ignore-unknown        never answer a request whose method it does not know
//!                           (`server/discover` among them), as some handshake-era servers do
//!   --log-requests PATH     append the method of every request received to PATH, one a line
//!                           (what a test counts to see which requests a host sent); with
//!                           --ignore-stdin-close also `stdin closed`, with --ignore-sigterm
//!                           also `SIGTERM` for each one received (how a test sees how far a
//!                           host's polite shutdown went)
//!   --startup-delay-ms N    wait before reading stdin (or before exiting, with --exit-on-start)
//!   --garbage-on-start      print a non-JSON line before anything else
//!   --stderr-on-start N     write N bytes to stderr at start-up
//!   --exit-on-start CODE    print a message to stderr and exit with CODE without reading stdin
//!   --idle                  do nothing but sleep (the grandchild mode)
//!   --fail-tools-list-after N  answer tools/list with an error after N answers
//!   --no-resources          declare no `resources` capability
//!   --no-prompts            declare no `prompts` capability
//!   --subscribe             declare `resources.subscribe`, take `resources/subscribe` and
//!                           `resources/unsubscribe`, and serve the tool `touch {uri}`, which
//!                           sends `notifications/resources/updated` for `uri` when it is
//!                           subscribed (answering `updated <uri>`) and otherwise answers
//!                           `not subscribed <uri>` (how a test sees what a host subscribed)
//!   --tools-file PATH       list the tools of a JSON file (an array of tools, or a
//!                           `tools/list` result) instead of the built-in ones; a call to one
//!                           of them that is not built in answers its name and arguments
//!   --leak-env NAME         echo the value of the variable NAME in JSON-RPC errors: every
//!                           `tools/call` fails with it, and so does a failing `tools/list`
//!                           (a server that quotes its own key in an error, which the host
//!                           must redact)
//!
//! With `FAKE_STATELESS=1` in its environment it speaks only the 2026-07-28 era.
//!
//! Tools: echo {message}, sleep {ms}, hang, crash, garbage, huge {bytes}, huge_noise {bytes},
//! flood_stderr {bytes}, progress {steps, delay_ms}, sample, elicit, roots, list_changed,
//! grow (one more generated tool, then list_changed), spawn_grandchild, pid, stats, env.
//!
//! Resources: `fake://hello` is listed; any `fake://` URI reads as the text `contents of
//! <uri>`, except `fake://blob/<n>`, which is n bytes of binary data (`image/png`),
//! `fake://hang`, whose read is never answered, and `fake://add/<name>`, whose read also
//! adds `fake://<name>` to the list and sends `notifications/resources/list_changed`.
//! Prompts: `greet {name}`.
//!
//! `sample`, `elicit` and `roots` ask the client, through the server session when it allows
//! (past it otherwise), and answer the outcome in Rust debug form. Given a `request_id`
//! argument (a JSON-RPC id, a string or an integer the session does not use) they send the
//! request under that id past the session instead, and answer the frame the client sent back,
//! verbatim as JSON text: the response or error to that id, or, if the client answered no id
//! the server has outstanding, that frame.

#![allow(clippy::print_stderr, clippy::print_stdout, clippy::unwrap_used)]

use std::collections::HashMap;
use std::future::Future as _;
use std::io::Write as _;
use std::time::{Duration, Instant};

use mcp_protocol::schema::{
    CallToolParams, CallToolResult, ClientRequest, ContentBlock, GetPromptResult,
    ListChangedCapability, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedParams, Prompt, PromptMessage, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate, ResourcesCapability, Role, Tool,
};
use mcp_protocol::{
    ErrorObject, JsonObject, Message, RawJson, RequestId, RequestOptions, ServerConfig,
    ServerEvent, ServerSession, code, decode,
};
use mcp_stdio::codec::{Line, LineDecoder, encode_line};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt as _;
use tokio::sync::{mpsc, oneshot};

#[derive(Default)]
struct Flags {
    tools: usize,
    page_size: Option<usize>,
    ignore_sigterm: bool,
    ignore_stdin_close: bool,
    grandchild: bool,
    notify_before_init: bool,
    hang_initialize: bool,
    startup_delay_ms: u64,
    garbage_on_start: bool,
    stderr_on_start: usize,
    exit_on_start: Option<i32>,
    idle: bool,
    no_resources: bool,
    no_prompts: bool,
    subscribe: bool,
    ignore_unknown: bool,
    log_requests: Option<String>,
}

/// The methods a handshake-era server of 2025-11-25 serves: what `--ignore-unknown` answers.
const HANDSHAKE_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "logging/setLevel",
    "completion/complete",
];

fn parse_flags() -> Flags {
    let mut f = Flags::default();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut num = || args.next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        match a.as_str() {
            "--tools" => f.tools = num() as usize,
            "--page-size" => f.page_size = Some(num() as usize),
            "--ignore-sigterm" => f.ignore_sigterm = true,
            "--ignore-stdin-close" => f.ignore_stdin_close = true,
            "--grandchild" => f.grandchild = true,
            "--notify-before-init" => f.notify_before_init = true,
            "--hang-initialize" => f.hang_initialize = true,
            "--startup-delay-ms" => f.startup_delay_ms = num(),
            "--garbage-on-start" => f.garbage_on_start = true,
            "--stderr-on-start" => f.stderr_on_start = num() as usize,
            "--exit-on-start" => f.exit_on_start = Some(num() as i32),
            "--idle" => f.idle = true,
            "--no-resources" => f.no_resources = true,
            "--no-prompts" => f.no_prompts = true,
            "--subscribe" => {
                f.subscribe = true;
                SUBSCRIBE.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            "--ignore-unknown" => f.ignore_unknown = true,
            "--log-requests" => f.log_requests = args.next(),
            "--fail-tools-list-after" => {
                FAIL_LIST_AFTER.store(num() as usize, std::sync::atomic::Ordering::Relaxed);
            }
            "--leak-env" => {
                let name = args.next().unwrap_or_default();
                let _ = LEAK.set(std::env::var(&name).unwrap_or_default());
            }
            "--tools-file" => {
                let path = args.next().unwrap_or_default();
                let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
                    eprintln!("mcp-fake-server: --tools-file {path}: {e}");
                    std::process::exit(2);
                });
                let value: Value = serde_json::from_str(&text).unwrap_or_else(|e| {
                    eprintln!("mcp-fake-server: --tools-file {path}: {e}");
                    std::process::exit(2);
                });
                let list = value.get("tools").cloned().unwrap_or(value);
                let tools: Vec<Tool> = serde_json::from_value(list).unwrap_or_else(|e| {
                    eprintln!("mcp-fake-server: --tools-file {path}: not a list of tools: {e}");
                    std::process::exit(2);
                });
                let _ = FILE_TOOLS.set(tools);
            }
            other => {
                eprintln!("mcp-fake-server: unknown flag {other}");
                std::process::exit(2);
            }
        }
    }
    f
}

/// How many `notifications/cancelled` the server has received, for the `stats` tool.
static CANCELLED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// `--fail-tools-list-after`: how many `tools/list` are answered before they fail.
static FAIL_LIST_AFTER: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(usize::MAX);
/// The tools of `--tools-file`, served instead of the built-in list.
static FILE_TOOLS: std::sync::OnceLock<Vec<Tool>> = std::sync::OnceLock::new();
/// `--leak-env`: the value quoted in every JSON-RPC error the server makes up.
static LEAK: std::sync::OnceLock<String> = std::sync::OnceLock::new();
/// Resources added at run time by reading `fake://add/<name>`.
static ADDED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
/// `--subscribe`: subscriptions are taken and `touch` is served.
static SUBSCRIBE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// The resource URIs subscribed to (`--subscribe`).
static SUBSCRIBED: std::sync::Mutex<std::collections::BTreeSet<String>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());
/// Tools added at run time by the `grow` tool.
static GROWN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// What a tool task sends back to the main loop.
enum Action {
    Respond(RequestId, Result<RawJson, ErrorObject>),
    Notify(String, Option<RawJson>),
    /// A request to the client; the answer goes to the sender.
    Ask(
        String,
        Option<RawJson>,
        oneshot::Sender<Result<RawJson, String>>,
    ),
    /// A request to the client under a given id, sent past the session; the frame answered
    /// goes to the sender as it was received.
    AskWire(RequestId, String, Option<RawJson>, oneshot::Sender<Value>),
}

fn main() {
    let flags = parse_flags();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run(flags));
}

async fn run(flags: Flags) {
    if flags.idle {
        // SIGTERM is caught (and ignored) when asked; otherwise it ends us as usual.
        let _term = flags.ignore_sigterm.then(|| {
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).unwrap()
        });
        loop {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
    }
    if let Some(code) = flags.exit_on_start {
        // Alive for a while first when asked, so that a test can see it run before it dies.
        tokio::time::sleep(Duration::from_millis(flags.startup_delay_ms)).await;
        // Prints a configured secret on purpose: the host must redact it from what it shows.
        let key = std::env::var("FAKE_API_KEY").unwrap_or_default();
        eprintln!("fatal: the API key {key:?} was rejected; cannot start");
        std::process::exit(code);
    }
    let term = flags.ignore_sigterm.then(|| {
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).unwrap()
    });
    // Each SIGTERM ignored is logged where asked; otherwise it is only ignored.
    let _term = match (term, flags.log_requests.clone()) {
        (Some(mut term), Some(path)) => {
            tokio::spawn(async move {
                while term.recv().await.is_some() {
                    log_line(&path, "SIGTERM");
                }
            });
            None
        }
        (term, _) => term,
    };
    if flags.stderr_on_start > 0 {
        let _ = std::io::stderr().write_all(&vec![b'e'; flags.stderr_on_start]);
    }
    if flags.grandchild {
        let pid = spawn_grandchild(flags.ignore_sigterm);
        eprintln!("grandchild {pid}");
    }
    tokio::time::sleep(Duration::from_millis(flags.startup_delay_ms)).await;

    let out_tx = Out;
    if flags.garbage_on_start {
        let _ = out_tx.send(b"fake server starting (this line is not JSON)\n".to_vec());
    }

    let mut config = ServerConfig::new(mcp_protocol::schema::Implementation::new(
        "mcp-fake-server".into(),
        "0.0.0".into(),
    ));
    config.capabilities.tools = Some({
        let mut c = ListChangedCapability::new();
        c.list_changed = Some(true);
        c
    });
    if !flags.no_resources {
        let mut c = ResourcesCapability::new();
        // `fake://add/<name>` changes the list and says so.
        c.list_changed = Some(true);
        c.subscribe = flags.subscribe.then_some(true);
        config.capabilities.resources = Some(c);
    }
    if !flags.no_prompts {
        config.capabilities.prompts = Some(ListChangedCapability::new());
    }
    config.capabilities.logging = Some(JsonObject::new());
    // An upgraded server under the same command line: what a host remembered of it is wrong.
    let mut session = if std::env::var("FAKE_STATELESS").is_ok_and(|v| v == "1") {
        config.supported_versions = vec![mcp_protocol::ProtocolVersion::V2026_07_28];
        ServerSession::stateless(config)
    } else {
        ServerSession::new(config)
    };
    let (act_tx, mut act_rx) = mpsc::unbounded_channel::<Action>();
    let mut asks: HashMap<RequestId, oneshot::Sender<Result<RawJson, String>>> = HashMap::new();
    let mut raw_asks: HashMap<RequestId, oneshot::Sender<Result<RawJson, String>>> = HashMap::new();
    let mut wire_asks: HashMap<RequestId, oneshot::Sender<Value>> = HashMap::new();
    let mut tasks: HashMap<RequestId, tokio::task::AbortHandle> = HashMap::new();
    let mut stdin = tokio::io::stdin();
    let mut decoder = LineDecoder::new(64 << 20);
    let mut chunk = vec![0u8; 64 << 10];
    let mut stdin_open = true;
    let start = Instant::now();

    loop {
        tokio::select! {
            read = stdin.read(&mut chunk), if stdin_open => match read {
                Ok(0) | Err(_) => {
                    if !flags.ignore_stdin_close {
                        break;
                    }
                    if let Some(path) = &flags.log_requests {
                        log_line(path, "stdin closed");
                    }
                    stdin_open = false;
                }
                Ok(n) => {
                    decoder.push(&chunk[..n]);
                    while let Some(Line::Frame(bytes)) = decoder.next_line() {
                        let now = start + start.elapsed();
                        let decoded = match decode(&bytes) {
                            Ok(d) => d,
                            Err(e) => { session.handle_invalid(e); continue; }
                        };
                        // Answers to requests sent under a given id go to their task as
                        // received; so does an answer to no id outstanding while exactly one
                        // such request waits (a client that answered the wrong id).
                        if let mcp_protocol::Decoded::Single(m @ (Message::Response(_) | Message::Error(_))) = &decoded {
                            let id = m.id();
                            let wire = match id.and_then(|id| wire_asks.remove(id)) {
                                Some(reply) => Some(reply),
                                None if wire_asks.len() == 1
                                    && !id.is_some_and(|id| asks.contains_key(id) || raw_asks.contains_key(id)) =>
                                {
                                    wire_asks.drain().next().map(|(_, reply)| reply)
                                }
                                None => None,
                            };
                            if let Some(reply) = wire {
                                let frame = serde_json::from_slice(&bytes).unwrap_or_else(|e| json!({"unparsable": e.to_string()}));
                                let _ = reply.send(frame);
                                continue;
                            }
                        }
                        // Answers to requests sent past the session go straight to their task.
                        if let mcp_protocol::Decoded::Single(m @ (Message::Response(_) | Message::Error(_))) = &decoded
                            && let Some(reply) = m.id().and_then(|id| raw_asks.remove(id))
                        {
                            let _ = reply.send(match m {
                                Message::Response(r) => Ok(r.result.clone()),
                                Message::Error(e) => Err(format!("{} (code {})", e.error.message, e.error.code)),
                                _ => Err("unexpected".to_owned()),
                            });
                            continue;
                        }
                        if let mcp_protocol::Decoded::Single(Message::Request(r)) = &decoded {
                            if let Some(path) = &flags.log_requests {
                                let mut log = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
                                writeln!(log, "{}", r.method).unwrap();
                            }
                            if flags.ignore_unknown && !HANDSHAKE_METHODS.contains(&r.method.as_str()) {
                                continue;
                            }
                        }
                        if let mcp_protocol::Decoded::Single(Message::Request(r)) = &decoded
                            && r.method == "initialize"
                        {
                            if flags.hang_initialize {
                                continue;
                            }
                            if flags.notify_before_init {
                                let note = json!({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hello before the initialize result"}});
                                let _ = out_tx.send(format!("{note}\n").into_bytes());
                            }
                        }
                        session.handle_decoded(now, decoded);
                    }
                }
            },
            Some(action) = act_rx.recv() => match action {
                Action::Respond(id, outcome) => {
                    tasks.remove(&id);
                    let _ = match outcome {
                        Ok(r) => session.respond(&id, r),
                        Err(e) => session.respond_error(&id, e),
                    };
                }
                Action::Notify(method, params) => { let _ = session.notify(&method, params); }
                Action::Ask(method, params, reply) => {
                    match session.send_request(start + start.elapsed(), &method, params.clone(), RequestOptions::DEFAULT) {
                        Ok(id) => { asks.insert(id, reply); }
                        Err(_) => {
                            // Our session refuses to ask for what the client did not declare;
                            // a misbehaving server asks anyway, past it.
                            let id = RequestId::String(format!("raw-{}", raw_asks.len()));
                            let m = Message::Request(mcp_protocol::Request { id: id.clone(), method, params });
                            let mut buf = Vec::new();
                            encode_line(&m, &mut buf);
                            flush(&mut session, &out_tx);
                            let _ = out_tx.send(buf);
                            raw_asks.insert(id, reply);
                        }
                    }
                }
                Action::AskWire(id, method, params, reply) => {
                    let m = Message::Request(mcp_protocol::Request { id: id.clone(), method, params });
                    let mut buf = Vec::new();
                    encode_line(&m, &mut buf);
                    flush(&mut session, &out_tx);
                    let _ = out_tx.send(buf);
                    wire_asks.insert(id, reply);
                }
            },
        }
        while let Some(event) = session.poll_event() {
            match event {
                ServerEvent::Request { id, request } => {
                    let tx = act_tx.clone();
                    let req_id = id.clone();
                    let tools = flags.tools;
                    let page = flags.page_size;
                    let mut work =
                        Box::pin(async move { handle(request, &req_id, &tx, tools, page).await });
                    // Most requests are answered at once; only the slow ones get a task.
                    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
                    match work.as_mut().poll(&mut cx) {
                        std::task::Poll::Ready(outcome) => {
                            let _ = match outcome {
                                Ok(r) => session.respond(&id, r),
                                Err(e) => session.respond_error(&id, e),
                            };
                        }
                        std::task::Poll::Pending => {
                            let tx = act_tx.clone();
                            let task_id = id.clone();
                            let task = tokio::spawn(async move {
                                let outcome = work.await;
                                let _ = tx.send(Action::Respond(task_id, outcome));
                            });
                            tasks.insert(id, task.abort_handle());
                        }
                    }
                }
                ServerEvent::Cancelled { id, .. } => {
                    CANCELLED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if let Some(t) = tasks.remove(&id) {
                        t.abort();
                    }
                }
                ServerEvent::Response { id, outcome, .. } => {
                    if let Some(reply) = asks.remove(&id) {
                        let _ = reply.send(outcome.map_err(|e| e.to_string()));
                    }
                }
                _ => {}
            }
        }
        flush(&mut session, &out_tx);
    }
}

/// Stdout, written synchronously: the server is single-threaded, and its client always reads.
#[derive(Clone, Copy)]
struct Out;

impl Out {
    fn send(self, bytes: Vec<u8>) -> std::io::Result<()> {
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(&bytes)?;
        stdout.flush()
    }
}

fn flush(session: &mut ServerSession, out: &Out) {
    let mut buf = Vec::new();
    while let Some(m) = session.poll_transmit() {
        encode_line(&m, &mut buf);
    }
    if !buf.is_empty() {
        let _ = out.send(buf);
    }
}

/// Appends `line` to the request log at `path`.
fn log_line(path: &str, line: &str) {
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    writeln!(log, "{line}").unwrap();
}

fn spawn_grandchild(ignore_sigterm: bool) -> u32 {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("--idle").stdin(std::process::Stdio::null());
    if ignore_sigterm {
        cmd.arg("--ignore-sigterm");
    }
    // stdout and stderr are inherited, as a launcher's child inherits them.
    let child = cmd.spawn().unwrap();
    let pid = child.id();
    // Never waited for: it outlives us unless our group is ended with us.
    std::mem::forget(child);
    pid
}

fn text(s: impl Into<String>) -> Result<RawJson, ErrorObject> {
    Ok(RawJson::encode(&CallToolResult::new(vec![ContentBlock::text(s)])).unwrap())
}

fn tool(name: &str, description: &str, properties: Value) -> Tool {
    let mut t = Tool::new(name.to_owned());
    t.description = Some(description.to_owned());
    t.input_schema = Some(json!({"type": "object", "properties": properties}));
    t
}

fn all_tools(extra: usize) -> Vec<Tool> {
    let mut tools = vec![
        tool(
            "echo",
            "Returns its message",
            json!({"message": {"type": "string"}}),
        ),
        tool(
            "sleep",
            "Answers after ms milliseconds",
            json!({"ms": {"type": "integer"}}),
        ),
        tool("hang", "Never answers", json!({})),
        tool("crash", "Exits in the middle of the call", json!({})),
        tool("garbage", "Writes a non-JSON line, then answers", json!({})),
        tool(
            "huge",
            "Answers with a line of the given size",
            json!({"bytes": {"type": "integer"}}),
        ),
        tool(
            "huge_noise",
            "Writes a huge non-message line, then answers",
            json!({"bytes": {"type": "integer"}}),
        ),
        tool(
            "flood_stderr",
            "Writes bytes to stderr, then answers",
            json!({"bytes": {"type": "integer"}}),
        ),
        tool(
            "progress",
            "Reports progress steps, then answers",
            json!({"steps": {"type": "integer"}, "delay_ms": {"type": "integer"}}),
        ),
        tool("sample", "Asks the client for a sampling", json!({})),
        tool("elicit", "Asks the client for input", json!({})),
        tool("roots", "Asks the client for its roots", json!({})),
        tool(
            "list_changed",
            "Sends tools/list_changed, then answers",
            json!({}),
        ),
        tool(
            "spawn_grandchild",
            "Starts a grandchild and returns its pid",
            json!({}),
        ),
        tool(
            "pid",
            "Returns the server's pid and process group",
            json!({}),
        ),
        tool("stats", "Returns how many cancellations arrived", json!({})),
        tool(
            "grow",
            "Adds one generated tool, then sends tools/list_changed",
            json!({}),
        ),
        tool(
            "env",
            "Returns the names of the server's environment variables",
            json!({}),
        ),
    ];
    if SUBSCRIBE.load(std::sync::atomic::Ordering::Relaxed) {
        tools.push(tool(
            "touch",
            "Sends resources/updated for a subscribed uri",
            json!({"uri": {"type": "string"}}),
        ));
    }
    tools.extend(generated_tools(extra));
    tools
}

/// `count` generated tools, `tool_00000` on: `--tools` and the `grow` tool add them.
fn generated_tools(count: usize) -> impl Iterator<Item = Tool> {
    (0..count).map(|i| {
        tool(
            &format!("tool_{i:05}"),
            "A generated tool",
            json!({"x": {"type": "string"}}),
        )
    })
}

/// Slices a list by the cursor (an index) and the page size.
fn paginate<T: Clone>(
    items: &[T],
    params: &PaginatedParams,
    page: Option<usize>,
) -> (Vec<T>, Option<String>) {
    let start: usize = params
        .cursor
        .as_deref()
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
        .min(items.len());
    let end = page.map_or(items.len(), |p| (start + p).min(items.len()));
    let next = (end < items.len()).then(|| end.to_string());
    (items[start..end].to_vec(), next)
}

fn arg_u64(params: &CallToolParams, name: &str) -> u64 {
    params
        .arguments
        .as_ref()
        .and_then(|a| a.get(name))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

async fn ask(
    tx: &mpsc::UnboundedSender<Action>,
    method: &str,
    params: Value,
) -> Result<RawJson, String> {
    let (reply, rx) = oneshot::channel();
    let _ = tx.send(Action::Ask(
        method.to_owned(),
        Some(RawJson::encode(&params).unwrap()),
        reply,
    ));
    rx.await.unwrap_or_else(|_| Err("no answer".to_owned()))
}

/// What `sample`, `elicit` and `roots` answer (see the module doc): the outcome of asking the
/// client `method`, or with a `request_id` argument the frame it answered.
async fn ask_client(
    p: &CallToolParams,
    tx: &mpsc::UnboundedSender<Action>,
    method: &str,
    params: Value,
) -> Result<RawJson, ErrorObject> {
    let Some(id) = p.arguments.as_ref().and_then(|a| a.get("request_id")) else {
        let r = ask(tx, method, params).await;
        return text(format!("{r:?}"));
    };
    let id: RequestId = serde_json::from_value(id.clone())
        .map_err(|e| ErrorObject::new(code::INVALID_PARAMS, format!("request_id: {e}")))?;
    let (reply, rx) = oneshot::channel();
    let _ = tx.send(Action::AskWire(
        id,
        method.to_owned(),
        Some(RawJson::encode(&params).unwrap()),
        reply,
    ));
    match rx.await {
        Ok(frame) => text(frame.to_string()),
        Err(_) => text("no answer"),
    }
}

async fn handle(
    request: ClientRequest,
    id: &RequestId,
    tx: &mpsc::UnboundedSender<Action>,
    extra_tools: usize,
    page: Option<usize>,
) -> Result<RawJson, ErrorObject> {
    match request {
        ClientRequest::ListTools(p) => {
            let left = FAIL_LIST_AFTER.load(std::sync::atomic::Ordering::Relaxed);
            if left == 0 {
                return Err(ErrorObject::new(
                    code::INTERNAL_ERROR,
                    format!("tools/list fails (--fail-tools-list-after){}", leaked()),
                ));
            }
            FAIL_LIST_AFTER.store(left.saturating_sub(1), std::sync::atomic::Ordering::Relaxed);
            let grown = GROWN.load(std::sync::atomic::Ordering::Relaxed);
            let listed = match FILE_TOOLS.get() {
                Some(file) => file.iter().cloned().chain(generated_tools(grown)).collect(),
                None => all_tools(extra_tools + grown),
            };
            let (tools, next) = paginate(&listed, &p, page);
            let mut r = ListToolsResult::new(tools);
            r.next_cursor = next;
            Ok(RawJson::encode(&r).unwrap())
        }
        ClientRequest::ListResources(p) => {
            let mut res = Resource::new("fake://hello".into(), "hello".into());
            res.mime_type = Some("text/plain".into());
            let mut all = vec![res];
            for name in ADDED.lock().unwrap().iter() {
                all.push(Resource::new(format!("fake://{name}"), name.clone()));
            }
            let (items, next) = paginate(&all, &p, page);
            let mut r = ListResourcesResult::new(items);
            r.next_cursor = next;
            Ok(RawJson::encode(&r).unwrap())
        }
        ClientRequest::ListResourceTemplates(_) => {
            Ok(RawJson::encode(&ListResourceTemplatesResult::new(vec![
                ResourceTemplate::new("fake://{name}".into(), "named".into()),
            ]))
            .unwrap())
        }
        ClientRequest::ReadResource(p) => {
            if !p.uri.starts_with("fake://") {
                return Err(ErrorObject::new(
                    code::RESOURCE_NOT_FOUND,
                    format!("Resource not found: {}", p.uri),
                ));
            }
            let mut c = ResourceContents::new(p.uri.clone());
            if let Some(n) = p.uri.strip_prefix("fake://blob/") {
                // `fake://blob/<n>`: n bytes of binary data (base64 of zero bytes).
                let n: usize = n.parse().unwrap_or(0);
                c.mime_type = Some("image/png".into());
                c.blob = Some("A".repeat(n.div_ceil(3) * 4));
                return Ok(RawJson::encode(&ReadResourceResult::new(vec![c])).unwrap());
            }
            if p.uri == "fake://hang" {
                // Never answered: for timeouts and cancellation.
                std::future::pending::<()>().await;
            }
            if let Some(name) = p.uri.strip_prefix("fake://add/") {
                // Reading `fake://add/<name>` adds the resource `fake://<name>` and says the
                // list changed.
                ADDED.lock().unwrap().push(name.to_owned());
                let _ = tx.send(Action::Notify(
                    "notifications/resources/list_changed".into(),
                    None,
                ));
            }
            c.text = Some(format!("contents of {}", p.uri));
            Ok(RawJson::encode(&ReadResourceResult::new(vec![c])).unwrap())
        }
        ClientRequest::ListPrompts(_) => {
            Ok(
                RawJson::encode(&ListPromptsResult::new(vec![Prompt::new("greet".into())]))
                    .unwrap(),
            )
        }
        ClientRequest::GetPrompt(p) => {
            let name = p
                .arguments
                .as_ref()
                .and_then(|a| a.get("name"))
                .cloned()
                .unwrap_or_else(|| "world".into());
            Ok(
                RawJson::encode(&GetPromptResult::new(vec![PromptMessage::new(
                    Role::User,
                    ContentBlock::text(format!("Hello, {name}!")),
                )]))
                .unwrap(),
            )
        }
        ClientRequest::CallTool(_) if LEAK.get().is_some() => Err(ErrorObject::new(
            code::INTERNAL_ERROR,
            format!("the call failed{}", leaked()),
        )),
        ClientRequest::CallTool(p) => call(p, id, tx).await,
        // It declares `logging`, so it takes a level (and sends its few entries whatever it is).
        ClientRequest::SetLevel(_) => Ok(RawJson::encode(&json!({})).unwrap()),
        ClientRequest::Subscribe(p) if SUBSCRIBE.load(std::sync::atomic::Ordering::Relaxed) => {
            SUBSCRIBED.lock().unwrap().insert(p.uri);
            Ok(RawJson::encode(&json!({})).unwrap())
        }
        ClientRequest::Unsubscribe(p) if SUBSCRIBE.load(std::sync::atomic::Ordering::Relaxed) => {
            SUBSCRIBED.lock().unwrap().remove(&p.uri);
            Ok(RawJson::encode(&json!({})).unwrap())
        }
        _ => Err(ErrorObject::new(
            code::METHOD_NOT_FOUND,
            "not served".into(),
        )),
    }
}

/// What `--leak-env` adds to an error message: the key, quoted the way a careless server
/// would.
fn leaked() -> String {
    match LEAK.get() {
        Some(value) => format!(": the key {value:?} was refused"),
        None => String::new(),
    }
}

async fn call(
    p: CallToolParams,
    id: &RequestId,
    tx: &mpsc::UnboundedSender<Action>,
) -> Result<RawJson, ErrorObject> {
    match p.name.as_str() {
        "echo" => {
            let m = p
                .arguments
                .as_ref()
                .and_then(|a| a.get("message"))
                .and_then(Value::as_str)
                .unwrap_or("");
            text(m)
        }
        "sleep" => {
            tokio::time::sleep(Duration::from_millis(arg_u64(&p, "ms"))).await;
            text("slept")
        }
        "hang" => std::future::pending().await,
        "crash" => {
            eprintln!("crashing in the middle of a call");
            std::process::exit(3);
        }
        "garbage" => {
            let _ = Out.send(b"}}} this is not JSON {{{\n".to_vec());
            text("after garbage")
        }
        "huge" => {
            let bytes = arg_u64(&p, "bytes") as usize;
            let filler = "x".repeat(bytes.saturating_sub(100));
            let result = CallToolResult::new(vec![ContentBlock::text(filler)]);
            let line = Message::Response(mcp_protocol::Response {
                id: id.clone(),
                result: RawJson::encode(&result).unwrap(),
            });
            let mut buf = Vec::new();
            encode_line(&line, &mut buf);
            let _ = Out.send(buf);
            // Answered on the wire already; the session's answer below goes nowhere because the
            // client has moved on. Hang so that no second answer is sent.
            std::future::pending().await
        }
        "huge_noise" => {
            let mut line = vec![b'n'; arg_u64(&p, "bytes") as usize];
            line.push(b'\n');
            let _ = Out.send(line);
            text("after noise")
        }
        "flood_stderr" => {
            let chunk = vec![b'z'; 64 << 10];
            let mut left = arg_u64(&p, "bytes") as usize;
            while left > 0 {
                let n = left.min(chunk.len());
                let _ = std::io::stderr().write_all(&chunk[..n]);
                left -= n;
            }
            eprintln!("\nflood done");
            text("flooded")
        }
        "progress" => {
            let steps = arg_u64(&p, "steps");
            let delay = arg_u64(&p, "delay_ms");
            if let Some(token) = p
                .meta
                .as_ref()
                .and_then(|m| m.get("progressToken"))
                .cloned()
            {
                for i in 1..=steps {
                    tokio::time::sleep(Duration::from_millis(delay)).await;
                    let params = json!({"progressToken": token, "progress": i, "total": steps});
                    let _ = tx.send(Action::Notify(
                        "notifications/progress".into(),
                        Some(RawJson::encode(&params).unwrap()),
                    ));
                }
            }
            text(format!("{steps} steps"))
        }
        "sample" => {
            ask_client(&p, tx, "sampling/createMessage", json!({"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":10})).await
        }
        "elicit" => {
            ask_client(&p, tx, "elicitation/create", json!({"message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}})).await
        }
        "roots" => ask_client(&p, tx, "roots/list", json!({})).await,
        "touch" if SUBSCRIBE.load(std::sync::atomic::Ordering::Relaxed) => {
            let uri = p
                .arguments
                .as_ref()
                .and_then(|a| a.get("uri"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            if !SUBSCRIBED.lock().unwrap().contains(&uri) {
                return text(format!("not subscribed {uri}"));
            }
            // Sent before the answer, on the same ordered channel.
            let _ = tx.send(Action::Notify(
                "notifications/resources/updated".into(),
                Some(RawJson::encode(&json!({ "uri": uri })).unwrap()),
            ));
            text(format!("updated {uri}"))
        }
        "list_changed" => {
            let _ = tx.send(Action::Notify(
                "notifications/tools/list_changed".into(),
                None,
            ));
            text("notified")
        }
        "grow" => {
            GROWN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let _ = tx.send(Action::Notify(
                "notifications/tools/list_changed".into(),
                None,
            ));
            text("one more tool")
        }
        "spawn_grandchild" => text(spawn_grandchild(false).to_string()),
        "stats" => text(format!(
            "cancelled={}",
            CANCELLED.load(std::sync::atomic::Ordering::Relaxed)
        )),
        "env" => {
            let mut names: Vec<String> = std::env::vars().map(|(k, _)| k).collect();
            names.sort();
            text(names.join(" "))
        }
        "pid" => {
            let pgid = nix::unistd::getpgid(None).map(|p| p.as_raw()).unwrap_or(-1);
            text(format!("{} {pgid}", std::process::id()))
        }
        other
            if FILE_TOOLS
                .get()
                .is_some_and(|t| t.iter().any(|t| t.name == other)) =>
        {
            text(json!({"tool": other, "arguments": p.arguments}).to_string())
        }
        other => Ok(RawJson::encode(&{
            let mut r =
                CallToolResult::new(vec![ContentBlock::text(format!("unknown tool {other}"))]);
            r.is_error = Some(true);
            r
        })
        .unwrap()),
    }
}
