//! The stateless era's multi round-trip requests, driven by the session: an
//! `input_required` answer becomes server requests for the host, and the answers go back on
//! a retry (the bookkeeping is `session/input.rs`).

use super::*;
use crate::session::pending::params_object;

impl ClientSession {
    /// A stateless-era request answered with `input_required`: hand each input request to
    /// the caller, or retry at once when the server sent only its state.
    pub(super) fn input_required(
        &mut self,
        now: Instant,
        wire: RequestId,
        method: &str,
        raw: &RawJson,
    ) {
        let logical = self.inputs.logical(&wire);
        self.inputs.answered(&wire);
        let asked = match self.read_input_requests(&logical, method, raw) {
            Ok(asked) => asked,
            Err(detail) => {
                let unanswered = self.inputs.forget(&logical);
                self.withdraw_inputs(unanswered);
                self.events.push_back(ClientEvent::Response {
                    id: logical,
                    method: method.to_owned(),
                    outcome: Err(Error::InvalidResult {
                        method: method.to_owned(),
                        detail,
                    }),
                });
                return;
            }
        };
        if asked.is_empty() {
            return self.retry(now, &logical);
        }
        for (key, request) in asked {
            let id = RequestId::String(format!("input/{logical}/{key}"));
            self.core
                .inbound
                .insert(id.clone(), request.method().to_owned());
            self.inputs.ask(id.clone(), key, &logical);
            self.events.push_back(ClientEvent::Request { id, request });
        }
    }

    /// Checks an `input_required` result before anything is asked: the method may ask, the
    /// server has not asked too often, every input is one the client declared.
    pub(super) fn read_input_requests(
        &mut self,
        logical: &RequestId,
        method: &str,
        raw: &RawJson,
    ) -> Result<Vec<(String, ServerRequest)>, String> {
        let result: crate::schema::InputRequiredResult = raw.decode().map_err(|e| e.to_string())?;
        let Some(tracked) = self.inputs.get_mut(logical) else {
            return Err(format!(
                "input_required answers only tools/call, prompts/get and resources/read, not {method}"
            ));
        };
        tracked.rounds += 1;
        if tracked.rounds > crate::session::input::MAX_ROUNDS {
            return Err(format!(
                "the server asked for input {} times; giving up",
                crate::session::input::MAX_ROUNDS
            ));
        }
        let requests = result.input_requests.unwrap_or_default();
        if requests.is_empty() && result.request_state.is_none() {
            return Err("input_required with neither inputRequests nor requestState".to_owned());
        }
        tracked.request_state = result.request_state;
        tracked.answers = JsonObject::new();
        let mut asked = Vec::with_capacity(requests.len());
        for (key, input) in requests {
            let request =
                ServerRequest::decode(&input.method, input.params.as_ref()).map_err(|e| {
                    format!("inputRequests.{key}: invalid {} params: {e}", input.method)
                })?;
            if !matches!(
                request,
                ServerRequest::CreateMessage(_)
                    | ServerRequest::Elicit(_)
                    | ServerRequest::ListRoots(_)
            ) {
                return Err(format!(
                    "inputRequests.{key} is {}, which is not an input request",
                    input.method
                ));
            }
            self.check_declared(&request)
                .map_err(|(_, why)| format!("inputRequests.{key}: {why} (not declared)"))?;
            asked.push((key, request));
        }
        Ok(asked)
    }

    /// Sends a multi round-trip request again, with a new id: the caller's parameters, the
    /// answers under the server's keys, and the server's state exactly as it came.
    pub(super) fn retry(&mut self, now: Instant, logical: &RequestId) {
        let Some(version) = self.stamped_version().cloned() else {
            return;
        };
        let envelope = self.envelope(&version);
        let Some(t) = self.inputs.get_mut(logical) else {
            return;
        };
        let method = t.method.clone();
        let params = retry_params(t.params.as_ref(), &t.answers, t.request_state.as_deref());
        let options = t.options;
        let sent = params.and_then(|params| {
            self.core.send_request(
                now,
                &method,
                Some(params),
                options,
                self.config.request_timeout,
                Some(&envelope),
            )
        });
        match sent {
            Ok(wire) => self.inputs.resent(wire, logical.clone()),
            Err(e) => {
                let _ = self.inputs.forget(logical);
                self.events.push_back(ClientEvent::Response {
                    id: logical.clone(),
                    method,
                    outcome: Err(e),
                });
            }
        }
    }
}

/// The parameters of a multi round-trip retry: the caller's own, plus `inputResponses` when
/// the server asked for input and `requestState` exactly as the server sent it (never one it
/// did not send).
fn retry_params(
    params: Option<&RawJson>,
    answers: &JsonObject,
    request_state: Option<&str>,
) -> Result<RawJson, Error> {
    let mut obj = params_object(params)?;
    obj.remove("inputResponses");
    obj.remove("requestState");
    if !answers.is_empty() {
        obj.insert(
            "inputResponses".to_owned(),
            serde_json::Value::Object(answers.clone()),
        );
    }
    if let Some(state) = request_state {
        obj.insert(
            "requestState".to_owned(),
            serde_json::Value::String(state.to_owned()),
        );
    }
    RawJson::encode(&obj).map_err(|e| Error::ApiMisuse(e.to_string()))
}
