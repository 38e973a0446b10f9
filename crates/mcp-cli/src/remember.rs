//! "Always allow this tool", answered at a permission question (`call` on a terminal, the
//! shell): the call goes ahead, the rest of this process asks no more about that tool, and
//! the answer is written as `permission.tools.<tool> = "allow"` into the user's file that
//! defines the server, so that the next `mcp-host` does not ask either.
//!
//! Only the user's own files keep it (the global file, and the local layer where there is
//! one): a project file's `allow` is read as `ask` (a cloned repository must not switch off
//! the question), so for a server the project defines the answer holds for this process
//! only, and says so.

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

use mcp_host::config::Scope;
use mcp_host::permission::CallRequest;

use crate::args::ReadScope;
use crate::manage::Context;

/// An answer to a permission question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// This call only.
    Yes,
    /// Not this call.
    No,
    /// This call, and every later call of the same tool on the same server.
    Always,
}

impl Answer {
    /// Reads a typed answer: `y`/`yes`, `a`/`always` (any case); anything else is a no.
    pub(crate) fn parse(text: &str) -> Self {
        match text.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => Self::Yes,
            "a" | "always" => Self::Always,
            _ => Self::No,
        }
    }
}

/// Whether the question about `call` offers "always": tools only (a resource or prompt
/// operation is governed by `permission.resources`/`prompts`, not by a tool name).
pub(crate) fn offers_always(call: &CallRequest<'_>) -> bool {
    call.kind == mcp_host::CallKind::Tool
}

/// The tools allowed for the rest of this process, and where to keep them for the next.
pub(crate) struct Remembered {
    cx: Context,
    allowed: Mutex<BTreeSet<(String, String)>>,
}

impl Remembered {
    pub(crate) fn new(cx: &Context) -> Self {
        Self {
            cx: cx.clone(),
            allowed: Mutex::default(),
        }
    }

    /// Whether `call` was answered "always" earlier in this process.
    pub(crate) fn allows(&self, call: &CallRequest<'_>) -> bool {
        offers_always(call)
            && self
                .allowed
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .contains(&(call.server.to_owned(), call.tool.to_owned()))
    }

    /// Keeps an "always" for `call`: for this process, and in the user's file that defines
    /// the server. Returns the line to show the person: where it was kept, or why only for
    /// now.
    pub(crate) fn keep(&self, call: &CallRequest<'_>) -> String {
        self.allowed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert((call.server.to_owned(), call.tool.to_owned()));
        let tool = crate::output::cell(call.tool, 80);
        let server = call.server;
        let loaded = self.cx.load(ReadScope::Effective);
        let Some(entry) = loaded.server(server) else {
            return format!(
                "allowed `{tool}` on `{server}` until this session ends: the server is not in a configuration file"
            );
        };
        if entry.source == Scope::Project {
            return format!(
                "allowed `{tool}` on `{server}` until this session ends: the server comes from the project's files, where an allow is read as ask; to keep it, define the server in your own file (`mcp-host add --scope global`)"
            );
        }
        match mcp_host::config::allow_tool(&entry.file, server, call.tool) {
            Ok(()) => format!(
                "always allowed: `{tool}` on `{server}` (kept in {})",
                entry.file.display()
            ),
            Err(e) => format!(
                "allowed `{tool}` on `{server}` until this session ends: cannot keep it: {e}"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_leniently_and_default_to_no() {
        assert_eq!(Answer::parse("Y"), Answer::Yes);
        assert_eq!(Answer::parse(" yes\n"), Answer::Yes);
        assert_eq!(Answer::parse("a"), Answer::Always);
        assert_eq!(Answer::parse("ALWAYS"), Answer::Always);
        assert_eq!(Answer::parse("n"), Answer::No);
        assert_eq!(Answer::parse(""), Answer::No);
        assert_eq!(Answer::parse("always allow"), Answer::No);
    }
}
