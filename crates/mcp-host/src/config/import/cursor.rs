//! Cursor's `~/.cursor/mcp.json` and the project's `.cursor/mcp.json`: `mcpServers`, with
//! `${env:NAME}`, `${userHome}`, `${workspaceFolder}`, `${workspaceFolderBasename}` and
//! `${pathSeparator}` in `command`, `args`, `env`, `url` and `headers`.

use std::cell::RefCell;

use serde_json::Value;

use super::{ImportError, Places, Sink};

/// The members of a Cursor entry that have an equivalent here (`envFile` has none).
const KNOWN: &[&str] = &[
    "type", "command", "args", "env", "url", "headers", "cwd", "disabled",
];

pub(super) fn read(
    text: &str,
    places: &Places<'_>,
    sink: &mut Sink<'_>,
) -> Result<(), ImportError> {
    let doc = super::parse_jsonc(text, sink)?;
    let Value::Object(top) = doc else {
        return Err(sink.shape_error("", "the file is not a JSON object"));
    };
    super::server_table(
        sink,
        top.get("mcpServers"),
        "mcpServers",
        "an object",
        |sink, id, entry| {
            // A variable with no equivalent leaves the whole server out.
            let failed: RefCell<Option<String>> = RefCell::new(None);
            let translate = |s: &str| -> String {
                super::editor_variables(s, places, &mut |_| None).unwrap_or_else(|e| {
                    failed.borrow_mut().get_or_insert(e);
                    String::new()
                })
            };
            let found = super::claude::entry_of(
                sink,
                id,
                entry,
                &format!("mcpServers.{id}"),
                &translate,
                KNOWN,
            );
            if let Some(reason) = failed.into_inner() {
                sink.skip(Some(id), None, &reason);
                return;
            }
            sink.found.extend(found);
        },
    )
}
