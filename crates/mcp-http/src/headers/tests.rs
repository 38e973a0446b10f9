//! Tests of the header rules, with the cases of the conformance scenarios (0.2.0-alpha.12)
//! http-custom-headers, http-invalid-tool-headers, http-header-validation and
//! http-custom-header-server-validation, and the examples of the spec's §Value Encoding.
//! This file is long because it carries those scenarios' and the spec's cases one by one, as data.

use http::header::{HeaderMap, HeaderName, HeaderValue};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

/// The value `encode` gives, as text.
fn encoded(value: &str) -> String {
    let header = encode(value);
    header.to_str().expect("encode gives ASCII").to_owned()
}

/// Headers from `(name, value)` text pairs; names in any case.
fn header_map(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(
            HeaderName::from_bytes(name.as_bytes()).expect("test header name"),
            HeaderValue::from_str(value).expect("test header value"),
        );
    }
    map
}

/// The headers as sorted `(name, value)` text pairs.
fn pairs(headers: &[(HeaderName, HeaderValue)]) -> Vec<(String, String)> {
    let mut out: Vec<_> = headers
        .iter()
        .map(|(name, value)| {
            let value = value.to_str().expect("ASCII header").to_owned();
            (name.as_str().to_owned(), value)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn encode_follows_the_spec_examples() {
    let cases = [
        ("us-west1", "us-west1"),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
    ];
    for (value, expected) in cases {
        assert_eq!(encoded(value), expected, "{value:?}");
    }
}

#[test]
fn encode_edges() {
    // Present but empty.
    assert_eq!(encoded(""), "");
    // Internal spaces and every printable character stay plain.
    assert_eq!(encoded("us west 1"), "us west 1");
    assert_eq!(encoded("a!\"#~`{}|"), "a!\"#~`{}|");
    // DEL and a lone tab are not plain.
    assert!(encoded("a\u{7f}b").starts_with("=?base64?"));
    assert_eq!(encoded("\t"), "=?base64?CQ==?=");
    // Only one of the two markers: plain.
    assert_eq!(encoded("=?base64?abc"), "=?base64?abc");
    assert_eq!(encoded("abc?="), "abc?=");
    // The shortest sentinel shape, markers overlapping, is encoded all the same.
    assert!(encoded("=?base64?=").starts_with("=?base64?PT9"));
}

#[test]
fn decode_reads_plain_sentinel_and_ows() {
    let ok = [
        ("us-west1", "us-west1"),
        ("  us-west1\t ", "us-west1"),
        ("", ""),
        ("a\tb", "a\tb"),
        ("=?base64?SGVsbG8=?=", "Hello"),
        (" =?base64?SGVsbG8=?= ", "Hello"),
        ("=?base64??=", ""),
        // A value missing the prefix or the suffix is a literal.
        ("SGVsbG8=", "SGVsbG8="),
        ("=?base64?SGVsbG8=", "=?base64?SGVsbG8="),
        ("SGVsbG8=?=", "SGVsbG8=?="),
        ("=?base64?=", "=?base64?="),
        // The markers are case-sensitive.
        ("=?BASE64?SGVsbG8=?=", "=?BASE64?SGVsbG8=?="),
    ];
    for (header, expected) in ok {
        let value = HeaderValue::from_str(header).expect("test value");
        assert_eq!(decode(&value).as_deref(), Ok(expected), "{header:?}");
    }
}

#[test]
fn decode_refuses_broken_values() {
    let cases = [
        (&b"=?base64?SGVsbG8?="[..], DecodeError::InvalidBase64),
        (b"=?base64?SGVs!!!bG8=?=", DecodeError::InvalidBase64),
        (b"=?base64?SGVsbG8===?=", DecodeError::InvalidBase64),
        // Non-canonical: trailing bits set.
        (b"=?base64?SGVsbG9=?=", DecodeError::InvalidBase64),
        (b"=?base64?/w==?=", DecodeError::NotUtf8),
        // Obs-text; other control characters and DEL never get here, as `HeaderValue`
        // refuses them.
        (b"caf\xc3\xa9", DecodeError::InvalidCharacters),
    ];
    for (bytes, expected) in cases {
        let value = HeaderValue::from_bytes(bytes).expect("test value");
        assert_eq!(decode(&value), Err(expected), "{bytes:?}");
    }
}

#[test]
fn standard_headers_of_each_method() {
    let cases = [
        ("tools/list", json!({}), None),
        (
            "tools/call",
            json!({"name": "test_headers"}),
            Some("test_headers"),
        ),
        (
            "tools/call",
            json!({"name": "my-hyphenated-tool", "arguments": {}}),
            Some("my-hyphenated-tool"),
        ),
        (
            "prompts/get",
            json!({"name": "test_prompt"}),
            Some("test_prompt"),
        ),
        (
            "resources/read",
            json!({"uri": "file:///path/to/file%20name.txt"}),
            Some("file:///path/to/file%20name.txt"),
        ),
        (
            "resources/read",
            json!({"uri": "https://example.com/resource?id=123"}),
            Some("https://example.com/resource?id=123"),
        ),
        (
            "tools/call",
            json!({"name": "météo"}),
            Some("=?base64?bcOpdMOpbw==?="),
        ),
        // The tasks extension mirrors the task id (SEP-2663 routing headers).
        ("tasks/get", json!({"taskId": "t-1"}), Some("t-1")),
        (
            "tasks/update",
            json!({"taskId": "t-2", "inputResponses": {}}),
            Some("t-2"),
        ),
        ("tasks/cancel", json!({"taskId": "t-3"}), Some("t-3")),
        // The name is mirrored only for those methods, and only when the body has it.
        ("tasks/result", json!({"taskId": "t-4"}), None),
        ("resources/list", json!({"name": "x", "uri": "y"}), None),
        ("tools/call", json!({"arguments": {}}), None),
        ("resources/read", json!({"name": "x"}), None),
    ];
    for (method, params, name) in cases {
        let headers = pairs(&standard_headers(method, Some(&params)));
        let mut expected = vec![("mcp-method".to_owned(), method.to_owned())];
        if let Some(name) = name {
            expected.push(("mcp-name".to_owned(), name.to_owned()));
        }
        assert_eq!(headers, expected, "{method} {params}");
    }
    let bare = pairs(&standard_headers("initialize", None));
    assert_eq!(bare, [("mcp-method".to_owned(), "initialize".to_owned())]);
}

/// The `tools` of http-custom-headers' `tools/list` answer (descriptions left out).
fn custom_headers_tools() -> Value {
    json!([
        {"name": "test_custom_headers", "inputSchema": {
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "priority": {"type": "integer", "x-mcp-header": "Priority"},
                "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
                "debug": {"type": "boolean", "x-mcp-header": "Debug"},
                "empty_val": {"type": "string", "x-mcp-header": "EmptyVal"},
                "method_val": {"type": "string", "x-mcp-header": "Method"},
                "float_val": {"type": "number"},
                "non_ascii_val": {"type": "string", "x-mcp-header": "NonAscii"},
                "whitespace_val": {"type": "string", "x-mcp-header": "Whitespace"},
                "leading_space_val": {"type": "string", "x-mcp-header": "LeadingSpace"},
                "trailing_space_val": {"type": "string", "x-mcp-header": "TrailingSpace"},
                "internal_space_val": {"type": "string", "x-mcp-header": "InternalSpace"},
                "control_char_val": {"type": "string", "x-mcp-header": "ControlChar"},
                "crlf_val": {"type": "string", "x-mcp-header": "CrLf"},
                "tab_val": {"type": "string", "x-mcp-header": "Tab"},
                "query": {"type": "string"}
            },
            "required": ["region", "priority", "query"]
        }},
        {"name": "test_custom_headers_null", "inputSchema": {
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "priority": {"type": "integer", "x-mcp-header": "Priority"},
                "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
                "query": {"type": "string"}
            },
            "required": ["region", "priority", "query"]
        }}
    ])
}

/// The schema of the tool `name` in a `tools` array.
fn schema_of<'a>(tools: &'a Value, name: &str) -> &'a Value {
    tools
        .as_array()
        .expect("tools array")
        .iter()
        .find(|tool| tool["name"] == name)
        .map(|tool| &tool["inputSchema"])
        .expect("tool listed")
}

#[test]
#[expect(
    clippy::approx_constant,
    reason = "float_val is the scenario's own 3.14159"
)]
fn custom_headers_scenario_call() {
    let mut tools = custom_headers_tools();
    assert_eq!(retain_valid_tools(&mut tools), []);
    let analysed =
        ToolHeaders::from_schema(schema_of(&tools, "test_custom_headers")).expect("valid tool");
    let arguments = json!({
        "region": "us-west1",
        "priority": 42,
        "verbose": false,
        "debug": true,
        "empty_val": "",
        "method_val": "test-method",
        "float_val": 3.14159,
        "non_ascii_val": "Hello, 世界",
        "whitespace_val": " padded ",
        "leading_space_val": " us-west1",
        "trailing_space_val": "us-west1 ",
        "internal_space_val": "us west 1",
        "control_char_val": "line1\nline2",
        "crlf_val": "line1\r\nline2",
        "tab_val": "\tindented",
        "query": "SELECT * FROM users"
    });
    let headers = analysed.param_headers(&arguments);
    let mut expected: Vec<(String, String)> = [
        ("mcp-param-region", "us-west1"),
        ("mcp-param-priority", "42"),
        ("mcp-param-verbose", "false"),
        ("mcp-param-debug", "true"),
        ("mcp-param-emptyval", ""),
        ("mcp-param-method", "test-method"),
        ("mcp-param-nonascii", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        ("mcp-param-whitespace", "=?base64?IHBhZGRlZCA=?="),
        ("mcp-param-leadingspace", "=?base64?IHVzLXdlc3Qx?="),
        ("mcp-param-trailingspace", "=?base64?dXMtd2VzdDEg?="),
        ("mcp-param-internalspace", "us west 1"),
        ("mcp-param-controlchar", "=?base64?bGluZTEKbGluZTI=?="),
        ("mcp-param-crlf", "=?base64?bGluZTENCmxpbmUy?="),
        ("mcp-param-tab", "=?base64?CWluZGVudGVk?="),
    ]
    .iter()
    .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
    .collect();
    expected.sort();
    // No Mcp-Param-Query, no Mcp-Param-FloatVal, and `Method` is not Mcp-Method.
    assert_eq!(pairs(&headers), expected);

    // The server half accepts what the client half sends.
    let params = json!({"name": "test_custom_headers", "arguments": arguments});
    let mut map: HeaderMap = headers.into_iter().collect();
    map.extend(standard_headers("tools/call", Some(&params)));
    assert_eq!(
        validate(&map, "tools/call", Some(&params), Some(&analysed)),
        Ok(())
    );
}

#[test]
fn custom_headers_scenario_null_is_omitted() {
    let tools = custom_headers_tools();
    let analysed = ToolHeaders::from_schema(schema_of(&tools, "test_custom_headers_null"))
        .expect("valid tool");
    let arguments =
        json!({"region": "us-east1", "priority": 1, "verbose": null, "query": "SELECT 1"});
    let headers = analysed.param_headers(&arguments);
    assert_eq!(
        pairs(&headers),
        [
            ("mcp-param-priority".to_owned(), "1".to_owned()),
            ("mcp-param-region".to_owned(), "us-east1".to_owned()),
        ]
    );
    let params = json!({"name": "test_custom_headers_null", "arguments": arguments});
    let mut map: HeaderMap = headers.into_iter().collect();
    map.extend(standard_headers("tools/call", Some(&params)));
    assert_eq!(
        validate(&map, "tools/call", Some(&params), Some(&analysed)),
        Ok(())
    );
    // No arguments at all: no headers.
    assert_eq!(analysed.param_headers(&Value::Null), []);
}

#[test]
fn analysis_gives_paths_names_and_labels() {
    let schema = json!({
        "type": "object",
        "properties": {
            "where": {
                "type": "object",
                "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}
            },
            "n": {"type": "integer", "x-mcp-header": "N!#$%&'*+-.^_`|~9"}
        }
    });
    let analysed = ToolHeaders::from_schema(&schema).expect("valid");
    let params: Vec<_> = analysed
        .params()
        .iter()
        .map(|p| (p.path().join("."), p.name().as_str(), p.label()))
        .collect();
    assert_eq!(
        params,
        [
            (
                "n".to_owned(),
                "mcp-param-n!#$%&'*+-.^_`|~9",
                "Mcp-Param-N!#$%&'*+-.^_`|~9"
            ),
            ("where.zone".to_owned(), "mcp-param-zone", "Mcp-Param-Zone"),
        ]
    );
    let headers = analysed.param_headers(&json!({"where": {"zone": "eu"}, "n": -7}));
    assert_eq!(
        pairs(&headers),
        [
            ("mcp-param-n!#$%&'*+-.^_`|~9".to_owned(), "-7".to_owned()),
            ("mcp-param-zone".to_owned(), "eu".to_owned()),
        ]
    );
    // A tool without annotations, or without a schema, has no headers and is valid.
    assert!(ToolHeaders::from_schema(&json!({"type": "object"})).is_ok_and(|t| t.is_empty()));
    assert!(ToolHeaders::from_schema(&Value::Null).is_ok_and(|t| t.is_empty()));
}

/// The `tools` of http-invalid-tool-headers' `tools/list` answer (descriptions left out).
fn invalid_tools() -> Value {
    /// A tool whose schema has these properties.
    fn tool(name: &str, properties: Value) -> Value {
        json!({"name": name, "inputSchema": {"type": "object", "properties": properties}})
    }
    json!([
        tool(
            "valid_tool",
            json!({"region": {"type": "string", "x-mcp-header": "Region"}})
        ),
        tool(
            "invalid_empty_header",
            json!({"value": {"type": "string", "x-mcp-header": ""}})
        ),
        tool(
            "invalid_object_header",
            json!({"data": {"type": "object", "x-mcp-header": "Data"}})
        ),
        tool(
            "invalid_array_header",
            json!({"items": {"type": "array", "items": {"type": "string"}, "x-mcp-header": "Items"}}),
        ),
        tool(
            "invalid_null_header",
            json!({"nil": {"type": "null", "x-mcp-header": "Nil"}})
        ),
        tool(
            "invalid_number_header",
            json!({"score": {"type": "number", "x-mcp-header": "Score"}})
        ),
        tool(
            "invalid_duplicate_same_case",
            json!({
                "field1": {"type": "string", "x-mcp-header": "Region"},
                "field2": {"type": "string", "x-mcp-header": "Region"}
            }),
        ),
        tool(
            "invalid_duplicate_diff_case",
            json!({
                "field1": {"type": "string", "x-mcp-header": "MyField"},
                "field2": {"type": "string", "x-mcp-header": "myfield"}
            }),
        ),
        tool(
            "invalid_space_in_name",
            json!({"value": {"type": "string", "x-mcp-header": "My Region"}})
        ),
        tool(
            "invalid_colon_in_name",
            json!({"value": {"type": "string", "x-mcp-header": "Region:Primary"}}),
        ),
        tool(
            "invalid_non_ascii_name",
            json!({"value": {"type": "string", "x-mcp-header": "Région"}})
        ),
        tool(
            "invalid_control_char_name",
            json!({"value": {"type": "string", "x-mcp-header": "Region\t1"}}),
        ),
    ])
}

#[test]
fn invalid_tool_headers_scenario() {
    let mut tools = invalid_tools();
    let dropped = retain_valid_tools(&mut tools);
    let kept: Vec<_> = tools
        .as_array()
        .expect("array")
        .iter()
        .map(|tool| tool["name"].as_str().expect("name"))
        .collect();
    assert_eq!(kept, ["valid_tool"]);

    let at = |path: &str| path.to_owned();
    let token = |name: &str| InvalidHeader::NotToken {
        at: at("/properties/value"),
        name: name.to_owned(),
    };
    let expected = [
        (
            "invalid_empty_header",
            InvalidHeader::Empty {
                at: at("/properties/value"),
            },
        ),
        (
            "invalid_object_header",
            InvalidHeader::WrongType {
                at: at("/properties/data"),
            },
        ),
        (
            "invalid_array_header",
            InvalidHeader::WrongType {
                at: at("/properties/items"),
            },
        ),
        (
            "invalid_null_header",
            InvalidHeader::WrongType {
                at: at("/properties/nil"),
            },
        ),
        (
            "invalid_number_header",
            InvalidHeader::WrongType {
                at: at("/properties/score"),
            },
        ),
        (
            "invalid_duplicate_same_case",
            InvalidHeader::Duplicate {
                at: at("/properties/field2"),
                name: "Region".to_owned(),
            },
        ),
        (
            "invalid_duplicate_diff_case",
            InvalidHeader::Duplicate {
                at: at("/properties/field2"),
                name: "myfield".to_owned(),
            },
        ),
        ("invalid_space_in_name", token("My Region")),
        ("invalid_colon_in_name", token("Region:Primary")),
        ("invalid_non_ascii_name", token("Région")),
        ("invalid_control_char_name", token("Region\t1")),
    ];
    let got: Vec<_> = dropped
        .iter()
        .map(|d| (d.name.as_str(), d.reason.clone()))
        .collect();
    assert_eq!(got, expected);

    // The warning names the tool and the reason.
    let message = dropped[9].to_string();
    assert!(message.contains("invalid_non_ascii_name"), "{message}");
    assert!(message.contains("not an HTTP token"), "{message}");
}

#[test]
fn analysis_refuses_unreachable_and_odd_annotations() {
    let header = |extra: Value| {
        let mut property = json!({"type": "string", "x-mcp-header": "H"});
        if let (Value::Object(property), Value::Object(extra)) = (&mut property, extra) {
            property.extend(extra);
        }
        property
    };
    let unreachable = |at: &str| Err(InvalidHeader::Unreachable { at: at.to_owned() });
    let cases = [
        // On the root itself.
        (
            json!({"type": "string", "x-mcp-header": "H"}),
            unreachable(""),
        ),
        // Under items, $defs, a composition, a conditional, additionalProperties.
        (
            json!({"properties": {"list": {"type": "array", "items": header(json!({}))}}}),
            unreachable("/properties/list/items"),
        ),
        (
            json!({"$defs": {"H": header(json!({}))}, "properties": {"a": {"$ref": "#/$defs/H"}}}),
            unreachable("/$defs/H"),
        ),
        (
            json!({"properties": {"a": {"anyOf": [header(json!({})), {"type": "integer"}]}}}),
            unreachable("/properties/a/anyOf/0"),
        ),
        (
            json!({"if": {"properties": {"a": header(json!({}))}}}),
            unreachable("/if/properties/a"),
        ),
        (
            json!({"additionalProperties": header(json!({}))}),
            unreachable("/additionalProperties"),
        ),
        (
            json!({"patternProperties": {"^a": header(json!({}))}}),
            unreachable("/patternProperties/^a"),
        ),
        // Type lists, a missing type, a non-string name.
        (
            json!({"properties": {"a": header(json!({"type": ["string", "null"]}))}}),
            Err(InvalidHeader::WrongType {
                at: "/properties/a".to_owned(),
            }),
        ),
        (
            json!({"properties": {"a": {"x-mcp-header": "H"}}}),
            Err(InvalidHeader::WrongType {
                at: "/properties/a".to_owned(),
            }),
        ),
        (
            json!({"properties": {"a/b": {"type": "string", "x-mcp-header": 5}}}),
            Err(InvalidHeader::NotAString {
                at: "/properties/a~1b".to_owned(),
            }),
        ),
    ];
    for (schema, expected) in cases {
        assert_eq!(
            ToolHeaders::from_schema(&schema).map(|_| ()),
            expected,
            "{schema}"
        );
    }
}

#[test]
fn analysis_does_not_take_names_or_data_for_annotations() {
    // A property called `x-mcp-header`, a definition called so, data holding the key, and a
    // `$ref` to an annotated definition that is never followed.
    let schemas = [
        json!({"properties": {"x-mcp-header": {"type": "string"}}}),
        json!({"$defs": {"x-mcp-header": {"type": "string"}}}),
        json!({"properties": {"a": {"type": "object", "default": {"x-mcp-header": "H"}}}}),
        json!({"properties": {"a": {"const": {"x-mcp-header": "H"}, "enum": [{"x-mcp-header": "H"}]}}}),
        json!({"properties": {"a": {"$ref": "https://example.com/annotated.json"}}}),
    ];
    for schema in schemas {
        let analysed = ToolHeaders::from_schema(&schema);
        assert!(analysed.is_ok_and(|t| t.is_empty()), "{schema}");
    }
}

/// Headers as text pairs, the method, the params, and what `validate` says.
type HeaderCase<'a> = (
    &'a [(&'a str, &'a str)],
    &'a str,
    &'a Value,
    Result<(), Mismatch>,
);

#[test]
fn header_validation_scenario() {
    let list = json!({});
    let call = json!({"name": "test_simple_text", "arguments": {}});
    let missing = |header| {
        Err(Mismatch {
            header,
            kind: MismatchKind::Missing,
        })
    };
    let differs = |header| {
        Err(Mismatch {
            header,
            kind: MismatchKind::Differs,
        })
    };
    let cases: [HeaderCase<'_>; 11] = [
        (
            &[("Mcp-Method", "prompts/list")],
            "tools/list",
            &list,
            differs(MCP_METHOD),
        ),
        (&[], "tools/list", &list, missing(MCP_METHOD)),
        (
            &[
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "wrong_tool_name"),
            ],
            "tools/call",
            &call,
            differs(MCP_NAME),
        ),
        (
            &[
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "  test_simple_text  "),
            ],
            "tools/call",
            &call,
            Ok(()),
        ),
        (
            &[("Mcp-Method", "tools/call")],
            "tools/call",
            &call,
            missing(MCP_NAME),
        ),
        (&[("mcp-method", "tools/list")], "tools/list", &list, Ok(())),
        (&[("MCP-METHOD", "tools/list")], "tools/list", &list, Ok(())),
        (
            &[("Mcp-Method", "TOOLS/LIST")],
            "tools/list",
            &list,
            differs(MCP_METHOD),
        ),
        (
            &[("Mcp-Method", " tools/list\t")],
            "tools/list",
            &list,
            Ok(()),
        ),
        (
            &[("Mcp-Method", "tools/list"), ("Mcp-Method", "tools/list")],
            "tools/list",
            &list,
            Err(Mismatch {
                header: MCP_METHOD,
                kind: MismatchKind::Repeated,
            }),
        ),
        (
            &[
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "=?base64?dGVzdF9zaW1wbGVfdGV4dA==?="),
            ],
            "tools/call",
            &call,
            Ok(()),
        ),
    ];
    for (headers, method, params, expected) in cases {
        let map = header_map(headers);
        assert_eq!(
            validate(&map, method, Some(params), None),
            expected,
            "{headers:?}"
        );
    }
    // The name of resources/read and prompts/get.
    let read = json!({"uri": "file:///path/to/file%20name.txt"});
    let map = header_map(&[
        ("Mcp-Method", "resources/read"),
        ("Mcp-Name", "file:///path/to/file%20name.txt"),
    ]);
    assert_eq!(validate(&map, "resources/read", Some(&read), None), Ok(()));
    let map = header_map(&[("Mcp-Method", "prompts/get")]);
    let get = json!({"name": "test_prompt"});
    assert_eq!(
        validate(&map, "prompts/get", Some(&get), None),
        missing(MCP_NAME)
    );
}

/// A tool like the everything server's, for http-custom-header-server-validation: one string
/// parameter mirrored as `Region`, and two more mirrored parameters of the other types.
fn server_tool() -> ToolHeaders {
    ToolHeaders::from_schema(&json!({
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
            "flag": {"type": "boolean", "x-mcp-header": "Flag"}
        },
        "required": ["region"]
    }))
    .expect("valid tool")
}

/// Validates a `tools/call` of [`server_tool`] with `arguments` and these `Mcp-Param-*`
/// headers (the standard ones are added).
fn check_call(arguments: Value, params: &[(&str, &str)]) -> Result<(), Mismatch> {
    let body = json!({"name": "tool", "arguments": arguments});
    let mut map = header_map(params);
    map.extend(standard_headers("tools/call", Some(&body)));
    validate(&map, "tools/call", Some(&body), Some(&server_tool()))
}

#[test]
fn custom_header_server_validation_scenario() {
    let region = || HeaderName::from_static("mcp-param-region");
    let fail = |kind| {
        Err(Mismatch {
            header: region(),
            kind,
        })
    };
    let cases = [
        ("Hello", Some("=?base64?SGVsbG8=?="), Ok(())),
        (
            "Hello",
            Some("=?base64?SGVsbG8?="),
            fail(MismatchKind::Malformed),
        ),
        (
            "Hello",
            Some("=?base64?SGVs!!!bG8=?="),
            fail(MismatchKind::Malformed),
        ),
        ("SGVsbG8=", Some("SGVsbG8="), Ok(())),
        ("=?base64?SGVsbG8=", Some("=?base64?SGVsbG8="), Ok(())),
        ("test-value", None, fail(MismatchKind::Missing)),
        ("us-west1", Some("us-east1"), fail(MismatchKind::Differs)),
        ("Hello", Some("SGVsbG8="), fail(MismatchKind::Differs)),
    ];
    for (body, header, expected) in cases {
        let headers: Vec<_> = header
            .map(|h| ("Mcp-Param-Region", h))
            .into_iter()
            .collect();
        assert_eq!(
            check_call(json!({"region": body}), &headers),
            expected,
            "{body:?} {header:?}"
        );
    }
}

#[test]
fn param_validation_of_numbers_booleans_and_absence() {
    let count = || HeaderName::from_static("mcp-param-count");
    let flag = || HeaderName::from_static("mcp-param-flag");
    let fail = |header, kind| Err(Mismatch { header, kind });
    let cases = [
        (
            json!({"count": 42}),
            vec![("Mcp-Param-Count", "42")],
            Ok(()),
        ),
        (
            json!({"count": 42}),
            vec![("MCP-PARAM-COUNT", "42.0")],
            Ok(()),
        ),
        (
            json!({"count": 42}),
            vec![("Mcp-Param-Count", "4.2e1")],
            Ok(()),
        ),
        (
            json!({"count": -7}),
            vec![("Mcp-Param-Count", "-7")],
            Ok(()),
        ),
        (
            json!({"count": 9_007_199_254_740_993_i64}),
            vec![("Mcp-Param-Count", "9007199254740992")],
            fail(count(), MismatchKind::Differs),
        ),
        (
            json!({"count": 42}),
            vec![("Mcp-Param-Count", "43")],
            fail(count(), MismatchKind::Differs),
        ),
        (
            json!({"count": 42}),
            vec![("Mcp-Param-Count", "0x2a")],
            fail(count(), MismatchKind::Differs),
        ),
        (
            json!({"count": 42}),
            vec![("Mcp-Param-Count", "=?base64?NDI=?=")],
            Ok(()),
        ),
        (
            json!({"count": 42}),
            vec![],
            fail(count(), MismatchKind::Missing),
        ),
        (
            json!({"flag": false}),
            vec![("Mcp-Param-Flag", "false")],
            Ok(()),
        ),
        (
            json!({"flag": true}),
            vec![("Mcp-Param-Flag", "True")],
            fail(flag(), MismatchKind::Differs),
        ),
        // Null or absent: no header expected, and one that comes anyway is refused.
        (json!({"flag": null}), vec![], Ok(())),
        (json!({}), vec![], Ok(())),
        (
            json!({"flag": null}),
            vec![("Mcp-Param-Flag", "false")],
            fail(flag(), MismatchKind::Unexpected),
        ),
        (
            json!({}),
            vec![("Mcp-Param-Count", "1")],
            fail(count(), MismatchKind::Unexpected),
        ),
        (
            json!({"count": 1}),
            vec![("Mcp-Param-Count", "1"), ("Mcp-Param-Count", "1")],
            fail(count(), MismatchKind::Repeated),
        ),
        // A header the tool does not annotate is ignored.
        (json!({}), vec![("Mcp-Param-Other", "x")], Ok(())),
    ];
    for (arguments, headers, expected) in cases {
        assert_eq!(
            check_call(arguments.clone(), &headers),
            expected,
            "{arguments} {headers:?}"
        );
    }
}

#[test]
fn mismatch_messages_name_the_header_not_the_value() {
    let result = check_call(
        json!({"region": "secret-value"}),
        &[("Mcp-Param-Region", "other")],
    );
    let message = result.expect_err("mismatch").to_string();
    assert_eq!(
        message,
        "header mismatch: mcp-param-region does not match the body"
    );
}

mod proptests {
    use super::*;

    /// What §Value Encoding lets go plain, written out apart from `encode`: only printable
    /// ASCII (0x20-0x7E), no space at either end, and not the shape of the sentinel (its
    /// prefix and suffix may overlap, as in `=?base64?=`).
    fn is_safe(value: &str) -> bool {
        let printable = value.bytes().all(|b| (0x20..=0x7e).contains(&b));
        let padded = value.starts_with(' ') || value.ends_with(' ');
        let sentinel = value.starts_with("=?base64?") && value.ends_with("?=");
        printable && !padded && !sentinel
    }

    /// Values of every kind, each kind often enough: any string (mostly unsafe), printable
    /// ASCII (mostly safe), printable ASCII with a space at an end, and sentinel shapes.
    fn header_values() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<String>(),
            "[ -~]{0,24}",
            "[ -~]{0,8}[^ -~][ -~]{0,8}",
            " [ -~]{0,12}",
            "[ -~]{0,12} ",
            "=\\?base64\\?[ -~]{0,12}\\?=",
            "=\\?base64\\?=",
            "(=\\?base64\\?)?[A-Za-z0-9+/=]{0,12}(\\?=)?",
        ]
    }

    proptest! {
        #[test]
        fn decode_inverts_encode(value in any::<String>()) {
            let header = encode(&value);
            prop_assert_eq!(decode(&header), Ok(value));
        }

        #[test]
        fn decode_inverts_encode_of_ascii_with_ows(value in "[ -~\t\r\n]{0,24}", pad in "[ \t]{0,3}") {
            let header = encode(&value);
            let text = header.to_str().expect("ASCII header");
            let padded = HeaderValue::from_str(&format!("{pad}{text}{pad}")).expect("valid value");
            prop_assert_eq!(decode(&padded), Ok(value));
        }

        #[test]
        fn encode_is_plain_only_for_safe_values(value in header_values()) {
            let header = encode(&value);
            let text = header.to_str().expect("ASCII header");
            if is_safe(&value) {
                prop_assert_eq!(text, value.as_str(), "a safe value goes plain");
            } else {
                let sentinel = format!("=?base64?{}?=", BASE64.encode(&value));
                prop_assert_eq!(text, sentinel.as_str(), "an unsafe value is encoded");
            }
        }
    }
}
