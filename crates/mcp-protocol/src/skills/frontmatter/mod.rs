//! The YAML frontmatter of a `SKILL.md`, read as the JSON object a skill entry carries, and
//! compared field by field with the frontmatter an entry lists.
//!
//! Both halves of the skills extension (SEP-2640) read it: a server computes each entry's
//! `frontmatter` from the file, and a host "MUST parse its YAML frontmatter and compare it
//! field-by-field against the entry's frontmatter" before it loads the skill. One reader
//! serves both, so a server of this workspace never lists what its own host would refuse.
//!
//! The entry must be identical in content to the file, so the file must be read exactly as a
//! YAML parser would. Only the part of YAML that skill frontmatter uses is understood: block
//! mappings nested by indentation, block sequences, flow sequences of scalars, plain scalars
//! typed by the YAML 1.2 core schema (null, booleans, integers, floats, strings), single-
//! and double-quoted strings, and block scalars (`|` and `>`, with their chomping and
//! indentation indicators, in `block`). Anything else (flow mappings, anchors, aliases, tags,
//! multi-line plain or quoted scalars, tabs for indentation, a key given twice)
//! is refused with the line it is on, rather than read differently from how another parser
//! would read it: a file that cannot be read exactly cannot be compared, and an unclear
//! comparison must refuse.

mod block;
#[cfg(test)]
mod tests;

use serde_json::{Map, Number, Value};

use crate::wire::JsonObject;

/// Why frontmatter could not be read: the line (1-based, counted from the line after the
/// opening `---`) and what was wrong there, so an author can find it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {detail}")]
pub struct Unreadable {
    /// The line, 1-based, within the frontmatter text.
    pub line: usize,
    /// What was wrong on it.
    pub detail: String,
}

/// The first field in which a file's frontmatter and a listed one differ, named by its dotted
/// path (`metadata.owner`, `tags[1]`), so a refusal says what a server changed without
/// quoting the values themselves.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Mismatch {
    /// The file has a field the listing lacks.
    #[error("`{0}` is in the file but not in the listing")]
    OnlyInFile(String),
    /// The listing has a field the file lacks.
    #[error("`{0}` is in the listing but not in the file")]
    OnlyListed(String),
    /// A sequence has a different number of items.
    #[error("`{field}` has {file} items in the file and {listed} in the listing")]
    Length {
        /// The field.
        field: String,
        /// Items in the file.
        file: usize,
        /// Items in the listing.
        listed: usize,
    },
    /// The values differ (in type or content).
    #[error("`{0}` differs between the file and the listing")]
    Differs(String),
}

type Parsed<T> = Result<T, Unreadable>;

/// Splits a `SKILL.md` into its frontmatter text (between a first line `---` and the next line
/// `---`) and the body after it, the instructions proper. `None` when the file does not begin
/// with frontmatter. A byte order mark before the first `---` is skipped.
pub fn split(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\r\n")
        .or_else(|| text.strip_prefix("---\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare.trim_end_matches([' ', '\t']) == "---" {
            let yaml = &rest[..offset];
            return Some((yaml, &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

/// Parses frontmatter text (without its `---` lines) into the JSON object an entry carries,
/// or refuses it with the line it cannot read exactly. Empty frontmatter is an empty object.
pub fn parse(yaml: &str) -> Parsed<JsonObject> {
    let mut lines = Lines::new(yaml);
    let Some(first) = lines.peek()? else {
        return Ok(JsonObject::new());
    };
    if first.indent != 0 {
        return Err(first.error("the first key must not be indented"));
    }
    let map = lines.mapping(0)?;
    if let Some(line) = lines.peek()? {
        return Err(line.error("indented deeper than the key before it, or less than its siblings"));
    }
    Ok(map)
}

/// Compares a file's frontmatter (as [`parse`] read it) with the one an entry lists, field by
/// field, nested fields and sequence items included. Numbers are equal by value (`1.0` and `1`
/// are one number in YAML and in JavaScript, whose SDKs write it as `1`); every other value by
/// type and content, so the string `"1.0"` never stands for the number.
pub fn compare(file: &JsonObject, listed: &JsonObject) -> Result<(), Mismatch> {
    compare_map(file, listed, "")
}

fn compare_map(file: &JsonObject, listed: &JsonObject, path: &str) -> Result<(), Mismatch> {
    let field = |k: &str| {
        if path.is_empty() {
            k.to_owned()
        } else {
            format!("{path}.{k}")
        }
    };
    for (key, value) in file {
        let Some(other) = listed.get(key) else {
            return Err(Mismatch::OnlyInFile(field(key)));
        };
        compare_value(value, other, &field(key))?;
    }
    if let Some(key) = listed.keys().find(|k| !file.contains_key(*k)) {
        return Err(Mismatch::OnlyListed(field(key)));
    }
    Ok(())
}

fn compare_value(file: &Value, listed: &Value, path: &str) -> Result<(), Mismatch> {
    match (file, listed) {
        (Value::Object(file), Value::Object(listed)) => compare_map(file, listed, path),
        (Value::Array(file), Value::Array(listed)) => {
            if file.len() != listed.len() {
                return Err(Mismatch::Length {
                    field: path.to_owned(),
                    file: file.len(),
                    listed: listed.len(),
                });
            }
            for (i, (a, b)) in file.iter().zip(listed).enumerate() {
                compare_value(a, b, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        (Value::Number(a), Value::Number(b)) if same_number(a, b) => Ok(()),
        (a, b) if a == b && !a.is_number() => Ok(()),
        _ => Err(Mismatch::Differs(path.to_owned())),
    }
}

/// Two JSON numbers that stand for the same value: integers exactly, otherwise as floats.
fn same_number(a: &Number, b: &Number) -> bool {
    match (a.as_i64(), b.as_i64()) {
        (Some(x), Some(y)) => x == y,
        _ => match (a.as_u64(), b.as_u64()) {
            (Some(x), Some(y)) => x == y,
            _ => a.as_f64().zip(b.as_f64()).is_some_and(|(x, y)| x == y),
        },
    }
}

/// One line of the frontmatter as written: its number, its text (without the line break), and
/// whether a line break ended it (the last line may have none), which block scalars keep.
#[derive(Debug, Clone, Copy)]
struct Row<'a> {
    number: usize,
    text: &'a str,
    broken: bool,
}

/// One line that is neither blank nor a comment: its number, its indentation, its content
/// after the indentation, and its place among the rows.
#[derive(Debug, Clone, Copy)]
struct Line<'a> {
    number: usize,
    indent: usize,
    content: &'a str,
    row: usize,
}

impl Line<'_> {
    fn error(&self, detail: &str) -> Unreadable {
        Unreadable {
            line: self.number,
            detail: detail.to_owned(),
        }
    }
}

/// The rows of the frontmatter, read from `next` on. Structure is read a [`Line`] at a time,
/// blank and comment-only rows skipped; a block scalar takes the rows of its content as they
/// are (blank ones and `#` included).
struct Lines<'a> {
    rows: Vec<Row<'a>>,
    next: usize,
}

impl<'a> Lines<'a> {
    fn new(yaml: &'a str) -> Self {
        let rows = yaml
            .split_inclusive('\n')
            .enumerate()
            .map(|(i, raw)| {
                let text = raw.strip_suffix('\n');
                Row {
                    number: i + 1,
                    text: text.map_or(raw, |t| t.strip_suffix('\r').unwrap_or(t)),
                    broken: text.is_some(),
                }
            })
            .collect();
        Self { rows, next: 0 }
    }

    /// The next line of structure, without taking it. A tab where indentation is read is
    /// refused here, when the line is reached, since inside a block scalar it is content.
    fn peek(&self) -> Parsed<Option<Line<'a>>> {
        for (at, row) in self.rows.iter().enumerate().skip(self.next) {
            let content = row.text.trim_start_matches(' ');
            if content.starts_with('\t') {
                return Err(Unreadable {
                    line: row.number,
                    detail: "tabs are not indentation in YAML".to_owned(),
                });
            }
            let content = content.trim_end_matches([' ', '\t']);
            if content.is_empty() || content.starts_with('#') {
                continue;
            }
            return Ok(Some(Line {
                number: row.number,
                indent: row.text.len() - row.text.trim_start_matches(' ').len(),
                content,
                row: at,
            }));
        }
        Ok(None)
    }

    /// Takes `line`, a line [`Lines::peek`] gave.
    fn take(&mut self, line: Line<'_>) {
        self.next = line.row + 1;
    }

    /// The block scalar whose header `text` is on `line`, its node at column `parent`: the
    /// rows of its content are taken. `None` when `text` is not a block scalar's header.
    fn block_scalar(&mut self, text: &str, parent: usize, line: Line<'_>) -> Option<Parsed<Value>> {
        let header = match block::header(text.trim_start_matches(' '))? {
            Ok(header) => header,
            Err(detail) => return Some(Err(line.error(&detail))),
        };
        Some(
            block::scalar(header, parent, &self.rows[self.next..]).map(|(text, taken)| {
                self.next += taken;
                Value::String(text)
            }),
        )
    }

    /// A block mapping whose keys are at exactly `indent`.
    fn mapping(&mut self, indent: usize) -> Parsed<JsonObject> {
        let mut map = Map::new();
        while let Some(line) = self.peek()? {
            if line.indent < indent {
                break;
            }
            if line.indent > indent {
                return Err(line.error("indented deeper than the key before it"));
            }
            if line.content.starts_with("- ") || line.content == "-" {
                return Err(line.error("a sequence item where a key was expected"));
            }
            self.take(line);
            let (key, rest) =
                split_key(line.content).ok_or_else(|| line.error("expected `key: value`"))?;
            if map.contains_key(&key) {
                return Err(line.error(&format!("the key `{key}` appears twice")));
            }
            let value = self.value(rest, indent, line)?;
            map.insert(key, value);
        }
        Ok(map)
    }

    /// The value after `key:`: a block scalar, inline, or, when nothing follows the colon, the
    /// block nested under the key (a mapping indented deeper, or a sequence at the same or
    /// deeper indentation), or null when nothing is nested.
    fn value(&mut self, rest: &str, indent: usize, line: Line<'_>) -> Parsed<Value> {
        if let Some(scalar) = self.block_scalar(rest, indent, line) {
            return scalar;
        }
        if !is_absent(rest) {
            return inline(rest).map_err(|detail| line.error(&detail));
        }
        let Some(next) = self.peek()? else {
            return Ok(Value::Null);
        };
        let is_item = next.content.starts_with("- ") || next.content == "-";
        if is_item && next.indent >= indent {
            return self.sequence(next.indent);
        }
        if next.indent > indent {
            return self.mapping(next.indent).map(Value::Object);
        }
        Ok(Value::Null)
    }

    /// A block sequence whose `-` are at exactly `indent`. Items are scalars (block scalars
    /// included) or flow sequences; nested blocks inside items are not understood.
    fn sequence(&mut self, indent: usize) -> Parsed<Value> {
        let mut items = Vec::new();
        while let Some(line) = self.peek()? {
            if line.indent != indent {
                if line.indent > indent {
                    return Err(
                        line.error("nested blocks inside a sequence item are not supported")
                    );
                }
                break;
            }
            let Some(item) = line
                .content
                .strip_prefix("- ")
                .or_else(|| (line.content == "-").then_some(""))
            else {
                break;
            };
            self.take(line);
            if let Some(scalar) = self.block_scalar(item, indent, line) {
                items.push(scalar?);
                continue;
            }
            if is_absent(item) {
                if self.peek()?.is_some_and(|n| n.indent > indent) {
                    return Err(
                        line.error("nested blocks inside a sequence item are not supported")
                    );
                }
                items.push(Value::Null);
                continue;
            }
            if split_key(item).is_some() {
                return Err(line.error("mappings inside a sequence are not supported"));
            }
            items.push(inline(item).map_err(|detail| line.error(&detail))?);
        }
        Ok(Value::Array(items))
    }
}

/// Splits `key: rest` (or `key:` at the end of the line). Keys are plain or quoted.
fn split_key(content: &str) -> Option<(String, &str)> {
    if let Some(quote @ ('"' | '\'')) = content.chars().next() {
        let (key, after) = if quote == '"' {
            double_quoted(content).ok()?
        } else {
            single_quoted(content).ok()?
        };
        let after = after.trim_start_matches(' ');
        let rest = after.strip_prefix(':')?;
        return (rest.is_empty() || rest.starts_with(' ')).then_some((key, rest));
    }
    let at = content
        .match_indices(':')
        .map(|(i, _)| i)
        .find(|&i| content[i + 1..].is_empty() || content[i + 1..].starts_with(' '))?;
    let key = content[..at].trim_end_matches(' ');
    if key.is_empty() || key.contains(" #") || starts_with_indicator(key) {
        return None;
    }
    Some((key.to_owned(), &content[at + 1..]))
}

/// Whether nothing but spaces and perhaps a comment follows: the value is not on this line.
fn is_absent(rest: &str) -> bool {
    let rest = rest.trim_start_matches(' ');
    rest.is_empty() || rest.starts_with('#')
}

/// What may follow a complete value on its line: spaces, then perhaps a ` # comment`.
fn trailing(after: &str) -> Result<(), String> {
    let rest = after.trim_start_matches(' ');
    if rest.is_empty() || (rest.starts_with('#') && rest.len() < after.len()) {
        Ok(())
    } else {
        Err("unexpected text after the value".to_owned())
    }
}

/// Whether a plain scalar would start with a YAML indicator that this reader does not handle.
fn starts_with_indicator(s: &str) -> bool {
    let mut chars = s.chars();
    let first = chars.next();
    let second = chars.next();
    match first {
        Some('[' | ']' | '{' | '}' | ',' | '#' | '&' | '*' | '!' | '|' | '>' | '%' | '@' | '`') => {
            true
        }
        Some('-' | '?' | ':') => matches!(second, None | Some(' ')),
        _ => false,
    }
}

/// A value written on the key's own line (after the spaces following `:` or `- `): a quoted
/// string, a flow sequence, or a plain scalar, perhaps followed by a comment.
fn inline(s: &str) -> Result<Value, String> {
    let s = s.trim_start_matches(' ');
    match s.chars().next() {
        Some('"') => {
            let (text, after) = double_quoted(s)?;
            trailing(after)?;
            Ok(Value::String(text))
        }
        Some('\'') => {
            let (text, after) = single_quoted(s)?;
            trailing(after)?;
            Ok(Value::String(text))
        }
        Some('[') => {
            let (items, after) = flow_sequence(s)?;
            trailing(after)?;
            Ok(items)
        }
        Some('{') => Err("flow mappings are not supported".to_owned()),
        Some(c) if starts_with_indicator(s) => {
            Err(format!("a plain value may not start with `{c}`"))
        }
        _ => {
            let text = s.find(" #").map_or(s, |at| &s[..at]).trim_end_matches(' ');
            if text.contains(": ") || text.ends_with(':') {
                return Err("a plain value may not contain `: `; quote it".to_owned());
            }
            plain(text)
        }
    }
}

/// A flow sequence of scalars on one line, `[a, "b", 3]`, and what follows its `]`.
fn flow_sequence(s: &str) -> Result<(Value, &str), String> {
    let mut items = Vec::new();
    let mut rest = s[1..].trim_start_matches(' ');
    if let Some(after) = rest.strip_prefix(']') {
        return Ok((Value::Array(items), after));
    }
    loop {
        let (item, after) = match rest.chars().next() {
            Some('"') => {
                let (text, after) = double_quoted(rest)?;
                (Value::String(text), after)
            }
            Some('\'') => {
                let (text, after) = single_quoted(rest)?;
                (Value::String(text), after)
            }
            Some('[' | '{') => return Err("nested flow collections are not supported".to_owned()),
            _ => {
                let end = rest
                    .find([',', ']'])
                    .ok_or("a flow sequence must close on its own line")?;
                let text = rest[..end].trim_end_matches(' ');
                if text.is_empty()
                    || starts_with_indicator(text)
                    || text.contains(": ")
                    || text.contains(" #")
                {
                    return Err("a flow sequence item is not a plain scalar".to_owned());
                }
                (plain(text)?, &rest[end..])
            }
        };
        items.push(item);
        let after = after.trim_start_matches(' ');
        if let Some(after) = after.strip_prefix(']') {
            return Ok((Value::Array(items), after));
        }
        rest = after
            .strip_prefix(',')
            .ok_or("expected `,` or `]` after a flow sequence item")?
            .trim_start_matches(' ');
        if let Some(after) = rest.strip_prefix(']') {
            // A trailing comma, which YAML allows.
            return Ok((Value::Array(items), after));
        }
    }
}

/// A double-quoted string and what follows its closing quote.
fn double_quoted(s: &str) -> Result<(String, &str), String> {
    let body = &s[1..];
    let mut out = String::new();
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok((out, &body[i + 1..])),
            '\\' => {
                let (_, e) = chars.next().ok_or("unterminated escape")?;
                match e {
                    '0' => out.push('\0'),
                    'a' => out.push('\u{7}'),
                    'b' => out.push('\u{8}'),
                    't' | '\t' => out.push('\t'),
                    'n' => out.push('\n'),
                    'v' => out.push('\u{b}'),
                    'f' => out.push('\u{c}'),
                    'r' => out.push('\r'),
                    'e' => out.push('\u{1b}'),
                    ' ' => out.push(' '),
                    '"' => out.push('"'),
                    '/' => out.push('/'),
                    '\\' => out.push('\\'),
                    'N' => out.push('\u{85}'),
                    '_' => out.push('\u{a0}'),
                    'L' => out.push('\u{2028}'),
                    'P' => out.push('\u{2029}'),
                    'x' | 'u' | 'U' => {
                        let len = match e {
                            'x' => 2,
                            'u' => 4,
                            _ => 8,
                        };
                        let mut code = 0u32;
                        for _ in 0..len {
                            let (_, h) = chars.next().ok_or("unterminated escape")?;
                            code = code * 16 + h.to_digit(16).ok_or("a bad hex escape")?;
                        }
                        out.push(char::from_u32(code).ok_or("an escape that is not a character")?);
                    }
                    other => return Err(format!("unknown escape `\\{other}`")),
                }
            }
            c => out.push(c),
        }
    }
    Err("a double-quoted string must close on its own line".to_owned())
}

/// A single-quoted string (`''` is a quote) and what follows its closing quote.
fn single_quoted(s: &str) -> Result<(String, &str), String> {
    let body = &s[1..];
    let mut out = String::new();
    let mut chars = body.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '\'' {
            if chars.peek().is_some_and(|&(_, n)| n == '\'') {
                chars.next();
                out.push('\'');
                continue;
            }
            return Ok((out, &body[i + 1..]));
        }
        out.push(c);
    }
    Err("a single-quoted string must close on its own line".to_owned())
}

/// A plain scalar, typed by the YAML 1.2 core schema. Infinities, NaN and integers past 64
/// bits are refused: JSON cannot carry them as a YAML parser reads them.
fn plain(s: &str) -> Result<Value, String> {
    match s {
        "null" | "Null" | "NULL" | "~" => return Ok(Value::Null),
        "true" | "True" | "TRUE" => return Ok(Value::Bool(true)),
        "false" | "False" | "FALSE" => return Ok(Value::Bool(false)),
        _ => {}
    }
    let unsigned = s.strip_prefix(['-', '+']).unwrap_or(s);
    if matches!(
        unsigned,
        ".inf" | ".Inf" | ".INF" | ".nan" | ".NaN" | ".NAN"
    ) {
        return Err(format!(
            "`{s}` is not a finite number; quote it to keep it a string"
        ));
    }
    if let Some(n) = integer(s) {
        return n.map(|n| Value::Number(n.into())).ok_or_else(|| {
            format!("`{s}` is an integer past 64 bits; quote it to keep it a string")
        });
    }
    if is_float(s) {
        return s
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| format!("`{s}` is not a finite number"));
    }
    Ok(Value::String(s.to_owned()))
}

/// `Some` when `s` has the core schema's integer form (`[-+]?[0-9]+`, `0o[0-7]+`,
/// `0x[0-9a-fA-F]+`): its value if it fits in 64 bits.
fn integer(s: &str) -> Option<Option<i64>> {
    let all = |t: &str, radix: u32| !t.is_empty() && t.chars().all(|c| c.is_digit(radix));
    if let Some(oct) = s.strip_prefix("0o").filter(|t| all(t, 8)) {
        return Some(i64::from_str_radix(oct, 8).ok());
    }
    if let Some(hex) = s.strip_prefix("0x").filter(|t| all(t, 16)) {
        return Some(i64::from_str_radix(hex, 16).ok());
    }
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    all(digits, 10).then(|| s.parse::<i64>().ok())
}

/// `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`: the core schema's finite floats.
fn is_float(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(at) => (&s[..at], Some(&s[at + 1..])),
        None => (s, None),
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some((int, frac)) => {
            (int.is_empty() && digits(frac)) || (digits(int) && (frac.is_empty() || digits(frac)))
        }
        None => digits(mantissa),
    };
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e)));
    mantissa_ok && exponent_ok
}
