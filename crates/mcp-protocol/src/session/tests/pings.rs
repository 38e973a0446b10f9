//! A ping in every state a session of either role can be in when one arrives: what it is
//! owed there (SPEC §1.5: "the receiver MUST reply promptly with an empty result"; the
//! 2026-07-28 era removed `ping`, so there it is a method not found), as one table through
//! one check.

use std::time::Instant;

use serde_json::{Value, json};

use super::{
    client_config, connected_client, epoch, events, feed, feed_server, sent, server_config,
    stateless_client,
};
use crate::jsonrpc::code;
use crate::schema::{Implementation, ListChangedCapability, meta_key};
use crate::session::{ClientConfig, ClientSession, RequestOptions, ServerConfig, ServerSession};
use crate::version::{Era, ProtocolVersion};

/// A session of either role, set up in the state a row names.
enum Side {
    Client(Box<ClientSession>),
    Server(Box<ServerSession>),
}

impl Side {
    /// The state, read through the public API. A client's `idle` and `initializing` are told
    /// apart by whether `initialize` is in flight, so no row sends a request of its own before
    /// the handshake.
    fn state(&self) -> &'static str {
        match self {
            Self::Client(c) if c.is_closed() => "closed",
            Self::Client(c) if c.is_ready() => match c.era() {
                Era::Handshake => "operating (handshake era)",
                Era::Stateless => "operating (stateless era)",
            },
            Self::Client(c) if c.stamped_version().is_some() => "discovering",
            Self::Client(c) if c.in_flight() > 0 => "initializing",
            Self::Client(_) => "idle",
            Self::Server(s) if s.is_closed() => "closed",
            Self::Server(s) if s.is_operating() => "operating",
            Self::Server(s) => match s.era() {
                None => "awaiting initialize",
                Some(Era::Handshake) => "awaiting initialized",
                Some(Era::Stateless) => "stateless",
            },
        }
    }

    /// Hands `frame` to the session; what it sent back, and how many events it raised.
    fn exchange(&mut self, now: Instant, frame: Value) -> (Vec<Value>, usize) {
        match self {
            Self::Client(c) => {
                feed(c, now, frame);
                (sent(c), events(c).len())
            }
            Self::Server(s) => {
                let out = feed_server(s, now, frame);
                (out, std::iter::from_fn(|| s.poll_event()).count())
            }
        }
    }

    /// Drops what the set-up left to send and to report.
    fn drain(&mut self) {
        match self {
            Self::Client(c) => {
                let _ = (sent(c), events(c));
            }
            Self::Server(s) => {
                let _ = std::iter::from_fn(|| s.poll_transmit()).count();
                let _ = std::iter::from_fn(|| s.poll_event()).count();
            }
        }
    }
}

/// What a session owes a ping.
#[derive(Debug, Clone, Copy)]
enum Owed {
    /// `{"result":{}}` under the ping's id.
    Pong,
    /// A JSON-RPC error with this code under the ping's id.
    Refusal(i64),
    /// Nothing at all: the session has ended.
    Silence,
}

/// Sends pings (a numeric and a string id, with `params` if given) to a session in `state` and
/// checks that each gets exactly what it is owed, raises no event and leaves the state as it
/// was.
fn check(row: &str, mut side: Side, state: &str, params: Option<Value>, owed: Owed) {
    let now = epoch();
    assert_eq!(side.state(), state, "{row}: the set-up missed its state");
    side.drain();
    for id in [json!(41), json!("ping-41")] {
        let mut ping = json!({"jsonrpc":"2.0","id":id,"method":"ping"});
        if let Some(params) = &params {
            ping["params"] = params.clone();
        }
        let (out, raised) = side.exchange(now, ping);
        match owed {
            Owed::Pong => assert_eq!(out, [json!({"jsonrpc":"2.0","id":id,"result":{}})], "{row}"),
            Owed::Refusal(code) => {
                assert_eq!(out.len(), 1, "{row}: {out:?}");
                assert_eq!(out[0]["jsonrpc"], "2.0", "{row}: {out:?}");
                assert_eq!(out[0]["id"], id, "{row}: {out:?}");
                assert_eq!(out[0]["error"]["code"], code, "{row}: {out:?}");
                assert!(out[0].get("result").is_none(), "{row}: {out:?}");
            }
            Owed::Silence => assert!(out.is_empty(), "{row}: {out:?}"),
        }
        assert_eq!(raised, 0, "{row}: a ping is no business of the caller");
        assert_eq!(side.state(), state, "{row}: the ping moved the session");
    }
}

/// A client that speaks both eras, so that it probes with `server/discover` first.
fn dual_era_client() -> ClientSession {
    let mut config: ClientConfig = client_config();
    config.supported_versions = ProtocolVersion::KNOWN.to_vec();
    let mut client = ClientSession::new(config);
    client.initialize(epoch()).unwrap();
    client
}

/// The id of the one request `client` has sent and not yet had drained.
fn only_request(client: &mut ClientSession) -> Value {
    let out = sent(client);
    assert_eq!(out.len(), 1, "{out:?}");
    out[0]["id"].clone()
}

fn dual_era_server_config() -> ServerConfig {
    let mut config = ServerConfig::dual_era(Implementation::new("s".into(), "1".into()));
    config.capabilities.tools = Some(ListChangedCapability::new());
    config
}

fn initialize_frame(id: i64) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}})
}

/// The per-request envelope of the 2026-07-28 era, which a stateless server reads before it
/// looks at the method.
fn stateless_meta() -> Value {
    json!({"_meta": {
        meta_key::PROTOCOL_VERSION: "2026-07-28",
        meta_key::CLIENT_CAPABILITIES: {},
    }})
}

#[test]
fn pings_are_answered_in_every_state_that_has_them() {
    let now = epoch();
    let clients: Vec<(&str, ClientSession, &str, Owed)> = vec![
        (
            "a client that has sent nothing yet",
            ClientSession::new(client_config()),
            "idle",
            Owed::Pong,
        ),
        (
            "a client waiting for the initialize result",
            {
                let mut c = ClientSession::new(client_config());
                c.initialize(now).unwrap();
                c
            },
            "initializing",
            Owed::Pong,
        ),
        (
            "a client whose server/discover probe is out",
            dual_era_client(),
            "discovering",
            Owed::Pong,
        ),
        (
            "a client that fell back to initialize when the probe was refused",
            {
                let mut c = dual_era_client();
                let probe = only_request(&mut c);
                feed(
                    &mut c,
                    now,
                    json!({"jsonrpc":"2.0","id":probe,"error":{"code":-32601,"message":"Method not found"}}),
                );
                c
            },
            "initializing",
            Owed::Pong,
        ),
        (
            "a client operating in the handshake era",
            connected_client(client_config()),
            "operating (handshake era)",
            Owed::Pong,
        ),
        (
            "a client operating in the handshake era with a request of its own in flight",
            {
                let mut c = connected_client(client_config());
                c.send_request(now, "tools/list", None, RequestOptions::DEFAULT)
                    .unwrap();
                c
            },
            "operating (handshake era)",
            Owed::Pong,
        ),
        (
            "a client operating in the 2026-07-28 era, which has no ping",
            stateless_client(client_config()),
            "operating (stateless era)",
            Owed::Refusal(code::METHOD_NOT_FOUND),
        ),
        (
            "a client that was closed",
            {
                let mut c = connected_client(client_config());
                c.close("test");
                c
            },
            "closed",
            Owed::Silence,
        ),
    ];
    for (row, client, state, owed) in clients {
        check(row, Side::Client(Box::new(client)), state, None, owed);
    }

    let servers: Vec<(&str, ServerSession, &str, Option<Value>, Owed)> = vec![
        (
            "a server waiting for initialize",
            ServerSession::new(server_config()),
            "awaiting initialize",
            None,
            Owed::Pong,
        ),
        (
            "a server of both eras waiting for its first request (a plain ping keeps it there)",
            ServerSession::new(dual_era_server_config()),
            "awaiting initialize",
            None,
            Owed::Pong,
        ),
        (
            "a server that answered initialize and waits for initialized",
            {
                let mut s = ServerSession::new(server_config());
                let _ = feed_server(&mut s, now, initialize_frame(1));
                s
            },
            "awaiting initialized",
            None,
            Owed::Pong,
        ),
        (
            "a server operating in the handshake era",
            {
                let mut s = ServerSession::new(server_config());
                let _ = feed_server(&mut s, now, initialize_frame(1));
                let _ = feed_server(
                    &mut s,
                    now,
                    json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
                );
                s
            },
            "operating",
            None,
            Owed::Pong,
        ),
        (
            "a server in the 2026-07-28 era, which has no ping (the envelope is valid)",
            ServerSession::stateless(dual_era_server_config()),
            "stateless",
            Some(stateless_meta()),
            Owed::Refusal(code::METHOD_NOT_FOUND),
        ),
        (
            "a server that was closed",
            {
                let mut s = ServerSession::new(server_config());
                let _ = feed_server(&mut s, now, initialize_frame(1));
                s.close("test");
                s
            },
            "closed",
            None,
            Owed::Silence,
        ),
    ];
    for (row, server, state, params, owed) in servers {
        check(row, Side::Server(Box::new(server)), state, params, owed);
    }
}
