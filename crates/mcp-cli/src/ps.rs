//! `mcp-host ps`: the server processes that any `mcp-host` (or other host on the library) of
//! this user started and that still run, read from `mcp_stdio::running`'s records; with
//! `--kill-orphans`, ends those whose host is gone.

use serde_json::{Value, json};

use crate::exit::{Code, Failure};
use crate::output::{Out, Table, cell};

/// `mcp-host ps [--kill-orphans]`.
pub(crate) fn run(out: &Out, kill_orphans: bool) -> Result<(), Failure> {
    let fail = |e: std::io::Error| Failure::new(Code::Other, format!("server records: {e}"));
    let rows = if kill_orphans {
        mcp_stdio::running::kill_orphans().map_err(fail)?
    } else {
        mcp_stdio::running::list().map_err(fail)?
    };
    if out.is_json() {
        let rows: Vec<Value> = rows
            .iter()
            .map(|p| {
                json!({
                    "server": p.server,
                    "pid": p.pid,
                    "pgid": p.pgid,
                    "role": p.role.to_string(),
                    "host_pid": p.host_pid,
                    "host": if p.host_alive { "alive" } else { "orphan" },
                    "age_secs": p.age.as_secs(),
                })
            })
            .collect();
        out.json(&Value::Array(rows));
        return Ok(());
    }
    if rows.is_empty() {
        out.note(if kill_orphans {
            "no orphaned server processes"
        } else {
            "no server processes are running"
        });
        return Ok(());
    }
    let mut table = Table::new(&["SERVER", "PID", "PGID", "ROLE", "HOST", "AGE", "STATE"]);
    for p in &rows {
        table.row(vec![
            cell(&p.server, 40),
            p.pid.to_string(),
            p.pgid.to_string(),
            p.role.to_string(),
            p.host_pid.to_string(),
            age(p.age.as_secs()),
            if kill_orphans {
                "killed (orphan)".to_owned()
            } else if p.host_alive {
                "host alive".to_owned()
            } else {
                "orphan".to_owned()
            },
        ]);
    }
    out.text(table.render().trim_end());
    Ok(())
}

/// `42s`, `3m`, `5h`, `2d`.
fn age(secs: u64) -> String {
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m", secs / 60),
        3600..86400 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86400),
    }
}
