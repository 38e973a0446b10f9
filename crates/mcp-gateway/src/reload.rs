//! Reading the gateway file again while the gateway serves: on a signal, when the file
//! changes ([`watch`]), or when meta mode's `reload-config` asks. The new upstream set is
//! applied as at start-up (see `upstreams`), so the clients keep their sessions; a file that
//! fails to load changes nothing, and the log says why.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;
use std::sync::Weak;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::file::{self, FileError, GatewayFile};
use crate::shared::Shared;
use crate::upstreams::{self, Change};

/// What a reload of the gateway file changed.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Reloaded {
    /// The upstreams that were added (and started).
    pub added: Vec<String>,
    /// The upstreams that were removed (and stopped).
    pub removed: Vec<String>,
    /// The upstreams whose entry changed (and that were restarted).
    pub changed: Vec<String>,
    /// What the file's reader should know: its warnings, and the settings that wait for a
    /// restart.
    pub notes: Vec<String>,
}

/// Reads the file again and applies it, for a gateway serving `mode`: returns what changed,
/// the change of the upstream set and the file it replaced. A file that fails to load is
/// logged and returned as the error; the configuration stays as it was.
pub(crate) async fn reload(
    shared: &Shared,
    mode: file::Mode,
) -> Result<(Reloaded, Change, std::sync::Arc<GatewayFile>), FileError> {
    let _one_at_a_time = shared.upstreams.reloading.lock().await;
    let loaded = match file::load(&shared.path, &shared.env, shared.oauth.as_ref()) {
        Ok(loaded) => loaded,
        Err(e) => {
            shared.log.line(&format!(
                "warning: reload failed, the previous configuration is kept: {e}"
            ));
            return Err(e);
        }
    };
    let before = shared.file();
    let change = upstreams::diff(&before, &loaded.file);
    let mut notes = loaded.warnings.clone();
    if loaded.mode != mode {
        notes.push(format!(
            "mode `{}` takes effect when the gateway is restarted; it serves `{}` until then",
            loaded.mode.as_str(),
            mode.as_str()
        ));
    }
    let settings = |f: &GatewayFile| {
        (
            json(&f.log_file),
            json(&f.unattended),
            json(&f.cache_ttl_seconds),
        )
    };
    if settings(&before) != settings(&loaded.file) {
        notes.push(
            "logFile, unattended and cacheTtlSeconds take effect when the gateway is restarted"
                .to_owned(),
        );
    }
    // The `auth` block: the HTTP server's checks take a changed one; turning it on or off
    // waits for a restart (whether requests are checked at all is set when serving starts).
    match (shared.auth.get(), &loaded.file.auth) {
        (Some(guard), Some(block)) => match guard.reload(block, &shared.env) {
            Ok(true) => shared.log.line("auth: the changed block is in use"),
            Ok(false) => {}
            Err(e) => notes.push(format!("{e}; the previous `auth` is kept")),
        },
        (Some(_), None) => notes.push(
            "`auth` was removed: requests are checked until the gateway is restarted".to_owned(),
        ),
        (None, Some(_)) if before.auth.is_none() => {
            notes.push("`auth` was added: it takes effect when the gateway is restarted".to_owned())
        }
        _ => {}
    }
    shared.set_file(loaded.file);
    upstreams::apply(shared, loaded.entries, &change).await;
    shared.log.line(&format!(
        "reloaded {}: {} added, {} removed, {} changed",
        shared.path.display(),
        change.added.len(),
        change.removed.len(),
        change.changed.len(),
    ));
    for note in &notes {
        shared.log.line(&format!("warning: {note}"));
    }
    let reloaded = Reloaded {
        added: change.added.clone(),
        removed: change.removed.clone(),
        changed: change.changed.clone(),
        notes,
    };
    Ok((reloaded, change, before))
}

fn json(value: &impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// What tells one version of the file from another without reading it every time: its
/// modification time and size, then a hash of its content.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fingerprint {
    modified: Option<SystemTime>,
    len: u64,
    hash: u64,
}

impl Fingerprint {
    /// The file's fingerprint now; `None` while it cannot be read (an editor replacing it).
    /// `last` spares reading the content when its time and size are the same.
    fn of(path: &Path, last: Option<&Fingerprint>) -> Option<Self> {
        let meta = std::fs::metadata(path).ok()?;
        let (modified, len) = (meta.modified().ok(), meta.len());
        if let Some(last) = last
            && last.modified == modified
            && last.len == len
        {
            return Some(last.clone());
        }
        let bytes = std::fs::read(path).ok()?;
        let mut hasher = DefaultHasher::new();
        bytes.hash(&mut hasher);
        Some(Self {
            modified,
            len,
            hash: hasher.finish(),
        })
    }
}

/// Looks at the file every `every` and calls `reload` when its content changed, for as long as
/// the gateway behind `shared` lives.
pub(crate) fn watch<F, Fut>(shared: Weak<Shared>, every: Duration, mut reload: F)
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let Some(path) = shared.upgrade().map(|s| s.path.clone()) else {
        return;
    };
    let mut last = Fingerprint::of(&path, None);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if shared.strong_count() == 0 {
                return;
            }
            let Some(now) = Fingerprint::of(&path, last.as_ref()) else {
                continue;
            };
            let changed = last.as_ref().is_none_or(|l| l.hash != now.hash);
            last = Some(now);
            if changed {
                reload().await;
            }
        }
    });
}
