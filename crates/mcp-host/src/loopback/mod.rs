//! The browser of a person at this machine: a loopback redirect listener (RFC 8252 §7.3).
//!
//! It listens on a port the system picks, unless a stored registration names a loopback
//! redirect URI whose port is free: then it listens there instead, since many authorization
//! servers compare redirect URIs exactly, port included. It has the authorization URL opened
//! and waits for the browser to come back to `/callback` with the `state` it sent. The
//! browser's request is held open until the [`Authorizer`](mcp_oauth::Authorizer) says how
//! the login ended, so that the page says "logged in" only once there are tokens, and
//! otherwise the error and what to do next.

use std::io::Write as _;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use mcp_oauth::{AuthError, BoxError, BoxFuture, Url, UserAgent, flow::check_openable};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// Shows the authorization URL to a person: opens a browser, or prints it.
type Opener = dyn Fn(&Url) -> Result<(), BoxError> + Send + Sync;

/// Tells the person something about the login (a new registration, and why).
type Notifier = dyn Fn(&str) + Send + Sync;

/// The longest error code and description a page quotes; the rest is cut.
const QUOTED_CODE: usize = 64;
const QUOTED_TEXT: usize = 300;

/// A user agent for a person at this machine: it listens on a loopback port, has the
/// authorization URL opened (a browser opener, or printing it), waits for the browser to come
/// back, and answers it with a page that says how the login ended.
pub struct Loopback {
    listening: Mutex<Listening>,
    open: Box<Opener>,
    notify: Box<Notifier>,
    server: Option<String>,
    timeout: Duration,
    /// The `state` of the authorization URL last opened: a redirect without it is not this
    /// login's.
    state: Mutex<Option<String>>,
    /// The browser's request, held until the login's outcome is known, with the redirect's
    /// `error` and `error_description`.
    held: Mutex<Option<Held>>,
}

struct Listening {
    listener: TcpListener,
    port: u16,
}

struct Held {
    stream: TcpStream,
    error: Option<(String, String)>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl std::fmt::Debug for Loopback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loopback")
            .field("port", &lock(&self.listening).port)
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl Loopback {
    /// Listens on 127.0.0.1 at a port the system picks; `open` shows the authorization URL
    /// to the person (opens a browser, or prints it); its error ends the login, kept as the
    /// source of the [`AuthError`]. Waits at most `timeout` for the browser.
    pub async fn bind(
        open: impl Fn(&Url) -> Result<(), BoxError> + Send + Sync + 'static,
        timeout: Duration,
    ) -> std::io::Result<Self> {
        let listening = listen(0)?;
        Ok(Self {
            listening: Mutex::new(listening),
            open: Box::new(open),
            notify: Box::new(|_| {}),
            server: None,
            timeout,
            state: Mutex::new(None),
            held: Mutex::new(None),
        })
    }

    /// Names the server being logged in to on the page the browser is answered with (the
    /// configured server id), so that a person with several logins knows which one it was.
    #[must_use]
    pub fn for_server(mut self, server: impl Into<String>) -> Self {
        self.server = Some(server.into());
        self
    }

    /// Where to tell the person what the login does on its own (a new registration, and
    /// why); by default nothing is said.
    #[must_use]
    pub fn with_notices(mut self, notify: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.notify = Box::new(notify);
        self
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        lock(&self.listening).port
    }

    async fn wait_for_redirect(&self) -> Result<Url, String> {
        let listener = {
            let listening = lock(&self.listening);
            listening
                .listener
                .try_clone()
                .and_then(tokio::net::TcpListener::from_std)
                .map_err(|e| format!("the redirect listener failed: {e}"))?
        };
        let port = listener
            .local_addr()
            .map_err(|e| format!("the redirect listener failed: {e}"))?
            .port();
        let expected = lock(&self.state).clone();
        loop {
            let (mut stream, _) = listener
                .accept()
                .await
                .map_err(|e| format!("the redirect listener failed: {e}"))?;
            let mut head = Vec::with_capacity(1024);
            let mut chunk = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 << 10 {
                match stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&chunk[..n]),
                }
            }
            let line = String::from_utf8_lossy(&head);
            let target = line
                .lines()
                .next()
                .and_then(|l| l.strip_prefix("GET "))
                .and_then(|l| l.split(' ').next())
                .unwrap_or("");
            let path = target.split_once('?').map_or(target, |(p, _)| p);
            if path != "/callback" {
                let _ = stream
                    .write_all(
                        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    )
                    .await;
                continue;
            }
            let Ok(landed) = Url::parse(&format!("http://127.0.0.1:{port}{target}")) else {
                let page = page(self.server.as_deref(), &Outcome::NotThisLogin);
                let _ = stream.write_all(answer(&page).as_bytes()).await;
                continue;
            };
            let get = |name: &str| {
                landed
                    .query_pairs()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.into_owned())
            };
            // A redirect without this login's state (an old tab, another program) is told
            // so, and the wait goes on: it must not end the person's login.
            if expected.is_some() && get("state") != expected {
                let page = page(self.server.as_deref(), &Outcome::NotThisLogin);
                let _ = stream.write_all(answer(&page).as_bytes()).await;
                continue;
            }
            let error = get("error").map(|e| (e, get("error_description").unwrap_or_default()));
            if let Ok(stream) = stream.into_std() {
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_write_timeout(Some(Duration::from_secs(5)));
                *lock(&self.held) = Some(Held { stream, error });
            }
            return Ok(landed);
        }
    }

    /// Answers the held browser request, if any, with the page for `outcome`.
    fn answer_held(&self, outcome: impl FnOnce(Option<&(String, String)>) -> String) {
        let Some(mut held) = lock(&self.held).take() else {
            return;
        };
        let page = outcome(held.error.as_ref());
        // A small page into a fresh socket's buffer: this write does not wait.
        let _ = held.stream.write_all(answer(&page).as_bytes());
        let _ = held.stream.flush();
    }
}

impl Drop for Loopback {
    /// A browser still waiting is told that mcp-host stopped before the login ended.
    fn drop(&mut self) {
        let server = self.server.clone();
        self.answer_held(|_| page(server.as_deref(), &Outcome::Unknown));
    }
}

/// Listens on 127.0.0.1 at `port` (0: one the system picks). Rust's listener sets
/// `SO_REUSEADDR`, so a port whose last connection is still in `TIME_WAIT` is free again.
fn listen(port: u16) -> std::io::Result<Listening> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, port))?;
    listener.set_nonblocking(true)?;
    let port = listener.local_addr()?.port();
    Ok(Listening { listener, port })
}

/// The port of a redirect URI this listener could serve: `http://127.0.0.1:<port>/callback`.
fn loopback_port(uri: &str) -> Option<u16> {
    let url = Url::parse(uri).ok()?;
    let ours = url.scheme() == "http"
        && url.host_str() == Some("127.0.0.1")
        && url.path() == "/callback"
        && url.query().is_none()
        && url.username().is_empty()
        && url.password().is_none();
    ours.then(|| url.port()).flatten()
}

impl UserAgent for Loopback {
    fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}/callback", self.port())
    }

    fn authorize(&self, url: Url) -> BoxFuture<'_, Result<Url, BoxError>> {
        Box::pin(async move {
            check_openable(&url)?;
            let state = url
                .query_pairs()
                .find(|(k, _)| k == "state")
                .map(|(_, v)| v.into_owned());
            *lock(&self.state) = state;
            // A browser still held from an earlier login that never ended is let go.
            let server = self.server.clone();
            self.answer_held(|_| page(server.as_deref(), &Outcome::Unknown));
            (self.open)(&url)?;
            let landed = tokio::time::timeout(self.timeout, self.wait_for_redirect())
                .await
                .map_err(|_| format!("no browser came back within {} s", self.timeout.as_secs()))?;
            Ok(landed?)
        })
    }

    /// Takes the first registered `http://127.0.0.1:<port>/callback` whose port it listens on
    /// already or can listen on now; the port it had is closed.
    fn adopt_redirect_uri(&self, registered: &[String]) -> Option<String> {
        let mut listening = lock(&self.listening);
        for uri in registered {
            let Some(port) = loopback_port(uri) else {
                continue;
            };
            if port == listening.port {
                return Some(uri.clone());
            }
            if let Ok(taken) = listen(port) {
                *listening = taken;
                return Some(uri.clone());
            }
        }
        None
    }

    fn notice(&self, message: &str) {
        (self.notify)(message);
    }

    fn finished(&self, outcome: Result<(), &AuthError>) {
        let server = self.server.clone();
        let text = outcome.err().map(ToString::to_string);
        self.answer_held(|error| {
            let outcome = match &text {
                None => Outcome::LoggedIn,
                Some(text) => Outcome::Failed {
                    error: error.map(|(e, d)| (e.as_str(), d.as_str())),
                    why: text,
                },
            };
            page(server.as_deref(), &outcome)
        });
    }
}

/// How a login ended, as the browser's page says it.
#[derive(Debug)]
enum Outcome<'a> {
    /// Tokens were obtained.
    LoggedIn,
    /// No tokens: the authorization server's `error` and `error_description`, if it sent
    /// them, and mcp-host's reason.
    Failed {
        error: Option<(&'a str, &'a str)>,
        why: &'a str,
    },
    /// The request carried another login's `state`, or none.
    NotThisLogin,
    /// mcp-host stopped, or started another login, before this one ended.
    Unknown,
}

fn answer(page: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncache-control: no-store\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
        page.len()
    )
}

/// The page the browser is answered with: whether the login to `server` worked, and if not,
/// the authorization server's error (escaped, cut short) and what to do next.
fn page(server: Option<&str>, outcome: &Outcome<'_>) -> String {
    let name = server.map_or_else(
        || "the server".to_owned(),
        |s| format!("`{}`", escape(s, 100)),
    );
    let again = server.map_or_else(
        || "run <code>mcp-host login</code> again".to_owned(),
        |s| format!("run <code>mcp-host login {}</code> again", escape(s, 100)),
    );
    let (title, body) = match outcome {
        Outcome::LoggedIn => (
            format!("Logged in to {name}"),
            format!(
                "<p>mcp-host is logged in to {name}: the authorization server's answer was exchanged for tokens.</p>\
                 <p>You can close this tab and return to mcp-host.</p>"
            ),
        ),
        Outcome::Failed { error, why } => {
            let from_server = error.map_or_else(String::new, |(code, description)| {
                let description = if description.is_empty() {
                    String::new()
                } else {
                    format!(": {}", escape(description, QUOTED_TEXT))
                };
                format!(
                    "<p>The authorization server answered <code>{}</code>{description}.</p>",
                    escape(code, QUOTED_CODE)
                )
            });
            (
                format!("Login to {name} failed"),
                format!(
                    "<p>mcp-host could not log in to {name}.</p>{from_server}\
                     <p>mcp-host says: {}.</p>\
                     <p>What to do next: return to the terminal and {again}. \
                     If it fails the same way, check the server's OAuth settings \
                     (<code>mcp-host list</code>: a client id or scope that the authorization server does not accept), \
                     or ask whoever runs the server.</p>",
                    escape(why, QUOTED_TEXT)
                ),
            )
        }
        Outcome::NotThisLogin => (
            format!("Not the login to {name} in progress"),
            "<p>This address did not come from the login mcp-host is waiting for \
             (its <code>state</code> is not the one sent). Nothing was done with it.</p>\
             <p>Finish the login in the tab mcp-host opened, or start it again from the terminal.</p>"
                .to_owned(),
        ),
        Outcome::Unknown => (
            format!("Login to {name} not finished"),
            format!(
                "<p>mcp-host stopped waiting before the login to {name} ended.</p>\
                 <p>Return to the terminal to see what happened; {again} if needed.</p>"
            ),
        ),
    };
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>mcp-host: {title}</title></head>\
         <body><h1>{title}</h1>{body}</body></html>"
    )
}

/// `text` cut to `max` characters and escaped for HTML text and attribute values.
fn escape(text: &str, max: usize) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    for c in chars.by_ref().take(max) {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    if chars.next().is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests;
