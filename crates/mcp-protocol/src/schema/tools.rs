//! Tools (spec `server/tools.mdx`, SPEC.md §6.1).
//!
//! Everything here comes from a server and is untrusted: names, descriptions, schemas and
//! annotations are data to show and check, never instructions.

use serde_json::Value;

use crate::jsonrpc::RawJson;
use crate::schema::common::Icon;
use crate::schema::content::ContentBlock;
use crate::wire::{JsonObject, PageRef, wire_struct};

wire_struct! {
    /// A tool a server offers.
    pub struct Tool {
        required {
            /// The programmatic name, unique within the server.
            name: String = "name",
        }
        optional {
            /// A name for people; takes precedence over `annotations.title`.
            title: String = "title",
            /// What the tool does, for the model.
            description: String = "description",
            /// The JSON Schema of the arguments. The spec requires it; a server that leaves it
            /// out still decodes, and the host applies its fallback schema.
            input_schema: Value = "inputSchema",
            /// The JSON Schema of `structuredContent`.
            output_schema: Value = "outputSchema",
            /// Behaviour hints; untrusted unless the server is.
            annotations: ToolAnnotations = "annotations",
            /// Task support.
            execution: ToolExecution = "execution",
            /// Icons.
            icons: Vec<Icon> = "icons",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

impl Tool {
    /// The name to show a person: `title`, then `annotations.title`, then `name`.
    pub fn display_name(&self) -> &str {
        self.title
            .as_deref()
            .or_else(|| self.annotations.as_ref()?.title.as_deref())
            .unwrap_or(&self.name)
    }
}

wire_struct! {
    /// Hints about a tool's behaviour (`schema.ts` `ToolAnnotations`). Hints only.
    pub struct ToolAnnotations {
        required {}
        optional {
            /// A name for people.
            title: String = "title",
            /// The tool does not change its environment (default false).
            read_only_hint: bool = "readOnlyHint",
            /// The tool may destroy things (default true).
            destructive_hint: bool = "destructiveHint",
            /// Calling twice with the same arguments has no further effect (default false).
            idempotent_hint: bool = "idempotentHint",
            /// The tool reaches outside a closed world (default true).
            open_world_hint: bool = "openWorldHint",
        }
    }
}

wire_struct! {
    /// How a tool may be executed (`schema.ts` `ToolExecution`).
    pub struct ToolExecution {
        required {}
        optional {
            /// `forbidden` (default), `optional` or `required`.
            task_support: String = "taskSupport",
        }
    }
}

wire_struct! {
    /// The result of `tools/list`.
    pub struct ListToolsResult {
        required {
            /// This page of tools.
            tools: Vec<Tool> = "tools",
        }
        optional {
            /// The cursor of the next page; absent on the last.
            next_cursor: String = "nextCursor",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

impl ListToolsResult {
    /// Encodes one page of tools that the caller keeps (a server's own list, a slice of it per
    /// cursor): the JSON that a `ListToolsResult` of copies of those tools, with `next_cursor`
    /// and no `_meta`, encodes to, without the copies. A tool's schema is a tree of small
    /// allocations: copying 500 tools and freeing the copies cost a server more than twice
    /// what encoding them does (`docs/benchmarks.md`, the `tools/list` row).
    pub fn encode_page(
        tools: &[Tool],
        next_cursor: Option<&str>,
    ) -> Result<RawJson, serde_json::Error> {
        PageRef {
            key: "tools",
            items: tools,
            next_cursor,
        }
        .encode()
    }
}

wire_struct! {
    /// Parameters of `tools/call`.
    pub struct CallToolParams {
        required {
            /// The tool's name as the server lists it.
            name: String = "name",
        }
        optional {
            /// The arguments, an object matching `inputSchema`.
            arguments: JsonObject = "arguments",
            /// Task augmentation; never sent by a client that does not support tasks.
            task: JsonObject = "task",
            /// Protocol metadata, such as `progressToken`.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// The result of `tools/call`.
    ///
    /// `is_error: Some(true)` is a tool execution error, reported to the model; it is not a
    /// JSON-RPC error and not a transport failure.
    pub struct CallToolResult {
        required {
            /// The unstructured result.
            content: Vec<ContentBlock> = "content",
        }
        optional {
            /// The structured result, matching `outputSchema` when there is one.
            structured_content: Value = "structuredContent",
            /// Whether the tool failed (default false).
            is_error: bool = "isError",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

impl CallToolResult {
    /// Whether the tool reported an execution error.
    pub fn is_tool_error(&self) -> bool {
        self.is_error == Some(true)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::schema::{
        ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, Prompt, Resource,
        ResourceTemplate,
    };

    /// A tool with every kind of member: optional ones, a schema whose strings need escapes,
    /// and a member this crate does not know.
    fn tool(i: usize) -> Tool {
        let mut t = Tool::new(format!("tool_{i}"));
        t.description = Some(format!("Tool \"{i}\"\n\twith escapes \u{1} and é"));
        t.input_schema = Some(json!({"type": "object", "properties": {"v\"": {"type": "string"}}}));
        t.annotations = Some(ToolAnnotations::new());
        t.extra.insert("x-new".into(), json!([1, {"a": null}]));
        t
    }

    #[test]
    fn a_borrowed_page_encodes_as_the_owned_result_would() {
        let tools: Vec<Tool> = (0..3).map(tool).collect();
        for cursor in [None, Some("2"), Some("\"odd\"\n")] {
            let mut owned = ListToolsResult::new(tools.clone());
            owned.next_cursor = cursor.map(str::to_owned);
            let page = ListToolsResult::encode_page(&tools, cursor).unwrap();
            assert_eq!(page.get(), RawJson::encode(&owned).unwrap().get());
            // And it reads back as the same result.
            assert_eq!(page.decode::<ListToolsResult>().unwrap(), owned);
        }
        let empty = ListToolsResult::encode_page(&[], None).unwrap();
        assert_eq!(empty.get(), r#"{"tools":[]}"#);

        let resources = vec![Resource::new("file:///a".into(), "a".into())];
        let mut owned = ListResourcesResult::new(resources.clone());
        owned.next_cursor = Some("1".into());
        assert_eq!(
            ListResourcesResult::encode_page(&resources, Some("1"))
                .unwrap()
                .get(),
            RawJson::encode(&owned).unwrap().get()
        );

        let templates = vec![ResourceTemplate::new("file:///{x}".into(), "x".into())];
        let mut owned = ListResourceTemplatesResult::new(templates.clone());
        owned.next_cursor = Some("1".into());
        assert_eq!(
            ListResourceTemplatesResult::encode_page(&templates, Some("1"))
                .unwrap()
                .get(),
            RawJson::encode(&owned).unwrap().get()
        );

        let prompts = vec![Prompt::new("p".into())];
        let owned = ListPromptsResult::new(prompts.clone());
        assert_eq!(
            ListPromptsResult::encode_page(&prompts, None)
                .unwrap()
                .get(),
            RawJson::encode(&owned).unwrap().get()
        );
    }

    /// Any JSON value, strings of any characters included.
    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            any::<String>().prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((any::<String>(), inner), 0..6)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    /// A tool with any text and schemas, and members this crate does not know (some named
    /// as ones it does).
    fn any_tool() -> impl Strategy<Value = Tool> {
        (
            any::<String>(),
            proptest::option::of(any::<String>()),
            proptest::option::of(any_json()),
            proptest::option::of(any::<bool>()),
            prop::collection::vec(("[a-z_A-Z]{1,12}|name|tools", any_json()), 0..3),
        )
            .prop_map(|(name, description, schema, read_only, extra)| {
                let mut tool = Tool::new(name);
                tool.description = description;
                tool.input_schema = schema;
                tool.annotations = read_only.map(|r| {
                    let mut a = ToolAnnotations::new();
                    a.read_only_hint = Some(r);
                    a
                });
                tool.extra.extend(extra);
                tool
            })
    }

    proptest! {
        #[test]
        fn any_borrowed_page_encodes_as_the_owned_result_would(
            tools in prop::collection::vec(any_tool(), 0..6),
            cursor in proptest::option::of(any::<String>()),
        ) {
            let mut owned = ListToolsResult::new(tools.clone());
            owned.next_cursor = cursor.clone();
            let page = ListToolsResult::encode_page(&tools, cursor.as_deref()).unwrap();
            let expected = RawJson::encode(&owned).unwrap();
            prop_assert_eq!(page.get(), expected.get());

            let resources: Vec<Resource> = tools
                .iter()
                .map(|t| {
                    let mut r = Resource::new(t.name.clone(), t.name.clone());
                    r.description = t.description.clone();
                    r.extra = t.extra.clone();
                    r
                })
                .collect();
            let mut owned = ListResourcesResult::new(resources.clone());
            owned.next_cursor = cursor.clone();
            let page = ListResourcesResult::encode_page(&resources, cursor.as_deref()).unwrap();
            let expected = RawJson::encode(&owned).unwrap();
            prop_assert_eq!(page.get(), expected.get());
        }
    }
}
