//! Resources and prompts (spec `server/resources.mdx`, `server/prompts.mdx`; SPEC.md §6.3–6.4).

use crate::jsonrpc::RawJson;
use crate::schema::common::{Annotations, Icon, Role};
use crate::schema::content::{ContentBlock, ResourceContents};
use crate::wire::{JsonObject, PageRef, wire_struct};

wire_struct! {
    /// A resource a server offers.
    pub struct Resource {
        required {
            /// Its URI.
            uri: String = "uri",
            /// Its programmatic name.
            name: String = "name",
        }
        optional {
            /// A name for people.
            title: String = "title",
            /// What it is.
            description: String = "description",
            /// Its MIME type.
            mime_type: String = "mimeType",
            /// Its size in bytes.
            size: u64 = "size",
            /// Icons.
            icons: Vec<Icon> = "icons",
            /// Audience and priority hints.
            annotations: Annotations = "annotations",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// A family of resources named by an RFC 6570 URI template.
    pub struct ResourceTemplate {
        required {
            /// The URI template.
            uri_template: String = "uriTemplate",
            /// Its programmatic name.
            name: String = "name",
        }
        optional {
            /// A name for people.
            title: String = "title",
            /// What it is.
            description: String = "description",
            /// The MIME type of every match, if they share one.
            mime_type: String = "mimeType",
            /// Icons.
            icons: Vec<Icon> = "icons",
            /// Audience and priority hints.
            annotations: Annotations = "annotations",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// The result of `resources/list`.
    pub struct ListResourcesResult {
        required {
            /// This page of resources.
            resources: Vec<Resource> = "resources",
        }
        optional {
            /// The cursor of the next page.
            next_cursor: String = "nextCursor",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

impl ListResourcesResult {
    /// Encodes one page of resources that the caller keeps, as a `ListResourcesResult` of
    /// copies of them would encode, without the copies (see
    /// [`ListToolsResult::encode_page`](crate::schema::ListToolsResult::encode_page)).
    pub fn encode_page(
        resources: &[Resource],
        next_cursor: Option<&str>,
    ) -> Result<RawJson, serde_json::Error> {
        PageRef {
            key: "resources",
            items: resources,
            next_cursor,
        }
        .encode()
    }
}

wire_struct! {
    /// The result of `resources/templates/list`.
    pub struct ListResourceTemplatesResult {
        required {
            /// This page of templates.
            resource_templates: Vec<ResourceTemplate> = "resourceTemplates",
        }
        optional {
            /// The cursor of the next page.
            next_cursor: String = "nextCursor",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

impl ListResourceTemplatesResult {
    /// Encodes one page of resource templates that the caller keeps, as a `ListResourceTemplatesResult` of
    /// copies of them would encode, without the copies (see
    /// [`ListToolsResult::encode_page`](crate::schema::ListToolsResult::encode_page)).
    pub fn encode_page(
        templates: &[ResourceTemplate],
        next_cursor: Option<&str>,
    ) -> Result<RawJson, serde_json::Error> {
        PageRef {
            key: "resourceTemplates",
            items: templates,
            next_cursor,
        }
        .encode()
    }
}

wire_struct! {
    /// Parameters naming one resource: `resources/read`, `resources/subscribe`,
    /// `resources/unsubscribe`, and `notifications/resources/updated`.
    pub struct ResourceUriParams {
        required {
            /// The resource's URI.
            uri: String = "uri",
        }
        optional {
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// The result of `resources/read`: one or more contents.
    pub struct ReadResourceResult {
        required {
            /// The contents, the resource and possibly sub-resources.
            contents: Vec<ResourceContents> = "contents",
        }
        optional {
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// A prompt template a server offers.
    pub struct Prompt {
        required {
            /// Its programmatic name.
            name: String = "name",
        }
        optional {
            /// A name for people.
            title: String = "title",
            /// What it is for.
            description: String = "description",
            /// The arguments it takes.
            arguments: Vec<PromptArgument> = "arguments",
            /// Icons.
            icons: Vec<Icon> = "icons",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// One argument of a prompt.
    pub struct PromptArgument {
        required {
            /// Its name.
            name: String = "name",
        }
        optional {
            /// A name for people.
            title: String = "title",
            /// What it means.
            description: String = "description",
            /// Whether it must be given.
            required: bool = "required",
        }
    }
}

wire_struct! {
    /// The result of `prompts/list`.
    pub struct ListPromptsResult {
        required {
            /// This page of prompts.
            prompts: Vec<Prompt> = "prompts",
        }
        optional {
            /// The cursor of the next page.
            next_cursor: String = "nextCursor",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

impl ListPromptsResult {
    /// Encodes one page of prompts that the caller keeps, as a `ListPromptsResult` of
    /// copies of them would encode, without the copies (see
    /// [`ListToolsResult::encode_page`](crate::schema::ListToolsResult::encode_page)).
    pub fn encode_page(
        prompts: &[Prompt],
        next_cursor: Option<&str>,
    ) -> Result<RawJson, serde_json::Error> {
        PageRef {
            key: "prompts",
            items: prompts,
            next_cursor,
        }
        .encode()
    }
}

wire_struct! {
    /// Parameters of `prompts/get`.
    pub struct GetPromptParams {
        required {
            /// The prompt's name.
            name: String = "name",
        }
        optional {
            /// Argument values, all strings.
            arguments: std::collections::BTreeMap<String, String> = "arguments",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// The result of `prompts/get`.
    pub struct GetPromptResult {
        required {
            /// The messages of the filled-in prompt.
            messages: Vec<PromptMessage> = "messages",
        }
        optional {
            /// What the prompt is for.
            description: String = "description",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// One message of a prompt.
    pub struct PromptMessage {
        required {
            /// Who says it.
            role: Role = "role",
            /// What is said.
            content: ContentBlock = "content",
        }
        optional {}
    }
}
