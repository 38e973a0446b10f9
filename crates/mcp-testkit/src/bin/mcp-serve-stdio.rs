//! A server built on `mcp_stdio::serve_stdio`: it serves on its stdin and stdout until stdin
//! ends, then exits 0. The mcp-stdio tests start it over pipes and over socket pairs, to see
//! how `serve_stdio` treats the descriptors it is given.
//!
//! Tools (through `tools/call`): `echo {message}` answers its `message`; `repeat {message,
//! times}` answers `message` repeated `times` times (a small request with a large answer, to
//! fill a client that does not read); `nonblocking` says
//! whether descriptors 0 and 1 have `O_NONBLOCK` set on their (shared) open file
//! descriptions, as `<stdin> <stdout>` (`true`/`false`); `reactor` says, in the same form,
//! whether each of them has a twin: another descriptor of this process for the same pipe or
//! socket.

#![allow(clippy::unwrap_used)]

use mcp_protocol::schema::{
    CallToolResult, ClientRequest, ContentBlock, Implementation, ListChangedCapability,
};
use mcp_protocol::{ErrorObject, RawJson, ServerConfig};
use mcp_stdio::{Handler, RequestContext};

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
            "repeat" => {
                let args = p.arguments.unwrap_or_default();
                let message = args.get("message").and_then(|m| m.as_str()).unwrap_or("");
                let times = args.get("times").and_then(serde_json::Value::as_u64);
                message.repeat(usize::try_from(times.unwrap_or(1)).unwrap())
            }
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

fn main() {
    let mut config = ServerConfig::new(Implementation::new("child".into(), "1".into()));
    config.capabilities.tools = Some(ListChangedCapability::new());
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(mcp_stdio::serve_stdio(config, Served))
        .unwrap();
}
