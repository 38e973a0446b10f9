//! What a server may ask of the host: roots, sampling and elicitation (spec `client/*`,
//! SPEC.md §7). A host that did not declare the capability refuses them; one that did, or a
//! gateway, forwards them. The types are complete enough for both.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::schema::common::Role;
use crate::schema::content::{BinaryContent, TextContent};
use crate::schema::tools::Tool;
use crate::wire::{JsonObject, wire_struct, wire_tagged_enum};

wire_struct! {
    /// A root: a `file://` URI the server may work in.
    pub struct Root {
        required {
            /// The URI.
            uri: String = "uri",
        }
        optional {
            /// A name for people.
            name: String = "name",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// The result of `roots/list`.
    pub struct ListRootsResult {
        required {
            /// The roots the user has exposed.
            roots: Vec<Root> = "roots",
        }
        optional {
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_tagged_enum! {
    /// Content allowed in a sampling message.
    pub enum SamplingContent {
        /// `text`.
        Text(TextContent) = "text",
        /// `image`.
        Image(BinaryContent) = "image",
        /// `audio`.
        Audio(BinaryContent) = "audio",
        /// `tool_use`: the model calls a tool the server offered in the request.
        ToolUse(ToolUseContent) = "tool_use",
        /// `tool_result`: the result of such a call.
        ToolResult(ToolResultContent) = "tool_result",
    }
}

wire_struct! {
    /// A `tool_use` block in sampling.
    pub struct ToolUseContent {
        required {
            /// Matches the `toolUseId` of the result.
            id: String = "id",
            /// The tool's name.
            name: String = "name",
            /// The arguments.
            input: JsonObject = "input",
        }
        optional {
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// A `tool_result` block in sampling.
    pub struct ToolResultContent {
        required {
            /// The `id` of the matching `tool_use`.
            tool_use_id: String = "toolUseId",
            /// The unstructured result.
            content: Vec<Value> = "content",
        }
        optional {
            /// The structured result.
            structured_content: Value = "structuredContent",
            /// Whether the tool failed.
            is_error: bool = "isError",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

/// One block or an array of blocks: sampling messages allow both since 2025-11-25.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum OneOrMany<T> {
    /// A single block.
    One(T),
    /// An array of blocks.
    Many(Vec<T>),
}

impl<T: Serialize> Serialize for OneOrMany<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::One(v) => v.serialize(serializer),
            Self::Many(v) => v.serialize(serializer),
        }
    }
}

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for OneOrMany<T> {
    /// Chooses by the JSON shape (array or not), never by trying one and then the other.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        match Value::deserialize(deserializer)? {
            Value::Array(items) => items
                .into_iter()
                .map(serde_json::from_value)
                .collect::<Result<Vec<T>, _>>()
                .map(Self::Many)
                .map_err(D::Error::custom),
            other => serde_json::from_value(other)
                .map(Self::One)
                .map_err(D::Error::custom),
        }
    }
}

wire_struct! {
    /// One message of a sampling conversation.
    pub struct SamplingMessage {
        required {
            /// Who says it.
            role: Role = "role",
            /// A block or an array of blocks.
            content: OneOrMany<SamplingContent> = "content",
        }
        optional {
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// Parameters of `sampling/createMessage`: the server asks the host's model for a reply.
    pub struct CreateMessageParams {
        required {
            /// The conversation.
            messages: Vec<SamplingMessage> = "messages",
            /// The most tokens to sample.
            max_tokens: u64 = "maxTokens",
        }
        optional {
            /// Model preferences: hints and priorities.
            model_preferences: JsonObject = "modelPreferences",
            /// A system prompt the host may change or drop.
            system_prompt: String = "systemPrompt",
            /// `none`, `thisServer` or `allServers` (soft-deprecated).
            include_context: String = "includeContext",
            /// Sampling temperature.
            temperature: serde_json::Number = "temperature",
            /// Stop sequences.
            stop_sequences: Vec<String> = "stopSequences",
            /// Provider-specific metadata.
            metadata: JsonObject = "metadata",
            /// Tools the model may call; only for a host that declared `sampling.tools`.
            tools: Vec<Tool> = "tools",
            /// `{mode: auto|required|none}`.
            tool_choice: JsonObject = "toolChoice",
            /// Task augmentation.
            task: JsonObject = "task",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// The result of `sampling/createMessage`.
    pub struct CreateMessageResult {
        required {
            /// Who speaks: the assistant.
            role: Role = "role",
            /// A block or an array of blocks.
            content: OneOrMany<SamplingContent> = "content",
            /// The model that answered.
            model: String = "model",
        }
        optional {
            /// `endTurn`, `stopSequence`, `maxTokens`, `toolUse`, or another string.
            stop_reason: String = "stopReason",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// Parameters of `elicitation/create`: the server asks the user for input, by a form or
    /// by sending them to a URL. A missing `mode` means form.
    pub struct ElicitParams {
        required {
            /// What to tell the user.
            message: String = "message",
        }
        optional {
            /// `form` (the default) or `url`.
            mode: String = "mode",
            /// Form mode: a flat object schema of primitive properties.
            requested_schema: JsonObject = "requestedSchema",
            /// URL mode: where to send the user.
            url: String = "url",
            /// URL mode: an id opaque to the client.
            elicitation_id: String = "elicitationId",
            /// Task augmentation.
            task: JsonObject = "task",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

impl ElicitParams {
    /// Whether this asks for URL mode (anything else is form mode).
    pub fn is_url_mode(&self) -> bool {
        self.mode.as_deref() == Some("url")
    }
}

wire_struct! {
    /// The result of `elicitation/create`.
    pub struct ElicitResult {
        required {
            /// `accept`, `decline` or `cancel`.
            action: String = "action",
        }
        optional {
            /// Form mode, on accept: the values.
            content: JsonObject = "content",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// Parameters of `notifications/elicitation/complete` (URL mode).
    pub struct ElicitationCompleteParams {
        required {
            /// The `elicitationId` of the finished request.
            elicitation_id: String = "elicitationId",
        }
        optional {
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// The `data` of a -32042 URL-elicitation-required error: the URL-mode elicitations the
    /// user must complete before the request can succeed. `@internal` in `schema.ts`, so
    /// written by hand from the spec text.
    pub struct UrlElicitationRequiredData {
        required {
            /// The elicitations, each in URL mode.
            elicitations: Vec<ElicitParams> = "elicitations",
        }
        optional {}
    }
}
