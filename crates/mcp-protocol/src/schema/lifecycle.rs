//! `initialize` and the capability sets (spec `basic/lifecycle.mdx`, SPEC.md §1).
//!
//! Every capability object keeps the keys it does not know: capabilities are an open set.

use serde_json::Value;

use crate::schema::common::Implementation;
use crate::version::ProtocolVersion;
use crate::wire::{JsonObject, wire_struct};

wire_struct! {
    /// What a client offers (`schema.ts` `ClientCapabilities`). A capability is declared by
    /// being present; the session refuses server requests for any that is absent.
    pub struct ClientCapabilities {
        required {}
        optional {
            /// `roots/list` support.
            roots: RootsCapability = "roots",
            /// `sampling/createMessage` support: `{context?, tools?}`.
            sampling: SamplingCapability = "sampling",
            /// `elicitation/create` support: `{form?, url?}`; `{}` means form only.
            elicitation: ElicitationCapability = "elicitation",
            /// Experimental tasks support, kept as sent.
            tasks: JsonObject = "tasks",
            /// Non-standard capabilities.
            experimental: JsonObject = "experimental",
        }
    }
}

wire_struct! {
    /// The `roots` client capability.
    pub struct RootsCapability {
        required {}
        optional {
            /// Whether the client sends `notifications/roots/list_changed`.
            list_changed: bool = "listChanged",
        }
    }
}

wire_struct! {
    /// The `sampling` client capability.
    pub struct SamplingCapability {
        required {}
        optional {
            /// Support for `includeContext` other than `none` (soft-deprecated).
            context: JsonObject = "context",
            /// Support for `tools` and `toolChoice` in sampling requests.
            tools: JsonObject = "tools",
        }
    }
}

wire_struct! {
    /// The `elicitation` client capability.
    pub struct ElicitationCapability {
        required {}
        optional {
            /// Form mode.
            form: JsonObject = "form",
            /// URL mode.
            url: JsonObject = "url",
        }
    }
}

impl ElicitationCapability {
    /// Whether form mode is declared; an empty object means form only (backwards compatibility).
    pub fn supports_form(&self) -> bool {
        self.form.is_some() || self.url.is_none()
    }

    /// Whether URL mode is declared.
    pub fn supports_url(&self) -> bool {
        self.url.is_some()
    }
}

wire_struct! {
    /// What a server offers (`schema.ts` `ServerCapabilities`).
    pub struct ServerCapabilities {
        required {}
        optional {
            /// The server may send `notifications/message`.
            logging: JsonObject = "logging",
            /// `completion/complete` support.
            completions: JsonObject = "completions",
            /// Prompts, and whether their list changes.
            prompts: ListChangedCapability = "prompts",
            /// Resources, subscriptions, and whether their list changes.
            resources: ResourcesCapability = "resources",
            /// Tools, and whether their list changes.
            tools: ListChangedCapability = "tools",
            /// Experimental tasks support, kept as sent.
            tasks: JsonObject = "tasks",
            /// Non-standard capabilities.
            experimental: JsonObject = "experimental",
        }
    }
}

wire_struct! {
    /// A capability whose only flag is `listChanged` (`prompts`, `tools`).
    pub struct ListChangedCapability {
        required {}
        optional {
            /// Whether the server sends the matching list_changed notification.
            list_changed: bool = "listChanged",
        }
    }
}

wire_struct! {
    /// The `resources` server capability.
    pub struct ResourcesCapability {
        required {}
        optional {
            /// `resources/subscribe` support.
            subscribe: bool = "subscribe",
            /// Whether the server sends `notifications/resources/list_changed`.
            list_changed: bool = "listChanged",
        }
    }
}

wire_struct! {
    /// Parameters of `initialize`.
    pub struct InitializeParams {
        required {
            /// The version the client wants; the newest it supports.
            protocol_version: ProtocolVersion = "protocolVersion",
            /// What the client offers.
            capabilities: ClientCapabilities = "capabilities",
            /// Who the client is.
            client_info: Implementation = "clientInfo",
        }
        optional {
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// The result of `initialize`.
    pub struct InitializeResult {
        required {
            /// The version the server chose; the client disconnects if it does not support it.
            protocol_version: ProtocolVersion = "protocolVersion",
            /// What the server offers.
            capabilities: ServerCapabilities = "capabilities",
            /// Who the server is.
            server_info: Implementation = "serverInfo",
        }
        optional {
            /// A hint for the model, which the host may put in its system prompt. Untrusted.
            instructions: String = "instructions",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

/// The `data` of an unsupported-version error: the versions the server would accept.
pub fn supported_versions(data: Option<&Value>) -> Vec<&str> {
    data.and_then(|d| d.get("supported"))
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}
