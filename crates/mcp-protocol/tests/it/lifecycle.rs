//! Lifecycle transcripts: each `fixtures/lifecycle/{ok,err}/*.jsonl` file scripts one session,
//! client or server, on a simulated clock. The snapshot is what the session sent and reported
//! after each step, so a change in behaviour shows up as a reviewed diff.
//!
//! The first line configures the session: `{"session":"client"|"server", "capabilities":{..},
//! "protocolVersion":"..", "timeout_ms":N}`. Every other line is one step:
//! `{"recv": frame}` delivers a frame from the peer, `{"recv_raw": "text"}` delivers raw bytes,
//! `{"advance_ms": N}` moves the clock (and fires timers), and `{"do": ..}` is a command:
//! `initialize`, `request` (`method`, `params`, `timeout_ms`, `idle_ms`, `progress`,
//! `pass_input_required`), `cancel`
//! (`id`, `reason`), `respond` (`id`, `result`), `respond_error` (`id`, `code`, `message`),
//! `notify` (`method`, `params`), `reject` (`id`, `detail`: a refusal without JSON-RPC),
//! `close`. Lines starting with `#` are comments. A client speaks the handshake era unless
//! the first line lists `supportedVersions`; `cachedEra` and `probe_ms` set the probe.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use mcp_protocol::schema::{ClientCapabilities, Implementation, ServerCapabilities};
use mcp_protocol::{
    ClientConfig, ClientSession, Era, ErrorObject, ProtocolVersion, RawJson, RequestId,
    RequestOptions, ServerConfig, ServerSession, decode,
};
use serde_json::{Value, json};

#[allow(clippy::large_enum_variant)] // one per transcript
enum Session {
    Client(ClientSession),
    Server(ServerSession),
}

fn raw(v: Option<&Value>) -> Option<RawJson> {
    v.map(|v| RawJson::encode(v).unwrap())
}

fn id(step: &Value) -> RequestId {
    serde_json::from_value(step["id"].clone()).expect("a step's `id` is a string or an integer")
}

impl Session {
    fn new(config: &Value) -> Self {
        let timeout = config["timeout_ms"].as_u64().map(Duration::from_millis);
        match config["session"].as_str() {
            Some("client") => {
                let mut c =
                    ClientConfig::new(Implementation::new("fixture-host".into(), "1.0.0".into()));
                if let Some(caps) = config.get("capabilities") {
                    c.capabilities =
                        serde_json::from_value::<ClientCapabilities>(caps.clone()).unwrap();
                }
                if let Some(v) = config["protocolVersion"].as_str() {
                    c.protocol_version = ProtocolVersion::parse(v);
                }
                // The transcripts written for the handshake era speak only it; a stateless-era
                // transcript lists what it speaks.
                c.supported_versions = match config.get("supportedVersions") {
                    Some(list) => serde_json::from_value(list.clone()).unwrap(),
                    None => ProtocolVersion::HANDSHAKE.to_vec(),
                };
                if config["cachedEra"].as_str() == Some("handshake") {
                    c.cached_era = Some(Era::Handshake);
                }
                if let Some(t) = config["probe_ms"].as_u64() {
                    c.probe_timeout = Duration::from_millis(t);
                }
                if let Some(t) = timeout {
                    c.request_timeout = t;
                }
                Self::Client(ClientSession::new(c))
            }
            Some("server") => {
                let mut c =
                    ServerConfig::new(Implementation::new("fixture-server".into(), "1.0.0".into()));
                if let Some(caps) = config.get("capabilities") {
                    c.capabilities =
                        serde_json::from_value::<ServerCapabilities>(caps.clone()).unwrap();
                }
                if let Some(t) = timeout {
                    c.request_timeout = t;
                }
                // Handshake-era transcripts speak only it; a stateless-era one lists its
                // versions, and `"stateless": true` starts the session in that era.
                if let Some(list) = config.get("supportedVersions") {
                    c.supported_versions = serde_json::from_value(list.clone()).unwrap();
                }
                if let Some(ttl) = config["cacheTtlMs"].as_u64() {
                    c.cache_ttl_ms = ttl;
                }
                if config["stateless"].as_bool() == Some(true) {
                    Self::Server(ServerSession::stateless(c))
                } else {
                    Self::Server(ServerSession::new(c))
                }
            }
            other => panic!("first line must name the session, not {other:?}"),
        }
    }

    fn recv(&mut self, now: Instant, bytes: &[u8]) {
        match (self, decode(bytes)) {
            (Self::Client(s), Ok(d)) => s.handle_decoded(now, d),
            (Self::Client(s), Err(e)) => s.handle_invalid(now, e),
            (Self::Server(s), Ok(d)) => s.handle_decoded(now, d),
            (Self::Server(s), Err(e)) => s.handle_invalid(e),
        }
    }

    fn timeout(&mut self, now: Instant) {
        match self {
            Self::Client(s) => s.handle_timeout(now),
            Self::Server(s) => s.handle_timeout(now),
        }
    }

    fn command(&mut self, now: Instant, step: &Value) -> String {
        let options = || {
            let mut o = RequestOptions::DEFAULT;
            if let Some(t) = step["timeout_ms"].as_u64() {
                o = o.timeout(Duration::from_millis(t));
            }
            if let Some(t) = step["idle_ms"].as_u64() {
                o = o.idle_timeout(Duration::from_millis(t));
            }
            if step["progress"].as_bool() == Some(true) {
                o = o.with_progress();
            }
            if step["pass_input_required"].as_bool() == Some(true) {
                o = o.passing_input_required();
            }
            o
        };
        let method = step["method"].as_str().unwrap_or_default();
        let error = || {
            ErrorObject::new(
                step["code"].as_i64().unwrap_or(-32603),
                step["message"].as_str().unwrap_or("").to_owned(),
            )
        };
        let result = step.get("result").map(|r| RawJson::encode(r).unwrap());
        let out = match (self, step["do"].as_str().unwrap()) {
            (Self::Client(s), "initialize") => format!("{:?}", s.initialize(now)),
            (Self::Client(s), "request") => format!(
                "{:?}",
                s.send_request(now, method, raw(step.get("params")), options())
            ),
            (Self::Client(s), "cancel") => {
                format!("{:?}", s.cancel(&id(step), step["reason"].as_str()))
            }
            (Self::Client(s), "respond") => {
                format!("{:?}", s.respond(now, &id(step), result.unwrap()))
            }
            (Self::Client(s), "reject") => format!(
                "{:?}",
                s.reject(now, &id(step), step["detail"].as_str().unwrap_or(""))
            ),
            (Self::Client(s), "respond_error") => {
                format!("{:?}", s.respond_error(&id(step), error()))
            }
            (Self::Client(s), "close") => {
                s.close("closed by the transcript");
                "()".to_owned()
            }
            (Self::Server(s), "request") => format!(
                "{:?}",
                s.send_request(now, method, raw(step.get("params")), options())
            ),
            (Self::Server(s), "respond") => format!("{:?}", s.respond(&id(step), result.unwrap())),
            (Self::Server(s), "respond_error") => {
                format!("{:?}", s.respond_error(&id(step), error()))
            }
            (Self::Server(s), "notify") => match step.get("related") {
                Some(_) => format!(
                    "{:?}",
                    s.notify_for(
                        Some(&id(&json!({"id": step["related"]}))),
                        method,
                        raw(step.get("params"))
                    )
                ),
                None => format!("{:?}", s.notify(method, raw(step.get("params")))),
            },
            (Self::Server(s), "close") => {
                s.close("closed by the transcript");
                "()".to_owned()
            }
            (_, other) => panic!("unknown command {other:?} for this session"),
        };
        format!("  -> {out}\n")
    }

    /// Everything the session has to say after a step: frames to send, its next deadline
    /// (relative to the start), and events.
    fn drain(&mut self, start: Instant) -> String {
        let mut out = String::new();
        let (sent, deadline, events): (Vec<_>, _, Vec<String>) = match self {
            Self::Client(s) => (
                std::iter::from_fn(|| s.poll_transmit()).collect(),
                s.poll_timeout(),
                std::iter::from_fn(|| s.poll_event())
                    .map(|e| format!("{e:?}"))
                    .collect(),
            ),
            Self::Server(s) => (
                std::iter::from_fn(|| s.poll_transmit()).collect(),
                s.poll_timeout(),
                std::iter::from_fn(|| s.poll_event())
                    .map(|e| format!("{e:?}"))
                    .collect(),
            ),
        };
        for m in sent {
            // Round-trip every frame we send through the decoder: we never send what we
            // would refuse.
            let bytes = m.encode();
            decode(&bytes).expect("the session sent an undecodable frame");
            writeln!(out, "  send {}", String::from_utf8(bytes).unwrap()).unwrap();
        }
        for e in events {
            writeln!(out, "  event {e}").unwrap();
        }
        if let Some(d) = deadline {
            writeln!(out, "  timer +{} ms", d.duration_since(start).as_millis()).unwrap();
        }
        out
    }
}

/// Runs one transcript and returns its log.
fn run(text: &str) -> String {
    let mut lines = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'));
    let config: Value =
        serde_json::from_str(lines.next().expect("a transcript has a first line")).unwrap();
    let mut session = Session::new(&config);
    // Instant has no constructor: the simulated clock starts from a real one and is never read again.
    #[allow(clippy::disallowed_methods)]
    let start = Instant::now();
    let mut now = start;
    let mut log = String::new();
    for line in lines {
        let step: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("bad step {line}: {e}"));
        writeln!(log, "{line}").unwrap();
        if let Some(frame) = step.get("recv") {
            session.recv(now, &serde_json::to_vec(frame).unwrap());
        } else if let Some(text) = step["recv_raw"].as_str() {
            session.recv(now, text.as_bytes());
        } else if let Some(ms) = step["advance_ms"].as_u64() {
            now += Duration::from_millis(ms);
            session.timeout(now);
        } else if step.get("do").is_some() {
            log.push_str(&session.command(now, &step));
        } else {
            panic!("unknown step {line}");
        }
        log.push_str(&session.drain(start));
    }
    log
}

#[track_caller]
fn check(path: &Path) {
    let text = std::fs::read_to_string(path).unwrap();
    insta::assert_snapshot!(run(&text));
}

#[test]
fn ok() {
    insta::glob!(
        "../../../../fixtures",
        "lifecycle/ok/*.jsonl",
        |path| check(path)
    );
}

#[test]
fn err() {
    insta::glob!("../../../../fixtures", "lifecycle/err/*.jsonl", |path| {
        check(path)
    });
}
