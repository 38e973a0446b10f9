//! A small Redis client of our own, for what replicas of a gateway share (issue 24 §3): the
//! upstream OAuth tokens and their refresh turn, the rules' rate counters, and sessions. It
//! speaks RESP2 over `std::net::TcpStream` (no new dependency), with connect, read and write
//! timeouts, `AUTH` (a password, and a user for Redis 6 ACLs) and `SELECT` on every new
//! connection, and a small pool of idle connections. This file is long because the client,
//! its errors, its lease locks and its subscriptions share one connection type and its
//! error mapping (the wire format alone is `resp.rs`).
//!
//! What it deliberately does not do: TLS (`rediss://` is refused, saying so: put Redis on a
//! private network or loopback, or behind a TLS tunnel such as stunnel), RESP3, cluster
//! redirections (`MOVED`) and Sentinel. Its calls block; async callers run them with
//! `tokio::task::spawn_blocking`, as the token store's callers already do.
//!
//! The URL is `redis://[user:password@]host[:port][/db]` (port 6379, database 0 by default).
//! The password is never shown: `Debug` and `Display` of [`Redis`] show `redis://host:port/db`,
//! and errors name Redis, that address and the phase (`connect`, `AUTH`, `SELECT`, or the
//! command), never an argument. Replies are parsed strictly and bounded (`resp.rs`): a broken
//! or hostile server gets an error, never a panic or an unbounded allocation.
//!
//! [`Redis::lock`] is a lease lock (`SET key token NX PX lease`), renewed while held and
//! released only by its holder (a compare-and-delete script), for read-modify-write cycles
//! and refresh turns shared by processes on several machines.

use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher as _, Hasher as _};
use std::io::{self, Read as _, Write as _};
use std::net::{TcpStream, ToSocketAddrs as _};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

mod resp;
#[cfg(test)]
mod tests;

use resp::{Limits, encode, parse};
pub use resp::{ProtocolError, Reply};

/// The default port.
const DEFAULT_PORT: u16 = 6379;

/// Why Redis could not be used. Every message names Redis, its address (never the password)
/// and the phase, and quotes no value that was sent or stored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RedisError {
    /// The URL is not one this client takes.
    #[error("the Redis URL is not usable: {0}")]
    Url(String),
    /// Connecting, reading or writing failed, or timed out.
    #[error("Redis at {at}: {phase}: {source}")]
    Io {
        /// `host:port/db`.
        at: String,
        /// `connect`, `AUTH`, `SELECT` or the command.
        phase: String,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The server sent bytes that are not RESP2, or a reply over the limits.
    #[error("Redis at {at}: {phase}: the reply breaks the protocol: {source}")]
    Protocol {
        /// `host:port/db`.
        at: String,
        /// The phase.
        phase: String,
        /// What is wrong.
        #[source]
        source: ProtocolError,
    },
    /// The server answered with an error (`-ERR …`, `-WRONGPASS …`, `-NOAUTH …`).
    #[error("Redis at {at}: {phase}: the server answered: {message}")]
    Refused {
        /// `host:port/db`.
        at: String,
        /// The phase.
        phase: String,
        /// The server's error, cut to 200 characters.
        message: String,
    },
    /// A well-formed reply of a kind the command does not give.
    #[error("Redis at {at}: {phase}: unexpected reply ({what})")]
    Unexpected {
        /// `host:port/db`.
        at: String,
        /// The phase.
        phase: String,
        /// The kind of reply received.
        what: &'static str,
    },
    /// A lock stayed with another holder for as long as the caller would wait.
    #[error("Redis at {at}: lock {key}: still held by another process after {waited_ms} ms")]
    LockBusy {
        /// `host:port/db`.
        at: String,
        /// The lock's key.
        key: String,
        /// How long we waited.
        waited_ms: u128,
    },
}

impl RedisError {
    /// Whether Redis could not be reached or stopped answering (as opposed to answering
    /// with an error): what a caller may retry later.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, Self::Io { .. })
    }
}

/// Where Redis is and how to log in; the password never prints.
#[derive(Clone, PartialEq, Eq)]
struct Target {
    host: String,
    port: u16,
    db: u32,
    user: Option<String>,
    password: Option<String>,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // An IPv6 address gets its brackets back.
        if self.host.contains(':') {
            write!(f, "[{}]:{}/{}", self.host, self.port, self.db)
        } else {
            write!(f, "{}:{}/{}", self.host, self.port, self.db)
        }
    }
}

/// Reads `redis://[user:password@]host[:port][/db]`. The error never quotes the URL (it
/// may hold the password).
fn parse_url(text: &str) -> Result<Target, RedisError> {
    let bad = |why: &str| RedisError::Url(why.to_owned());
    if text.starts_with("rediss://") {
        return Err(bad(
            "rediss:// (Redis over TLS) is not supported: reach Redis on loopback or a private network, or through a TLS tunnel, with redis://",
        ));
    }
    let url = url::Url::parse(text).map_err(|e| RedisError::Url(format!("not a URL ({e})")))?;
    if url.scheme() != "redis" {
        return Err(bad("the scheme must be redis://"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(bad(
            "a query or fragment is not understood; write redis://[user:password@]host:port/db",
        ));
    }
    let host = match url.host() {
        Some(url::Host::Domain(d)) => d.to_owned(),
        Some(url::Host::Ipv4(a)) => a.to_string(),
        Some(url::Host::Ipv6(a)) => a.to_string(),
        None => return Err(bad("it names no host")),
    };
    if host.is_empty() {
        return Err(bad("it names no host"));
    }
    let port = url.port().unwrap_or(DEFAULT_PORT);
    let db = match url.path().trim_start_matches('/') {
        "" => 0,
        n => n
            .parse()
            .map_err(|_| bad("the path must be a database number, such as /0"))?,
    };
    let user = Some(percent_decode(url.username())?).filter(|u| !u.is_empty());
    let password = url.password().map(percent_decode).transpose()?;
    if user.is_some() && password.is_none() {
        return Err(bad(
            "a user without a password; write redis://user:password@host",
        ));
    }
    Ok(Target {
        host,
        port,
        db,
        user,
        password,
    })
}

/// `%XX` escapes of a URL's user or password, decoded.
fn percent_decode(text: &str) -> Result<String, RedisError> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| RedisError::Url("a bad %-escape in the user or password".into()))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out)
        .map_err(|_| RedisError::Url("the user or password is not UTF-8".to_owned()))
}

/// How the client waits and how much it keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RedisOptions {
    /// How long connecting may take (default 2 s).
    pub connect_timeout: Duration,
    /// How long one read or write may take (default 5 s).
    pub io_timeout: Duration,
    /// How many idle connections are kept for the next commands (default 4).
    pub idle_connections: usize,
}

impl Default for RedisOptions {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(2),
            io_timeout: Duration::from_secs(5),
            idle_connections: 4,
        }
    }
}

/// A Redis server, shared by clones (one pool of idle connections). `Debug` and `Display`
/// show `redis://host:port/db`, never the password.
#[derive(Clone)]
pub struct Redis {
    inner: Arc<Inner>,
}

struct Inner {
    target: Target,
    options: RedisOptions,
    limits: Limits,
    idle: Mutex<Vec<Conn>>,
}

impl fmt::Debug for Redis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Redis(redis://{})", self.inner.target)
    }
}

impl fmt::Display for Redis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "redis://{}", self.inner.target)
    }
}

impl PartialEq for Redis {
    /// The same server, database and login.
    fn eq(&self, other: &Self) -> bool {
        self.inner.target == other.inner.target
    }
}

impl Eq for Redis {}

impl Redis {
    /// A client for the server at `url` (`redis://[user:password@]host[:port][/db]`), with
    /// the default options. Nothing is connected yet: the first command connects.
    pub fn new(url: &str) -> Result<Self, RedisError> {
        Self::with_options(url, RedisOptions::default())
    }

    /// A client with `options`.
    pub fn with_options(url: &str, options: RedisOptions) -> Result<Self, RedisError> {
        Ok(Self {
            inner: Arc::new(Inner {
                target: parse_url(url)?,
                options,
                limits: Limits::default(),
                idle: Mutex::new(Vec::new()),
            }),
        })
    }

    /// `host:port/db`, for messages.
    pub fn address(&self) -> String {
        self.inner.target.to_string()
    }

    /// Sends one command (its name first, then its arguments) and returns the reply; an
    /// error reply is [`RedisError::Refused`]. A pooled connection the server has closed
    /// meanwhile is replaced once, when nothing of the command can have reached the server.
    pub fn command(&self, args: &[&[u8]]) -> Result<Reply, RedisError> {
        let phase = args
            .first()
            .map(|n| String::from_utf8_lossy(n).to_ascii_uppercase())
            .unwrap_or_default();
        let pooled = lock(&self.inner.idle).pop();
        let outcome = match pooled {
            Some(mut conn) => match conn.request(args, &self.inner.limits) {
                Err(ConnError::Stale) => self.fresh_request(args, &phase),
                outcome => self.finish(conn, outcome, &phase),
            },
            None => self.fresh_request(args, &phase),
        };
        match outcome? {
            Reply::Error(message) => Err(RedisError::Refused {
                at: self.address(),
                phase,
                message: message.chars().take(200).collect(),
            }),
            reply => Ok(reply),
        }
    }

    fn fresh_request(&self, args: &[&[u8]], phase: &str) -> Result<Reply, RedisError> {
        let mut conn = self.connect()?;
        let outcome = conn.request(args, &self.inner.limits);
        self.finish(conn, outcome, phase)
    }

    /// Keeps a connection that answered (it is in step); drops one that failed.
    fn finish(
        &self,
        conn: Conn,
        outcome: Result<Reply, ConnError>,
        phase: &str,
    ) -> Result<Reply, RedisError> {
        match outcome {
            Ok(reply) => {
                let mut idle = lock(&self.inner.idle);
                if idle.len() < self.inner.options.idle_connections {
                    idle.push(conn);
                }
                Ok(reply)
            }
            Err(e) => Err(self.error(phase, e)),
        }
    }

    fn error(&self, phase: &str, e: ConnError) -> RedisError {
        let at = self.address();
        let phase = phase.to_owned();
        match e {
            ConnError::Io(source) => RedisError::Io { at, phase, source },
            ConnError::Stale => RedisError::Io {
                at,
                phase,
                source: io::Error::new(io::ErrorKind::UnexpectedEof, "the connection was closed"),
            },
            ConnError::Protocol(source) => RedisError::Protocol { at, phase, source },
        }
    }

    /// A new connection, logged in and on the database.
    fn connect(&self) -> Result<Conn, RedisError> {
        let t = &self.inner.target;
        let o = &self.inner.options;
        let io_err = |phase: &str, source| RedisError::Io {
            at: self.address(),
            phase: phase.to_owned(),
            source,
        };
        let addrs: Vec<_> = (t.host.as_str(), t.port)
            .to_socket_addrs()
            .map_err(|e| io_err("connect", e))?
            .collect();
        let mut last = io::Error::new(io::ErrorKind::NotFound, "the host has no address");
        let mut stream = None;
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, o.connect_timeout) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = e,
            }
        }
        let stream = stream.ok_or_else(|| io_err("connect", last))?;
        let _ = stream.set_nodelay(true);
        stream
            .set_read_timeout(Some(o.io_timeout))
            .and_then(|()| stream.set_write_timeout(Some(o.io_timeout)))
            .map_err(|e| io_err("connect", e))?;
        let mut conn = Conn {
            stream,
            buf: Vec::new(),
        };
        if let Some(password) = &t.password {
            let mut args: Vec<&[u8]> = vec![b"AUTH"];
            if let Some(user) = &t.user {
                args.push(user.as_bytes());
            }
            args.push(password.as_bytes());
            self.expect_ok(&mut conn, &args, "AUTH")?;
        }
        if t.db != 0 {
            let db = t.db.to_string();
            self.expect_ok(&mut conn, &[b"SELECT", db.as_bytes()], "SELECT")?;
        }
        Ok(conn)
    }

    fn expect_ok(&self, conn: &mut Conn, args: &[&[u8]], phase: &str) -> Result<(), RedisError> {
        match conn.request(args, &self.inner.limits) {
            Ok(Reply::Simple(_)) => Ok(()),
            Ok(Reply::Error(message)) => Err(RedisError::Refused {
                at: self.address(),
                phase: phase.to_owned(),
                message: message.chars().take(200).collect(),
            }),
            Ok(other) => Err(self.unexpected(phase, &other)),
            Err(e) => Err(self.error(phase, e)),
        }
    }

    /// An error for a reply of the wrong kind.
    fn unexpected(&self, phase: &str, reply: &Reply) -> RedisError {
        RedisError::Unexpected {
            at: self.address(),
            phase: phase.to_owned(),
            what: kind(reply),
        }
    }

    /// `PING`: whether the server answers.
    pub fn ping(&self) -> Result<(), RedisError> {
        match self.command(&[b"PING"])? {
            Reply::Simple(_) => Ok(()),
            other => Err(self.unexpected("PING", &other)),
        }
    }

    /// `GET key`: the value, `None` if there is none.
    pub fn get(&self, key: &str) -> Result<Option<Vec<u8>>, RedisError> {
        match self.command(&[b"GET", key.as_bytes()])? {
            Reply::Bulk(value) => Ok(value),
            other => Err(self.unexpected("GET", &other)),
        }
    }

    /// `SET key value [PX ms]`: stores the value, to expire after `ttl` if given.
    pub fn set(&self, key: &str, value: &[u8], ttl: Option<Duration>) -> Result<(), RedisError> {
        let ms = ttl.map(|t| t.as_millis().max(1).to_string());
        let mut args: Vec<&[u8]> = vec![b"SET", key.as_bytes(), value];
        if let Some(ms) = &ms {
            args.extend([&b"PX"[..], ms.as_bytes()]);
        }
        match self.command(&args)? {
            Reply::Simple(_) => Ok(()),
            other => Err(self.unexpected("SET", &other)),
        }
    }

    /// `SET key value NX PX ms`: stores the value only if the key has none; whether it did.
    pub fn set_nx(&self, key: &str, value: &[u8], ttl: Duration) -> Result<bool, RedisError> {
        let ms = ttl.as_millis().max(1).to_string();
        match self.command(&[b"SET", key.as_bytes(), value, b"NX", b"PX", ms.as_bytes()])? {
            Reply::Simple(_) => Ok(true),
            Reply::Bulk(None) => Ok(false),
            other => Err(self.unexpected("SET", &other)),
        }
    }

    /// `DEL key`: whether there was one.
    pub fn del(&self, key: &str) -> Result<bool, RedisError> {
        match self.command(&[b"DEL", key.as_bytes()])? {
            Reply::Integer(n) => Ok(n > 0),
            other => Err(self.unexpected("DEL", &other)),
        }
    }

    /// `PUBLISH channel message`: how many subscribers received it.
    pub fn publish(&self, channel: &str, message: &[u8]) -> Result<i64, RedisError> {
        match self.command(&[b"PUBLISH", channel.as_bytes(), message])? {
            Reply::Integer(n) => Ok(n),
            other => Err(self.unexpected("PUBLISH", &other)),
        }
    }

    /// `EVAL script numkeys keys… args…`: a Lua script run atomically by the server.
    pub fn eval(&self, script: &str, keys: &[&str], args: &[&[u8]]) -> Result<Reply, RedisError> {
        let numkeys = keys.len().to_string();
        let mut all: Vec<&[u8]> = vec![b"EVAL", script.as_bytes(), numkeys.as_bytes()];
        all.extend(keys.iter().map(|k| k.as_bytes()));
        all.extend_from_slice(args);
        self.command(&all)
    }

    /// Counts one event under `key` if fewer than `limit` were counted in the `window` before
    /// now, as one script (atomic, however many processes count): `Ok(Ok(()))` when counted,
    /// `Ok(Err(wait))` with how long until the oldest leaves the window when not. A sliding
    /// window over a sorted set of the events' times, judged by Redis's clock (`TIME`), so
    /// that processes whose clocks differ still share one window; the key expires with it.
    pub fn take_in_window(
        &self,
        key: &str,
        limit: u32,
        window: Duration,
    ) -> Result<Result<(), Duration>, RedisError> {
        let micros = window.as_micros().max(1).to_string();
        let limit = limit.to_string();
        let member = unique_token();
        let args: [&[u8]; 3] = [micros.as_bytes(), limit.as_bytes(), member.as_bytes()];
        match self.eval(SLIDING_WINDOW, &[key], &args)? {
            Reply::Integer(n) if n < 0 => Ok(Ok(())),
            Reply::Integer(n) => Ok(Err(Duration::from_micros(n.unsigned_abs().max(1)))),
            other => Err(self.unexpected("EVAL", &other)),
        }
    }

    /// Subscribes to `channels` on a connection of its own (a subscribed connection takes
    /// no other command), and returns once the server confirmed each.
    pub fn subscribe(&self, channels: &[&str]) -> Result<Subscription, RedisError> {
        let mut conn = self.connect()?;
        let mut args: Vec<&[u8]> = vec![b"SUBSCRIBE"];
        args.extend(channels.iter().map(|c| c.as_bytes()));
        let mut buf = Vec::new();
        encode(&args, &mut buf);
        conn.stream
            .write_all(&buf)
            .map_err(|e| self.error("SUBSCRIBE", ConnError::Io(e)))?;
        for _ in channels {
            match conn.read_reply(&self.inner.limits) {
                Ok(Reply::Array(Some(items)))
                    if items.first() == Some(&Reply::Bulk(Some(b"subscribe".to_vec()))) => {}
                Ok(Reply::Error(message)) => {
                    return Err(RedisError::Refused {
                        at: self.address(),
                        phase: "SUBSCRIBE".to_owned(),
                        message: message.chars().take(200).collect(),
                    });
                }
                Ok(other) => return Err(self.unexpected("SUBSCRIBE", &other)),
                Err(e) => return Err(self.error("SUBSCRIBE", e)),
            }
        }
        Ok(Subscription {
            redis: self.clone(),
            conn,
        })
    }

    /// Takes the lock `key` for `lease`, waiting up to `wait` while another holds it
    /// (polling with a backoff from 5 ms to 100 ms). While held, the lease is renewed every
    /// third of it by a thread of the lock's, so a long holder keeps it and a holder that
    /// dies loses it after one lease. Dropping the lock releases it (only if it is still
    /// ours: a compare-and-delete script), from that thread, without blocking the dropper.
    pub fn lock(
        &self,
        key: &str,
        lease: Duration,
        wait: Duration,
    ) -> Result<RedisLock, RedisError> {
        let token = unique_token();
        let started = Instant::now();
        let mut pause = Duration::from_millis(5);
        loop {
            if self.set_nx(key, token.as_bytes(), lease)? {
                return Ok(RedisLock::hold(self.clone(), key.to_owned(), token, lease));
            }
            if started.elapsed() >= wait {
                return Err(RedisError::LockBusy {
                    at: self.address(),
                    key: key.to_owned(),
                    waited_ms: started.elapsed().as_millis(),
                });
            }
            std::thread::sleep(pause.min(wait.saturating_sub(started.elapsed())));
            pause = (pause * 2).min(Duration::from_millis(100));
        }
    }
}

/// The name of a reply's kind, for errors.
fn kind(reply: &Reply) -> &'static str {
    match reply {
        Reply::Simple(_) => "a status",
        Reply::Error(_) => "an error",
        Reply::Integer(_) => "an integer",
        Reply::Bulk(Some(_)) => "a bulk string",
        Reply::Bulk(None) => "a null bulk string",
        Reply::Array(Some(_)) => "an array",
        Reply::Array(None) => "a null array",
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A value no other lock holder has: this process's random hasher keys over the process
/// id, the time and a counter (unique, not secret: it only tells holders apart).
fn unique_token() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut halves = [0u64; 2];
    for (i, half) in halves.iter_mut().enumerate() {
        let mut h = RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        h.write_u128(nanos);
        h.write_u64(n);
        h.write_usize(i);
        *half = h.finish();
    }
    format!("{:016x}{:016x}", halves[0], halves[1])
}

/// One event in a sliding window (see [`Redis::take_in_window`]): microseconds of Redis's
/// clock; -1 when counted, else the wait.
const SLIDING_WINDOW: &str = "\
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local window = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return tonumber(oldest[2]) + window - now
end
redis.call('ZADD', KEYS[1], now, now .. ':' .. ARGV[3])
redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
return -1
";

/// Deletes the key only if it still holds our token.
const RELEASE: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end";
/// Extends the lease only if the key still holds our token.
const RENEW: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end";

/// A held [`Redis::lock`]; dropping it releases the lock.
pub struct RedisLock {
    key: String,
    /// Dropped (or sent to) to stop the renewing thread, which then releases the lock.
    stop: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl fmt::Debug for RedisLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisLock").field("key", &self.key).finish()
    }
}

impl RedisLock {
    fn hold(redis: Redis, key: String, token: String, lease: Duration) -> Self {
        let (stop, stopped) = mpsc::channel::<()>();
        let renew_every = (lease / 3).max(Duration::from_millis(10));
        let ms = lease.as_millis().max(1).to_string();
        let k = key.clone();
        let thread = std::thread::Builder::new()
            .name("redis-lock".to_owned())
            .spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(renew_every) {
                    match redis.eval(RENEW, &[&k], &[token.as_bytes(), ms.as_bytes()]) {
                        Ok(Reply::Integer(1)) => {}
                        // Lost (expired, taken by another): nothing left to renew.
                        Ok(_) => {
                            tracing::warn!(lock = %k, "the Redis lock's lease ran out before it was released");
                            return;
                        }
                        Err(e) => tracing::warn!(lock = %k, "renewing the Redis lock: {e}"),
                    }
                }
                if let Err(e) = redis.eval(RELEASE, &[&k], &[token.as_bytes()]) {
                    tracing::warn!(lock = %k, "releasing the Redis lock (it expires with its lease): {e}");
                }
            })
            .ok();
        Self {
            key,
            stop: Some(stop),
            thread,
        }
    }

    /// The lock's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Releases the lock and waits until Redis has been told (dropping it does not wait).
    pub fn release(mut self) {
        self.stop.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for RedisLock {
    fn drop(&mut self) {
        // The renewing thread sees the channel close and releases.
        self.stop.take();
    }
}

/// A connection subscribed to channels ([`Redis::subscribe`]).
pub struct Subscription {
    redis: Redis,
    conn: Conn,
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Subscription({:?})", self.redis)
    }
}

/// One message received on a subscribed channel.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Message {
    /// The channel.
    pub channel: String,
    /// What was published.
    pub payload: Vec<u8>,
}

impl Subscription {
    /// The next message, waiting up to `timeout`: `Ok(None)` when none came in time. An
    /// error means the connection is broken: subscribe again.
    pub fn recv(&mut self, timeout: Duration) -> Result<Option<Message>, RedisError> {
        let phase = "SUBSCRIBE";
        let limits = self.redis.inner.limits;
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            self.conn
                .stream
                .set_read_timeout(Some(left))
                .map_err(|e| self.redis.error(phase, ConnError::Io(e)))?;
            let reply = match self.conn.read_reply(&limits) {
                Ok(reply) => reply,
                Err(ConnError::Io(e))
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Ok(None);
                }
                Err(e) => return Err(self.redis.error(phase, e)),
            };
            let Reply::Array(Some(items)) = reply else {
                return Err(self.redis.unexpected(phase, &reply));
            };
            match items.as_slice() {
                [
                    Reply::Bulk(Some(k)),
                    Reply::Bulk(Some(c)),
                    Reply::Bulk(Some(p)),
                ] if k == b"message" => {
                    return Ok(Some(Message {
                        channel: String::from_utf8_lossy(c).into_owned(),
                        payload: p.clone(),
                    }));
                }
                // Confirmations of (un)subscriptions and anything else are not messages.
                _ => {}
            }
        }
    }
}

/// What went wrong on one connection.
#[derive(Debug)]
enum ConnError {
    /// Nothing was received and the server had closed the connection before our command
    /// could reach it (a pooled connection that timed out on the server's side).
    Stale,
    Io(io::Error),
    Protocol(ProtocolError),
}

/// One connection: the stream, and bytes read past the last reply.
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    fn request(&mut self, args: &[&[u8]], limits: &Limits) -> Result<Reply, ConnError> {
        let mut out = Vec::new();
        encode(args, &mut out);
        match self.stream.write_all(&out) {
            Ok(()) => {}
            Err(e) if is_closed(&e) => return Err(ConnError::Stale),
            Err(e) => return Err(ConnError::Io(e)),
        }
        match self.read_reply(limits) {
            Err(ConnError::Io(e))
                if e.kind() == io::ErrorKind::UnexpectedEof && self.buf.is_empty() =>
            {
                Err(ConnError::Stale)
            }
            Err(ConnError::Io(e)) if is_closed(&e) && self.buf.is_empty() => Err(ConnError::Stale),
            outcome => outcome,
        }
    }

    /// One reply, reading as much as it takes (bounded by `limits`).
    fn read_reply(&mut self, limits: &Limits) -> Result<Reply, ConnError> {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if let Some((reply, used)) = parse(&self.buf, limits).map_err(ConnError::Protocol)? {
                self.buf.drain(..used);
                return Ok(reply);
            }
            let n = match self.stream.read(&mut chunk) {
                Ok(0) => {
                    return Err(ConnError::Io(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the server closed the connection",
                    )));
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(ConnError::Io(e)),
            };
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

/// Whether an error says the peer had closed the connection.
fn is_closed(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
    )
}
