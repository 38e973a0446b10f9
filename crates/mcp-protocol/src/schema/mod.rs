//! The MCP 2025-11-25 types a host or a gateway touches (`schema/2025-11-25/schema.ts`), and
//! the methods that tie parameters to results.
//!
//! A result is decoded by the [`RequestMethod::Result`] of the request it answers, so the
//! shape is never guessed. Incoming requests and notifications are routed to a typed variant
//! by their `method` string; a method we do not know is kept whole in `Other`.

mod client_features;
mod common;
mod content;
mod lifecycle;
mod resources;
mod skills;
mod stateless;
mod tasks;
mod tools;
mod utilities;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::jsonrpc::RawJson;

pub use client_features::{
    CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult,
    ElicitationCompleteParams, ListRootsResult, OneOrMany, Root, SamplingContent, SamplingMessage,
    ToolResultContent, ToolUseContent, UrlElicitationRequiredData,
};
pub use common::{
    Annotations, EmptyParams, EmptyResult, Icon, Implementation, PaginatedParams, Role,
};
pub use content::{
    BinaryContent, ContentBlock, EmbeddedResource, ResourceContents, ResourceLink, TextContent,
};
pub use lifecycle::{
    ClientCapabilities, ElicitationCapability, InitializeParams, InitializeResult,
    ListChangedCapability, ResourcesCapability, RootsCapability, SamplingCapability,
    ServerCapabilities, supported_versions,
};
pub use resources::{
    GetPromptParams, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, Prompt, PromptArgument, PromptMessage, ReadResourceResult, Resource,
    ResourceTemplate, ResourceUriParams,
};
pub use skills::{
    DIGEST_PREFIX, DIRECTORY_MIME_TYPE, DYNAMIC_RESOURCES, GetSkillParams, GetSkillResult,
    ListSkillsResult, MAX_FILES_PER_SKILL, MAX_SKILL_BYTES, ReadDirectoryParams,
    ReadDirectoryResult, SKILL_MD, SKILL_MD_MIME_TYPE, SKILL_SCHEME, SKILLS_EXTENSION, SkillEntry,
    SkillFile, SkillResources, SkillsCapability, is_digest, skill_digest, skill_folder,
    skill_name_of,
};
pub use stateless::{
    AcknowledgedParams, CacheScope, DiscoverResult, InputRequest, InputRequiredResult,
    ListenParams, ResultType, SubscriptionFilter, is_input_required, meta_key,
};
pub(crate) use stateless::{Envelope, is_removed, may_need_input};
pub use tasks::{
    CreateTaskResult, DetailedTask, ExperimentalClientTasksCapability,
    ExperimentalCreateTaskResult, ExperimentalListTasksResult, ExperimentalTask,
    ExperimentalTaskRequests, ExperimentalTasksCapability, RELATED_TASK_META_KEY, RESULT_TYPE_TASK,
    RelatedTaskMetadata, TASKS_EXTENSION_ID, TaskError, TaskIdParams, TaskInfo, TaskMetadata,
    TaskStatus, TaskSupport, UpdateTaskParams, capabilities_declare_tasks,
    declares_tasks_extension, tasks_extension_entry,
};
pub use tools::{
    CallToolParams, CallToolResult, ListToolsResult, Tool, ToolAnnotations, ToolExecution,
};
pub use utilities::{
    CancelledParams, CompleteParams, CompleteResult, Completion, CompletionArgument,
    CompletionReference, LoggingLevel, LoggingMessageParams, ProgressParams, ProgressToken,
    PromptReference, ResourceTemplateReference, SetLevelParams,
};

/// A request method: its name, its parameters and the one result type that answers it.
pub trait RequestMethod {
    /// The method name on the wire.
    const METHOD: &'static str;
    /// The parameters.
    type Params: Serialize + DeserializeOwned;
    /// The result, the only shape a response to this method is decoded as.
    type Result: Serialize + DeserializeOwned;
}

/// A notification method: its name and its parameters.
pub trait NotificationMethod {
    /// The method name on the wire.
    const METHOD: &'static str;
    /// The parameters.
    type Params: Serialize + DeserializeOwned;
}

/// Decodes `params`, treating an absent member as `{}` so that a type with required members
/// reports which one is missing.
pub fn decode_params<T: DeserializeOwned>(
    params: Option<&RawJson>,
) -> Result<T, serde_json::Error> {
    match params {
        Some(raw) => raw.decode(),
        None => serde_json::from_str("{}"),
    }
}

macro_rules! methods {
    ($( $(#[$meta:meta])* $name:ident = $method:literal, $params:ty => $result:ty; )*) => {
        $(
            $(#[$meta])*
            #[derive(Debug, Clone, Copy)]
            #[non_exhaustive]
            pub struct $name;
            impl RequestMethod for $name {
                const METHOD: &'static str = $method;
                type Params = $params;
                type Result = $result;
            }
        )*
    };
}

macro_rules! notifications {
    ($( $(#[$meta:meta])* $name:ident = $method:literal, $params:ty; )*) => {
        $(
            $(#[$meta])*
            #[derive(Debug, Clone, Copy)]
            #[non_exhaustive]
            pub struct $name;
            impl NotificationMethod for $name {
                const METHOD: &'static str = $method;
                type Params = $params;
            }
        )*
    };
}

/// Request methods, one marker type each.
pub mod method {
    use super::*;

    use super::skills::{
        GetSkillParams, GetSkillResult, ListSkillsResult, ReadDirectoryParams, ReadDirectoryResult,
    };

    methods! {
        /// `initialize`: the first request of a handshake-era session.
        Initialize = "initialize", InitializeParams => InitializeResult;
        /// `ping`: either side checks the other is alive.
        Ping = "ping", EmptyParams => EmptyResult;
        /// `tools/list`, paginated.
        ListTools = "tools/list", PaginatedParams => ListToolsResult;
        /// `tools/call`.
        CallTool = "tools/call", CallToolParams => CallToolResult;
        /// `resources/list`, paginated.
        ListResources = "resources/list", PaginatedParams => ListResourcesResult;
        /// `resources/templates/list`, paginated.
        ListResourceTemplates = "resources/templates/list", PaginatedParams => ListResourceTemplatesResult;
        /// `resources/read`.
        ReadResource = "resources/read", ResourceUriParams => ReadResourceResult;
        /// `resources/subscribe`.
        Subscribe = "resources/subscribe", ResourceUriParams => EmptyResult;
        /// `resources/unsubscribe`.
        Unsubscribe = "resources/unsubscribe", ResourceUriParams => EmptyResult;
        /// `prompts/list`, paginated.
        ListPrompts = "prompts/list", PaginatedParams => ListPromptsResult;
        /// `prompts/get`.
        GetPrompt = "prompts/get", GetPromptParams => GetPromptResult;
        /// `completion/complete`.
        Complete = "completion/complete", CompleteParams => CompleteResult;
        /// `logging/setLevel`.
        SetLevel = "logging/setLevel", SetLevelParams => EmptyResult;
        /// `sampling/createMessage` (server to client).
        CreateMessage = "sampling/createMessage", CreateMessageParams => CreateMessageResult;
        /// `elicitation/create` (server to client).
        Elicit = "elicitation/create", ElicitParams => ElicitResult;
        /// `roots/list` (server to client).
        ListRoots = "roots/list", EmptyParams => ListRootsResult;
        /// `server/discover` (2026-07-28): the versions and capabilities of a stateless server.
        Discover = "server/discover", EmptyParams => DiscoverResult;
        /// `subscriptions/listen` (2026-07-28): a long-lived request whose stream carries the
        /// notifications the client opted in to.
        Listen = "subscriptions/listen", ListenParams => EmptyResult;
        /// `skills/list` (skills extension, SEP-2640), paginated.
        ListSkills = "skills/list", PaginatedParams => ListSkillsResult;
        /// `skills/get` (skills extension): one skill by the URI of its `SKILL.md`; -32602 for
        /// a URI the server does not serve as a skill.
        GetSkill = "skills/get", GetSkillParams => GetSkillResult;
        /// `resources/directory/read` (skills extension), paginated: a folder's direct
        /// children; -32602 for a URI that is not a folder.
        ReadDirectory = "resources/directory/read", ReadDirectoryParams => ReadDirectoryResult;
        /// `tasks/get` (tasks extension, 2026-07-28): the task, with its result, error or
        /// pending input requests inlined.
        GetTask = "tasks/get", TaskIdParams => DetailedTask;
        /// `tasks/update` (tasks extension, 2026-07-28): answers to a task's input requests.
        UpdateTask = "tasks/update", UpdateTaskParams => EmptyResult;
        /// `tasks/cancel` (tasks extension, 2026-07-28): an empty acknowledgement; the
        /// status is seen on the next `tasks/get`.
        CancelTask = "tasks/cancel", TaskIdParams => EmptyResult;
        /// `tasks/get` (2025-11-25 experimental): the task alone.
        GetExperimentalTask = "tasks/get", TaskIdParams => ExperimentalTask;
        /// `tasks/result` (2025-11-25 experimental): the original request's result, waiting
        /// for a terminal status. Removed by the 2026-07-28 extension.
        GetTaskPayload = "tasks/result", TaskIdParams => RawJson;
        /// `tasks/list` (2025-11-25 experimental), paginated. Removed by the 2026-07-28
        /// extension.
        ListTasks = "tasks/list", PaginatedParams => ExperimentalListTasksResult;
        /// `tasks/cancel` (2025-11-25 experimental): the task as cancelled.
        CancelExperimentalTask = "tasks/cancel", TaskIdParams => ExperimentalTask;
    }

    notifications! {
        /// `notifications/initialized`: the client has the initialize result.
        Initialized = "notifications/initialized", EmptyParams;
        /// `notifications/cancelled`: either side gives up on a request it sent.
        Cancelled = "notifications/cancelled", CancelledParams;
        /// `notifications/progress`: progress on a request that asked for it.
        Progress = "notifications/progress", ProgressParams;
        /// `notifications/message`: a log entry from the server.
        LoggingMessage = "notifications/message", LoggingMessageParams;
        /// `notifications/resources/updated`: a subscribed resource changed.
        ResourceUpdated = "notifications/resources/updated", ResourceUriParams;
        /// `notifications/resources/list_changed`.
        ResourceListChanged = "notifications/resources/list_changed", EmptyParams;
        /// `notifications/tools/list_changed`.
        ToolListChanged = "notifications/tools/list_changed", EmptyParams;
        /// `notifications/prompts/list_changed`.
        PromptListChanged = "notifications/prompts/list_changed", EmptyParams;
        /// `notifications/roots/list_changed`.
        RootsListChanged = "notifications/roots/list_changed", EmptyParams;
        /// `notifications/elicitation/complete`: a URL-mode elicitation finished.
        ElicitationComplete = "notifications/elicitation/complete", ElicitationCompleteParams;
        /// `notifications/subscriptions/acknowledged` (2026-07-28): the first message of a
        /// `subscriptions/listen` stream.
        SubscriptionsAcknowledged = "notifications/subscriptions/acknowledged", AcknowledgedParams;
        /// `notifications/tasks` (tasks extension, 2026-07-28): a task's status changed; a
        /// terminal one may inline its result or error.
        TaskUpdated = "notifications/tasks", DetailedTask;
        /// `notifications/tasks/status` (2025-11-25 experimental): a task's status changed.
        ExperimentalTaskStatus = "notifications/tasks/status", ExperimentalTask;
    }
}

macro_rules! routed {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident($marker:ident), )*
        }
        params = $assoc:ident;
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        // Requests are short-lived and moved once; boxing the large ones would buy nothing.
        #[allow(clippy::large_enum_variant)]
        pub enum $name {
            $( $(#[$vmeta])* $variant(<method::$marker as $assoc>::Params), )*
            /// A method this version of the crate does not route, kept whole.
            Other {
                /// The method name.
                method: String,
                /// The parameters as sent.
                params: Option<RawJson>,
            },
        }

        impl $name {
            /// Routes by `method` and decodes the parameters by that method's type.
            pub fn decode(method: &str, params: Option<&RawJson>) -> Result<Self, serde_json::Error> {
                match method {
                    $( <method::$marker as $assoc>::METHOD => decode_params(params).map(Self::$variant), )*
                    _ => Ok(Self::Other { method: method.to_owned(), params: params.cloned() }),
                }
            }

            /// The method name on the wire.
            pub fn method(&self) -> &str {
                match self {
                    $( Self::$variant(_) => <method::$marker as $assoc>::METHOD, )*
                    Self::Other { method, .. } => method,
                }
            }

            /// The parameters' `_meta`, where protocol metadata such as `progressToken` lives.
            pub fn meta(&self) -> Option<&crate::JsonObject> {
                match self {
                    $( Self::$variant(p) => p.meta.as_ref(), )*
                    Self::Other { .. } => None,
                }
            }

            /// The progress token the sender put in `_meta`, if any.
            pub fn progress_token(&self) -> Option<ProgressToken> {
                serde_json::from_value(self.meta()?.get("progressToken")?.clone()).ok()
            }

            /// Encodes the parameters.
            pub fn encode_params(&self) -> Result<Option<RawJson>, serde_json::Error> {
                match self {
                    $( Self::$variant(p) => RawJson::encode(p).map(Some), )*
                    Self::Other { params, .. } => Ok(params.clone()),
                }
            }
        }
    };
}

routed! {
    /// A request a client sends to a server, routed by method.
    pub enum ClientRequest {
        /// `initialize`.
        Initialize(Initialize),
        /// `ping`.
        Ping(Ping),
        /// `tools/list`.
        ListTools(ListTools),
        /// `tools/call`.
        CallTool(CallTool),
        /// `resources/list`.
        ListResources(ListResources),
        /// `resources/templates/list`.
        ListResourceTemplates(ListResourceTemplates),
        /// `resources/read`.
        ReadResource(ReadResource),
        /// `resources/subscribe`.
        Subscribe(Subscribe),
        /// `resources/unsubscribe`.
        Unsubscribe(Unsubscribe),
        /// `prompts/list`.
        ListPrompts(ListPrompts),
        /// `prompts/get`.
        GetPrompt(GetPrompt),
        /// `completion/complete`.
        Complete(Complete),
        /// `logging/setLevel`.
        SetLevel(SetLevel),
        /// `server/discover`.
        Discover(Discover),
        /// `subscriptions/listen`.
        Listen(Listen),
        /// `tasks/get` (both forms of tasks).
        GetTask(GetTask),
        /// `tasks/update` (tasks extension).
        UpdateTask(UpdateTask),
        /// `tasks/cancel` (both forms of tasks).
        CancelTask(CancelTask),
        /// `tasks/result` (2025-11-25 experimental tasks).
        GetTaskPayload(GetTaskPayload),
        /// `tasks/list` (2025-11-25 experimental tasks).
        ListTasks(ListTasks),
        /// `skills/list` (skills extension).
        ListSkills(ListSkills),
        /// `skills/get` (skills extension).
        GetSkill(GetSkill),
        /// `resources/directory/read` (skills extension, with `directoryRead`).
        ReadDirectory(ReadDirectory),
    }
    params = RequestMethod;
}

routed! {
    /// A request a server sends to a client, routed by method.
    pub enum ServerRequest {
        /// `ping`.
        Ping(Ping),
        /// `sampling/createMessage`.
        CreateMessage(CreateMessage),
        /// `elicitation/create`.
        Elicit(Elicit),
        /// `roots/list`.
        ListRoots(ListRoots),
    }
    params = RequestMethod;
}

routed! {
    /// A notification a client sends to a server, routed by method.
    pub enum ClientNotification {
        /// `notifications/initialized`.
        Initialized(Initialized),
        /// `notifications/cancelled`.
        Cancelled(Cancelled),
        /// `notifications/progress`.
        Progress(Progress),
        /// `notifications/roots/list_changed`.
        RootsListChanged(RootsListChanged),
    }
    params = NotificationMethod;
}

routed! {
    /// A notification a server sends to a client, routed by method.
    pub enum ServerNotification {
        /// `notifications/cancelled`.
        Cancelled(Cancelled),
        /// `notifications/progress`.
        Progress(Progress),
        /// `notifications/message`.
        LoggingMessage(LoggingMessage),
        /// `notifications/resources/updated`.
        ResourceUpdated(ResourceUpdated),
        /// `notifications/resources/list_changed`.
        ResourceListChanged(ResourceListChanged),
        /// `notifications/tools/list_changed`.
        ToolListChanged(ToolListChanged),
        /// `notifications/prompts/list_changed`.
        PromptListChanged(PromptListChanged),
        /// `notifications/elicitation/complete`.
        ElicitationComplete(ElicitationComplete),
        /// `notifications/subscriptions/acknowledged`.
        SubscriptionsAcknowledged(SubscriptionsAcknowledged),
    }
    params = NotificationMethod;
}
