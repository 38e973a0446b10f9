//! The tasks a host started, kept so that another process can ask about them: `tasks.json`
//! beside `eras.json` and the token store (mode 0600: a task id may be all a server asks
//! before it hands a result over), read and written whole, atomically, under the file's lock,
//! so that two hosts of the user keep each other's tasks.
//!
//! Without a file the store lives as long as the host. Either way it is bounded: a task whose
//! lifetime (the server's `ttl`) has passed is pruned, since the server may have forgotten
//! it, and past [`KEPT`] tasks the ones changed longest ago go first, finished ones before
//! unfinished ones.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

use mcp_protocol::schema::TaskStatus;

/// A task the host started or was asked about, as it keeps it: enough for another process to
/// ask the server about it again.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskRecord {
    /// The server's id.
    pub server: String,
    /// The tool whose call the task runs (empty when the host did not start it).
    pub tool: String,
    /// The id the server gave the task (untrusted text).
    pub task_id: String,
    /// Its status when last seen.
    pub state: TaskStatus,
    /// The server's sentence about that status, cleaned and bounded (untrusted).
    pub status_message: Option<String>,
    /// When the host first saw it, in seconds since the Unix epoch (the host's clock).
    pub created: u64,
    /// When the host last saw its status change, in seconds since the Unix epoch.
    pub updated: u64,
    /// When the server may forget it (creation plus its `ttl`), in seconds since the Unix
    /// epoch; `None` when the server set no limit.
    pub expires: Option<u64>,
    /// The polling interval the server suggested, in milliseconds.
    pub poll_interval_ms: Option<u64>,
}

/// The file's name in the directory of the global configuration file.
pub(crate) const TASKS_FILE_NAME: &str = "tasks.json";

/// How many tasks are kept.
pub(crate) const KEPT: usize = 256;

/// A key in the store: the server's id and the task's id.
type Key = (String, String);

/// The tasks of a host. Cheap to clone; clones share the memory.
#[derive(Debug, Clone, Default)]
pub(crate) struct TaskStore {
    file: Option<PathBuf>,
    memory: Arc<Mutex<BTreeMap<Key, TaskRecord>>>,
    /// The tasks followed now, for the status notifications their servers send.
    pub(crate) statuses: super::status::StatusWatch,
}

impl TaskStore {
    /// A store kept in `file` when given, else for this host's life only.
    pub(crate) fn new(file: Option<PathBuf>) -> Self {
        Self {
            file,
            memory: Arc::default(),
            statuses: super::status::StatusWatch::default(),
        }
    }

    /// Every task kept, pruned first: the file's when there is one.
    pub(crate) async fn all(&self) -> Vec<TaskRecord> {
        let Some(file) = self.file.clone() else {
            let mut memory = self.memory.lock().unwrap_or_else(PoisonError::into_inner);
            prune(&mut memory, now());
            return memory.values().cloned().collect();
        };
        let read = tokio::task::spawn_blocking(move || read(&file)).await;
        let mut tasks = read.unwrap_or_default();
        prune(&mut tasks, now());
        tasks.into_values().collect()
    }

    /// One task, if kept.
    pub(crate) async fn get(&self, server: &str, task_id: &str) -> Option<TaskRecord> {
        self.all()
            .await
            .into_iter()
            .find(|t| t.server == server && t.task_id == task_id)
    }

    /// Keeps `record` (replacing what was kept of the same task), and prunes.
    pub(crate) async fn put(&self, record: TaskRecord) {
        let Some(file) = self.file.clone() else {
            let mut memory = self.memory.lock().unwrap_or_else(PoisonError::into_inner);
            memory.insert((record.server.clone(), record.task_id.clone()), record);
            prune(&mut memory, now());
            return;
        };
        let written = tokio::task::spawn_blocking(move || write(&file, record)).await;
        match written {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!("the task list could not be written: {e}"),
            Err(e) => tracing::warn!("the task list could not be written: {e}"),
        }
    }
}

/// Seconds since the Unix epoch.
pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Drops the expired tasks, then the ones changed longest ago (finished first) past [`KEPT`].
fn prune(tasks: &mut BTreeMap<Key, TaskRecord>, now: u64) {
    tasks.retain(|_, t| t.expires.is_none_or(|at| at > now));
    while tasks.len() > KEPT {
        let oldest = tasks
            .iter()
            .min_by_key(|(_, t)| (!t.state.is_terminal(), t.updated))
            .map(|(key, _)| key.clone());
        match oldest {
            Some(key) => tasks.remove(&key),
            None => break,
        };
    }
}

/// The tasks in `file`; nothing (with a warning) when it cannot be read or parsed.
fn read(file: &Path) -> BTreeMap<Key, TaskRecord> {
    match read_file(file) {
        Ok(tasks) => tasks,
        Err(why) => {
            tracing::warn!(file = %file.display(), "the task list is ignored ({why})");
            BTreeMap::new()
        }
    }
}

fn read_file(file: &Path) -> Result<BTreeMap<Key, TaskRecord>, String> {
    let bytes = match std::fs::read(file) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(e.to_string()),
    };
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| format!("not JSON: {e}"))?;
    let tasks = value
        .get("tasks")
        .and_then(Value::as_array)
        .ok_or("no `tasks` array")?;
    let mut out = BTreeMap::new();
    for task in tasks {
        // One entry this version does not understand is skipped, not the whole file.
        if let Some(record) = from_json(task) {
            out.insert((record.server.clone(), record.task_id.clone()), record);
        }
    }
    Ok(out)
}

fn from_json(task: &Value) -> Option<TaskRecord> {
    let text = |key: &str| task.get(key).and_then(Value::as_str).map(str::to_owned);
    let number = |key: &str| task.get(key).and_then(Value::as_u64);
    Some(TaskRecord {
        server: text("server")?,
        tool: text("tool").unwrap_or_default(),
        task_id: text("taskId")?,
        state: match TaskStatus::from(text("status")?.as_str()) {
            TaskStatus::Other(_) => return None,
            known => known,
        },
        status_message: text("statusMessage"),
        created: number("created").unwrap_or(0),
        updated: number("updated").unwrap_or(0),
        expires: number("expires"),
        poll_interval_ms: number("pollIntervalMs"),
    })
}

fn to_json(task: &TaskRecord) -> Value {
    let mut out = Map::new();
    out.insert("server".into(), json!(task.server));
    out.insert("tool".into(), json!(task.tool));
    out.insert("taskId".into(), json!(task.task_id));
    out.insert("status".into(), json!(task.state.as_str()));
    if let Some(message) = &task.status_message {
        out.insert("statusMessage".into(), json!(message));
    }
    out.insert("created".into(), json!(task.created));
    out.insert("updated".into(), json!(task.updated));
    if let Some(expires) = task.expires {
        out.insert("expires".into(), json!(expires));
    }
    if let Some(poll) = task.poll_interval_ms {
        out.insert("pollIntervalMs".into(), json!(poll));
    }
    Value::Object(out)
}

/// Puts one task into `file`, under the file's lock so that two hosts writing at once keep
/// each other's tasks.
fn write(file: &Path, record: TaskRecord) -> std::io::Result<()> {
    let _lock = crate::fs::FileLock::acquire(file)?;
    // A file that cannot be parsed is replaced: it was ignored when read, too.
    let mut tasks = read_file(file).unwrap_or_default();
    tasks.insert((record.server.clone(), record.task_id.clone()), record);
    prune(&mut tasks, now());
    let list: Vec<Value> = tasks.values().map(to_json).collect();
    let text = json!({"version": 1, "tasks": list});
    let mut bytes = serde_json::to_vec_pretty(&text).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    crate::fs::write_atomic(file, &bytes, crate::fs::PRIVATE_MODE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(server: &str, id: &str, state: TaskStatus, updated: u64) -> TaskRecord {
        TaskRecord {
            server: server.to_owned(),
            tool: "build".to_owned(),
            task_id: id.to_owned(),
            state,
            status_message: None,
            created: updated,
            updated,
            expires: None,
            poll_interval_ms: None,
        }
    }

    // Expired tasks go; past the bound, finished ones go before unfinished ones.
    #[test]
    fn expired_tasks_are_pruned_and_the_bound_drops_finished_ones_first() {
        let mut tasks = BTreeMap::new();
        let mut expired = record("s", "old", TaskStatus::Working, 5);
        expired.expires = Some(50);
        let mut alive = record("s", "alive", TaskStatus::Working, 5);
        alive.expires = Some(500);
        for t in [expired, alive] {
            tasks.insert((t.server.clone(), t.task_id.clone()), t);
        }
        prune(&mut tasks, 100);
        let ids: Vec<&str> = tasks.values().map(|t| t.task_id.as_str()).collect();
        assert_eq!(ids, ["alive"]);

        for i in 0..KEPT as u64 {
            let t = record("s", &format!("done{i}"), TaskStatus::Completed, 1000 + i);
            tasks.insert((t.server.clone(), t.task_id.clone()), t);
        }
        prune(&mut tasks, 100);
        assert_eq!(tasks.len(), KEPT);
        assert!(tasks.contains_key(&("s".to_owned(), "alive".to_owned())));
        assert!(!tasks.contains_key(&("s".to_owned(), "done0".to_owned())));
        assert!(tasks.contains_key(&("s".to_owned(), "done1".to_owned())));
    }

    // What is written is read back the same, and an entry of an unknown shape is skipped.
    #[test]
    fn a_file_round_trips_and_skips_what_it_does_not_understand() {
        let dir = std::env::temp_dir().join(format!("mcp-host-tasks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join(TASKS_FILE_NAME);
        let _ = std::fs::remove_file(&file);
        let mut kept = record("srv", "t-1", TaskStatus::InputRequired, now());
        kept.status_message = Some("waiting".into());
        kept.expires = Some(now() + 3600);
        kept.poll_interval_ms = Some(250);
        write(&file, kept.clone()).unwrap();
        let read_back = read_file(&file).unwrap();
        assert_eq!(read_back.len(), 1);
        let got = read_back.values().next().unwrap();
        assert_eq!(got, &kept);

        let mut value: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        value["tasks"]
            .as_array_mut()
            .unwrap()
            .push(json!({"server": "srv", "taskId": "t-2", "status": "sleeping"}));
        std::fs::write(&file, serde_json::to_vec(&value).unwrap()).unwrap();
        let read_back = read_file(&file).unwrap();
        assert_eq!(read_back.len(), 1, "{read_back:?}");
        #[cfg(unix)]
        assert_eq!(
            crate::fs::mode_of(&dir.join(TASKS_FILE_NAME)),
            Some(crate::fs::PRIVATE_MODE)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
