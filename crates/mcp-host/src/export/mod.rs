//! The catalogue's tools in the shapes model APIs take: the Anthropic Messages API's `tools`,
//! the OpenAI Chat Completions and Responses APIs' `function` tools (strict when the schema
//! fits strict mode, and a variant made to fit it), and the Gemini API's
//! `functionDeclarations`.
//!
//! Each API accepts its own subset of JSON Schema, and a request with one tool it refuses fails
//! whole. So every schema is rewritten into the provider's subset where that keeps its meaning
//! (references inlined, `allOf` merged, `oneOf` read as `anyOf`, a constraint the provider
//! cannot hold moved into the description so the model still reads it), and a tool that cannot
//! be written is left out with a [`Diagnostic`], never sent broken. The server still checks
//! every call's arguments against its own schema. The table of what each provider drops,
//! inlines and refuses is in docs/model-apis.md.
//!
//! Pure functions of the catalogue: nothing here does I/O.

mod anthropic;
mod gemini;
mod openai;
mod schema;
#[cfg(test)]
mod tests;

use serde_json::{Map, Value};

use crate::catalog::{Diagnostic, ModelTool};

/// A model API whose tool definitions [`export`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// The Anthropic Messages API: `{name, description, input_schema}`.
    Anthropic,
    /// The OpenAI Chat Completions API: `{"type": "function", "function": {…}}`, `strict` only
    /// where the schema already fits strict mode.
    OpenAiChat,
    /// The OpenAI Responses API: `{"type": "function", name, description, parameters,
    /// strict}`, `strict` as for [`Format::OpenAiChat`].
    OpenAiResponses,
    /// Chat Completions tools rewritten to fit strict mode: every property required (an
    /// optional one may be `null`, which means "left out": see [`strict_arguments`]), objects
    /// closed; what strict mode cannot say is left out with a diagnostic.
    OpenAiStrict,
    /// The Gemini API: one `Tool` with `functionDeclarations`, each with `parameters` in the
    /// API's OpenAPI-subset `Schema`.
    Gemini,
}

impl Format {
    /// The name the command line uses.
    pub fn name(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::OpenAiChat => "openai",
            Self::OpenAiResponses => "openai-responses",
            Self::OpenAiStrict => "openai-strict",
            Self::Gemini => "gemini",
        }
    }
}

/// The definitions for one API, and what was changed or left out on the way.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Export {
    /// The value of the request's `tools` field.
    pub tools: Value,
    /// One entry per tool left out, relaxed or sent non-strict, naming the tool and why.
    pub diagnostics: Vec<Diagnostic>,
}

/// Everything a catalogue offers a model ([`Catalog::model_tools`](crate::Catalog::model_tools):
/// the servers' tools and the resource and prompt operations) as `format`'s API takes it.
pub fn export_catalog(catalog: &crate::Catalog, format: Format) -> Export {
    export(catalog.model_tools(), format)
}

/// `tools` (some of a catalogue's [`model_tools`](crate::Catalog::model_tools)) as
/// `format`'s API takes them.
pub fn export<'a>(tools: impl IntoIterator<Item = ModelTool<'a>>, format: Format) -> Export {
    let mut out = Vec::new();
    let mut diagnostics = Vec::new();
    for tool in tools {
        let tool = Tool::from(tool);
        let mut notes = Vec::new();
        let result = check_name(tool.name, format).and_then(|()| match format {
            Format::Anthropic => anthropic::tool(&tool, &mut notes),
            Format::OpenAiChat => openai::tool(&tool, openai::Api::Chat, &mut notes),
            Format::OpenAiResponses => openai::tool(&tool, openai::Api::Responses, &mut notes),
            Format::OpenAiStrict => openai::strict_tool(&tool, &mut notes),
            Format::Gemini => gemini::tool(&tool, &mut notes),
        });
        let diag = |message: String| Diagnostic {
            server: tool.server.to_owned(),
            tool: tool.label.clone(),
            message: format!("{} ({}): {message}", tool.name, format.name()),
        };
        match result {
            Ok(definition) => {
                out.push(definition);
                diagnostics.extend(notes.into_iter().map(diag));
            }
            Err(reason) => {
                diagnostics.extend(notes.into_iter().map(diag));
                diagnostics.push(diag(format!("left out: {reason}")));
            }
        }
    }
    let tools = match format {
        Format::Gemini if out.is_empty() => Value::Array(Vec::new()),
        Format::Gemini => serde_json::json!([{ "functionDeclarations": out }]),
        _ => Value::Array(out),
    };
    Export { tools, diagnostics }
}

/// The arguments a model sent for a tool exported with [`Format::OpenAiStrict`], as the server
/// expects them: strict mode made every optional property required and nullable, so a `null`
/// where the server's schema neither requires the property nor allows `null` means the model
/// left it out, and is removed. `parameters` is the tool's
/// [`ModelTool::parameters`].
pub fn strict_arguments(parameters: &Value, arguments: &mut Value) {
    let Ok(schema) = schema::inline_refs(parameters, schema::Cycles::Cut) else {
        return;
    };
    openai::strip_added_nulls(&schema, arguments, 0);
}

/// What an export reads of one tool or operation.
struct Tool<'a> {
    name: &'a str,
    server: &'a str,
    /// The tool's name on its server, or the operation's MCP method, for diagnostics.
    label: String,
    description: &'a str,
    parameters: &'a Value,
}

impl<'a> From<ModelTool<'a>> for Tool<'a> {
    fn from(tool: ModelTool<'a>) -> Self {
        let label = match tool {
            ModelTool::Tool(t) => t.tool.clone(),
            ModelTool::Operation(o) => o.operation.method().to_owned(),
        };
        Self {
            name: tool.name(),
            server: tool.server(),
            label,
            description: tool.description(),
            parameters: tool.parameters(),
        }
    }
}

/// Tool names: every API takes `[a-zA-Z0-9_-]{1,64}`, and Gemini wants a letter or `_`
/// first. The catalogue's names fit; this holds the line should that ever change.
fn check_name(name: &str, format: Format) -> Result<(), String> {
    let charset = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if name.is_empty() || name.len() > 64 || !charset {
        return Err(format!(
            "the name `{}` is not 1 to 64 of [a-zA-Z0-9_-]",
            schema::short(name)
        ));
    }
    if format == Format::Gemini && !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
    {
        return Err("Gemini wants a name that starts with a letter or `_`".into());
    }
    Ok(())
}

/// A root that says its arguments take one of several forms (`anyOf`/`oneOf` at the root,
/// which OpenAI and Gemini refuse there) as one object: every form's properties, required only
/// what every form requires, and the forms listed in the description. Looser than the server's
/// schema, which still checks each call; the model reads the forms.
fn relax_root_union(
    mut root: Map<String, Value>,
    notes: &mut Vec<String>,
) -> Result<Map<String, Value>, String> {
    for key in ["anyOf", "oneOf"] {
        let Some(value) = root.remove(key) else {
            continue;
        };
        let Value::Array(branches) = value else {
            return Err(format!("the root's `{key}` is not a list"));
        };
        let mut properties = match root.remove("properties") {
            Some(Value::Object(p)) => p,
            _ => Map::new(),
        };
        let mut common: Option<Vec<Value>> = None;
        let mut forms = Vec::new();
        for branch in branches {
            let branch = match branch {
                Value::Object(map) => schema::merge_all_of(map)?,
                Value::Bool(true) => Map::new(),
                _ => return Err(format!("a root `{key}` form is not an object schema")),
            };
            if let Some(types) = schema::types_of(&branch)
                && !types.iter().any(|t| t == "object")
            {
                return Err(format!("a root `{key}` form is not an object schema"));
            }
            let required = match branch.get("required") {
                Some(Value::Array(r)) => r.clone(),
                _ => Vec::new(),
            };
            forms.push(if required.is_empty() {
                "no property required".to_owned()
            } else {
                let names: Vec<String> = required
                    .iter()
                    .filter_map(Value::as_str)
                    .map(schema::short)
                    .collect();
                format!("with {}", names.join(", "))
            });
            common = Some(match common {
                None => required,
                Some(prior) => prior.into_iter().filter(|n| required.contains(n)).collect(),
            });
            if let Some(Value::Object(props)) = branch.get("properties") {
                for (name, schema) in props {
                    match properties.get_mut(name) {
                        Some(prior) if prior != schema => {
                            let both = vec![prior.take(), schema.clone()];
                            *prior = serde_json::json!({ "anyOf": both });
                        }
                        Some(_) => {}
                        None => {
                            properties.insert(name.clone(), schema.clone());
                        }
                    }
                }
            }
        }
        let mut required = match root.remove("required") {
            Some(Value::Array(r)) => r,
            _ => Vec::new(),
        };
        for name in common.unwrap_or_default() {
            if !required.contains(&name) {
                required.push(name);
            }
        }
        root.insert("properties".into(), Value::Object(properties));
        if !required.is_empty() {
            root.insert("required".into(), Value::Array(required));
        }
        let listed: Vec<String> = forms
            .iter()
            .enumerate()
            .map(|(i, f)| format!("({}) {f}", i + 1))
            .collect();
        let one = if key == "oneOf" {
            "exactly one"
        } else {
            "one or more"
        };
        schema::describe(
            &mut root,
            &format!(
                "the arguments must match {one} of these forms: {}",
                listed.join("; ")
            ),
        );
        notes.push(format!(
            "relaxed: the root's `{key}` ({} forms) became one object with every form's properties; the forms are listed in its description",
            forms.len()
        ));
    }
    Ok(root)
}
