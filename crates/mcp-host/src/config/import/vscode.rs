//! VS Code's `mcp.json` (the user's, and the project's `.vscode/mcp.json`): `servers` and
//! `inputs`. `${input:ID}` is a value VS Code asks the user for (a password prompt, usually)
//! and keeps in its own secret storage, out of our reach: here it becomes the variable
//! `VSCODE_INPUT_<ID>` and the report asks the user to set it (or names the input in
//! [`ImportReport::inputs`](super::ImportReport), for the command line to ask and keep the
//! answer in the keyring), so the answer never enters the imported file. `${env:NAME}`, `${userHome}` and `${workspaceFolder}` are translated.

use std::cell::RefCell;

use serde_json::Value;

use super::{ImportError, ImportInput, Places, Sink};

/// The members of a VS Code server that have an equivalent here (`envFile`, `dev` and
/// `gallery` have none).
const KNOWN: &[&str] = &["type", "command", "args", "env", "url", "headers", "cwd"];

/// The variable an input becomes.
pub(super) fn input_variable(id: &str) -> String {
    crate::config::secret::variable_name(&format!("VSCODE_INPUT_{id}"))
}

pub(super) fn read(
    text: &str,
    places: &Places<'_>,
    sink: &mut Sink<'_>,
) -> Result<(), ImportError> {
    let doc = super::parse_jsonc(text, sink)?;
    let Value::Object(top) = doc else {
        return Err(sink.shape_error("", "the file is not a JSON object"));
    };
    let mut inputs: Vec<(String, String, bool)> = Vec::new();
    match top.get("inputs") {
        None => {}
        Some(Value::Array(list)) => {
            for item in list {
                if let Some(id) = item.get("id").and_then(Value::as_str) {
                    let what = item
                        .get("description")
                        .and_then(Value::as_str)
                        .unwrap_or(id)
                        .to_owned();
                    let password = item.get("password").and_then(Value::as_bool) == Some(true);
                    inputs.push((id.to_owned(), what, password));
                }
            }
        }
        Some(_) => return Err(sink.shape_error("inputs", "is not a list")),
    }
    super::server_table(
        sink,
        top.get("servers"),
        "servers",
        "an object",
        |sink, id, entry| {
            let failed: RefCell<Option<String>> = RefCell::new(None);
            let used: RefCell<Vec<(String, String, bool)>> = RefCell::new(Vec::new());
            let translate = |s: &str| -> String {
                let mut input = |input_id: &str| {
                    let (_, what, password) = inputs.iter().find(|(i, _, _)| i == input_id)?;
                    let var = input_variable(input_id);
                    used.borrow_mut()
                        .push((input_id.to_owned(), what.clone(), *password));
                    Some(var)
                };
                super::editor_variables(s, places, &mut input).unwrap_or_else(|e| {
                    failed.borrow_mut().get_or_insert(e);
                    String::new()
                })
            };
            let found = super::claude::entry_of(
                sink,
                id,
                entry,
                &format!("servers.{id}"),
                &translate,
                KNOWN,
            );
            if let Some(reason) = failed.into_inner() {
                sink.skip(Some(id), None, &reason);
                return;
            }
            if let Some(mut f) = found {
                let mut used = used.into_inner();
                used.dedup();
                for (input_id, what, password) in used {
                    let var = input_variable(&input_id);
                    if !sink.inputs.iter().any(|i| i.variable == var) {
                        sink.inputs.push(ImportInput {
                            variable: var.clone(),
                            id: input_id,
                            description: what.clone(),
                            password,
                        });
                    }
                    f.needs.push((
                        var,
                        "an input".to_owned(),
                        format!(
                            "VS Code asks for this input (\"{what}\") and keeps the answer itself"
                        ),
                    ));
                }
                sink.found.push(f);
            }
        },
    )
}
