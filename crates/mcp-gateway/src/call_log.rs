//! The gateway's log: the start-up summary, the sessions, and one line per call, read,
//! subscription and prompt.

use std::collections::{HashMap, HashSet};
use std::io::Write as _;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use mcp_protocol::schema::ClientRequest;
use mcp_protocol::{ClientInfo, ErrorObject, RawJson};
use mcp_session::SessionKey;
use tracing::Level;

use crate::sync::lock;

/// The gateway's log lines. Each is a `tracing` event (target `mcp_gateway`), for whatever
/// subscriber the process has; with a log file, also written there, unless the process's own
/// subscriber writes to that file (`GatewayOptions::write_log_file`). Never standard output
/// (over stdio it carries MCP). Lines carry no arguments or results, only names, timings and
/// outcomes.
pub(crate) struct CallLog {
    file: Option<Mutex<std::fs::File>>,
    /// The handshake sessions whose start was logged, so that their end is too (a stateless
    /// request is a session of its own, which would be noise).
    sessions: Mutex<HashSet<SessionKey>>,
    /// The `sub` of each session's caller, when the HTTP gateway checks tokens: every line
    /// of the session carries it.
    subjects: Mutex<HashMap<SessionKey, String>>,
}

impl std::fmt::Debug for CallLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallLog").finish_non_exhaustive()
    }
}

impl CallLog {
    /// The log, writing to the file at `path` as well when `write` is set.
    pub(crate) fn open(path: Option<&std::path::Path>, write: bool) -> std::io::Result<Self> {
        let file = match path.filter(|_| write) {
            Some(path) => Some(Mutex::new(open_log_file(path)?)),
            None => None,
        };
        Ok(Self {
            file,
            sessions: Mutex::default(),
            subjects: Mutex::default(),
        })
    }

    /// Something that happened (info). A text that starts `warning: ` is a warning: logged at
    /// the warn level, the word said once, by the level (file problems come with the word
    /// already, which once made `warning: warning:`).
    pub(crate) fn line(&self, text: &str) {
        let mut rest = text;
        while let Some(after) = rest.strip_prefix("warning: ") {
            rest = after;
        }
        let level = if rest.len() < text.len() {
            Level::WARN
        } else {
            Level::INFO
        };
        self.at(level, None, None, rest);
    }

    /// Whether an info line is written anywhere: to the log file, or to a `tracing`
    /// subscriber that takes the gateway's info events (`mcp-host serve` does, at its
    /// default level). When neither does (`-q`, or a program embedding the gateway without a
    /// subscriber), a call's line is not even formatted.
    pub(crate) fn is_on(&self) -> bool {
        self.file.is_some() || tracing::enabled!(target: "mcp_gateway", Level::INFO)
    }

    /// One upstream tool call's line (`call LABEL SERVER/TOOL MS ms RESULT`), with the session
    /// of the client that made it (the gateway's own `session-N`, never a transport's session
    /// id, which would let a reader of the log use the session) and the server as fields, so
    /// that a reader can follow one client or one upstream.
    pub(crate) fn call(&self, session: SessionKey, server: &str, text: &str) {
        self.at(Level::INFO, Some(session), Some(server), text);
    }

    /// A client finished its handshake: the session, who the client is, and the version.
    pub(crate) fn initialized(&self, session: SessionKey, client: &ClientInfo) {
        lock(&self.sessions).insert(session);
        let who = &client.implementation;
        let text = format!(
            "client {} {} initialized (protocol {})",
            who.name,
            who.version,
            client.protocol_version.as_str()
        );
        self.at(Level::INFO, Some(session), None, &text);
    }

    /// A session ended; said only of the sessions whose start was.
    pub(crate) fn closed(&self, session: SessionKey) {
        if lock(&self.sessions).remove(&session) {
            self.at(Level::INFO, Some(session), None, "client closed");
        }
        lock(&self.subjects).remove(&session);
    }

    /// The session's requests come from `caller` (its token's `sub`, or its client's id):
    /// the session's lines say so from now on. The value is the issuer's, shown with
    /// anything but visible ASCII replaced and at most 128 characters.
    pub(crate) fn caller(&self, session: SessionKey, caller: &mcp_host::inbound::Caller) {
        let Some(who) = caller.subject.as_deref().or(caller.client_id.as_deref()) else {
            return;
        };
        let shown: String = who
            .chars()
            .take(128)
            .map(|c| if c.is_ascii_graphic() { c } else { '?' })
            .collect();
        lock(&self.subjects).insert(session, shown);
    }

    /// What to say of `request` once answered: resource reads, subscriptions and prompts
    /// (tool calls have their own line, written where the call is relayed). Names only: a
    /// prompt's arguments and every result stay out.
    /// Every request is a debug event (its method and session, nothing of its parameters).
    pub(crate) fn request(&self, request: &ClientRequest, session: SessionKey) -> Option<Pending> {
        tracing::debug!(
            target: "mcp_gateway",
            session = %session,
            method = request.method(),
            "request {}",
            request.method()
        );
        let what = match request {
            ClientRequest::ReadResource(p) => format!("resources/read {}", p.uri),
            ClientRequest::Subscribe(p) => format!("resources/subscribe {}", p.uri),
            ClientRequest::Unsubscribe(p) => format!("resources/unsubscribe {}", p.uri),
            ClientRequest::GetPrompt(p) => format!("prompts/get {}", p.name),
            _ => return None,
        };
        Some(Pending {
            what,
            started: Instant::now(),
        })
    }

    /// The line for a request [`request`](Self::request) chose, with its latency and outcome.
    pub(crate) fn answered(
        &self,
        pending: Pending,
        session: SessionKey,
        answer: &Result<RawJson, ErrorObject>,
    ) {
        let ms = pending.started.elapsed().as_millis();
        let outcome = match answer {
            Ok(_) => "ok".to_owned(),
            Err(e) => format!("failed: {} ({})", e.message, e.code),
        };
        let text = format!("{} {ms} ms {outcome}", pending.what);
        self.at(Level::INFO, Some(session), None, &text);
    }

    /// Writes one line, with the client's session and the upstream server as fields when
    /// given. A failed write is dropped: the log never stops a call.
    fn at(&self, level: Level, session: Option<SessionKey>, server: Option<&str>, text: &str) {
        let wanted = match level {
            Level::WARN => tracing::enabled!(target: "mcp_gateway", Level::WARN),
            _ => tracing::enabled!(target: "mcp_gateway", Level::INFO),
        };
        if !wanted && self.file.is_none() {
            return;
        }
        let text = mcp_host::catalog::clean_text(text, 4096).replace('\n', " ");
        let sub = session.and_then(|s| lock(&self.subjects).get(&s).cloned());
        let session = session.map(|s| s.to_string());
        match (level, &session, server, &sub) {
            (Level::WARN, _, _, _) => tracing::warn!(target: "mcp_gateway", "{text}"),
            (_, Some(session), Some(server), Some(sub)) => {
                tracing::info!(target: "mcp_gateway", session, server, sub, "{text}");
            }
            (_, Some(session), None, Some(sub)) => {
                tracing::info!(target: "mcp_gateway", session, sub, "{text}");
            }
            (_, Some(session), Some(server), None) => {
                tracing::info!(target: "mcp_gateway", session, server, "{text}");
            }
            (_, Some(session), None, None) => {
                tracing::info!(target: "mcp_gateway", session, "{text}");
            }
            (_, None, Some(server), _) => tracing::info!(target: "mcp_gateway", server, "{text}"),
            (_, None, None, _) => tracing::info!(target: "mcp_gateway", "{text}"),
        }
        if let Some(file) = &self.file {
            let session = session.map(|s| format!(" session={s}")).unwrap_or_default();
            let server = server.map(|s| format!(" server={s}")).unwrap_or_default();
            let server = match &sub {
                Some(sub) => format!("{server} sub={sub}"),
                None => server,
            };
            let mut file = lock(file);
            let _ = writeln!(
                file,
                "{} {level:>5} mcp_gateway: {text}{session}{server}",
                rfc3339(SystemTime::now())
            );
            let _ = file.flush();
        }
    }
}

/// A request whose line is written once it is answered.
#[derive(Debug)]
pub(crate) struct Pending {
    what: String,
    started: Instant,
}

/// `t` in RFC 3339, UTC, with microseconds: `2026-11-26T17:04:18.123456Z`, as the command
/// line's log writes it.
pub(crate) fn rfc3339(t: SystemTime) -> String {
    let since = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    let secs = since.as_secs();
    let (h, m, s) = (secs % 86_400 / 3600, secs % 3600 / 60, secs % 60);
    // Days since 1970-01-01 to a proleptic Gregorian date (the "civil from days" method over
    // 400-year eras of 146,097 days, each year taken from 1 March).
    let z = i64::try_from(secs / 86_400).unwrap_or(0) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{:06}Z",
        since.subsec_micros()
    )
}

/// Opens a gateway log file for appending, only its owner may read it: created with mode
/// 0600, and an existing regular file open to others is tightened to 0600 (through the open
/// file, so a path swapped meanwhile changes nothing else). The log names servers, tools,
/// clients and errors, which are the user's business. Something other than a regular file (a
/// terminal, `/dev/null`) is written as it is. For a process whose own log writer takes the
/// file over from the gateway (`GatewayOptions::write_log_file` off).
pub fn open_log_file(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    let opened = (|| {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)?;
        let meta = file.metadata()?;
        if meta.is_file() && meta.permissions().mode() & 0o077 != 0 {
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
        Ok::<_, std::io::Error>(file)
    })();
    opened.map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("gateway log file {}: {e}", path.display()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc_3339_in_utc() {
        let at = |secs: u64, micros: u64| {
            rfc3339(
                SystemTime::UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_micros(micros),
            )
        };
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(at(951_782_400, 7), "2000-02-29T00:00:00.000007Z");
        assert_eq!(at(1_798_329_599, 999_999), "2026-12-26T23:59:59.999999Z");
        assert_eq!(at(1_796_310_258, 120_000), "2026-12-03T15:04:18.120000Z");
        assert_eq!(at(4_102_444_800, 0), "2100-01-01T00:00:00.000000Z");
    }
}
