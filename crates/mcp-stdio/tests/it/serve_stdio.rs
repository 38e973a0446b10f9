//! `serve_stdio` in a real child process (this test binary run again, see [`child`]): over
//! pipes, as `mcp_stdio::spawn` and most hosts start a server, and over socket pairs, as
//! Node's `child_process` does. Both must round-trip calls, keep descriptors 0 and 1 blocking
//! for everyone else while they serve, and end when stdin ends.

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::process::Stdio;

use mcp_protocol::schema::{
    CallToolResult, ClientRequest, ContentBlock, Implementation, ListChangedCapability,
};
use mcp_protocol::{ErrorObject, RawJson, ServerConfig};
use mcp_stdio::{Client, Handler, RequestContext};

use super::*;

/// Set in the environment of the child: run [`child`] as the server.
const CHILD: &str = "MCP_STDIO_SERVE_STDIO_CHILD";
/// The arguments that make this test binary run [`child`] alone.
const CHILD_ARGS: [&str; 3] = ["serve_stdio::child", "--exact", "--quiet"];

/// `echo` answers its `message`; `nonblocking` says whether descriptors 0 and 1 of the
/// serving process have `O_NONBLOCK` set on their (shared) open file descriptions;
/// `reactor` says whether each of them has a twin (see [`twinned`]).
struct Served;

impl Handler for Served {
    async fn handle(
        &self,
        request: ClientRequest,
        _context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        let ClientRequest::CallTool(p) = request else {
            return Err(ErrorObject::new(-32601, "not here".into()));
        };
        let text = match p.name.as_str() {
            "nonblocking" => format!("{} {}", nonblocking(0), nonblocking(1)),
            "reactor" => format!("{} {}", twinned(0), twinned(1)),
            _ => p
                .arguments
                .and_then(|a| a.get("message").cloned())
                .and_then(|m| m.as_str().map(str::to_owned))
                .unwrap_or_default(),
        };
        Ok(RawJson::encode(&CallToolResult::new(vec![ContentBlock::text(text)])).unwrap())
    }
}

/// Whether descriptor `fd` of this process is non-blocking, from `/proc/self/fdinfo`.
fn nonblocking(fd: i32) -> bool {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).unwrap();
    let flags = info
        .lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .unwrap()
        .trim();
    i64::from_str_radix(flags, 8).unwrap() & 0o4000 != 0
}

/// Whether another descriptor of this process is the same pipe or socket as descriptor `fd`:
/// the reopened pipe or duplicated socket `serve_stdio` reads or writes on the reactor. The
/// fallback, tokio's `stdin()` and `stdout()`, uses descriptors 0 and 1 themselves.
fn twinned(fd: i32) -> bool {
    let target = |path: &std::path::Path| std::fs::read_link(path).ok();
    let own = target(format!("/proc/self/fd/{fd}").as_ref()).unwrap();
    std::fs::read_dir("/proc/self/fd").unwrap().any(|entry| {
        let entry = entry.unwrap();
        let number = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok());
        number.is_some_and(|n| n > 2) && target(&entry.path()).as_ref() == Some(&own)
    })
}

/// Not a test by itself: the server the tests below start. Without [`CHILD`] set it does
/// nothing; with it, it serves on this process's stdin and stdout until stdin ends, then
/// exits. (libtest prints a line on stdout first; the client takes it for a diagnostic.)
#[test]
fn child() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let mut config = ServerConfig::new(Implementation::new("child".into(), "1".into()));
    config.capabilities.tools = Some(ListChangedCapability::new());
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(mcp_stdio::serve_stdio(config, Served))
        .unwrap();
    // Stdin ended and everything was answered. Exit before libtest reports on stdout, which
    // the client has stopped reading.
    std::process::exit(0);
}

/// Many calls at once, some with answers larger than the pipe (so that they leave in many
/// partial writes, between which the small ones queue), then the flags of the server's
/// descriptors.
async fn exercise(client: &Client) {
    let message = |i: usize| {
        if i.is_multiple_of(32) {
            format!("m{i}").repeat(1 << 20)
        } else {
            format!("m{i}")
        }
    };
    let calls = (0..64).map(|i| {
        let client = client.clone();
        async move { text(&client, "echo", json!({"message": message(i)})).await }
    });
    let answers = join_all(calls).await;
    for (i, answer) in answers.iter().enumerate() {
        assert!(answer == &message(i), "answer {i} differs");
    }
    assert_eq!(
        text(client, "nonblocking", json!({})).await,
        "false false",
        "serve_stdio must not make descriptors 0 and 1 non-blocking for the processes sharing them"
    );
    assert_eq!(
        text(client, "reactor", json!({})).await,
        "true true",
        "stdin and stdout are served on the reactor, not through tokio's stdin() and stdout()"
    );
}

/// Awaits every future, in order, each in a task of its own so that they are in flight at once.
async fn join_all<F>(futures: impl Iterator<Item = F>) -> Vec<String>
where
    F: Future<Output = String> + Send + 'static,
{
    let tasks: Vec<_> = futures.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_pipes_from_a_real_child() {
    let exe = std::env::current_exe().unwrap();
    let mut config = StdioConfig::new("self", exe.display().to_string(), CHILD_ARGS);
    config.env.push((CHILD.to_owned(), "1".to_owned()));
    let client = mcp_stdio::spawn(config, session()).await.unwrap();
    assert_eq!(client.server_info().implementation.name, "child");
    exercise(&client).await;
    // Closing stdin is the end: the server exits by itself, before any signal.
    let status = client.close().await;
    assert!(status.contains("exit status: 0"), "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_socket_pairs_from_a_real_child() {
    let (ours_in, theirs_in) = UnixStream::pair().unwrap();
    let (ours_out, theirs_out) = UnixStream::pair().unwrap();
    let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args(CHILD_ARGS)
        .env(CHILD, "1")
        .stdin(Stdio::from(OwnedFd::from(theirs_in)))
        .stdout(Stdio::from(OwnedFd::from(theirs_out)))
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // Our ends are our own descriptions: non-blocking here touches nobody else.
    ours_in.set_nonblocking(true).unwrap();
    ours_out.set_nonblocking(true).unwrap();
    let writer = tokio::net::UnixStream::from_std(ours_in).unwrap();
    let reader = tokio::net::UnixStream::from_std(ours_out).unwrap();
    let client = mcp_stdio::connect("sockets", reader, writer, session(), 8 << 20)
        .await
        .unwrap();
    assert_eq!(client.server_info().implementation.name, "child");
    exercise(&client).await;
    client.close().await;
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("the server did not end when its stdin did")
        .unwrap();
    assert!(status.success(), "{status}");
}
