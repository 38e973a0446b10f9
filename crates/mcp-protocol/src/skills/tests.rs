//! The skill catalog: what it computes from the files, how it pages, and what it refuses.

use serde_json::{Value, json};

use super::frontmatter;
use super::*;
use crate::schema::{ListSkillsResult, is_digest, skill_digest};

const SKILL_MD_TEXT: &str = "---\nname: pdf-processing\ndescription: Fill in PDF forms.\nlicense: Apache-2.0\nmetadata:\n  author: acme\n  version: \"1.0\"\n---\n# PDF\nRead references/FORMS.md.\n";

fn pdf() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("SKILL.md", SKILL_MD_TEXT.as_bytes().to_vec()),
        ("references/FORMS.md", b"Form fields.\n".to_vec()),
        ("scripts/fill.py", b"print('fill')\n".to_vec()),
        ("assets/logo.bin", vec![0xff, 0x00, 0xfe]),
    ]
}

fn skill_md(name: &str) -> Vec<u8> {
    format!("---\nname: {name}\ndescription: The {name} skill.\n---\nBody.\n").into_bytes()
}

fn catalog() -> SkillCatalog {
    let mut catalog = SkillCatalog::new();
    catalog.add("pdf-processing", pdf()).unwrap();
    catalog
}

/// Every page of `skills/list`, following `nextCursor`.
fn all_pages(catalog: &SkillCatalog) -> Vec<ListSkillsResult> {
    let mut pages = vec![catalog.list(None).unwrap()];
    while let Some(next) = pages.last().unwrap().next_cursor.clone() {
        pages.push(catalog.list(Some(&next)).unwrap());
        assert!(pages.len() < 100, "pagination does not end");
    }
    pages
}

#[test]
fn the_digest_is_sha256_of_the_raw_bytes_in_lowercase_hex() {
    // Known answers (FIPS 180-2 "abc", and the empty string).
    assert_eq!(
        skill_digest(b"abc"),
        "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_eq!(
        skill_digest(b""),
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    assert!(is_digest(&skill_digest(b"abc")));
    assert!(!is_digest(
        "sha256:BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD"
    ));
    assert!(!is_digest("sha256:abc"));
}

#[test]
fn each_file_is_listed_once_with_the_digest_and_size_of_what_read_returns() {
    let catalog = catalog();
    let entry = catalog
        .get("skill://pdf-processing/SKILL.md")
        .unwrap()
        .skill;
    let files = entry.resources.files().unwrap();
    let uris: Vec<&str> = files.iter().map(|f| f.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "skill://pdf-processing/SKILL.md",
            "skill://pdf-processing/assets/logo.bin",
            "skill://pdf-processing/references/FORMS.md",
            "skill://pdf-processing/scripts/fill.py",
        ]
    );
    for file in files {
        let read = catalog.read(&file.uri).unwrap();
        let contents = &read.contents[0];
        let bytes = match (&contents.text, &contents.blob) {
            (Some(text), None) => text.clone().into_bytes(),
            (None, Some(blob)) => unbase64(blob),
            other => panic!("{}: text or blob, not {other:?}", file.uri),
        };
        assert!(file.matches(&bytes), "{}", file.uri);
        assert_eq!(file.size, bytes.len() as u64);
        assert_eq!(file.digest, skill_digest(&bytes));
    }
    // The binary file came back as a blob of its exact bytes.
    let logo = catalog
        .read("skill://pdf-processing/assets/logo.bin")
        .unwrap();
    assert_eq!(logo.contents[0].blob.as_deref(), Some("/wD+"));
    let md = catalog.read("skill://pdf-processing/SKILL.md").unwrap();
    assert_eq!(md.contents[0].mime_type.as_deref(), Some("text/markdown"));
    assert_eq!(md.contents[0].text.as_deref(), Some(SKILL_MD_TEXT));
}

/// Decodes standard padded base64, for checking blobs.
fn unbase64(s: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let mut out = Vec::new();
    for chunk in s.as_bytes().chunks(4) {
        let digits: Vec<u8> = chunk
            .iter()
            .filter(|&&c| c != b'=')
            .map(|&c| value(c))
            .collect();
        let n =
            digits.iter().fold(0u32, |n, &d| (n << 6) | u32::from(d)) << (6 * (4 - digits.len()));
        out.extend_from_slice(&n.to_be_bytes()[1..digits.len()]);
    }
    out
}

#[test]
fn base64_round_trips_every_length() {
    for len in 0..8 {
        let bytes: Vec<u8> = (0..len).map(|i| (i * 37 + 200) as u8).collect();
        assert_eq!(unbase64(&base64(&bytes)), bytes, "length {len}");
    }
    assert_eq!(base64(b"Man"), "TWFu");
    assert_eq!(base64(b"Ma"), "TWE=");
    assert_eq!(base64(b"M"), "TQ==");
}

#[test]
fn the_entry_frontmatter_is_the_files_own_as_json() {
    let entry = catalog()
        .get("skill://pdf-processing/SKILL.md")
        .unwrap()
        .skill;
    assert_eq!(
        Value::Object(entry.frontmatter),
        json!({
            "name": "pdf-processing",
            "description": "Fill in PDF forms.",
            "license": "Apache-2.0",
            "metadata": {"author": "acme", "version": "1.0"},
        })
    );
}

#[test]
fn skills_list_pages_whole_entries_until_the_cursor_runs_out() {
    let mut catalog = SkillCatalog::new().with_page_size(2);
    for name in ["alpha", "bravo", "charlie", "delta", "echo"] {
        catalog
            .add(&format!("acme/{name}"), [("SKILL.md", skill_md(name))])
            .unwrap();
    }
    let pages = all_pages(&catalog);
    let per_page: Vec<usize> = pages.iter().map(|p| p.skills.len()).collect();
    assert_eq!(per_page, [2, 2, 1]);
    let uris: Vec<String> = pages
        .iter()
        .flat_map(|p| p.skills.iter().map(|s| s.uri.clone()))
        .collect();
    assert_eq!(
        uris,
        ["alpha", "bravo", "charlie", "delta", "echo"]
            .map(|n| format!("skill://acme/{n}/SKILL.md"))
    );
    // A cursor it never issued is invalid params, not an empty page or the first page again.
    for bad in ["0", "5", "99", "x", "-1"] {
        let error = catalog.list(Some(bad)).unwrap_err();
        assert_eq!(error.code, code::INVALID_PARAMS, "cursor {bad}");
    }
}

#[test]
fn an_unknown_skill_uri_is_invalid_params() {
    let catalog = catalog();
    assert!(catalog.get("skill://pdf-processing/SKILL.md").is_ok());
    for uri in [
        "skill://mcp-conformance-nonexistent-skill-9f3a2b/SKILL.md",
        "skill://pdf-processing/references/FORMS.md",
        "skill://pdf-processing",
        "",
    ] {
        let error = catalog.get(uri).unwrap_err();
        assert_eq!(error.code, code::INVALID_PARAMS, "{uri}");
        assert_eq!(error.data, Some(json!({"uri": uri})));
    }
}

#[test]
fn directory_read_lists_direct_children_with_folders_marked() {
    let catalog = catalog().with_page_size(3);
    let first = catalog
        .read_directory("skill://pdf-processing", None)
        .unwrap();
    let next = first.next_cursor.clone().unwrap();
    let second = catalog
        .read_directory("skill://pdf-processing", Some(&next))
        .unwrap();
    assert_eq!(second.next_cursor, None);
    let children: Vec<(String, Option<String>)> = first
        .resources
        .iter()
        .chain(&second.resources)
        .map(|r| (r.uri.clone(), r.mime_type.clone()))
        .collect();
    let dir = Some(DIRECTORY_MIME_TYPE.to_owned());
    assert_eq!(
        children,
        [
            (
                "skill://pdf-processing/SKILL.md".to_owned(),
                Some("text/markdown".to_owned())
            ),
            ("skill://pdf-processing/assets".to_owned(), dir.clone()),
            ("skill://pdf-processing/references".to_owned(), dir.clone()),
            ("skill://pdf-processing/scripts".to_owned(), dir),
        ]
    );
    let inner = catalog
        .read_directory("skill://pdf-processing/references/", None)
        .unwrap();
    assert_eq!(inner.resources.len(), 1);
    assert_eq!(
        inner.resources[0].uri,
        "skill://pdf-processing/references/FORMS.md"
    );
    assert_eq!(inner.resources[0].size, Some(13));
    for not_folder in [
        "skill://pdf-processing/SKILL.md",
        "skill://pdf-processing/nothing",
        "skill://",
        "test://static-text",
    ] {
        let error = catalog.read_directory(not_folder, None).unwrap_err();
        assert_eq!(error.code, code::INVALID_PARAMS, "{not_folder}");
    }
}

#[test]
fn handle_answers_only_the_extensions_requests_and_its_own_files() {
    let catalog = catalog();
    let request = |method: &str, params: Value| {
        let raw = RawJson::encode(&params).unwrap();
        ClientRequest::decode(method, Some(&raw)).unwrap()
    };
    let answer =
        |r: &ClientRequest| -> Value { catalog.handle(r).unwrap().unwrap().decode().unwrap() };
    let listed = answer(&request("skills/list", json!({})));
    assert_eq!(
        listed["skills"][0]["uri"],
        "skill://pdf-processing/SKILL.md"
    );
    assert_eq!(
        listed["skills"][0]["resources"][0]["size"],
        SKILL_MD_TEXT.len()
    );
    let got = answer(&request(
        "skills/get",
        json!({"uri": "skill://pdf-processing/SKILL.md"}),
    ));
    assert_eq!(got["skill"], listed["skills"][0]);
    assert!(got.get("nextCursor").is_none());
    let read = answer(&request(
        "resources/read",
        json!({"uri": "skill://pdf-processing/SKILL.md"}),
    ));
    assert_eq!(read["contents"][0]["text"], SKILL_MD_TEXT);
    let unknown = catalog
        .handle(&request(
            "skills/get",
            json!({"uri": "skill://nope/SKILL.md"}),
        ))
        .unwrap()
        .unwrap_err();
    assert_eq!(unknown.code, code::INVALID_PARAMS);
    // By method name, as a server routing requests itself would ask.
    let missing_uri = catalog
        .handle_method("skills/get", Some(&RawJson::encode(&json!({})).unwrap()))
        .unwrap()
        .unwrap_err();
    assert_eq!(missing_uri.code, code::INVALID_PARAMS);
    let by_name: Value = catalog
        .handle_method("skills/list", None)
        .unwrap()
        .unwrap()
        .decode()
        .unwrap();
    assert_eq!(by_name, listed);
    // Not the catalog's: the server answers these itself.
    assert!(
        catalog
            .handle(&request(
                "resources/read",
                json!({"uri": "test://static-text"})
            ))
            .is_none()
    );
    assert!(catalog.handle(&request("tools/list", json!({}))).is_none());
}

#[test]
fn resources_name_and_describe_each_skill_md_by_its_frontmatter() {
    let resources = catalog().resources();
    assert_eq!(resources.len(), 1);
    assert_eq!(resources[0].uri, "skill://pdf-processing/SKILL.md");
    assert_eq!(resources[0].name, "pdf-processing");
    assert_eq!(
        resources[0].description.as_deref(),
        Some("Fill in PDF forms.")
    );
    assert_eq!(resources[0].mime_type.as_deref(), Some("text/markdown"));
}

#[test]
fn declaring_sets_the_extension_inline_and_the_resources_capability() {
    let mut capabilities = ServerCapabilities::new();
    catalog().declare(&mut capabilities).unwrap();
    let json = serde_json::to_value(&capabilities).unwrap();
    assert_eq!(
        json,
        json!({"resources": {}, "extensions": {"io.modelcontextprotocol/skills": {"directoryRead": true}}})
    );
    let settings = SkillsCapability::of(&capabilities).unwrap();
    assert_eq!(settings.directory_read, Some(true));
}

#[test]
fn skills_that_break_a_rule_are_refused_when_added() {
    let add = |path: &str, files: Vec<(&str, Vec<u8>)>| {
        SkillCatalog::new()
            .add(path, files)
            .map(|_| ())
            .unwrap_err()
    };
    let ok = SkillCatalog::new().add("a/pdf-processing", pdf()).is_ok();
    assert!(ok, "the files used below are a valid skill");
    assert!(matches!(
        add("pdf-processing", pdf()[1..].to_vec()),
        SkillError::NoSkillMd { .. }
    ));
    assert!(matches!(
        add("other-name", pdf()),
        SkillError::BadName { .. }
    ));
    assert!(matches!(
        add("Bad_Name", vec![("SKILL.md", skill_md("Bad_Name"))]),
        SkillError::BadName { .. }
    ));
    for path in ["../x", "a//b", "a/./b", "a b", "a\\b", ""] {
        let mut files = pdf();
        files.push((path, b"x".to_vec()));
        assert!(
            matches!(add("pdf-processing", files), SkillError::BadPath { .. }),
            "{path:?}"
        );
    }
    assert!(matches!(
        add("../pdf-processing", pdf()),
        SkillError::BadPath { .. }
    ));
    let mut twice = pdf();
    twice.push(("scripts/fill.py", b"again".to_vec()));
    assert!(matches!(
        add("pdf-processing", twice),
        SkillError::Duplicate { .. }
    ));
    let no_description = b"---\nname: pdf-processing\n---\n".to_vec();
    assert!(matches!(
        add("pdf-processing", vec![("SKILL.md", no_description)]),
        SkillError::Frontmatter { .. }
    ));
    let no_frontmatter = b"# pdf-processing\n".to_vec();
    assert!(matches!(
        add("pdf-processing", vec![("SKILL.md", no_frontmatter)]),
        SkillError::Frontmatter { .. }
    ));
    let mut many: Vec<(String, Vec<u8>)> = vec![("SKILL.md".to_owned(), skill_md("many"))];
    many.extend((0..MAX_FILES_PER_SKILL).map(|i| (format!("f{i}"), Vec::new())));
    assert!(matches!(
        SkillCatalog::new()
            .add("many", many)
            .map(|_| ())
            .unwrap_err(),
        SkillError::TooLarge { .. }
    ));
    let big = vec![
        ("SKILL.md", skill_md("big")),
        ("blob", vec![0; MAX_SKILL_BYTES as usize]),
    ];
    assert!(matches!(add("big", big), SkillError::TooLarge { .. }));
    let mut catalog = catalog();
    assert!(matches!(
        catalog
            .add("pdf-processing", pdf())
            .map(|_| ())
            .unwrap_err(),
        SkillError::Duplicate { .. }
    ));
}

/// Parses frontmatter text, or says the 1-based line it refused.
fn check(yaml: &str) -> Result<Value, usize> {
    frontmatter::parse(yaml)
        .map(Value::Object)
        .map_err(|e| e.line)
}

#[test]
fn frontmatter_reads_what_a_yaml_parser_reads() {
    let cases: &[(&str, Value)] = &[
        ("", json!({})),
        ("name: x\n", json!({"name": "x"})),
        (
            "a: 1\nb: -2\nc: 0x1f\nd: 0o17\ne: 1.5\nf: 1e3\ng: .5\n",
            json!({"a": 1, "b": -2, "c": 31, "d": 15, "e": 1.5, "f": 1000.0, "g": 0.5}),
        ),
        (
            "a: true\nb: False\nc: null\nd: ~\ne:\n",
            json!({"a": true, "b": false, "c": null, "d": null, "e": null}),
        ),
        (
            "a: \"x: y # z\"\nb: 'it''s'\nc: plain # comment\n",
            json!({"a": "x: y # z", "b": "it's", "c": "plain"}),
        ),
        (
            "a: \"tab\\there \\u00e9\\\\\"\n",
            json!({"a": "tab\there é\\"}),
        ),
        (
            "a: 1.0.0\nb: v1\nc: 12:30\nd: http://x.y/z\n",
            json!({"a": "1.0.0", "b": "v1", "c": "12:30", "d": "http://x.y/z"}),
        ),
        (
            "m:\n  k: v\n  n:\n    deep: 2\nafter: 3\n",
            json!({"m": {"k": "v", "n": {"deep": 2}}, "after": 3}),
        ),
        (
            "l:\n- a\n- 2\nm:\n  - \"b\"\n  -\n",
            json!({"l": ["a", 2], "m": ["b", null]}),
        ),
        (
            "l: [a, \"b, c\", 3, ]\ne: []\n",
            json!({"l": ["a", "b, c", 3], "e": []}),
        ),
        (
            "# comment\n\n\"quoted key\": v\n",
            json!({"quoted key": "v"}),
        ),
        (
            "big: 9223372036854775807\n",
            json!({"big": 9_223_372_036_854_775_807_i64}),
        ),
    ];
    for (yaml, want) in cases {
        assert_eq!(check(yaml).as_ref(), Ok(want), "{yaml:?}");
    }
}

#[test]
fn frontmatter_refuses_what_it_would_read_differently() {
    let cases: &[(&str, usize)] = &[
        ("a: {b: c}\n", 1),
        ("a: &anchor x\n", 1),
        ("a: *alias\n", 1),
        ("a: !tag x\n", 1),
        ("a: b: c\n", 1),
        ("a: x\na: y\n", 2),
        ("a: x\n  b: y\n", 2),
        ("  a: x\n", 1),
        ("a:\n\tb: x\n", 2),
        ("a: \"open\n", 1),
        ("a: .inf\n", 1),
        ("a: 99999999999999999999\n", 1),
        ("l:\n  - k: v\n", 2),
        ("just text\n", 1),
        ("a: 'x' y\n", 1),
        // What the host's own reader refused before the two were one.
        ("name: a\nname: b\n", 2),
        ("name: &anchor a\n", 1),
        ("name: *alias\n", 1),
        ("name: !tag a\n", 1),
        ("list:\n  - key: value\n", 2),
        ("tags: [[a]]\n", 1),
        ("name: \"unterminated\n", 1),
        ("  name: indented\nother: x\n", 1),
        // What the host's reader read and this one refuses, as the stricter of the two: a
        // plain scalar over several lines, an empty flow mapping. (Block scalars are read:
        // frontmatter/tests.rs.)
        ("name: x\nlong: a plain value\n  that goes on\n", 3),
        ("empty: {}\n", 1),
    ];
    for (yaml, line) in cases {
        assert_eq!(check(yaml).err(), Some(*line), "{yaml:?}");
    }
}

#[test]
fn frontmatter_is_found_between_the_first_two_dashed_lines() {
    assert_eq!(
        frontmatter::split("\u{feff}---\r\nname: x\r\n---\r\nbody\n"),
        Some(("name: x\r\n", "body\n"))
    );
    assert_eq!(frontmatter::split("---\n---\n"), Some(("", "")));
    assert_eq!(
        frontmatter::split("---\na: b\n--- \nrest"),
        Some(("a: b\n", "rest"))
    );
    assert_eq!(frontmatter::split("text\n---\na: b\n---\n"), None);
    assert_eq!(frontmatter::split("---\na: b\n"), None);
    // YAML's document end `...` does not close frontmatter (the host's reader took it once).
    assert_eq!(frontmatter::split("---\na: b\n...\nbody\n"), None);
}

/// The frontmatter a host compares: read exactly, then compared field by field, the first
/// field that differs named by its dotted path.
#[test]
fn frontmatter_the_host_compares_is_read_exactly_and_compared_field_by_field() {
    let text = "name: x\n\
        quoted: \"a \\\"b\\\" \\u00e9\"\n\
        single: 'it''s'\n\
        version: 1.0\n\
        draft: false\n\
        tags: [a, \"b c\"]\n\
        allowed-tools:\n  - Bash\n  - Read  # a comment\n\
        metadata:\n  owner: team\n  nested:\n    deep: yes\n";
    let parsed = frontmatter::parse(text).unwrap();
    let same = json!({
        "name": "x", "quoted": "a \"b\" é", "single": "it's", "version": 1.0, "draft": false,
        "tags": ["a", "b c"], "allowed-tools": ["Bash", "Read"],
        "metadata": {"owner": "team", "nested": {"deep": "yes"}},
    });
    let same = same.as_object().unwrap().clone();
    assert_eq!(parsed, same);
    frontmatter::compare(&parsed, &same).unwrap();
    // `1.0` is the number 1, which a JavaScript server lists as `1`.
    let mut integral = same.clone();
    integral.insert("version".into(), json!(1));
    frontmatter::compare(&parsed, &integral).unwrap();
    let mut other = same.clone();
    other.insert("version".into(), json!(1.5));
    assert_eq!(
        frontmatter::compare(&parsed, &other),
        Err(frontmatter::Mismatch::Differs("version".into()))
    );
    // A quoted number is a string: it does not stand for the number 1.0.
    let mut typed = same.clone();
    typed.insert("quoted".into(), json!(1.0));
    assert_eq!(
        frontmatter::compare(&parsed, &typed),
        Err(frontmatter::Mismatch::Differs("quoted".into()))
    );
    let mut nested = same.clone();
    nested["metadata"]["nested"]["deep"] = json!("no");
    let err = frontmatter::compare(&parsed, &nested).unwrap_err();
    assert!(err.to_string().contains("`metadata.nested.deep`"), "{err}");
    let mut shorter = same.clone();
    shorter["tags"] = json!(["a"]);
    assert_eq!(
        frontmatter::compare(&parsed, &shorter)
            .unwrap_err()
            .to_string(),
        "`tags` has 2 items in the file and 1 in the listing"
    );
    let mut item = same.clone();
    item["allowed-tools"][1] = json!("Write");
    assert_eq!(
        frontmatter::compare(&parsed, &item),
        Err(frontmatter::Mismatch::Differs("allowed-tools[1]".into()))
    );
    let mut fewer = same.clone();
    fewer.remove("draft");
    assert_eq!(
        frontmatter::compare(&parsed, &fewer),
        Err(frontmatter::Mismatch::OnlyInFile("draft".into()))
    );
    let mut more = same;
    more.insert("license".into(), json!("MIT"));
    assert_eq!(
        frontmatter::compare(&parsed, &more),
        Err(frontmatter::Mismatch::OnlyListed("license".into()))
    );
}

/// A handshake-era server session with `capabilities`, initialized; returns what it sent and
/// the requests it routed to its handler for each of `requests`.
fn serve(capabilities: ServerCapabilities, requests: &[Value]) -> (Vec<Value>, Vec<ClientRequest>) {
    use std::time::Instant;

    use crate::jsonrpc::decode;
    use crate::schema::Implementation;
    use crate::session::{ServerConfig, ServerEvent, ServerSession};

    // A start for the session's clock only because `Instant` has no constructor; nothing
    // here depends on time.
    #[allow(clippy::disallowed_methods)]
    let now = Instant::now();
    let mut config = ServerConfig::new(Implementation::new("skills".into(), "1".into()));
    config.capabilities = capabilities;
    let mut server = ServerSession::new(config);
    let feed = |server: &mut ServerSession, frame: &Value| {
        server.handle_decoded(now, decode(&serde_json::to_vec(frame).unwrap()).unwrap());
        std::iter::from_fn(|| server.poll_transmit())
            .map(|m| serde_json::from_slice::<Value>(&m.encode()).unwrap())
            .collect::<Vec<_>>()
    };
    feed(
        &mut server,
        &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}),
    );
    feed(
        &mut server,
        &json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
    );
    let mut sent = Vec::new();
    for request in requests {
        sent.extend(feed(&mut server, request));
    }
    let routed = std::iter::from_fn(|| server.poll_event())
        .filter_map(|e| match e {
            ServerEvent::Request { request, .. } => Some(request),
            _ => None,
        })
        .collect();
    (sent, routed)
}

#[test]
fn a_server_session_routes_the_skills_methods_only_when_it_declared_the_extension() {
    let requests = [
        json!({"jsonrpc":"2.0","id":1,"method":"skills/list","params":{}}),
        json!({"jsonrpc":"2.0","id":2,"method":"skills/get","params":{"uri":"skill://a/SKILL.md"}}),
        json!({"jsonrpc":"2.0","id":3,"method":"resources/directory/read","params":{"uri":"skill://a"}}),
    ];
    let mut declared = ServerCapabilities::new();
    catalog().declare(&mut declared).unwrap();
    let (sent, routed) = serve(declared, &requests);
    assert_eq!(sent, Vec::<Value>::new(), "nothing refused");
    let methods: Vec<&str> = routed.iter().map(ClientRequest::method).collect();
    assert_eq!(
        methods,
        ["skills/list", "skills/get", "resources/directory/read"]
    );
    assert!(matches!(&routed[1], ClientRequest::GetSkill(p) if p.uri == "skill://a/SKILL.md"));

    // Declared without directoryRead: the directory read alone is refused.
    let mut without_directory = ServerCapabilities::new();
    SkillsCapability::new()
        .declare(&mut without_directory)
        .unwrap();
    let (sent, routed) = serve(without_directory, &requests);
    assert_eq!(routed.len(), 2);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["id"], 3);
    assert_eq!(sent[0]["error"]["code"], code::METHOD_NOT_FOUND);

    // Not declared: all three are -32601 and none reaches the handler.
    let (sent, routed) = serve(ServerCapabilities::new(), &requests);
    assert!(routed.is_empty());
    let codes: Vec<&Value> = sent.iter().map(|m| &m["error"]["code"]).collect();
    assert_eq!(codes, [&json!(code::METHOD_NOT_FOUND); 3]);
}
