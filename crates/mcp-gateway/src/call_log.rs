//! The gateway's call log.

use std::io::Write as _;
use std::sync::Mutex;
use std::time::SystemTime;

use crate::sync::lock;

/// Where the start-up summary and the per-call lines go: standard error or a file, never
/// standard output (over stdio it carries MCP). Lines carry no arguments or results, only
/// names, timings and outcomes.
pub(crate) struct CallLog {
    sink: Mutex<Box<dyn std::io::Write + Send>>,
}

impl std::fmt::Debug for CallLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallLog").finish_non_exhaustive()
    }
}

impl CallLog {
    pub(crate) fn open(path: Option<&std::path::Path>) -> std::io::Result<Self> {
        let sink: Box<dyn std::io::Write + Send> = match path {
            Some(path) => Box::new(open_private(path).map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("gateway log file {}: {e}", path.display()),
                )
            })?),
            None => Box::new(std::io::stderr()),
        };
        Ok(Self {
            sink: Mutex::new(sink),
        })
    }

    /// Writes one line, prefixed with the time and `mcp-host gateway:`. A failed write is
    /// dropped: the log never stops a call.
    pub(crate) fn line(&self, text: &str) {
        let secs = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let text = mcp_host::catalog::clean_text(text, 4096).replace('\n', " ");
        let mut sink = lock(&self.sink);
        let _ = writeln!(sink, "{secs:.3} mcp-host gateway: {text}");
        let _ = sink.flush();
    }
}

/// Opens the log file for appending, only its owner may read it: created with mode 0600, and
/// an existing regular file open to others is tightened to 0600 (through the open file, so a
/// path swapped meanwhile changes nothing else). The log names servers, tools and errors,
/// which are the user's business. Something other than a regular file (a terminal,
/// `/dev/null`) is written as it is.
fn open_private(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    let meta = file.metadata()?;
    if meta.is_file() && meta.permissions().mode() & 0o077 != 0 {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(file)
}
