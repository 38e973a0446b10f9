//! Completion, logging, progress, cancellation (spec `server/utilities/*`,
//! `basic/utilities/*`; SPEC.md §2.3, §2.4, §6.5, §6.6).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::jsonrpc::RequestId;
use crate::wire::{JsonObject, wire_str_enum, wire_struct, wire_tagged_enum};

/// A progress token: a string or an integer, unique among the sender's active requests.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProgressToken(pub RequestId);

impl fmt::Display for ProgressToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl Serialize for ProgressToken {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ProgressToken {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        RequestId::deserialize(deserializer).map(Self)
    }
}

wire_struct! {
    /// Parameters of `notifications/progress`.
    pub struct ProgressParams {
        required {
            /// The token of the request this reports on.
            progress_token: ProgressToken = "progressToken",
            /// Progress so far; increases with every notification. Kept as the JSON number sent
            /// (integer or not) so that a forwarded notification is unchanged.
            progress: serde_json::Number = "progress",
        }
        optional {
            /// The total, when known.
            total: serde_json::Number = "total",
            /// A message for people.
            message: String = "message",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// Parameters of `notifications/cancelled`.
    pub struct CancelledParams {
        required {}
        optional {
            /// The request to cancel; required for every request that is not a task.
            request_id: RequestId = "requestId",
            /// Why, for logs.
            reason: String = "reason",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_str_enum! {
    /// Log severity, RFC 5424 (`schema.ts` `LoggingLevel`).
    pub enum LoggingLevel {
        /// Debug.
        Debug = "debug",
        /// Info.
        Info = "info",
        /// Notice.
        Notice = "notice",
        /// Warning.
        Warning = "warning",
        /// Error.
        Error = "error",
        /// Critical.
        Critical = "critical",
        /// Alert.
        Alert = "alert",
        /// Emergency.
        Emergency = "emergency",
    }
}

impl LoggingLevel {
    /// How severe the level is, from 0 (`debug`) to 7 (`emergency`): an entry is sent when it
    /// is at least as severe as the level asked for. `None` for a level this crate does not
    /// know.
    pub fn severity(&self) -> Option<u8> {
        Some(match self {
            Self::Debug => 0,
            Self::Info => 1,
            Self::Notice => 2,
            Self::Warning => 3,
            Self::Error => 4,
            Self::Critical => 5,
            Self::Alert => 6,
            Self::Emergency => 7,
            Self::Other(_) => return None,
        })
    }
}

wire_struct! {
    /// Parameters of `logging/setLevel`.
    pub struct SetLevelParams {
        required {
            /// The least severe level the client wants.
            level: LoggingLevel = "level",
        }
        optional {
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// Parameters of `notifications/message`: a log entry from the server. Untrusted text.
    pub struct LoggingMessageParams {
        required {
            /// Severity.
            level: LoggingLevel = "level",
            /// The entry, any JSON.
            data: Value = "data",
        }
        optional {
            /// The logger's name.
            logger: String = "logger",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_tagged_enum! {
    /// What a completion request completes an argument of.
    pub enum CompletionReference {
        /// `ref/prompt`: a prompt's argument.
        Prompt(PromptReference) = "ref/prompt",
        /// `ref/resource`: a resource template's variable.
        Resource(ResourceTemplateReference) = "ref/resource",
    }
}

wire_struct! {
    /// A reference to a prompt by name.
    pub struct PromptReference {
        required {
            /// The prompt's name.
            name: String = "name",
        }
        optional {
            /// A name for people.
            title: String = "title",
        }
    }
}

wire_struct! {
    /// A reference to a resource template by its URI template.
    pub struct ResourceTemplateReference {
        required {
            /// The URI or URI template.
            uri: String = "uri",
        }
        optional {}
    }
}

wire_struct! {
    /// The argument being completed.
    pub struct CompletionArgument {
        required {
            /// Its name.
            name: String = "name",
            /// What has been typed so far.
            value: String = "value",
        }
        optional {}
    }
}

wire_struct! {
    /// Parameters of `completion/complete`.
    pub struct CompleteParams {
        required {
            /// What is being completed.
            reference: CompletionReference = "ref",
            /// The argument and its partial value.
            argument: CompletionArgument = "argument",
        }
        optional {
            /// Values of arguments already resolved: `{arguments?: {name: value}}`.
            context: JsonObject = "context",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// The result of `completion/complete`.
    pub struct CompleteResult {
        required {
            /// The suggestions.
            completion: Completion = "completion",
        }
        optional {
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// Suggested values.
    pub struct Completion {
        required {
            /// At most 100 values.
            values: Vec<String> = "values",
        }
        optional {
            /// How many exist in all.
            total: u64 = "total",
            /// Whether more exist than were sent.
            has_more: bool = "hasMore",
        }
    }
}
