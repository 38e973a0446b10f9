//! Tab completion in `mcp-host shell`: the shell's commands, then the ids of the configured
//! servers, then, after `/call ID`, that server's tools. Ids and tools are read from the
//! running host at the moment Tab is pressed, so a server that connects later, a
//! `/reload` or a server's `tools/list_changed` is seen without anything to refresh.
//!
//! Names come from servers and configuration files: only a name made of printable
//! characters without spaces is offered, so a completion never types a control character
//! or splits into two words.

use mcp_host::Host;
use rustyline::completion::{Completer, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;

/// The commands the shell takes, as typed.
pub(crate) const COMMANDS: &[&str] = &[
    "/mcp",
    "/tools",
    "/call",
    "/cancel",
    "/resources",
    "/read",
    "/prompts",
    "/get",
    "/reload",
    "/help",
    "/quit",
    "/exit",
    "quit",
    "exit",
];

/// The commands whose first argument is a server id.
const TAKES_ID: &[&str] = &[
    "/mcp",
    "/tools",
    "/call",
    "/resources",
    "/read",
    "/prompts",
    "/get",
];

/// The shell's line editor helper: completion from the host once it runs.
#[derive(Default)]
pub(crate) struct ShellHelper {
    /// The running host; `None` while the servers start (only commands complete then).
    pub(crate) host: Option<Host>,
}

impl ShellHelper {
    /// The words that may stand at word number `index` of a line whose earlier words are
    /// `before`.
    fn candidates(&self, before: &[&str]) -> Vec<String> {
        match before {
            [] => COMMANDS.iter().map(|c| (*c).to_owned()).collect(),
            [command] if TAKES_ID.contains(command) => self
                .host
                .as_ref()
                .map(|h| h.status().into_iter().map(|s| s.id).collect())
                .unwrap_or_default(),
            ["/call", id] => self
                .host
                .as_ref()
                .map(|h| {
                    h.catalog()
                        .server_tools(id)
                        .map(|t| t.tool.clone())
                        .collect()
                })
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }
}

/// Whether `name` may be typed for the person: printable, no spaces, not absurdly long.
fn typable(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 256
        && name
            .chars()
            .all(|c| !c.is_control() && !c.is_whitespace() && c != '\u{7f}')
}

/// The completions of the word the cursor ends in `line[..pos]`: where it starts, and the
/// candidates that begin with it (each followed by a space).
pub(crate) fn complete_line(helper: &ShellHelper, line: &str, pos: usize) -> (usize, Vec<Pair>) {
    let Some(head) = line.get(..pos) else {
        return (pos, Vec::new());
    };
    let start = head.rfind(char::is_whitespace).map_or(0, |i| {
        i + head[i..].chars().next().map_or(1, char::len_utf8)
    });
    let word = &head[start..];
    let before: Vec<&str> = head[..start].split_whitespace().collect();
    let mut names: Vec<String> = helper
        .candidates(&before)
        .into_iter()
        .filter(|n| typable(n) && n.starts_with(word))
        .collect();
    names.sort();
    names.dedup();
    let pairs = names
        .into_iter()
        .map(|n| Pair {
            display: n.clone(),
            replacement: format!("{n} "),
        })
        .collect();
    (start, pairs)
}

impl Completer for ShellHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        Ok(complete_line(self, line, pos))
    }
}

impl Hinter for ShellHelper {
    type Hint = String;
}

impl Highlighter for ShellHelper {}

impl Validator for ShellHelper {}

impl rustyline::Helper for ShellHelper {}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> (usize, Vec<String>) {
        let (start, pairs) = complete_line(&ShellHelper::default(), line, line.len());
        (start, pairs.into_iter().map(|p| p.replacement).collect())
    }

    #[test]
    fn commands_complete_from_their_start() {
        assert_eq!(words("/ca"), (0, vec!["/call ".into(), "/cancel ".into()]));
        assert_eq!(words("qu"), (0, vec!["quit ".into()]));
        // Without a host, no id is known yet: nothing, rather than a guess.
        assert_eq!(words("/call de"), (6, vec![]));
        assert_eq!(words("/bogus x"), (7, vec![]));
    }

    #[test]
    fn names_that_cannot_be_typed_are_not_offered() {
        assert!(typable("read_file"));
        assert!(!typable("two words"));
        assert!(!typable("bell\u{7}"));
        assert!(!typable(""));
    }
}
