//! The frontmatter reader against `saphyr`, a YAML 1.2 parser, as the oracle: what the reader
//! reads, saphyr reads the same; what it refuses, it refuses with the line, never misreads.

use saphyr::{LoadableYamlNode, ScalarOwned, YamlOwned};
use serde_json::{Value, json};

use super::parse;

/// What saphyr reads from `yaml`, as JSON, or `None` when it refuses it.
fn oracle(yaml: &str) -> Option<Value> {
    let docs = YamlOwned::load_from_str(yaml).ok()?;
    match docs.into_iter().next() {
        None => Some(json!({})),
        Some(doc) => to_json(doc),
    }
}

fn to_json(node: YamlOwned) -> Option<Value> {
    Some(match node {
        YamlOwned::Value(ScalarOwned::Null) => Value::Null,
        YamlOwned::Value(ScalarOwned::Boolean(b)) => json!(b),
        YamlOwned::Value(ScalarOwned::Integer(i)) => json!(i),
        YamlOwned::Value(ScalarOwned::FloatingPoint(f)) => json!(f.into_inner()),
        YamlOwned::Value(ScalarOwned::String(s)) => json!(s),
        YamlOwned::Sequence(items) => {
            Value::Array(items.into_iter().map(to_json).collect::<Option<_>>()?)
        }
        YamlOwned::Mapping(map) => {
            let mut object = serde_json::Map::new();
            for (key, value) in map {
                let YamlOwned::Value(ScalarOwned::String(key)) = key else {
                    return None;
                };
                object.insert(key, to_json(value)?);
            }
            Value::Object(object)
        }
        // Nothing the reader reads is one of these: comparing them would compare nothing.
        YamlOwned::Representation(..)
        | YamlOwned::Tagged(..)
        | YamlOwned::Alias(_)
        | YamlOwned::BadValue => return None,
    })
}

/// What the reader makes of `yaml`: the object, or the line it refused.
fn read(yaml: &str) -> Result<Value, usize> {
    parse(yaml).map(Value::Object).map_err(|e| e.line)
}

/// Block scalars as SKILL.md files write them, and the corners of YAML 1.2's folding and
/// chomping rules: each is read, and read as saphyr reads it (the value is given too, so a
/// reader and an oracle wrong the same way would still fail).
#[test]
fn block_scalars_are_read_as_a_yaml_parser_reads_them() {
    let cases: &[(&str, Value)] = &[
        (
            "name: pdf\ndescription: >\n  Fill PDF forms\n  and extract text.\n",
            json!({"name": "pdf", "description": "Fill PDF forms and extract text.\n"}),
        ),
        (
            "description: |\n  line one\n  line two\nafter: 1\n",
            json!({"description": "line one\nline two\n", "after": 1}),
        ),
        ("d: >-\n  one\n  two\n\n\n", json!({"d": "one two"})),
        ("d: |+\n  one\n\n\n", json!({"d": "one\n\n\n"})),
        ("d: |-\n  one\n  two\n", json!({"d": "one\ntwo"})),
        ("d: >+\n  one\n\nx: 1\n", json!({"d": "one\n\n", "x": 1})),
        // Empty lines between folded lines are line breaks; one break alone is a space.
        (
            "d: >\n  a\n  b\n\n  c\n\n\n  d\n",
            json!({"d": "a b\nc\n\nd\n"}),
        ),
        // More-indented lines keep their breaks and their extra indentation.
        (
            "d: >\n  a\n    code\n    more\n  b\n  c\n",
            json!({"d": "a\n  code\n  more\nb c\n"}),
        ),
        (
            "d: >\n  a\n\n    code\n\n  b\n",
            json!({"d": "a\n\n  code\n\nb\n"}),
        ),
        // Leading empty lines, `#` and quotes inside the content, trailing spaces kept.
        (
            "d: |\n\n  # not a comment\n  \"q\" 'r': s  \n",
            json!({"d": "\n# not a comment\n\"q\" 'r': s  \n"}),
        ),
        // An indentation indicator, either order with chomping, and a comment after it.
        ("d: |2\n   three\n  two\n", json!({"d": " three\ntwo\n"})),
        ("d: >-1 # c\n  x\n y\n", json!({"d": " x\ny"})),
        ("d: |1-\n  x\n", json!({"d": " x"})),
        // Nested under a key, and as sequence items (compact and indented).
        (
            "metadata:\n  long: |\n    a\n    b\n  short: x\n",
            json!({"metadata": {"long": "a\nb\n", "short": "x"}}),
        ),
        (
            "l:\n- |\n  a\n- >-\n  b\n  c\n- d\n",
            json!({"l": ["a\n", "b c", "d"]}),
        ),
        ("l:\n  - |2-\n     x\n  - y\n", json!({"l": [" x", "y"]})),
        // No content: empty, whatever the chomping but keep.
        ("d: |\nx: 1\n", json!({"d": "", "x": 1})),
        ("d: >-\n\nx: 1\n", json!({"d": "", "x": 1})),
        ("d: |+\n\nx: 1\n", json!({"d": "\n", "x": 1})),
        // A comment less indented ends the content; tabs inside it are content.
        ("d: |\n  a\n# c\nx: 1\n", json!({"d": "a\n", "x": 1})),
        ("d: |\n  a\tb\n  \tc\n", json!({"d": "a\tb\n\tc\n"})),
        // A space-only line deeper than the content is content (folded: more indented).
        ("d: >\n  a\n     \n  b\n", json!({"d": "a\n   \nb\n"})),
        // CRLF line breaks are line breaks.
        ("d: |\r\n  a\r\n  b\r\n", json!({"d": "a\nb\n"})),
    ];
    for (yaml, want) in cases {
        assert_eq!(read(yaml).as_ref(), Ok(want), "the reader, {yaml:?}");
        assert_eq!(oracle(yaml).as_ref(), Some(want), "saphyr, {yaml:?}");
    }
}

/// Every combination of header, body and place: the reader refuses, or reads what saphyr
/// reads. Most are read, so the comparison is not empty.
#[test]
fn every_block_scalar_combination_is_read_as_saphyr_reads_it_or_refused() {
    let headers = [
        "|", "|-", "|+", ">", ">-", ">+", "|1", "|2-", "|+2", ">1", ">2+", ">-2", "|3", ">3",
    ];
    let bodies = [
        "  a\n",
        "  a\n  b\n",
        "  a\n\n  b\n",
        "  a\n   b\n  c\n",
        "   a\n  b\n",
        "\n\n  a\n",
        "  \n  a\n",
        "    \n  a\n",
        "  a\n\n\n",
        "  a\n    \n\n",
        "  a\n  # b\n",
        "  a\n # b\n",
        "  a\n\tb\n",
        "  a\n   \tb\n",
        "  a\n\n     b\n\n  c\n",
        "\n",
        "",
        "  a",
    ];
    let mut read_count = 0;
    let mut total = 0;
    for header in headers {
        for body in bodies {
            let indented: String = body
                .split_inclusive('\n')
                .map(|l| {
                    if l.trim().is_empty() {
                        l.to_owned()
                    } else {
                        format!("  {l}")
                    }
                })
                .collect();
            let after = if body.ends_with('\n') { "z: 1\n" } else { "" };
            for yaml in [
                format!("k: {header}\n{body}{after}"),
                format!("m:\n  k: {header}\n{indented}{after}"),
                format!("l:\n- {header}\n{body}{after}"),
                format!("l:\n  - {header}\n{indented}{after}"),
            ] {
                total += 1;
                let oracle = oracle(&yaml);
                if let Ok(ours) = read(&yaml) {
                    read_count += 1;
                    assert_eq!(Some(&ours), oracle.as_ref(), "{yaml:?}");
                }
            }
        }
    }
    assert!(
        read_count * 10 >= total * 7,
        "only {read_count} of {total} read"
    );
}

/// What the reader refuses about block scalars, with the line and a reason an author can act
/// on.
#[test]
fn block_scalars_it_cannot_read_exactly_are_refused_with_the_line() {
    let cases: &[(&str, usize, &str)] = &[
        ("d: |0\n  a\n", 1, "1 to 9"),
        ("d: |x\n  a\n", 1, "must end its line"),
        ("d: |--\n  a\n", 1, "must end its line"),
        ("d: |#c\n  a\n", 1, "must end its line"),
        ("d: >12\n  a\n", 1, "must end its line"),
        ("x: 1\nd: |\n    \n  a\n", 3, "empty line of 4 spaces"),
        ("d: |\n  a\rb\n", 2, "carriage return"),
        ("d: |\n  a\n\tb: 1\n", 3, "tabs"),
        ("d: |\n  a\n   \n b\n", 4, "indented deeper"),
        // YAML 1.2 reads `a`, saphyr `a` and a line break: split's frontmatter always ends
        // with one, so only a direct caller meets this.
        ("d: |\n  a", 2, "line break"),
        ("d: >+\n  a\n  ", 3, "line break"),
    ];
    for (yaml, line, words) in cases {
        let err = parse(yaml).unwrap_err();
        assert_eq!(err.line, *line, "{yaml:?}: {err}");
        assert!(err.detail.contains(words), "{yaml:?}: {err}");
    }
}

/// A `SKILL.md` whose description is a folded block, as real skills write it: the server half
/// lists the folded string, and the host half's comparison of the file with that listing
/// passes, so a skill of that shape is served and loaded.
#[test]
fn a_skill_md_with_a_folded_description_is_listed_and_compares_equal() {
    let md = "---\nname: pdf-processing\ndescription: >-\n  Fill PDF forms\n  and extract text.\nmetadata:\n  notes: |\n    one\n    two\n---\nSteps.\n";
    let mut catalog = crate::SkillCatalog::new();
    catalog
        .add("pdf-processing", [("SKILL.md", md.as_bytes())])
        .unwrap();
    let entry = catalog.entries().next().unwrap();
    assert_eq!(
        Value::Object(entry.frontmatter.clone()),
        json!({
            "name": "pdf-processing",
            "description": "Fill PDF forms and extract text.",
            "metadata": {"notes": "one\ntwo\n"}
        })
    );
    let (yaml, body) = super::split(md).unwrap();
    assert_eq!(body, "Steps.\n");
    super::compare(&parse(yaml).unwrap(), &entry.frontmatter).unwrap();
}
