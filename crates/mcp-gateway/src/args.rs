//! A meta tool's arguments (category and meta modes), read the way a model's mistakes
//! deserve: each problem is an `InvalidArguments` tool error naming the field.

use mcp_protocol::JsonObject;
use mcp_protocol::schema::CallToolResult;
use serde_json::Value;

use crate::reply::{ErrorKind, tool_error};

/// The arguments of one `tools/call`.
#[derive(Debug, Default)]
pub(crate) struct Args(pub(crate) JsonObject);

impl Args {
    /// A string argument that may be left out (or `null`).
    pub(crate) fn optional_str(&self, key: &str) -> Result<Option<&str>, CallToolResult> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(invalid(&format!(
                "`{key}` must be a string, not {}",
                json_kind(other)
            ))),
        }
    }

    /// A string argument that must be there.
    pub(crate) fn required_str(&self, key: &str) -> Result<&str, CallToolResult> {
        self.optional_str(key)?
            .ok_or_else(|| invalid(&format!("`{key}` is required")))
    }

    /// An object argument (the upstream tool's own arguments); left out or `null` is empty.
    pub(crate) fn object(&self, key: &str) -> Result<JsonObject, CallToolResult> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(JsonObject::new()),
            Some(Value::Object(map)) => Ok(map.clone()),
            Some(other) => Err(invalid(&format!(
                "`{key}` must be an object (the tool's arguments), not {}",
                json_kind(other)
            ))),
        }
    }

    /// An array of strings that may be left out (or `null`).
    pub(crate) fn optional_strings(&self, key: &str) -> Result<Option<Vec<&str>>, CallToolResult> {
        let not_strings = || invalid(&format!("`{key}` must be an array of strings"));
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(Value::as_str)
                .collect::<Option<Vec<_>>>()
                .map(Some)
                .ok_or_else(not_strings),
            Some(_) => Err(not_strings()),
        }
    }
}

/// An `InvalidArguments` tool error.
pub(crate) fn invalid(message: &str) -> CallToolResult {
    tool_error(ErrorKind::InvalidArguments, message)
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
