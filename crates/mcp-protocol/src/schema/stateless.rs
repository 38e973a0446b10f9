//! The types the 2026-07-28 revision adds (`schema/2026-07-28/schema.ts`): `server/discover`,
//! the per-request `_meta` keys, `resultType`, multi round-trip results, cache scopes and
//! `subscriptions/listen`.
//!
//! A handshake-era message never carries any of these, so they live apart from the 2025-11-25
//! types; the shapes those share (capabilities, `Implementation`) are the same types.

use crate::jsonrpc::RawJson;
use crate::schema::common::Implementation;
use crate::schema::lifecycle::ServerCapabilities;
use crate::wire::{JsonObject, wire_str_enum, wire_struct};

/// The reserved `_meta` keys of the stateless era (`basic/index.mdx` §_meta). Every request
/// carries the first two; a server rejects a request without them with -32602.
pub mod meta_key {
    /// What every key the protocol itself defines starts with: the envelope's members, which a
    /// proxy strips from what it relays so that its own session adds its own.
    pub const PREFIX: &str = "io.modelcontextprotocol/";
    /// The revision this request speaks; on HTTP equal to the `MCP-Protocol-Version` header.
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    /// What the client can do, for this request only: servers may not remember it.
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    /// Who the client is (SHOULD; the conformance suite warns without it).
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    /// The log level wanted for this request; without it the server sends no log entries.
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    /// Who the server is, on a result's `_meta`.
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    /// The `subscriptions/listen` request a notification belongs to.
    pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
}

/// Whether the stateless era removed a request that the handshake era has (`initialize`,
/// `ping`, `logging/setLevel`, `resources/subscribe`, `resources/unsubscribe`): a client does
/// not send it, a server answers it -32601.
pub(crate) fn is_removed(method: &str) -> bool {
    matches!(
        method,
        "initialize"
            | "ping"
            | "logging/setLevel"
            | "resources/subscribe"
            | "resources/unsubscribe"
    )
}

/// Whether a method's result may be `input_required` (`basic/patterns/mrtr.mdx`).
pub(crate) fn may_need_input(method: &str) -> bool {
    matches!(method, "tools/call" | "prompts/get" | "resources/read")
}

wire_str_enum! {
    /// What kind of result a stateless-era response carries (`schema.ts` `ResultType`). An
    /// absent member means `complete` (older servers); an unknown value makes the result
    /// invalid, because the client cannot know how to read it.
    pub enum ResultType {
        /// The final answer.
        Complete = "complete",
        /// The server needs input first: an [`InputRequiredResult`].
        InputRequired = "input_required",
    }
}

wire_str_enum! {
    /// Who may reuse a cached result (`schema.ts` `CacheableResult.cacheScope`).
    pub enum CacheScope {
        /// Holds no user data: any cache may serve it across authorization contexts.
        Public = "public",
        /// Reusable only within the same authorization context (the same access token).
        Private = "private",
    }
}

wire_struct! {
    /// The result of `server/discover` (`schema.ts` `DiscoverResult`): the versions and
    /// capabilities of a stateless-era server. Every member is optional here because a
    /// handshake-era server (or a mock) may answer with `{}`; the session classifies the
    /// answer by `supportedVersions` alone.
    pub struct DiscoverResult {
        required {}
        optional {
            /// The revisions the server speaks; a modern one among them makes it modern.
            supported_versions: Vec<String> = "supportedVersions",
            /// What the server offers.
            capabilities: ServerCapabilities = "capabilities",
            /// A hint for the model. Untrusted.
            instructions: String = "instructions",
            /// Who the server is, in the body, where some servers still put it.
            server_info: Implementation = "serverInfo",
            /// Always `complete` here.
            result_type: ResultType = "resultType",
            /// Result metadata: `io.modelcontextprotocol/serverInfo`.
            meta: JsonObject = "_meta",
        }
    }
}

impl DiscoverResult {
    /// Who the server says it is: `_meta`'s `serverInfo`, else the body's.
    pub fn implementation(&self) -> Option<Implementation> {
        self.meta
            .as_ref()
            .and_then(|m| m.get(meta_key::SERVER_INFO))
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .or_else(|| self.server_info.clone())
    }
}

wire_struct! {
    /// One request the server needs the client to fulfil before it retries (`schema.ts`
    /// `InputRequest`): `elicitation/create`, `sampling/createMessage` or `roots/list`,
    /// without the JSON-RPC envelope.
    pub struct InputRequest {
        required {
            /// The method, as a server-to-client request would name it.
            method: String = "method",
        }
        optional {
            /// Its parameters.
            params: RawJson = "params",
        }
    }
}

wire_struct! {
    /// A result saying that the server needs input before it can answer (`schema.ts`
    /// `InputRequiredResult`). Only `tools/call`, `prompts/get` and `resources/read` may
    /// answer with it.
    pub struct InputRequiredResult {
        required {}
        optional {
            /// What to ask, by a key the server chose; the answers go back under the same keys.
            input_requests: std::collections::BTreeMap<String, InputRequest> = "inputRequests",
            /// Opaque state to echo byte for byte on the retry, and never invented.
            request_state: String = "requestState",
            /// `input_required`.
            result_type: ResultType = "resultType",
            /// Result metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// Which notifications a `subscriptions/listen` stream carries (`schema.ts`
    /// `SubscriptionFilter`); each kind is opt-in.
    pub struct SubscriptionFilter {
        required {}
        optional {
            /// `notifications/tools/list_changed`.
            tools_list_changed: bool = "toolsListChanged",
            /// `notifications/prompts/list_changed`.
            prompts_list_changed: bool = "promptsListChanged",
            /// `notifications/resources/list_changed`.
            resources_list_changed: bool = "resourcesListChanged",
            /// `notifications/resources/updated` for these URIs.
            resource_subscriptions: Vec<String> = "resourceSubscriptions",
        }
    }
}

wire_struct! {
    /// Parameters of `subscriptions/listen`.
    pub struct ListenParams {
        required {
            /// What the client opts in to.
            notifications: SubscriptionFilter = "notifications",
        }
        optional {
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// Parameters of `notifications/subscriptions/acknowledged`: the part of the filter the
    /// server agreed to honour.
    pub struct AcknowledgedParams {
        required {
            /// What the stream will carry.
            notifications: SubscriptionFilter = "notifications",
        }
        optional {
            /// Notification metadata: the `subscriptionId`.
            meta: JsonObject = "_meta",
        }
    }
}

/// Whether a result says `resultType: "input_required"`: for a proxy that passes such results
/// on as they came ([`RequestOptions::passing_input_required`](crate::RequestOptions)) and
/// must tell them from final ones without decoding them as its method's type.
pub fn is_input_required(result: &RawJson) -> bool {
    Envelope::peek(result).is_ok_and(|e| e.result_type == ResultType::InputRequired)
}

/// The members of a result object that only the stateless era defines: what the session reads
/// before the result goes to the type its method defines.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Envelope {
    pub(crate) result_type: ResultType,
}

impl Envelope {
    /// Peeks at `resultType` without decoding the rest of the result.
    ///
    /// Every stateless-era answer is peeked at before it reaches its caller, so the common
    /// case (an object whose `resultType`, if any, is a plain string) is found by structure
    /// alone, without the full decode serde would make of a 1 MiB text it then drops; the
    /// rest, errors included, goes through serde.
    pub(crate) fn peek(raw: &RawJson) -> Result<Self, serde_json::Error> {
        match crate::scan::top_level_string(raw.get(), "resultType") {
            Some(crate::scan::Member::Absent) => {
                return Ok(Self {
                    result_type: ResultType::Complete,
                });
            }
            Some(crate::scan::Member::Plain(s)) => {
                return Ok(Self {
                    result_type: ResultType::from(s),
                });
            }
            None => {}
        }
        #[derive(serde::Deserialize)]
        struct Peek<'a> {
            #[serde(rename = "resultType", borrow, default)]
            result_type: Option<std::borrow::Cow<'a, str>>,
        }
        let peek: Peek<'_> = raw.decode()?;
        Ok(Self {
            result_type: peek
                .result_type
                .map_or(ResultType::Complete, |s| ResultType::from(&*s)),
        })
    }
}
