//! The multi round-trip tools and prompt of the 2026-07-28 `input-required-result-*`
//! scenarios (SEP-2322, spec `basic/patterns/mrtr.mdx`): instead of sending the client a
//! request, the tool answers `resultType: "input_required"` with the `inputRequests` it needs,
//! and the client calls again with `inputResponses` under the same keys (and the
//! `requestState` echoed). Missing answers are asked for again; a `requestState` this server
//! did not issue is refused, so state cannot be forged or altered.

use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use mcp_protocol::schema::ClientCapabilities;
use mcp_protocol::{ErrorObject, JsonObject, code, missing_capability_error};
use serde_json::{Value, json};

use crate::server::text;

/// The `requestState` values this server issued and has not forgotten. A value is opaque to
/// the client; here it is a tag and a counter, and integrity is membership: an altered value
/// was never issued.
#[derive(Debug, Default)]
pub(crate) struct States {
    issued: Mutex<(HashSet<String>, VecDeque<String>)>,
    next: AtomicU64,
}

/// How many states are remembered; the oldest are forgotten first.
const REMEMBERED: usize = 4096;

impl States {
    /// A new state for `tag` (the tool and the round it leads to).
    fn issue(&self, tag: &str) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let state = format!("{tag}:{n}");
        let mut issued = self.issued.lock().unwrap_or_else(|e| e.into_inner());
        let (set, order) = &mut *issued;
        if order.len() >= REMEMBERED
            && let Some(old) = order.pop_front()
        {
            set.remove(&old);
        }
        set.insert(state.clone());
        order.push_back(state.clone());
        state
    }

    /// Whether `state` was issued for `tag`; anything else fails its integrity check.
    fn check(&self, state: &str, tag: &str) -> Result<(), ErrorObject> {
        let issued = self.issued.lock().unwrap_or_else(|e| e.into_inner());
        let ours = issued.0.contains(state)
            && state
                .rsplit_once(':')
                .is_some_and(|(issued_for, _)| issued_for == tag);
        if ours {
            Ok(())
        } else {
            Err(ErrorObject::new(
                code::INVALID_PARAMS,
                "requestState failed its integrity check".to_owned(),
            ))
        }
    }
}

/// What a retry brought: the answers by key and the echoed state.
struct Round<'a> {
    responses: Option<&'a JsonObject>,
    state: Option<&'a str>,
}

impl<'a> Round<'a> {
    /// Reads `inputResponses` and `requestState` from a request's params (kept in `extra`);
    /// either one of the wrong type is a protocol error (-32602).
    fn of(extra: &'a JsonObject) -> Result<Self, ErrorObject> {
        let invalid = |what: &str| ErrorObject::new(code::INVALID_PARAMS, what.to_owned());
        let responses = match extra.get("inputResponses") {
            None => None,
            Some(Value::Object(map)) => Some(map),
            Some(_) => return Err(invalid("inputResponses must be an object")),
        };
        let state = match extra.get("requestState") {
            None => None,
            Some(Value::String(s)) => Some(s.as_str()),
            Some(_) => return Err(invalid("requestState must be a string")),
        };
        Ok(Self { responses, state })
    }

    /// The answer under `key`, if the client sent one; an answer that is not an object
    /// (every input result is one) is a protocol error.
    fn answer(&self, key: &str) -> Result<Option<&'a JsonObject>, ErrorObject> {
        match self.responses.and_then(|r| r.get(key)) {
            None => Ok(None),
            Some(Value::Object(answer)) => Ok(Some(answer)),
            Some(_) => Err(ErrorObject::new(
                code::INVALID_PARAMS,
                format!("inputResponses.{key} must be an object"),
            )),
        }
    }
}

/// An `elicitation/create` input request for one field of JSON type `kind`.
pub(crate) fn elicit(message: &str, field: &str, kind: &str) -> Value {
    json!({
        "method": "elicitation/create",
        "params": {
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": {field: {"type": kind}},
                "required": [field],
            },
        },
    })
}

/// A `sampling/createMessage` input request.
fn sample(text: &str, max_tokens: u32) -> Value {
    json!({
        "method": "sampling/createMessage",
        "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
            "maxTokens": max_tokens,
        },
    })
}

/// A `roots/list` input request.
fn roots() -> Value {
    json!({"method": "roots/list", "params": {}})
}

/// An input-required result.
pub(crate) fn input_required(requests: Value, state: Option<String>) -> Value {
    let mut result = json!({"resultType": "input_required", "inputRequests": requests});
    if let Some(state) = state {
        result["requestState"] = json!(state);
    }
    result
}

/// The client capabilities an input request needs, by method.
fn needs(request: &Value) -> &'static str {
    match request.get("method").and_then(Value::as_str) {
        Some("sampling/createMessage") => "sampling",
        Some("roots/list") => "roots",
        _ => "elicitation",
    }
}

/// Whether the request declared a capability by name.
fn declared(caps: &ClientCapabilities, name: &str) -> bool {
    match name {
        "sampling" => caps.sampling.is_some(),
        "roots" => caps.roots.is_some(),
        _ => caps.elicitation.is_some(),
    }
}

/// Refuses with -32021 unless the request declared what every input request needs.
pub(crate) fn require(caps: &ClientCapabilities, requests: &Value) -> Result<(), ErrorObject> {
    let mut missing = JsonObject::new();
    for request in requests.as_object().into_iter().flat_map(|m| m.values()) {
        let name = needs(request);
        if !declared(caps, name) {
            missing.insert(name.to_owned(), json!({}));
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(missing_capability_error(missing))
    }
}

/// The content of an accepted elicitation answer's field, as text.
fn field(answer: &JsonObject, name: &str) -> String {
    match answer.get("content").and_then(|c| c.get(name)) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

/// The text of a sampling answer.
fn sampled(answer: &JsonObject) -> String {
    answer
        .get("content")
        .and_then(|c| c.get("text"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

/// The input-required tools, by name: `None` for a tool that is not one of them.
pub(crate) fn call(
    name: &str,
    extra: &JsonObject,
    caps: &ClientCapabilities,
    states: &States,
) -> Option<Result<Value, ErrorObject>> {
    let answer = match name {
        "test_input_required_result_elicitation" => one_round(
            extra,
            caps,
            "user_name",
            elicit("What is your name?", "name", "string"),
            |a| format!("Hello, {}!", field(a, "name")),
        ),
        "test_input_required_result_sampling" => one_round(
            extra,
            caps,
            "capital_question",
            sample("What is the capital of France?", 100),
            |a| format!("Sampling said: {}", sampled(a)),
        ),
        "test_input_required_result_list_roots" => {
            one_round(extra, caps, "client_roots", roots(), |a| {
                format!(
                    "Client roots: {}",
                    a.get("roots").cloned().unwrap_or_default()
                )
            })
        }
        "test_input_required_result_request_state"
        | "test_input_required_result_tampered_state" => stateful(name, extra, caps, states),
        "test_input_required_result_multiple_inputs" => multiple(extra, caps, states),
        "test_input_required_result_multi_round" => multi_round(extra, caps, states),
        "test_input_required_result_capabilities" => by_capabilities(extra, caps),
        _ => return None,
    };
    Some(answer)
}

/// One input, no state: ask until the answer under `key` is there, then finish.
fn one_round(
    extra: &JsonObject,
    caps: &ClientCapabilities,
    key: &str,
    request: Value,
    finish: impl FnOnce(&JsonObject) -> String,
) -> Result<Value, ErrorObject> {
    let round = Round::of(extra)?;
    if let Some(answer) = round.answer(key)? {
        return Ok(text(&finish(answer)));
    }
    let requests = json!({ key: request });
    require(caps, &requests)?;
    Ok(input_required(requests, None))
}

/// One confirmation with a `requestState` that must come back as issued.
fn stateful(
    name: &str,
    extra: &JsonObject,
    caps: &ClientCapabilities,
    states: &States,
) -> Result<Value, ErrorObject> {
    let round = Round::of(extra)?;
    if let Some(state) = round.state {
        states.check(state, name)?;
        if round.answer("confirm")?.is_some() {
            return Ok(text("state-ok: the request state came back intact"));
        }
    }
    let requests = json!({"confirm": {
        "method": "elicitation/create",
        "params": {
            "message": "Please confirm",
            "requestedSchema": {
                "type": "object",
                "properties": {"ok": {"type": "boolean"}},
                "required": ["ok"],
            },
        },
    }});
    require(caps, &requests)?;
    Ok(input_required(requests, Some(states.issue(name))))
}

/// Three inputs of three kinds at once.
fn multiple(
    extra: &JsonObject,
    caps: &ClientCapabilities,
    states: &States,
) -> Result<Value, ErrorObject> {
    const TAG: &str = "test_input_required_result_multiple_inputs";
    let round = Round::of(extra)?;
    if let Some(state) = round.state {
        states.check(state, TAG)?;
        if let (Some(name), Some(greeting), Some(_)) = (
            round.answer("user_name")?,
            round.answer("greeting")?,
            round.answer("client_roots")?,
        ) {
            return Ok(text(&format!(
                "{} ({})",
                sampled(greeting),
                field(name, "name")
            )));
        }
    }
    let requests = json!({
        "user_name": elicit("What is your name?", "name", "string"),
        "greeting": sample("Generate a greeting", 50),
        "client_roots": roots(),
    });
    require(caps, &requests)?;
    Ok(input_required(requests, Some(states.issue(TAG))))
}

/// Two rounds of input, the state changing between them.
fn multi_round(
    extra: &JsonObject,
    caps: &ClientCapabilities,
    states: &States,
) -> Result<Value, ErrorObject> {
    const ROUND_TWO: &str = "test_input_required_result_multi_round/2";
    const DONE: &str = "test_input_required_result_multi_round/3";
    let round = Round::of(extra)?;
    let step1 = || {
        (
            json!({"step1": elicit("Step 1: What is your name?", "name", "string")}),
            ROUND_TWO,
        )
    };
    let (requests, next) = match round.state {
        None => step1(),
        Some(state) if states.check(state, ROUND_TWO).is_ok() => match round.answer("step1")? {
            Some(_) => (
                json!({"step2": elicit("Step 2: What is your favorite color?", "color", "string")}),
                DONE,
            ),
            None => step1(),
        },
        Some(state) => {
            states.check(state, DONE)?;
            if let Some(answer) = round.answer("step2")? {
                return Ok(text(&format!(
                    "All rounds done: favorite color {}",
                    field(answer, "color")
                )));
            }
            (
                json!({"step2": elicit("Step 2: What is your favorite color?", "color", "string")}),
                DONE,
            )
        }
    };
    require(caps, &requests)?;
    Ok(input_required(requests, Some(states.issue(next))))
}

/// Asks only for what the request's `_meta` declared it can give.
fn by_capabilities(extra: &JsonObject, caps: &ClientCapabilities) -> Result<Value, ErrorObject> {
    let round = Round::of(extra)?;
    if round.responses.is_some() {
        return Ok(text("Inputs received for the declared capabilities"));
    }
    let mut requests = JsonObject::new();
    if caps.elicitation.is_some() {
        requests.insert(
            "user_name".to_owned(),
            elicit("What is your name?", "name", "string"),
        );
    }
    if caps.sampling.is_some() {
        requests.insert(
            "capital_question".to_owned(),
            sample("What is the capital of France?", 100),
        );
    }
    if caps.roots.is_some() {
        requests.insert("client_roots".to_owned(), roots());
    }
    if requests.is_empty() {
        let mut missing = JsonObject::new();
        missing.insert("elicitation".to_owned(), json!({}));
        return Err(missing_capability_error(missing));
    }
    Ok(input_required(Value::Object(requests), None))
}

/// The prompt `test_input_required_result_prompt`: a context from the user, then the
/// messages.
pub(crate) fn prompt(extra: &JsonObject, caps: &ClientCapabilities) -> Result<Value, ErrorObject> {
    let round = Round::of(extra)?;
    if let Some(answer) = round.answer("user_context")? {
        let context = field(answer, "context");
        return Ok(json!({"messages": [{
            "role": "user",
            "content": {"type": "text", "text": format!("Use this context: {context}")},
        }]}));
    }
    let requests = json!({
        "user_context": elicit("What context should the prompt use?", "context", "string"),
    });
    require(caps, &requests)?;
    Ok(input_required(requests, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(v: Value) -> JsonObject {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn state_round_trips_and_tampering_is_refused() {
        let states = States::default();
        let caps: ClientCapabilities = serde_json::from_value(json!({"elicitation": {}})).unwrap();
        let name = "test_input_required_result_request_state";
        let first = call(name, &JsonObject::new(), &caps, &states)
            .unwrap()
            .unwrap();
        assert_eq!(first["resultType"], "input_required");
        let state = first["requestState"].as_str().unwrap().to_owned();
        let answer = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
        let retry = params(json!({"inputResponses": answer, "requestState": state}));
        let done = call(name, &retry, &caps, &states).unwrap().unwrap();
        assert!(
            done["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("state-ok")
        );
        let tampered =
            params(json!({"inputResponses": answer, "requestState": format!("{state}-x")}));
        let refused = call(name, &tampered, &caps, &states).unwrap().unwrap_err();
        assert_eq!(refused.code, code::INVALID_PARAMS);
        // A state issued for another tool is not this one's either.
        let other = call(
            "test_input_required_result_tampered_state",
            &retry,
            &caps,
            &states,
        );
        assert!(other.unwrap().is_err());
    }

    #[test]
    fn undeclared_capabilities_are_refused_and_bad_responses_are_errors() {
        let states = States::default();
        let none = ClientCapabilities::default();
        let name = "test_input_required_result_sampling";
        let refused = call(name, &JsonObject::new(), &none, &states)
            .unwrap()
            .unwrap_err();
        assert_eq!(refused.code, code::MISSING_REQUIRED_CLIENT_CAPABILITY);
        let bad = params(json!({"inputResponses": null}));
        assert!(call(name, &bad, &none, &states).unwrap().is_err());
    }
}
