//! Liveness pings on a simulated clock, as one table through one check: a client session
//! with a scripted server, driven the way a transport drives it (the timer fires at each
//! `poll_timeout`, never in between), and the transcript of what it sent and reported, each
//! line stamped with the simulated milliseconds since the handshake.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{client_config, epoch, events, feed, sent};
use crate::schema::CallToolParams;
use crate::schema::method;
use crate::session::{ClientConfig, ClientEvent, ClientSession, RequestOptions};
use crate::version::{Era, ProtocolVersion};

/// One thing that happens to the session.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// The clock moves on this many milliseconds; the timer fires at every deadline on the way.
    Wait(u64),
    /// The server sends a notification.
    Notify,
    /// The server answers the ping in flight.
    AnswerPing,
    /// The server answers the ping in flight with a JSON-RPC error (it has no `ping`).
    RefusePing,
    /// The transport could not carry the ping in flight (a refused connection, say).
    PingUndeliverable,
    /// The host calls a tool, which stays unanswered.
    Call,
}

/// Which session a row runs.
#[derive(Debug, Clone, Copy)]
enum Session {
    /// The handshake era with pings every `interval` ms and a `timeout` ms deadline (`None`:
    /// pings off).
    Handshake { interval: Option<u64>, timeout: u64 },
    /// The 2026-07-28 era, with the same settings as the first rows.
    Stateless,
}

fn configured(interval: Option<u64>, timeout: u64) -> ClientConfig {
    let mut config = client_config();
    config.ping_interval = interval.map(Duration::from_millis);
    config.ping_timeout = Duration::from_millis(timeout);
    config
}

/// Runs `steps` and returns the transcript: `"<ms> sent ping"`, `"<ms> sent tools/call"`,
/// `"<ms> failed tools/call: <error>"`, `"<ms> closed: <error>"`, and at the end
/// `"next timer <ms>"` or `"no timer"`.
fn check(session: Session, steps: &[Step]) -> Vec<String> {
    let start = epoch();
    let mut client = match session {
        Session::Handshake { interval, timeout } => {
            connected(configured(interval, timeout), start, false)
        }
        Session::Stateless => connected(configured(Some(1000), 500), start, true),
    };
    let mut now = start;
    let ms = |t: Instant| t.duration_since(start).as_millis();
    let mut out = Vec::new();
    let mut ping: Option<Value> = None;
    let record = |client: &mut ClientSession,
                  now: Instant,
                  out: &mut Vec<String>,
                  ping: &mut Option<Value>| {
        for frame in sent(client) {
            if let Some(method) = frame["method"].as_str() {
                if method == "ping" {
                    *ping = Some(frame["id"].clone());
                }
                out.push(format!("{} sent {method}", ms(now)));
            }
        }
        for event in events(client) {
            match event {
                ClientEvent::Response {
                    method,
                    outcome: Err(e),
                    ..
                } => out.push(format!("{} failed {method}: {e}", ms(now))),
                ClientEvent::Response { method, .. } => {
                    out.push(format!("{} answered {method}", ms(now)));
                }
                ClientEvent::Closed(e) => out.push(format!("{} closed: {e}", ms(now))),
                _ => {}
            }
        }
    };
    for step in steps {
        match *step {
            Step::Wait(by) => {
                let until = now + Duration::from_millis(by);
                while let Some(at) = client.poll_timeout().filter(|at| *at <= until) {
                    now = at.max(now);
                    client.handle_timeout(now);
                    record(&mut client, now, &mut out, &mut ping);
                }
                now = until;
            }
            Step::Notify => feed(
                &mut client,
                now,
                json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed"}),
            ),
            Step::AnswerPing => {
                let id = ping.take().expect("a ping is in flight");
                feed(
                    &mut client,
                    now,
                    json!({"jsonrpc":"2.0","id":id,"result":{}}),
                );
            }
            Step::RefusePing => {
                let id = ping.take().expect("a ping is in flight");
                feed(
                    &mut client,
                    now,
                    json!({"jsonrpc":"2.0","id":id,"error":{"code":-32601,"message":"no ping"}}),
                );
            }
            Step::PingUndeliverable => {
                let id = ping.take().expect("a ping is in flight");
                let id = serde_json::from_value(id).unwrap();
                assert!(client.fail(&id, "connection refused"));
            }
            Step::Call => {
                let params = CallToolParams::new("slow".to_owned());
                client
                    .request::<method::CallTool>(now, &params, RequestOptions::DEFAULT)
                    .unwrap();
            }
        }
        record(&mut client, now, &mut out, &mut ping);
    }
    out.push(match client.poll_timeout() {
        Some(at) => format!("next timer {}", ms(at)),
        None => "no timer".to_owned(),
    });
    out
}

/// A session whose handshake (or `server/discover`) a scripted server answered at `now`.
fn connected(mut config: ClientConfig, now: Instant, stateless: bool) -> ClientSession {
    let answer = if stateless {
        config.supported_versions = ProtocolVersion::KNOWN.to_vec();
        json!({"supportedVersions":["2026-07-28"],"capabilities":{}})
    } else {
        json!({"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}})
    };
    let mut client = ClientSession::new(config);
    client.initialize(now).unwrap();
    let first = sent(&mut client);
    feed(
        &mut client,
        now,
        json!({"jsonrpc":"2.0","id":first[0]["id"],"result":answer}),
    );
    assert!(client.is_ready());
    assert_eq!(client.era() == Era::Stateless, stateless);
    let _ = (sent(&mut client), events(&mut client));
    client
}

const PINGS: Session = Session::Handshake {
    interval: Some(1000),
    timeout: 500,
};

#[test]
fn liveness_pings_follow_the_table() {
    use Step::*;
    let gone = "the server stopped answering: nothing heard for 1500 ms, and a ping went unanswered for 500 ms";
    #[rustfmt::skip]
    let rows: Vec<(&str, Session, Vec<Step>, Vec<String>)> = vec![
        (
            "a silent server is pinged once the interval has passed, not before",
            PINGS,
            vec![Wait(999)],
            vec!["next timer 1000".to_owned()],
        ),
        (
            "an answered ping keeps the session, and the next one is due an interval later",
            PINGS,
            vec![Wait(1000), Wait(100), AnswerPing, Wait(1000)],
            vec!["1000 sent ping".to_owned(), "2100 sent ping".to_owned(), "next timer 2600".to_owned()],
        ),
        (
            "a ping refused with a JSON-RPC error is an answer too",
            PINGS,
            vec![Wait(1000), RefusePing, Wait(999)],
            vec!["1000 sent ping".to_owned(), "next timer 2000".to_owned()],
        ),
        (
            "anything heard restarts the interval",
            PINGS,
            vec![Wait(600), Notify, Wait(999)],
            vec!["next timer 1600".to_owned()],
        ),
        (
            "an unanswered ping ends the session and fails the call in flight, naming the silence",
            PINGS,
            vec![Call, Wait(1499), Wait(1)],
            vec![
                "0 sent tools/call".to_owned(),
                "1000 sent ping".to_owned(),
                "1500 failed tools/call: tools/call got no answer: the server stopped answering (nothing heard for 1500 ms, a ping unanswered for 500 ms)".to_owned(),
                format!("1500 closed: session closed: {gone}"),
                "no timer".to_owned(),
            ],
        ),
        (
            "something heard while the ping waits keeps the session; the next ping follows it",
            PINGS,
            vec![Wait(1200), Notify, Wait(300), Wait(700)],
            vec!["1000 sent ping".to_owned(), "2200 sent ping".to_owned(), "next timer 2700".to_owned()],
        ),
        (
            "a ping the transport could not carry is judged at its deadline",
            PINGS,
            vec![Wait(1000), PingUndeliverable, Wait(499), Wait(1)],
            vec![
                "1000 sent ping".to_owned(),
                format!("1500 closed: session closed: {gone}"),
                "no timer".to_owned(),
            ],
        ),
        (
            "no pings when the interval is unset",
            Session::Handshake { interval: None, timeout: 500 },
            vec![Wait(3_600_000)],
            vec!["no timer".to_owned()],
        ),
        (
            "a zero interval is off",
            Session::Handshake { interval: Some(0), timeout: 500 },
            vec![Wait(3_600_000)],
            vec!["no timer".to_owned()],
        ),
        (
            "the 2026-07-28 era has no ping, so none is sent",
            Session::Stateless,
            vec![Wait(3_600_000)],
            vec!["no timer".to_owned()],
        ),
    ];
    for (name, session, steps, want) in rows {
        assert_eq!(check(session, &steps), want, "{name}");
    }
}
