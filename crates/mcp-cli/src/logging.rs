//! The process's log: the one `tracing` subscriber of `mcp-host`, set up by `main` before any
//! command runs. The libraries only emit events (`mcp_host`, `mcp_gateway`, a stdio server's
//! stderr under `mcp_stdio::stderr`); this module decides which are shown and how.
//!
//! Everything goes to standard error (or, for `serve`, the gateway file's `logFile`), never
//! to standard output, which carries MCP when serving over stdio and the command's answer
//! otherwise. Timestamps are RFC 3339 in UTC with microseconds (`2026-11-26T17:04:18.123456Z`).
//!
//! What is shown: a level per command (`info` for `serve`, `error` for the others, whose own
//! output already says what went wrong), moved one step by each `-v` or `-q`; `RUST_LOG`
//! adds `target=level` directives (`tracing-subscriber`'s `Targets` syntax, no regular
//! expressions), and its bare level replaces the command's when no `-v`/`-q` is given.
//!
//! [`init`] is the one place the subscriber is assembled: another layer (a trace exporter)
//! joins the registry there, beside the formatting layer, which carries its own filter so that
//! `-q` never hides spans from the other.

use std::fmt::Write as _;
use std::io;
use std::sync::Mutex;

use tracing::field::{Field, Visit};
use tracing::level_filters::LevelFilter;
use tracing::{Event, Subscriber};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime as _, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, MakeWriter};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{Layer as _, Registry};

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// `TIMESTAMP LEVEL TARGET: MESSAGE field=value ...`, for people.
    #[default]
    Text,
    /// One JSON object per line: `timestamp`, `level`, `target`, `message`, `fields`, for log
    /// collectors.
    Json,
}

/// What to show, from the command line and the environment.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// The command's own level, before `-v` and `-q`.
    pub(crate) default: LevelFilter,
    /// How many `-v`.
    pub(crate) verbose: u8,
    /// How many `-q`.
    pub(crate) quiet: u8,
    /// `RUST_LOG`, if set.
    pub(crate) rust_log: Option<String>,
    /// How lines are written.
    pub(crate) format: LogFormat,
}

/// The levels from silent to everything; `-v` moves right, `-q` left.
const LADDER: [LevelFilter; 6] = [
    LevelFilter::OFF,
    LevelFilter::ERROR,
    LevelFilter::WARN,
    LevelFilter::INFO,
    LevelFilter::DEBUG,
    LevelFilter::TRACE,
];

impl Settings {
    /// The level `-v` and `-q` make of the command's own.
    fn level(&self) -> LevelFilter {
        let at = LADDER.iter().position(|l| *l == self.default).unwrap_or(3);
        let moved = (at + usize::from(self.verbose)).saturating_sub(usize::from(self.quiet));
        LADDER[moved.min(LADDER.len() - 1)]
    }

    /// The filter, and a warning when `RUST_LOG` could not be read (it is then ignored: it
    /// may be meant for another program).
    pub(crate) fn filter(&self) -> (Targets, Option<String>) {
        let flags = self.verbose > 0 || self.quiet > 0;
        let mut default = self.level();
        let mut targets = Targets::new();
        let mut warning = None;
        match self.rust_log.as_deref().map(str::trim) {
            None | Some("") => {}
            Some(text) => match text.parse::<Targets>() {
                Ok(parsed) => {
                    if !flags && let Some(level) = parsed.default_level() {
                        default = level;
                    }
                    for (target, level) in &parsed {
                        targets = targets.with_target(target.to_owned(), level);
                    }
                }
                Err(e) => {
                    warning = Some(format!(
                        "RUST_LOG is not a list of target=level directives ({e}); ignored"
                    ));
                }
            },
        }
        (targets.with_default(default), warning)
    }
}

/// Sets up the process's subscriber. Called once, by `main`, before any command runs.
pub(crate) fn init(settings: &Settings) {
    let (filter, warning) = settings.filter();
    let layer = tracing_subscriber::fmt::layer().with_writer(Sink);
    let layer = match settings.format {
        LogFormat::Text => layer.with_timer(SystemTime).boxed(),
        LogFormat::Json => layer.event_format(JsonLines).boxed(),
    };
    // Another process-wide subscriber (none is ever set before) would keep its place.
    let _ = Registry::default()
        .with(layer.with_filter(filter))
        .try_init();
    if let Some(warning) = warning {
        tracing::warn!("{warning}");
    }
}

/// Sends every line after this call to `file` instead of standard error: `serve` with a
/// gateway file that names a `logFile`.
pub(crate) fn to_file(file: std::fs::File) {
    *lock() = Some(file);
}

/// Whether log lines go to standard error (no [`to_file`] yet): a line that must be on
/// standard error whatever takes the log is then written once, not again as a log line.
pub(crate) fn is_on_stderr() -> bool {
    lock().is_none()
}

/// Where lines go: `None` is standard error.
static FILE: Mutex<Option<std::fs::File>> = Mutex::new(None);

fn lock() -> std::sync::MutexGuard<'static, Option<std::fs::File>> {
    FILE.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Standard error, or the file given to [`to_file`].
#[derive(Debug, Clone, Copy)]
struct Sink;

impl<'a> MakeWriter<'a> for Sink {
    type Writer = Sink;

    fn make_writer(&'a self) -> Self::Writer {
        Sink
    }
}

impl io::Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match lock().as_mut() {
            Some(file) => file.write(buf),
            None => io::stderr().write(buf),
        }
    }

    /// One line at a time, whole: the formatting layer writes each line with one call.
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match lock().as_mut() {
            Some(file) => file.write_all(buf),
            None => io::stderr().lock().write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match lock().as_mut() {
            Some(file) => file.flush(),
            None => io::stderr().flush(),
        }
    }
}

/// `--log-format json`: one object per line, `{"timestamp", "level", "target", "message",
/// "fields": {...}}`, plus `"spans"` (outermost first) inside a span.
#[derive(Debug)]
struct JsonLines;

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        let mut timestamp = String::new();
        SystemTime.format_time(&mut Writer::new(&mut timestamp))?;
        let mut fields = Fields::default();
        event.record(&mut fields);
        let meta = event.metadata();
        let mut line = serde_json::Map::new();
        line.insert("timestamp".into(), timestamp.into());
        line.insert("level".into(), meta.level().as_str().into());
        line.insert("target".into(), meta.target().into());
        line.insert(
            "message".into(),
            fields.message.take().unwrap_or_default().into(),
        );
        line.insert("fields".into(), fields.others.into());
        if let Some(scope) = ctx.event_scope() {
            let spans: Vec<serde_json::Value> =
                scope.from_root().map(|s| s.name().into()).collect();
            line.insert("spans".into(), spans.into());
        }
        writeln!(writer, "{}", serde_json::Value::Object(line))
    }
}

/// An event's fields as JSON values, its message apart.
#[derive(Default)]
struct Fields {
    message: Option<String>,
    others: serde_json::Map<String, serde_json::Value>,
}

impl Fields {
    fn put(&mut self, field: &Field, value: serde_json::Value) {
        if field.name() == "message" {
            self.message = Some(match value {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            });
        } else {
            self.others.insert(field.name().to_owned(), value);
        }
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, value.into());
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, value.into());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, value.into());
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, value.into());
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, value.into());
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.put(field, value.to_string().into());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let mut text = String::new();
        let _ = write!(text, "{value:?}");
        self.put(field, text.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(default: LevelFilter, verbose: u8, quiet: u8, rust_log: Option<&str>) -> Settings {
        Settings {
            default,
            verbose,
            quiet,
            rust_log: rust_log.map(str::to_owned),
            format: LogFormat::Text,
        }
    }

    fn shows(filter: &Targets, target: &str, level: tracing::Level) -> bool {
        filter.would_enable(target, &level)
    }

    #[test]
    fn each_flag_moves_the_level_one_step_and_stops_at_the_ends() {
        use tracing::Level;
        let info = |v, q| settings(LevelFilter::INFO, v, q, None).filter().0;
        assert!(shows(&info(0, 0), "mcp_gateway", Level::INFO));
        assert!(!shows(&info(0, 0), "mcp_gateway", Level::DEBUG));
        assert!(shows(&info(1, 0), "mcp_gateway", Level::DEBUG));
        assert!(!shows(&info(1, 0), "mcp_gateway", Level::TRACE));
        assert!(shows(&info(2, 0), "mcp_gateway", Level::TRACE));
        assert!(shows(&info(9, 0), "mcp_gateway", Level::TRACE));
        assert!(shows(&info(0, 1), "mcp_gateway", Level::WARN));
        assert!(!shows(&info(0, 1), "mcp_gateway", Level::INFO));
        assert!(shows(&info(0, 2), "mcp_gateway", Level::ERROR));
        assert!(!shows(&info(0, 2), "mcp_gateway", Level::WARN));
        assert!(!shows(&info(0, 3), "mcp_gateway", Level::ERROR));
        assert!(!shows(&info(0, 9), "mcp_gateway", Level::ERROR));
    }

    #[test]
    fn rust_log_adds_targets_and_its_level_yields_to_the_flags() {
        use tracing::Level;
        let (f, warning) = settings(LevelFilter::ERROR, 0, 0, Some("mcp_stdio=info,warn")).filter();
        assert!(warning.is_none());
        assert!(shows(&f, "mcp_stdio::stderr", Level::INFO));
        assert!(shows(&f, "mcp_gateway", Level::WARN));
        assert!(!shows(&f, "mcp_gateway", Level::INFO));
        // With -q the flags set the default; the target directive stays.
        let (f, _) = settings(LevelFilter::ERROR, 0, 1, Some("mcp_stdio=info,warn")).filter();
        assert!(shows(&f, "mcp_stdio::stderr", Level::INFO));
        assert!(!shows(&f, "mcp_gateway", Level::ERROR));
    }

    #[test]
    fn an_unreadable_rust_log_is_ignored_with_a_warning() {
        use tracing::Level;
        let (f, warning) = settings(LevelFilter::INFO, 0, 0, Some("mcp=notalevel")).filter();
        assert!(warning.unwrap().contains("RUST_LOG"));
        assert!(shows(&f, "mcp_gateway", Level::INFO));
        assert!(!shows(&f, "mcp_gateway", Level::DEBUG));
    }
}
