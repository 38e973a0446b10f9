//! Types shared by several areas of the schema: implementation info, icons, annotations, roles,
//! pagination, and the empty parameter and result objects.

use crate::wire::{JsonObject, wire_str_enum, wire_struct};

wire_struct! {
    /// The name and version of an MCP implementation (`schema.ts` `Implementation`).
    pub struct Implementation {
        required {
            /// The programmatic name.
            name: String = "name",
            /// The version string.
            version: String = "version",
        }
        optional {
            /// A name for people.
            title: String = "title",
            /// What the implementation is for (new in 2025-11-25).
            description: String = "description",
            /// Icons, for UIs (new in 2025-11-25); untrusted, see SPEC.md §2.8.
            icons: Vec<Icon> = "icons",
            /// A web site (new in 2025-11-25).
            website_url: String = "websiteUrl",
        }
    }
}

wire_struct! {
    /// An icon a UI may show (`schema.ts` `Icon`). Its `src` is untrusted: only `https:` and
    /// `data:` may ever be fetched.
    pub struct Icon {
        required {
            /// A URI: `https:` or `data:`.
            src: String = "src",
        }
        optional {
            /// The claimed MIME type, to be checked against the bytes.
            mime_type: String = "mimeType",
            /// Sizes such as `48x48` or `any`.
            sizes: Vec<String> = "sizes",
            /// `light` or `dark`.
            theme: String = "theme",
        }
    }
}

wire_str_enum! {
    /// Who a message or a piece of content is for (`schema.ts` `Role`).
    pub enum Role {
        /// The person using the host.
        User = "user",
        /// The model.
        Assistant = "assistant",
    }
}

wire_struct! {
    /// Hints on content about audience, priority and age (`schema.ts` `Annotations`).
    pub struct Annotations {
        required {}
        optional {
            /// Who the content is for.
            audience: Vec<Role> = "audience",
            /// 0 to 1; 1 means effectively required.
            priority: serde_json::Number = "priority",
            /// ISO 8601 time of the last change.
            last_modified: String = "lastModified",
        }
    }
}

wire_struct! {
    /// Parameters that carry nothing but `_meta`: `ping`, `notifications/initialized`, the
    /// list_changed notifications.
    pub struct EmptyParams {
        required {}
        optional {
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// A result that carries nothing but `_meta`: `ping`, `logging/setLevel`, subscriptions.
    pub struct EmptyResult {
        required {}
        optional {
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// Parameters of the paginated list methods (spec `server/utilities/pagination.mdx`).
    pub struct PaginatedParams {
        required {}
        optional {
            /// An opaque cursor from the previous page's `nextCursor`.
            cursor: String = "cursor",
            /// Protocol metadata, such as `progressToken`.
            meta: JsonObject = "_meta",
        }
    }
}
