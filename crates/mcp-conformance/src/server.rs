//! The everything-style server the suite's server scenarios call: the diagnostic tools,
//! resources, prompts, completion and logging that the reference "everything server" offers,
//! each answering as the scenario's description asks. It is an `mcp-session` [`Handler`];
//! `mcp-http`'s server half serves it over Streamable HTTP, so every protocol rule (the
//! handshake, capability checks, routing to streams, sessions, DNS rebinding) is the library's.
//!
//! It speaks both eras. In the 2026-07-28 stateless one the library checks each request's
//! `_meta` and headers and completes each result; the tools here add what the stateless
//! scenarios call: a tool needing an undeclared capability (-32021), hooks that change the
//! tool and prompt lists (heard on `subscriptions/listen` streams), input-required tools
//! (`input_required.rs`) and a tool whose argument is mirrored into an `Mcp-Param-*` header.

use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use mcp_protocol::schema::{
    CallToolParams, ClientCapabilities, ClientRequest, GetPromptParams, Implementation,
    LoggingLevel, RequestMethod, ServerCapabilities, TASKS_EXTENSION_ID, method,
};
use mcp_protocol::{
    Era, ErrorObject, JsonObject, RawJson, RequestOptions, ServerConfig, code,
    missing_capability_error,
};
use mcp_session::{Handler, RequestContext, Tasks};
use serde_json::{Value, json};

use crate::input_required::{self, States};
use crate::skills;
use crate::tasks;

/// A 1×1 PNG, for image content and the binary resource.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
/// A WAV file with a header and no samples, for audio content.
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";

/// The answer of an [`ask`], or the tool returns the result asking for it.
macro_rules! answer_or_ask {
    ($asked:expr) => {
        match $asked.await? {
            Asked::Answer(answer) => answer,
            Asked::Pending(result) => return Ok(result),
        }
    };
}

/// The server's identity and what it offers: tools, resources with subscriptions, prompts,
/// completion and logging, in both eras; the tool and prompt lists announce their changes.
pub fn config() -> ServerConfig {
    let mut config = ServerConfig::dual_era(Implementation::new(
        "mcp-conformance-server".to_owned(),
        env!("CARGO_PKG_VERSION").to_owned(),
    ));
    let capabilities = json!({
        "tools": {"listChanged": true},
        "resources": {"subscribe": true, "listChanged": false},
        "prompts": {"listChanged": true},
        "completions": {},
        "logging": {},
        // Tasks in both forms: 2025-11-25's member (which server/discover leaves out) and the
        // 2026-07-28 extension.
        "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
        "extensions": {TASKS_EXTENSION_ID: {}},
    });
    // The literal above is a valid capabilities object; the fallback is never taken.
    config.capabilities =
        serde_json::from_value::<ServerCapabilities>(capabilities).unwrap_or_default();
    // The skills extension (SEP-2640), next to any other extension declared above.
    skills::declare(&mut config.capabilities);
    config
}

/// The handler. One instance serves every session; the log level is the last one any
/// client set, which is all a test server needs.
#[derive(Debug, Default)]
pub struct Everything {
    /// The least severe level sent, as a `LoggingLevel::severity`; `debug` until set.
    log_level: AtomicU8,
    /// The `requestState` values the input-required tools issued.
    states: States,
    /// The tasks of the `tasks-*` scenarios' tools.
    tasks: Tasks,
}

impl Everything {
    /// A server with logging at `debug`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sends a log entry tied to the request being handled, if `level` passes the filter.
    fn log(&self, context: &RequestContext, level: &str, text: &str) {
        // A level nobody knows counts as the most severe, as the protocol crate reads it.
        let rank = LoggingLevel::from(level).severity().unwrap_or(u8::MAX);
        if rank < self.log_level.load(Ordering::Relaxed) {
            return;
        }
        let params = json!({"level": level, "logger": "conformance", "data": text});
        if let Ok(raw) = RawJson::encode(&params) {
            let _ = context.peer.notify("notifications/message", Some(raw));
        }
    }

    async fn call(
        &self,
        params: CallToolParams,
        context: RequestContext,
    ) -> Result<Value, ErrorObject> {
        let caps = declared(&context);
        if let Some(answer) = input_required::call(&params.name, &params.extra, &caps, &self.states)
        {
            return answer;
        }
        let args = params.arguments.unwrap_or_default();
        let text_arg = |key: &str| {
            args.get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let result = match params.name.as_str() {
            "test_simple_text" => text("This is a simple text response for testing."),
            "test_image_content" => json!({
                "content": [{"type": "image", "data": PNG, "mimeType": "image/png"}]
            }),
            "test_audio_content" => json!({
                "content": [{"type": "audio", "data": WAV, "mimeType": "audio/wav"}]
            }),
            "test_embedded_resource" => json!({
                "content": [{"type": "resource", "resource": {
                    "uri": "test://embedded-resource",
                    "mimeType": "text/plain",
                    "text": "This is an embedded resource content.",
                }}]
            }),
            "test_multiple_content_types" => json!({
                "content": [
                    {"type": "text", "text": "Multiple content types test:"},
                    {"type": "image", "data": PNG, "mimeType": "image/png"},
                    {"type": "resource", "resource": {
                        "uri": "test://mixed-content-resource",
                        "mimeType": "application/json",
                        "text": "{\"test\":\"data\",\"value\":123}",
                    }},
                ]
            }),
            "test_missing_capability" => {
                if caps.sampling.is_none() {
                    let mut missing = JsonObject::new();
                    missing.insert("sampling".to_owned(), json!({}));
                    return Err(missing_capability_error(missing));
                }
                text("The sampling capability was declared.")
            }
            "test_trigger_tool_change" => {
                context
                    .sessions
                    .notify("notifications/tools/list_changed", None);
                text("The tool list changed.")
            }
            "test_trigger_prompt_change" => {
                context
                    .sessions
                    .notify("notifications/prompts/list_changed", None);
                text("The prompt list changed.")
            }
            "test_streaming_elicitation" => {
                if caps.elicitation.is_none() {
                    let mut missing = JsonObject::new();
                    missing.insert("elicitation".to_owned(), json!({}));
                    return Err(missing_capability_error(missing));
                }
                // In the stateless era no request goes on the stream: `ask` answers with the
                // question as an input_required result.
                let question = input_required::elicit("Please provide input", "input", "string");
                elicited(answer_or_ask!(ask::<method::Elicit>(
                    &context,
                    &params.extra,
                    question["params"].clone()
                )))
            }
            "test_header_param" => text(&format!("Region: {}", text_arg("region"))),
            "test_tool_with_logging" | "test_logging_tool" => {
                for (i, message) in [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ]
                .iter()
                .enumerate()
                {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    self.log(&context, "info", message);
                }
                text("Tool with logging executed successfully")
            }
            "test_tool_with_progress" => {
                for (i, progress) in [0, 50, 100].into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    context.progress(progress, Some(100), Some("working"));
                }
                text("Tool with progress executed successfully")
            }
            "test_error_handling" => json!({
                "content": [{"type": "text", "text": "This tool intentionally returns an error for testing"}],
                "isError": true,
            }),
            // The scenario accepts an answer on the request's own stream; this server's
            // transport has no resumable streams to close mid-call.
            "test_reconnection" => text("Reconnection test completed successfully."),
            "greet" => tasks::greet(&text_arg("name")),
            "test_sampling" => {
                let request = json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": text_arg("prompt")}}],
                    "maxTokens": 100,
                });
                let answer = answer_or_ask!(ask::<method::CreateMessage>(
                    &context,
                    &params.extra,
                    request
                ));
                let said = answer
                    .pointer("/content/text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                text(&format!("LLM response: {said}"))
            }
            "test_elicitation" => {
                let request = json!({
                    "message": text_arg("message"),
                    "requestedSchema": {
                        "type": "object",
                        "properties": {
                            "username": {"type": "string", "description": "User's response"},
                            "email": {"type": "string", "description": "User's email address"},
                        },
                        "required": ["username", "email"],
                    },
                });
                let answer =
                    answer_or_ask!(ask::<method::Elicit>(&context, &params.extra, request));
                text(&format!("User response: {answer}"))
            }
            "test_elicitation_sep1034_defaults" => {
                let request = json!({
                    "message": "Please review and update the form fields with defaults",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "description": "User name", "default": "John Doe"},
                            "age": {"type": "integer", "description": "User age", "default": 30},
                            "score": {"type": "number", "description": "User score", "default": 95.5},
                            "status": {
                                "type": "string",
                                "description": "User status",
                                "enum": ["active", "inactive", "pending"],
                                "default": "active",
                            },
                            "verified": {"type": "boolean", "description": "Verification status", "default": true},
                        },
                        "required": [],
                    },
                });
                elicited(answer_or_ask!(ask::<method::Elicit>(
                    &context,
                    &params.extra,
                    request
                )))
            }
            "test_elicitation_sep1330_enums" => {
                let titled = |a: &str, b: &str, c: &str| {
                    json!([
                        {"const": "value1", "title": a},
                        {"const": "value2", "title": b},
                        {"const": "value3", "title": c},
                    ])
                };
                let request = json!({
                    "message": "Please select options from the enum fields",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {
                            "untitledSingle": {
                                "type": "string",
                                "description": "Select one option",
                                "enum": ["option1", "option2", "option3"],
                            },
                            "titledSingle": {
                                "type": "string",
                                "description": "Select one option with titles",
                                "oneOf": titled("First Option", "Second Option", "Third Option"),
                            },
                            "legacyEnum": {
                                "type": "string",
                                "description": "Select one option (legacy)",
                                "enum": ["opt1", "opt2", "opt3"],
                                "enumNames": ["Option One", "Option Two", "Option Three"],
                            },
                            "untitledMulti": {
                                "type": "array",
                                "description": "Select multiple options",
                                "minItems": 1,
                                "maxItems": 3,
                                "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
                            },
                            "titledMulti": {
                                "type": "array",
                                "description": "Select multiple options with titles",
                                "minItems": 1,
                                "maxItems": 3,
                                "items": {"anyOf": titled("First Choice", "Second Choice", "Third Choice")},
                            },
                        },
                        "required": [],
                    },
                });
                elicited(answer_or_ask!(ask::<method::Elicit>(
                    &context,
                    &params.extra,
                    request
                )))
            }
            "json_schema_2020_12_tool" => text(&format!(
                "JSON Schema 2020-12 tool called with: {}",
                Value::Object(args.clone())
            )),
            "add_numbers" => {
                let n = |k: &str| args.get(k).and_then(Value::as_f64).unwrap_or(0.0);
                text(&format!(
                    "The sum of {} and {} is {}.",
                    n("a"),
                    n("b"),
                    n("a") + n("b")
                ))
            }
            other => {
                return Err(ErrorObject::new(
                    code::INVALID_PARAMS,
                    format!("Unknown tool: {other}"),
                ));
            }
        };
        Ok(result)
    }
}

impl Handler for Everything {
    async fn handle(
        &self,
        request: ClientRequest,
        context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        if let Some(answer) = self.tasks.answer(&request, &context).await {
            return answer;
        }
        if let Some(answer) = skills::catalog().handle(&request) {
            return answer;
        }
        let result = match request {
            ClientRequest::CallTool(params) if tasks::is_task_tool(&params.name) => {
                return tasks::call(&self.tasks, params, context).await;
            }
            ClientRequest::ListTools(_) => json!({"tools": tools()}),
            ClientRequest::CallTool(params) => self.call(params, context).await?,
            ClientRequest::ListResources(_) => skills::listed(json!({"resources": [
                {"uri": "test://static-text", "name": "static-text", "title": "Static Text Resource",
                 "description": "A static text resource for testing", "mimeType": "text/plain"},
                {"uri": "test://static-binary", "name": "static-binary", "title": "Static Binary Resource",
                 "description": "A static binary resource (image) for testing", "mimeType": "image/png"},
                {"uri": "test://watched-resource", "name": "watched-resource", "title": "Watched Resource",
                 "description": "A resource clients may subscribe to", "mimeType": "text/plain"},
            ]})),
            ClientRequest::ListResourceTemplates(_) => json!({"resourceTemplates": [
                {"uriTemplate": "test://template/{id}/data", "name": "template",
                 "title": "Resource Template", "description": "A resource template with parameter substitution",
                 "mimeType": "application/json"},
            ]}),
            ClientRequest::ReadResource(params) => read(&params.uri)?,
            ClientRequest::Subscribe(_) | ClientRequest::Unsubscribe(_) => json!({}),
            ClientRequest::ListPrompts(_) => json!({"prompts": [
                {"name": "test_simple_prompt", "description": "A simple prompt without arguments"},
                {"name": "test_prompt_with_arguments", "description": "A prompt with required arguments",
                 "arguments": [
                    {"name": "arg1", "description": "First test argument", "required": true},
                    {"name": "arg2", "description": "Second test argument", "required": true},
                 ]},
                {"name": "test_prompt_with_embedded_resource", "description": "A prompt that includes an embedded resource",
                 "arguments": [{"name": "resourceUri", "description": "URI of the resource to embed", "required": true}]},
                {"name": "test_prompt_with_image", "description": "A prompt that includes image content"},
                {"name": INPUT_REQUIRED_PROMPT, "description": "A prompt that asks the user for its context first"},
            ]}),
            ClientRequest::GetPrompt(params) if params.name == INPUT_REQUIRED_PROMPT => {
                input_required::prompt(&params.extra, &declared(&context))?
            }
            ClientRequest::GetPrompt(params) => prompt(&params)?,
            ClientRequest::Complete(params) => {
                let typed = params.argument.value.to_lowercase();
                let values: Vec<&str> = ["paris", "park", "party"]
                    .into_iter()
                    .filter(|v| v.starts_with(&typed))
                    .collect();
                json!({"completion": {"values": values, "total": values.len(), "hasMore": false}})
            }
            ClientRequest::SetLevel(params) => {
                let rank = params.level.severity().unwrap_or(0);
                self.log_level.store(rank, Ordering::Relaxed);
                json!({})
            }
            other => {
                return Err(ErrorObject::new(
                    code::METHOD_NOT_FOUND,
                    format!("Method not found: {}", other.method()),
                ));
            }
        };
        RawJson::encode(&result).map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, e.to_string()))
    }

    fn tool_schema(&self, name: &str) -> Option<RawJson> {
        let tools = tools();
        let tool = tools
            .as_array()?
            .iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some(name))?;
        RawJson::encode(tool.get("inputSchema")?).ok()
    }
}

/// The prompt that answers with an input-required result first.
const INPUT_REQUIRED_PROMPT: &str = "test_input_required_result_prompt";

/// What the client declared for this request: its own `_meta` in the stateless era, the
/// handshake otherwise.
fn declared(context: &RequestContext) -> ClientCapabilities {
    context
        .client
        .as_ref()
        .map(|c| c.capabilities.clone())
        .unwrap_or_default()
}

/// A tool result with one text block.
pub(crate) fn text(s: &str) -> Value {
    json!({"content": [{"type": "text", "text": s}]})
}

/// The result of a tool that asked the user something.
fn elicited(answer: Value) -> Value {
    let action = answer.get("action").and_then(Value::as_str).unwrap_or("");
    let content = answer.get("content").cloned().unwrap_or_else(|| json!({}));
    text(&format!(
        "Elicitation completed: action={action}, content={content}"
    ))
}

/// What asking the client during a tool call gave.
enum Asked {
    /// Its answer, as JSON.
    Answer(Value),
    /// In the stateless era, before it answered: the `input_required` result asking for it.
    Pending(Value),
}

/// The key under which a tool of the handshake era asks for its one input in the stateless era.
const ASKED: &str = "input";

/// Asks the client something during a tool call. In the handshake era the request goes to it
/// on the call's stream and a client that refuses or lacks the capability makes the call a
/// JSON-RPC error. In the stateless era no request may go (SEP-2322): the question goes back
/// as an `input_required` result (-32021 if the request did not declare the capability), and
/// the retry's `inputResponses` (in `extra`) holds the answer, so the same tool serves both.
async fn ask<M: RequestMethod>(
    context: &RequestContext,
    extra: &JsonObject,
    params: Value,
) -> Result<Asked, ErrorObject> {
    if context.era == Some(Era::Stateless) {
        if let Some(answer) = extra.get("inputResponses").and_then(|r| r.get(ASKED)) {
            return Ok(Asked::Answer(answer.clone()));
        }
        let requests = json!({ ASKED: {"method": M::METHOD, "params": params} });
        input_required::require(&declared(context), &requests)?;
        return Ok(Asked::Pending(input_required::input_required(
            requests, None,
        )));
    }
    let params: M::Params = serde_json::from_value(params)
        .map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, e.to_string()))?;
    let answer = context
        .peer
        .request::<M>(&params, RequestOptions::DEFAULT)
        .await
        .map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, format!("{}: {e}", M::METHOD)))?;
    serde_json::to_value(&answer)
        .map(Asked::Answer)
        .map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, e.to_string()))
}

/// The tools, each with a description and an input schema.
fn tools() -> Value {
    let none = json!({"type": "object", "properties": {}});
    let tool = |name: &str, description: &str, schema: &Value| json!({"name": name, "description": description, "inputSchema": schema});
    let string_arg = |arg: &str, description: &str| json!({"type": "object", "properties": {arg: {"type": "string", "description": description}}, "required": [arg]});
    let mut list = json!([
        tool("test_simple_text", "Returns simple text content", &none),
        tool("test_image_content", "Returns image content", &none),
        tool("test_audio_content", "Returns audio content", &none),
        tool(
            "test_embedded_resource",
            "Returns an embedded resource",
            &none
        ),
        tool(
            "test_multiple_content_types",
            "Returns text, image and resource content",
            &none
        ),
        tool(
            "test_tool_with_logging",
            "Sends log messages while it runs",
            &none
        ),
        tool(
            "test_tool_with_progress",
            "Reports progress while it runs",
            &none
        ),
        tool(
            "test_error_handling",
            "Always fails with a tool error",
            &none
        ),
        tool(
            "test_reconnection",
            "Answers a call that a client may have to resume",
            &none
        ),
        tool(
            "test_sampling",
            "Asks the client's model for a completion",
            &string_arg("prompt", "The prompt to send")
        ),
        tool(
            "test_elicitation",
            "Asks the user for input",
            &string_arg("message", "The message to show the user")
        ),
        tool(
            "test_elicitation_sep1034_defaults",
            "Asks the user with defaults for every primitive type (SEP-1034)",
            &none
        ),
        tool(
            "test_elicitation_sep1330_enums",
            "Asks the user with every enum variant (SEP-1330)",
            &none
        ),
        tool(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features",
            &json_schema_2020_12()
        ),
        tool(
            "test_missing_capability",
            "Needs the sampling capability; without it the call fails with -32021",
            &none
        ),
        tool(
            "test_trigger_tool_change",
            "Announces a change of the tool list to every listening client",
            &none
        ),
        tool(
            "test_trigger_prompt_change",
            "Announces a change of the prompt list to every listening client",
            &none
        ),
        tool(
            "test_streaming_elicitation",
            "Asks the user for input; in the stateless era as an input-required result",
            &none
        ),
        tool(
            "test_logging_tool",
            "Sends log messages while it runs, at the level the request asked for",
            &none
        ),
        tool(
            "test_header_param",
            "Echoes a region that clients mirror into the Mcp-Param-Region header",
            &json!({
                "type": "object",
                "properties": {"region": {
                    "type": "string",
                    "description": "The region",
                    "x-mcp-header": "Region",
                }},
                "required": ["region"],
            })
        ),
        tool(
            "test_input_required_result_elicitation",
            "Asks for the user's name with an input-required result",
            &none
        ),
        tool(
            "test_input_required_result_sampling",
            "Asks the client's model a question with an input-required result",
            &none
        ),
        tool(
            "test_input_required_result_list_roots",
            "Asks for the client's roots with an input-required result",
            &none
        ),
        tool(
            "test_input_required_result_request_state",
            "Asks for a confirmation and checks the request state that comes back",
            &none
        ),
        tool(
            "test_input_required_result_multiple_inputs",
            "Asks for three inputs of three kinds at once",
            &none
        ),
        tool(
            "test_input_required_result_multi_round",
            "Asks for input over two rounds",
            &none
        ),
        tool(
            "test_input_required_result_tampered_state",
            "Refuses a request state it did not issue",
            &none
        ),
        tool(
            "test_input_required_result_capabilities",
            "Asks only for inputs the request declared it can give",
            &none
        ),
        tool(
            "add_numbers",
            "Adds two numbers",
            &json!({
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"],
            })
        ),
    ]);
    if let Value::Array(list) = &mut list {
        list.extend(tasks::tools());
    }
    list
}

/// The input schema with JSON Schema 2020-12 keywords that must reach the client unchanged
/// (SEP-1613, SEP-2106).
fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            },
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"},
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false,
    })
}

/// `resources/read`: the static resources and the template `test://template/{id}/data`.
fn read(uri: &str) -> Result<Value, ErrorObject> {
    let contents = match uri {
        "test://static-text" => json!({
            "uri": uri, "mimeType": "text/plain",
            "text": "This is the content of the static text resource.",
        }),
        "test://static-binary" => json!({"uri": uri, "mimeType": "image/png", "blob": PNG}),
        "test://watched-resource" => json!({
            "uri": uri, "mimeType": "text/plain", "text": "Watched resource content",
        }),
        _ => match uri
            .strip_prefix("test://template/")
            .and_then(|rest| rest.strip_suffix("/data"))
            .filter(|id| !id.is_empty() && !id.contains('/'))
        {
            Some(id) => json!({
                "uri": uri, "mimeType": "application/json",
                "text": json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string(),
            }),
            None => {
                let mut error =
                    ErrorObject::new(code::INVALID_PARAMS, format!("Resource not found: {uri}"));
                error.data = Some(json!({"uri": uri}));
                return Err(error);
            }
        },
    };
    Ok(json!({"contents": [contents]}))
}

/// `prompts/get`.
fn prompt(params: &GetPromptParams) -> Result<Value, ErrorObject> {
    let args = params.arguments.clone().unwrap_or_default();
    let arg = |k: &str| args.get(k).cloned().unwrap_or_default();
    let user = |content: Value| json!({"role": "user", "content": content});
    let messages = match params.name.as_str() {
        "test_simple_prompt" => json!([user(
            json!({"type": "text", "text": "This is a simple prompt for testing."})
        )]),
        "test_prompt_with_arguments" => json!([user(json!({
            "type": "text",
            "text": format!("Prompt with arguments: arg1='{}', arg2='{}'", arg("arg1"), arg("arg2")),
        }))]),
        "test_prompt_with_embedded_resource" => json!([
            user(json!({"type": "resource", "resource": {
                "uri": arg("resourceUri"), "mimeType": "text/plain",
                "text": "Embedded resource content for testing.",
            }})),
            user(json!({"type": "text", "text": "Please process the embedded resource above."})),
        ]),
        "test_prompt_with_image" => json!([
            user(json!({"type": "image", "data": PNG, "mimeType": "image/png"})),
            user(json!({"type": "text", "text": "Please analyze the image above."})),
        ]),
        other => {
            return Err(ErrorObject::new(
                code::INVALID_PARAMS,
                format!("Unknown prompt: {other}"),
            ));
        }
    };
    Ok(json!({"messages": messages}))
}
