//! The YAML frontmatter of a `SKILL.md`, read strictly and compared field by field with the
//! frontmatter a server listed for the skill (SEP-2640: a host "MUST parse its YAML
//! frontmatter and compare it field-by-field against the entry's frontmatter, and MUST NOT
//! load the skill on any discrepancy").
//!
//! Only the part of YAML that skill frontmatter uses is understood: block mappings nested by
//! indentation, block sequences of scalars, flow sequences of scalars, plain, single- and
//! double-quoted scalars, and `|`/`>` block scalars. Anything else (anchors, aliases, tags,
//! nested flow collections, duplicate keys) is refused rather than guessed at: a file the host
//! cannot read exactly is a file it cannot compare, and an unclear comparison must refuse.

use serde_json::Value;

/// A parsed node. Scalars keep their text and whether it was quoted, so that a comparison
/// with the listed JSON value can tell `1.0` (a number in YAML) from `"1.0"` (a string) only
/// where it matters.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    /// A scalar: its text, and whether it was written plain (unquoted, not a block scalar).
    Scalar { text: String, plain: bool },
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping, in the file's order.
    Map(Vec<(String, Node)>),
}

/// Splits a `SKILL.md` into its frontmatter (between a first line `---` and the next `---`)
/// and the rest. `None` when the file has no frontmatter.
pub(crate) fn split(text: &str) -> Option<(&str, &str)> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare == "---" || bare == "..." {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

/// Parses frontmatter text into a mapping. The error says which line was not understood.
pub(crate) fn parse(text: &str) -> Result<Vec<(String, Node)>, String> {
    let lines: Vec<Line<'_>> = text
        .lines()
        .enumerate()
        .filter_map(|(i, raw)| Line::new(i + 1, raw))
        .collect();
    let mut parser = Parser { lines, at: 0 };
    let map = parser.mapping(0)?;
    if let Some(line) = parser.lines.get(parser.at) {
        return Err(format!("line {}: unexpected indentation", line.number));
    }
    Ok(map)
}

/// Compares the file's frontmatter with the listed one, field by field. `Err` names the first
/// field that differs (a dotted path) and how.
pub(crate) fn compare(
    file: &[(String, Node)],
    listed: &serde_json::Map<String, Value>,
) -> Result<(), String> {
    compare_map(file, listed, "")
}

fn compare_map(
    file: &[(String, Node)],
    listed: &serde_json::Map<String, Value>,
    path: &str,
) -> Result<(), String> {
    let field = |k: &str| {
        if path.is_empty() {
            k.to_owned()
        } else {
            format!("{path}.{k}")
        }
    };
    for (key, node) in file {
        let Some(value) = listed.get(key) else {
            return Err(format!(
                "`{}` is in the file but not in the listing",
                field(key)
            ));
        };
        compare_node(node, value, &field(key))?;
    }
    for key in listed.keys() {
        if !file.iter().any(|(k, _)| k == key) {
            return Err(format!(
                "`{}` is in the listing but not in the file",
                field(key)
            ));
        }
    }
    Ok(())
}

fn compare_node(node: &Node, value: &Value, path: &str) -> Result<(), String> {
    let differs = || format!("`{path}` differs between the file and the listing");
    match (node, value) {
        (Node::Map(entries), Value::Object(listed)) => compare_map(entries, listed, path),
        (Node::Seq(items), Value::Array(listed)) => {
            if items.len() != listed.len() {
                return Err(format!(
                    "`{path}` has {} items in the file and {} in the listing",
                    items.len(),
                    listed.len()
                ));
            }
            for (i, (n, v)) in items.iter().zip(listed).enumerate() {
                compare_node(n, v, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        (Node::Scalar { text, plain }, value) => {
            if scalar_matches(text, *plain, value) {
                Ok(())
            } else {
                Err(differs())
            }
        }
        _ => Err(differs()),
    }
}

/// Whether a YAML scalar stands for the listed JSON value: a string by its text, and for a
/// plain scalar also a number, boolean or null by YAML's core schema.
fn scalar_matches(text: &str, plain: bool, value: &Value) -> bool {
    match value {
        Value::String(s) => s == text,
        Value::Number(n) if plain => match (text.parse::<i64>(), n.as_i64()) {
            (Ok(a), Some(b)) => a == b,
            _ => match (text.parse::<f64>(), n.as_f64()) {
                (Ok(a), Some(b)) => a == b,
                _ => false,
            },
        },
        Value::Bool(b) if plain => matches!(
            (text, b),
            ("true" | "True" | "TRUE", true) | ("false" | "False" | "FALSE", false)
        ),
        Value::Null if plain => matches!(text, "" | "~" | "null" | "Null" | "NULL"),
        _ => false,
    }
}

/// One line that holds something: its number, indentation and content (comments and blank
/// lines are dropped here; a block scalar's lines are read raw by the parser).
#[derive(Debug, Clone, Copy)]
struct Line<'a> {
    number: usize,
    indent: usize,
    content: &'a str,
    raw: &'a str,
}

impl<'a> Line<'a> {
    fn new(number: usize, raw: &'a str) -> Option<Self> {
        let raw = raw.trim_end_matches('\r');
        let content = raw.trim_start_matches(' ');
        let indent = raw.len() - content.len();
        let content = content.trim_end();
        if content.is_empty() || content.starts_with('#') {
            // Kept for block scalars, which take blank lines as part of their text.
            return if content.is_empty() {
                Some(Self {
                    number,
                    indent: usize::MAX,
                    content,
                    raw,
                })
            } else {
                None
            };
        }
        Some(Self {
            number,
            indent,
            content,
            raw,
        })
    }

    fn is_blank(&self) -> bool {
        self.indent == usize::MAX
    }
}

struct Parser<'a> {
    lines: Vec<Line<'a>>,
    at: usize,
}

impl<'a> Parser<'a> {
    fn skip_blank(&mut self) {
        while self.lines.get(self.at).is_some_and(Line::is_blank) {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<Line<'a>> {
        self.skip_blank();
        self.lines.get(self.at).copied()
    }

    /// A block mapping whose keys sit at exactly `indent`.
    fn mapping(&mut self, indent: usize) -> Result<Vec<(String, Node)>, String> {
        let mut map: Vec<(String, Node)> = Vec::new();
        while let Some(line) = self.peek() {
            if line.indent < indent {
                break;
            }
            if line.indent > indent {
                return Err(format!("line {}: unexpected indentation", line.number));
            }
            let number = line.number;
            let (key, rest) = split_key(line.content)
                .ok_or_else(|| format!("line {number}: expected `key: value`"))?;
            if map.iter().any(|(k, _)| *k == key) {
                return Err(format!("line {number}: `{key}` is given twice"));
            }
            self.at += 1;
            let node = self.value(rest, indent, number)?;
            map.push((key, node));
        }
        Ok(map)
    }

    /// The value after `key:` on a line at `indent`: inline, a block scalar, or a nested block.
    fn value(&mut self, rest: &str, indent: usize, number: usize) -> Result<Node, String> {
        let rest = strip_comment(rest).trim();
        if rest.is_empty() {
            return match self.peek() {
                Some(next) if next.indent > indent => {
                    if next.content.starts_with("- ") || next.content == "-" {
                        self.sequence(next.indent)
                    } else {
                        self.mapping(next.indent).map(Node::Map)
                    }
                }
                // A sequence may sit at its key's own indentation.
                Some(next)
                    if next.indent == indent
                        && (next.content.starts_with("- ") || next.content == "-") =>
                {
                    self.sequence(indent)
                }
                _ => Ok(Node::Scalar {
                    text: String::new(),
                    plain: true,
                }),
            };
        }
        if let Some(style) = rest.strip_prefix('|') {
            return self.block_scalar(style, indent, number, false);
        }
        if let Some(style) = rest.strip_prefix('>') {
            return self.block_scalar(style, indent, number, true);
        }
        if rest.starts_with('[') {
            return flow_sequence(rest).map_err(|e| format!("line {number}: {e}"));
        }
        if rest == "{}" {
            return Ok(Node::Map(Vec::new()));
        }
        let first = scalar(rest).map_err(|e| format!("line {number}: {e}"))?;
        // A plain scalar may go on over more-indented lines, folded with spaces.
        if let Node::Scalar {
            mut text,
            plain: true,
        } = first
        {
            while let Some(next) = self.peek() {
                if next.indent <= indent {
                    break;
                }
                text.push(' ');
                text.push_str(strip_comment(next.content).trim());
                self.at += 1;
            }
            return Ok(Node::Scalar { text, plain: true });
        }
        Ok(first)
    }

    /// A block sequence of scalars whose dashes sit at `indent`.
    fn sequence(&mut self, indent: usize) -> Result<Node, String> {
        let mut items = Vec::new();
        while let Some(line) = self.peek() {
            if line.indent != indent || !(line.content.starts_with("- ") || line.content == "-") {
                break;
            }
            let number = line.number;
            let item = line.content[1..].trim();
            if split_key(item).is_some() {
                return Err(format!(
                    "line {number}: mappings inside sequences are not supported"
                ));
            }
            self.at += 1;
            let node = if item.starts_with('[') {
                flow_sequence(item)
            } else {
                scalar(strip_comment(item).trim())
            }
            .map_err(|e| format!("line {number}: {e}"))?;
            items.push(node);
        }
        Ok(Node::Seq(items))
    }

    /// A `|` (literal) or `>` (folded) block scalar after a key at `indent`.
    fn block_scalar(
        &mut self,
        style: &str,
        indent: usize,
        number: usize,
        folded: bool,
    ) -> Result<Node, String> {
        let chomp = match strip_comment(style).trim() {
            "" => Chomp::Clip,
            "-" => Chomp::Strip,
            "+" => Chomp::Keep,
            other => {
                return Err(format!(
                    "line {number}: block scalar indicator `{other}` is not supported"
                ));
            }
        };
        let mut body: Vec<&'a str> = Vec::new();
        let mut block_indent = None;
        while let Some(line) = self.lines.get(self.at).copied() {
            if line.is_blank() {
                body.push("");
                self.at += 1;
                continue;
            }
            let own = *block_indent.get_or_insert(line.indent);
            if line.indent <= indent || line.indent < own {
                break;
            }
            body.push(&line.raw[own..]);
            self.at += 1;
        }
        // Trailing blank lines belong to the chomping, not the text.
        let trailing = body.iter().rev().take_while(|l| l.is_empty()).count();
        let content = &body[..body.len() - trailing];
        let mut text = String::new();
        if folded {
            for (i, l) in content.iter().enumerate() {
                if i > 0 {
                    if l.is_empty() || content[i - 1].is_empty() {
                        text.push('\n');
                    } else {
                        text.push(' ');
                    }
                }
                text.push_str(l);
            }
        } else {
            text = content.join("\n");
        }
        match chomp {
            Chomp::Strip => {}
            Chomp::Clip if !content.is_empty() => text.push('\n'),
            Chomp::Clip => {}
            Chomp::Keep => {
                text.push('\n');
                text.push_str(&"\n".repeat(trailing));
            }
        }
        Ok(Node::Scalar { text, plain: false })
    }
}

#[derive(Clone, Copy)]
enum Chomp {
    Clip,
    Strip,
    Keep,
}

/// `key: rest` (or `key:` at the end of the line), with a plain or quoted key.
fn split_key(content: &str) -> Option<(String, &str)> {
    if content.starts_with('"') || content.starts_with('\'') {
        let quote = content.chars().next()?;
        let end = content[1..].find(quote)? + 1;
        let key = content[1..end].to_owned();
        let rest = content[end + 1..].strip_prefix(':')?;
        return (rest.is_empty() || rest.starts_with(' ')).then_some((key, rest));
    }
    let mut from = 0;
    while let Some(i) = content[from..].find(':') {
        let at = from + i;
        let after = &content[at + 1..];
        if after.is_empty() || after.starts_with(' ') {
            let key = content[..at].trim();
            if key.is_empty() || key.starts_with(['-', '[', '{', '&', '*', '!', '?', '|', '>']) {
                return None;
            }
            return Some((key.to_owned(), after));
        }
        from = at + 1;
    }
    None
}

/// Drops a ` #` comment from a plain value (not inside quotes, which `scalar` handles).
fn strip_comment(s: &str) -> &str {
    if s.starts_with('"') || s.starts_with('\'') {
        return s;
    }
    match s.find(" #") {
        Some(i) => &s[..i],
        None => s,
    }
}

/// One inline scalar: quoted or plain.
fn scalar(s: &str) -> Result<Node, String> {
    if let Some(inner) = s.strip_prefix('"') {
        let (text, rest) = double_quoted(inner)?;
        return trailing(rest).map(|()| Node::Scalar { text, plain: false });
    }
    if let Some(inner) = s.strip_prefix('\'') {
        let (text, rest) = single_quoted(inner)?;
        return trailing(rest).map(|()| Node::Scalar { text, plain: false });
    }
    if s.starts_with(['&', '*', '!', '{', '%', '@', '`']) {
        return Err(format!(
            "`{s}`: anchors, aliases, tags and flow mappings are not supported"
        ));
    }
    Ok(Node::Scalar {
        text: s.to_owned(),
        plain: true,
    })
}

fn trailing(rest: &str) -> Result<(), String> {
    let rest = rest.trim();
    if rest.is_empty() || rest.starts_with('#') {
        Ok(())
    } else {
        Err(format!("unexpected `{rest}` after a quoted value"))
    }
}

fn double_quoted(s: &str) -> Result<(String, &str), String> {
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok((out, &s[i + 1..])),
            '\\' => {
                let (_, e) = chars.next().ok_or("an unfinished escape")?;
                match e {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    '0' => out.push('\0'),
                    '"' | '\\' | '/' | ' ' => out.push(e),
                    'u' => {
                        let hex: String = chars.by_ref().take(4).map(|(_, c)| c).collect();
                        let code = u32::from_str_radix(&hex, 16)
                            .ok()
                            .and_then(char::from_u32)
                            .ok_or_else(|| format!("a bad escape `\\u{hex}`"))?;
                        out.push(code);
                    }
                    other => return Err(format!("the escape `\\{other}` is not supported")),
                }
            }
            c => out.push(c),
        }
    }
    Err("an unterminated double-quoted string".to_owned())
}

fn single_quoted(s: &str) -> Result<(String, &str), String> {
    let mut out = String::new();
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '\'' {
            if chars.peek().is_some_and(|(_, n)| *n == '\'') {
                chars.next();
                out.push('\'');
                continue;
            }
            return Ok((out, &s[i + 1..]));
        }
        out.push(c);
    }
    Err("an unterminated single-quoted string".to_owned())
}

/// `[a, "b", 'c']`: scalars only.
fn flow_sequence(s: &str) -> Result<Node, String> {
    let inner = s
        .strip_prefix('[')
        .and_then(|r| strip_comment(r).trim_end().strip_suffix(']'))
        .ok_or("an unterminated flow sequence")?;
    let mut items = Vec::new();
    let mut rest = inner.trim();
    while !rest.is_empty() {
        let (node, after) = if let Some(q) = rest.strip_prefix('"') {
            let (text, after) = double_quoted(q)?;
            (Node::Scalar { text, plain: false }, after)
        } else if let Some(q) = rest.strip_prefix('\'') {
            let (text, after) = single_quoted(q)?;
            (Node::Scalar { text, plain: false }, after)
        } else {
            let end = rest.find(',').unwrap_or(rest.len());
            let item = rest[..end].trim();
            if item.starts_with(['[', '{', '&', '*', '!']) {
                return Err("nested flow collections are not supported".to_owned());
            }
            (
                Node::Scalar {
                    text: item.to_owned(),
                    plain: true,
                },
                &rest[end..],
            )
        };
        items.push(node);
        let after = after.trim_start();
        rest = match after.strip_prefix(',') {
            Some(r) => r.trim_start(),
            None if after.is_empty() => after,
            None => return Err(format!("unexpected `{after}` in a flow sequence")),
        };
    }
    Ok(Node::Seq(items))
}
