//! YAML 1.2 block scalars (`|` literal, `>` folded), the form real `SKILL.md` files use for a
//! long `description`: their header (style, chomping `-`/`+`, indentation indicator `1`-`9`),
//! the extent of their content (by indentation, auto-detected from the first non-empty line
//! unless the header gives it), and the string they stand for (line folding and chomping as
//! YAML 1.2.2 §8.1 defines them). What parsers read differently or the rules forbid (a leading
//! empty line indented deeper than the content, a lone carriage return, content that ends the
//! input without a line break) is refused rather than guessed.

use super::{Row, Unreadable};

/// How line breaks inside the content are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    /// `|`: every line break is kept.
    Literal,
    /// `>`: a line break between two lines of text becomes a space, except around
    /// more-indented lines and where empty lines stand between.
    Folded,
}

/// What happens to the final line break and the trailing empty lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chomp {
    /// `-`: neither is kept.
    Strip,
    /// No indicator: the final line break is kept, the trailing empty lines are not.
    Clip,
    /// `+`: both are kept.
    Keep,
}

/// A block scalar's header: what follows `key: ` (or `- `) when it starts with `|` or `>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Header {
    style: Style,
    chomp: Chomp,
    /// The indentation indicator: the content's indentation relative to its parent's.
    indentation: Option<usize>,
}

/// Reads a block scalar header (`|`, `>-`, `|2+`, `>+1 # comment`, ...), or `None` when `text`
/// does not start with `|` or `>`. A header with anything else on its line is refused.
pub(super) fn header(text: &str) -> Option<Result<Header, String>> {
    let style = match text.chars().next()? {
        '|' => Style::Literal,
        '>' => Style::Folded,
        _ => return None,
    };
    Some(indicators(style, &text[1..]))
}

fn indicators(style: Style, mut rest: &str) -> Result<Header, String> {
    let mut header = Header {
        style,
        chomp: Chomp::Clip,
        indentation: None,
    };
    let mut chomp_seen = false;
    // At most one of each, in either order (`|2-` and `|-2` are the same header).
    for _ in 0..2 {
        match rest.chars().next() {
            Some(c @ ('-' | '+')) if !chomp_seen => {
                header.chomp = if c == '-' { Chomp::Strip } else { Chomp::Keep };
                chomp_seen = true;
            }
            Some(c @ '1'..='9') if header.indentation.is_none() => {
                header.indentation = Some(c as usize - '0' as usize);
            }
            Some('0') => {
                return Err("a block scalar's indentation indicator must be 1 to 9".to_owned());
            }
            _ => break,
        }
        rest = &rest[1..];
    }
    let after = rest.trim_start_matches(' ');
    if after.is_empty() || (after.starts_with('#') && after.len() < rest.len()) {
        Ok(header)
    } else {
        Err("a block scalar's header (`|` or `>`, then `-` or `+` and an indentation of 1 to 9) must end its line".to_owned())
    }
}

/// One line of the content: empty (nothing but indentation), or text after the content's
/// indentation.
#[derive(Debug, Clone, Copy)]
enum Content<'a> {
    Empty,
    Text(&'a str),
}

/// The scalar whose header is `header`, on a line whose node is at column `parent` (the key's
/// column for a mapping value, the `-`'s for a sequence item), with content in `rows` (the
/// lines after the header's). Returns the string and how many of `rows` it took.
pub(super) fn scalar(
    header: Header,
    parent: usize,
    rows: &[Row<'_>],
) -> Result<(String, usize), Unreadable> {
    let mut indent = header.indentation.map(|m| parent + m);
    let mut lines: Vec<(Content<'_>, &Row<'_>)> = Vec::new();
    // The deepest leading empty line, which may not be deeper than the content's indentation.
    let mut leading: Option<(usize, usize)> = None;
    for row in rows {
        let spaces = row.text.len() - row.text.trim_start_matches(' ').len();
        let blank = spaces == row.text.len();
        let n = match indent {
            Some(n) => n,
            None if blank => {
                if leading.is_none_or(|(deepest, _)| spaces > deepest) {
                    leading = Some((spaces, row.number));
                }
                lines.push((Content::Empty, row));
                continue;
            }
            None => {
                if spaces <= parent {
                    // No content at all: the line is the parent's next one.
                    break;
                }
                if let Some((deepest, number)) = leading.filter(|&(deepest, _)| deepest > spaces) {
                    return Err(Unreadable {
                        line: number,
                        detail: format!(
                            "an empty line of {deepest} spaces before a block scalar's first line of text, indented {spaces}"
                        ),
                    });
                }
                indent = Some(spaces);
                spaces
            }
        };
        if blank && spaces <= n {
            lines.push((Content::Empty, row));
        } else if spaces >= n {
            let text = &row.text[n..];
            if text.contains('\r') {
                return Err(Unreadable {
                    line: row.number,
                    detail: "a carriage return that does not end the line".to_owned(),
                });
            }
            lines.push((Content::Text(text), row));
        } else {
            // Less indented and not empty: the scalar has ended.
            break;
        }
    }
    // YAML 1.2 reads no final line break at the end of the input, saphyr reads one: the
    // frontmatter `split` gives always ends with one, so only a direct caller meets this.
    if let Some((_, row)) = lines.last().filter(|(_, row)| !row.broken) {
        return Err(Unreadable {
            line: row.number,
            detail: "a block scalar's last line must end with a line break".to_owned(),
        });
    }
    let taken = lines.len();
    Ok((value(header, &lines), taken))
}

/// The string of content `lines`: folded or literal, then chomped.
fn value(header: Header, lines: &[(Content<'_>, &Row<'_>)]) -> String {
    let last = lines
        .iter()
        .rposition(|(c, _)| matches!(c, Content::Text(_)));
    let mut out = String::new();
    let Some(last) = last else {
        if header.chomp == Chomp::Keep {
            for _ in lines.iter().filter(|(_, row)| row.broken) {
                out.push('\n');
            }
        }
        return out;
    };
    let body = &lines[..=last];
    match header.style {
        Style::Literal => {
            for (i, (content, _)) in body.iter().enumerate() {
                if i > 0 {
                    out.push('\n');
                }
                if let Content::Text(text) = content {
                    out.push_str(text);
                }
            }
        }
        Style::Folded => {
            // The previous text line (whether it was more indented), and the empty lines since.
            let mut previous: Option<bool> = None;
            let mut empties = 0;
            for (content, _) in body {
                let Content::Text(text) = content else {
                    empties += 1;
                    continue;
                };
                let spaced = text.starts_with([' ', '\t']);
                match previous {
                    // Leading empty lines are line breaks of their own.
                    None => out.extend(std::iter::repeat_n('\n', empties)),
                    // Two lines of text: one break is a space, more keep all but the first.
                    Some(false) if !spaced => {
                        if empties == 0 {
                            out.push(' ');
                        } else {
                            out.extend(std::iter::repeat_n('\n', empties));
                        }
                    }
                    // Around a more-indented line every break is kept.
                    Some(_) => out.extend(std::iter::repeat_n('\n', empties + 1)),
                }
                out.push_str(text);
                previous = Some(spaced);
                empties = 0;
            }
        }
    }
    let (_, last_row) = lines[last];
    if header.chomp != Chomp::Strip && last_row.broken {
        out.push('\n');
    }
    if header.chomp == Chomp::Keep {
        for _ in lines[last + 1..].iter().filter(|(_, row)| row.broken) {
            out.push('\n');
        }
    }
    out
}
