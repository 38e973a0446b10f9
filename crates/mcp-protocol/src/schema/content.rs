//! Content blocks (`schema.ts` `ContentBlock`, SPEC.md §6.2) and resource contents.

use crate::schema::common::{Annotations, Icon};
use crate::wire::{JsonObject, wire_struct, wire_tagged_enum};

wire_tagged_enum! {
    /// One piece of content in a tool result or a prompt message, tagged by `type`.
    pub enum ContentBlock {
        /// `text`.
        Text(TextContent) = "text",
        /// `image`: base64 data and a MIME type.
        Image(BinaryContent) = "image",
        /// `audio`: base64 data and a MIME type.
        Audio(BinaryContent) = "audio",
        /// `resource_link`: a pointer to a resource, not necessarily listed.
        ResourceLink(ResourceLink) = "resource_link",
        /// `resource`: an embedded resource.
        Resource(EmbeddedResource) = "resource",
    }
}

impl ContentBlock {
    /// A text block, the common case.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(TextContent::new(text.into()))
    }
}

wire_struct! {
    /// A `text` content block.
    pub struct TextContent {
        required {
            /// The text.
            text: String = "text",
        }
        optional {
            /// Audience and priority hints.
            annotations: Annotations = "annotations",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// An `image` or `audio` content block.
    pub struct BinaryContent {
        required {
            /// Base64-encoded bytes.
            data: String = "data",
            /// The claimed MIME type.
            mime_type: String = "mimeType",
        }
        optional {
            /// Audience and priority hints.
            annotations: Annotations = "annotations",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// A `resource_link` content block: the shape of a `Resource`.
    pub struct ResourceLink {
        required {
            /// The resource's URI.
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
    /// A `resource` content block: contents embedded in the message.
    pub struct EmbeddedResource {
        required {
            /// The contents.
            resource: ResourceContents = "resource",
        }
        optional {
            /// Audience and priority hints.
            annotations: Annotations = "annotations",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// The contents of a resource: text or base64 blob (`TextResourceContents` |
    /// `BlobResourceContents`). One struct rather than an untagged union: which one it is
    /// follows from which member is present.
    pub struct ResourceContents {
        required {
            /// The URI of this (sub-)resource.
            uri: String = "uri",
        }
        optional {
            /// Its MIME type.
            mime_type: String = "mimeType",
            /// Text contents.
            text: String = "text",
            /// Base64-encoded binary contents.
            blob: String = "blob",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}
