//! Elicitation for a host with nobody to ask: [`AcceptDefaults`] answers a form request with
//! the defaults the server itself proposed (SEP-1034, spec 2025-11-25
//! `client/elicitation.mdx`), and declines when that would leave a required field empty.

use std::future::Future;
use std::pin::Pin;

use mcp_protocol::schema::{
    ClientCapabilities, ElicitParams, ElicitResult, ElicitationCapability, ServerRequest,
};
use mcp_protocol::{ErrorObject, JsonObject, RawJson, code};

use crate::options::ServerRequestHandler;

/// A [`ServerRequestHandler`] for headless hosts (a batch job, CI, a test harness): it declares form
/// elicitation and accepts each form with the schema's `default` values, the answer a person
/// who changes nothing would give. A form whose required field has no default is declined,
/// and URL mode is never declared. Sampling is not offered.
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct AcceptDefaults;

impl AcceptDefaults {
    /// The handler; it keeps no state.
    pub fn new() -> Self {
        Self
    }

    /// The answer to one form: `accept` with every default, or `decline`.
    pub fn answer(params: &ElicitParams) -> ElicitResult {
        if params.mode.as_deref().is_some_and(|m| m != "form") {
            return ElicitResult::new("decline".to_owned());
        }
        let schema = params.requested_schema.clone().unwrap_or_default();
        let empty = JsonObject::new();
        let properties = schema
            .get("properties")
            .and_then(|p| p.as_object())
            .unwrap_or(&empty);
        let mut content = JsonObject::new();
        for (name, property) in properties {
            if let Some(default) = property.get("default") {
                content.insert(name.clone(), default.clone());
            }
        }
        let required = schema
            .get("required")
            .and_then(|r| r.as_array())
            .into_iter()
            .flatten()
            .filter_map(|r| r.as_str());
        if required.clone().any(|r| !content.contains_key(r)) {
            return ElicitResult::new("decline".to_owned());
        }
        let mut result = ElicitResult::new("accept".to_owned());
        result.content = Some(content);
        result
    }
}

impl ServerRequestHandler for AcceptDefaults {
    fn capabilities(&self) -> ClientCapabilities {
        let mut elicitation = ElicitationCapability::new();
        elicitation.form = Some(JsonObject::new());
        let mut capabilities = ClientCapabilities::new();
        capabilities.elicitation = Some(elicitation);
        capabilities
    }

    fn handle<'a>(
        &'a self,
        _server: &'a str,
        request: ServerRequest,
    ) -> Pin<Box<dyn Future<Output = Result<RawJson, ErrorObject>> + Send + 'a>> {
        let outcome = match request {
            ServerRequest::Elicit(params) => RawJson::encode(&Self::answer(&params))
                .map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, e.to_string())),
            other => Err(ErrorObject::new(
                code::METHOD_NOT_FOUND,
                format!("Method not found: {}", other.method()),
            )),
        };
        Box::pin(std::future::ready(outcome))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn form(schema: serde_json::Value) -> ElicitParams {
        let mut params = ElicitParams::new("fill in".to_owned());
        params.requested_schema = schema.as_object().cloned();
        params
    }

    #[test]
    fn accepts_with_every_default_and_declines_a_required_field_without_one() {
        let answer = AcceptDefaults::answer(&form(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "score": {"type": "number", "default": 95.5},
                "nickname": {"type": "string"},
            },
            "required": ["name"],
        })));
        assert_eq!(answer.action, "accept");
        assert_eq!(
            serde_json::Value::Object(answer.content.unwrap()),
            json!({"name": "John Doe", "score": 95.5})
        );

        let answer = AcceptDefaults::answer(&form(json!({
            "type": "object",
            "properties": {"email": {"type": "string"}},
            "required": ["email"],
        })));
        assert_eq!(answer.action, "decline");
        assert!(answer.content.is_none());

        let mut url = form(json!({}));
        url.mode = Some("url".to_owned());
        assert_eq!(AcceptDefaults::answer(&url).action, "decline");
    }
}
