//! What the gateway adds to `GET /metrics` and answers on `GET /readyz` (the HTTP server half
//! serves both, and writes its own HTTP series first; the server's `mcp_http::Observer`
//! hands this module the file's rule and the host's states, so that it imports neither):
//!
//! - `mcp_gateway_requests_total{method,outcome}`: client requests by MCP method (a closed
//!   set: the methods the protocol crate routes) and outcome (`ok`, `error`, `cancelled`);
//! - `mcp_gateway_tool_calls_total{upstream,tool,outcome}` and
//!   `mcp_gateway_tool_call_duration_seconds{upstream,tool}`: upstream tool calls, with
//!   fixed buckets ([`DURATION_BUCKETS`](mcp_http::metrics::DURATION_BUCKETS));
//! - `mcp_gateway_upstreams{upstream,state}`: 1 for each upstream's state and 0 for the
//!   others, read from the host on every scrape;
//! - `mcp_gateway_ready`: 1 when the file's `ready` rule holds.
//!
//! Tool names come from upstreams and, in some modes, from what a client asks for, so the
//! tool series are bounded ([`MAX_TOOL_SERIES`]; past it they count under `_other`) and
//! escaped by the encoder. No series carries a session id, a request id or an argument.

use std::sync::Mutex;
use std::time::Duration;

use mcp_host::{CallError, Relayed, ServerState};
use mcp_http::Readiness;
use mcp_http::metrics::{Exposition, Family, Histogram, Kind, write_family};
use mcp_protocol::ErrorObject;
use serde_json::json;

use crate::file::{Ready, ReadyRule};
use crate::sync::lock;

/// How many (upstream, tool) series each tool family holds before new ones count under
/// `_other`.
pub(crate) const MAX_TOOL_SERIES: usize = 2000;

/// Every state an upstream can be in, for the state gauge's zeros.
const STATES: [ServerState; 5] = [
    ServerState::Disabled,
    ServerState::Connecting,
    ServerState::AuthRequired,
    ServerState::Ready,
    ServerState::Error,
];

/// The gateway's counters, shared by every mode.
#[derive(Debug)]
pub(crate) struct Metrics {
    requests: Mutex<Family<u64>>,
    calls: Mutex<Family<u64>>,
    durations: Mutex<Family<Histogram>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self {
            // Methods and outcomes are closed sets; the limit is never reached.
            requests: Mutex::new(Family::new(1000)),
            calls: Mutex::new(Family::new(MAX_TOOL_SERIES)),
            durations: Mutex::new(Family::new(MAX_TOOL_SERIES)),
        }
    }
}

/// How an upstream tool call ended, as `outcome` says it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum CallOutcome {
    Ok,
    ToolError,
    InputRequired,
    Failed,
}

impl CallOutcome {
    /// The outcome of a relayed call.
    pub(crate) fn of(outcome: &Result<Relayed, CallError>) -> Self {
        match outcome {
            Ok(Relayed::Complete(out)) if out.is_tool_error() => Self::ToolError,
            Ok(Relayed::Complete(_)) => Self::Ok,
            Ok(_) => Self::InputRequired,
            Err(_) => Self::Failed,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::ToolError => "tool_error",
            Self::InputRequired => "input_required",
            Self::Failed => "failed",
        }
    }
}

impl Metrics {
    /// Starts counting one client request of `method`; it counts as `cancelled` unless
    /// [`Request::finish`] says how it ended.
    pub(crate) fn request<'a>(&'a self, method: &str) -> Request<'a> {
        Request {
            metrics: self,
            method: method.to_owned(),
            outcome: "cancelled",
        }
    }

    /// Counts one upstream tool call.
    pub(crate) fn tool_call(
        &self,
        upstream: &str,
        tool: &str,
        took: Duration,
        outcome: CallOutcome,
    ) {
        *lock(&self.calls).series(&[upstream, tool, outcome.as_str()]) += 1;
        lock(&self.durations)
            .series(&[upstream, tool])
            .observe(took.as_secs_f64());
    }
}

/// One client request being counted ([`Metrics::request`]).
#[derive(Debug)]
pub(crate) struct Request<'a> {
    metrics: &'a Metrics,
    method: String,
    outcome: &'static str,
}

impl Request<'_> {
    /// Says how the request ended.
    pub(crate) fn finish<T>(mut self, answer: &Result<T, ErrorObject>) {
        self.outcome = if answer.is_ok() { "ok" } else { "error" };
    }
}

impl Drop for Request<'_> {
    fn drop(&mut self) {
        *lock(&self.metrics.requests).series(&[&self.method, self.outcome]) += 1;
    }
}

/// The upstreams `rule` waits for that are not ready, with their state, from each
/// upstream's id and state; `None` when the rule holds. `all` and `any` count the upstreams
/// that are not disabled (`any` holds when there is none); a listed id the host does not know
/// (yet) is not ready, as `connecting`.
pub(crate) fn not_ready(
    rule: &Ready,
    states: &[(String, ServerState)],
) -> Option<Vec<(String, ServerState)>> {
    let enabled = || states.iter().filter(|(_, s)| *s != ServerState::Disabled);
    let pending: Vec<(String, ServerState)> = match rule {
        Ready::Rule(ReadyRule::Any) if enabled().any(|(_, s)| *s == ServerState::Ready) => {
            Vec::new()
        }
        Ready::Rule(ReadyRule::Any) => enabled().cloned().collect(),
        Ready::Servers(ids) => ids
            .iter()
            .filter_map(|id| match states.iter().find(|(i, _)| i == id) {
                Some((_, ServerState::Ready)) => None,
                Some((_, state)) => Some((id.clone(), *state)),
                None => Some((id.clone(), ServerState::Connecting)),
            })
            .collect(),
        // `all`, and any rule a later version adds.
        _ => enabled()
            .filter(|(_, s)| *s != ServerState::Ready)
            .cloned()
            .collect(),
    };
    (!pending.is_empty()).then_some(pending)
}

/// What the host says of each upstream now: its id and state, by id.
pub(crate) type States = Vec<(String, ServerState)>;

impl Metrics {
    /// Writes the gateway's families: its counters, then each upstream's state in `states`
    /// and whether `rule` holds over them.
    pub(crate) fn write(&self, out: &mut Exposition, rule: &Ready, states: &States) {
        let name = "mcp_gateway_requests_total";
        out.family(
            name,
            Kind::Counter,
            "Client requests answered, by MCP method and outcome (ok, error, cancelled).",
        );
        write_family(
            out,
            name,
            &["method", "outcome"],
            &lock(&self.requests),
            |n| *n as f64,
        );
        let name = "mcp_gateway_tool_calls_total";
        out.family(
            name,
            Kind::Counter,
            "Upstream tool calls, by upstream, tool and outcome (ok, tool_error, input_required, failed).",
        );
        write_family(
            out,
            name,
            &["upstream", "tool", "outcome"],
            &lock(&self.calls),
            |n| *n as f64,
        );
        let name = "mcp_gateway_tool_call_duration_seconds";
        out.family(
            name,
            Kind::Histogram,
            "How long upstream tool calls took, by upstream and tool.",
        );
        for (labels, histogram) in lock(&self.durations).iter() {
            let upstream = labels.first().map_or("", String::as_str);
            let tool = labels.get(1).map_or("", String::as_str);
            out.histogram(name, &[("upstream", upstream), ("tool", tool)], histogram);
        }
        let name = "mcp_gateway_upstreams";
        out.family(
            name,
            Kind::Gauge,
            "Upstream servers by state: 1 for the state each is in, 0 for the others.",
        );
        let mut sorted: Vec<&(String, ServerState)> = states.iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        for (id, current) in sorted {
            for state in STATES {
                let value = if *current == state { 1.0 } else { 0.0 };
                out.sample(name, &[("upstream", id), ("state", state.as_str())], value);
            }
        }
        let name = "mcp_gateway_ready";
        out.family(
            name,
            Kind::Gauge,
            "1 when the upstreams are ready as the gateway file's `ready` rule asks.",
        )
        .sample(
            name,
            &[],
            if not_ready(rule, states).is_none() {
                1.0
            } else {
                0.0
            },
        );
    }
}

/// The answer of `/readyz` for `rule` over `states`: the body names the rule and the
/// upstreams it waits for, with their state.
pub(crate) fn readiness(rule: &Ready, states: &States) -> Readiness {
    let pending = not_ready(rule, states);
    let not_ready: Vec<serde_json::Value> = pending
        .iter()
        .flatten()
        .map(|(id, state)| json!({"upstream": id, "state": state.as_str()}))
        .collect();
    let body = json!({
        "ready": pending.is_none(),
        "rule": serde_json::to_value(rule).unwrap_or_default(),
        "notReady": not_ready,
    });
    Readiness::new(pending.is_none(), body.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn states(list: &[(&str, ServerState)]) -> Vec<(String, ServerState)> {
        list.iter().map(|(id, s)| ((*id).to_owned(), *s)).collect()
    }

    #[test]
    fn each_rule_waits_for_its_upstreams() {
        use ServerState::{Connecting, Disabled, Error, Ready as Up};
        let all = Ready::Rule(ReadyRule::All);
        let any = Ready::Rule(ReadyRule::Any);
        let mixed = states(&[("a", Up), ("b", Connecting), ("c", Disabled)]);
        assert_eq!(
            not_ready(&all, &mixed),
            Some(vec![("b".to_owned(), Connecting)])
        );
        assert_eq!(not_ready(&any, &mixed), None);
        let down = states(&[("a", Error), ("c", Disabled)]);
        assert_eq!(not_ready(&any, &down), Some(vec![("a".to_owned(), Error)]));
        assert_eq!(not_ready(&any, &states(&[("c", Disabled)])), None);
        assert_eq!(not_ready(&all, &states(&[("c", Disabled)])), None);
        let listed = Ready::Servers(vec!["a".to_owned(), "c".to_owned(), "new".to_owned()]);
        assert_eq!(
            not_ready(&listed, &mixed),
            Some(vec![
                ("c".to_owned(), Disabled),
                ("new".to_owned(), Connecting)
            ])
        );
        let only_a = Ready::Servers(vec!["a".to_owned()]);
        assert_eq!(not_ready(&only_a, &mixed), None);
    }
}
