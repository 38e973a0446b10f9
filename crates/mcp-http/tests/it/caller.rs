//! Who drives a call's POST: the caller, in its own task. The client runs on a one-threaded
//! runtime of its own and the server on another, so the client runtime's count of live tasks
//! is exact and holds only the client's: while calls are held open by the server, it may have
//! grown by one task per caller and one per connection hyper opened for them, and by nothing
//! of ours per call. And how many connections a client keeps once many calls are over.

use std::sync::Arc;

use mcp_http::{FetchOptions, Fetcher, HttpConfig, HttpServerConfig};
use mcp_protocol::schema::{
    CallToolParams, CallToolResult, ClientRequest, ContentBlock, Implementation,
    ListChangedCapability,
};
use mcp_protocol::{
    ClientConfig, Era, ErrorObject, ProtocolVersion, RawJson, RequestOptions, ServerConfig,
};
use mcp_session::{Handler, RequestContext};
use tokio::sync::Semaphore;

/// How many calls are held open at once.
const HELD: usize = 8;

/// `hold` says it arrived, then answers once released; anything else answers at once.
struct Hold {
    arrived: Arc<Semaphore>,
    release: Arc<Semaphore>,
}

impl Handler for Hold {
    async fn handle(
        &self,
        request: ClientRequest,
        _context: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        let ClientRequest::CallTool(call) = request else {
            return Err(ErrorObject::new(-32601, "no".into()));
        };
        if call.name == "hold" {
            self.arrived.add_permits(1);
            self.release.acquire().await.unwrap().forget();
        }
        Ok(RawJson::encode(&CallToolResult::new(vec![ContentBlock::text("held")])).unwrap())
    }
}

/// Starts the `hold` server on a runtime of its own; returns the runtime, the endpoint and the
/// two semaphores (arrived, release).
fn holder() -> (
    tokio::runtime::Runtime,
    String,
    Arc<Semaphore>,
    Arc<Semaphore>,
) {
    holder_serving(512)
}

/// [`holder`], serving at most `max_connections` connections at once (one more is answered
/// 503).
fn holder_serving(
    max_connections: usize,
) -> (
    tokio::runtime::Runtime,
    String,
    Arc<Semaphore>,
    Arc<Semaphore>,
) {
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let arrived = Arc::new(Semaphore::new(0));
    let release = Arc::new(Semaphore::new(0));
    let mut server = ServerConfig::new(Implementation::new("holder".into(), "1".into()));
    server.capabilities.tools = Some(ListChangedCapability::new());
    server.supported_versions = ProtocolVersion::KNOWN.to_vec();
    let mut config = HttpServerConfig::new(server);
    config.max_connections = max_connections;
    let handler = Hold {
        arrived: Arc::clone(&arrived),
        release: Arc::clone(&release),
    };
    let url = server_rt.block_on(async {
        let (listener, addr) = mcp_http::bind("127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        tokio::spawn(mcp_http::serve_http(listener, config, handler));
        format!("http://127.0.0.1:{}/mcp", addr.port())
    });
    (server_rt, url, arrived, release)
}

/// Holds [`HELD`] calls open in the given era and returns how many tasks the client runtime
/// gained meanwhile.
fn tasks_gained_while_calls_are_held(stateless: bool) -> usize {
    let (server_rt, url, arrived, release) = holder();
    let client_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let gained = client_rt.block_on(async {
        let mut session = ClientConfig::new(Implementation::new("it".into(), "0".into()));
        session.supported_versions = if stateless {
            vec![ProtocolVersion::V2026_07_28]
        } else {
            ProtocolVersion::HANDSHAKE.to_vec()
        };
        let client = mcp_http::connect(HttpConfig::new("holder", url), session)
            .await
            .unwrap();
        let era = if stateless {
            Era::Stateless
        } else {
            Era::Handshake
        };
        assert_eq!(client.server_info().era, era);
        let call = |name: &str| {
            let client = client.clone();
            let params = CallToolParams::new(name.into());
            async move { client.call_tool(params, RequestOptions::DEFAULT).await }
        };
        // A first call, so that what lives for the whole connection (a pooled connection and
        // its task, the pool's idle timer) is there before counting.
        assert_eq!(
            call("quick").await.unwrap().content,
            [ContentBlock::text("held")]
        );

        let metrics = tokio::runtime::Handle::current().metrics();
        let before = metrics.num_alive_tasks();
        let callers: Vec<_> = (0..HELD).map(|_| tokio::spawn(call("hold"))).collect();
        // Every call has reached the server and waits there.
        arrived.acquire_many(HELD as u32).await.unwrap().forget();
        let during = metrics.num_alive_tasks();
        release.add_permits(HELD);
        for caller in callers {
            let result = caller.await.unwrap().unwrap();
            assert_eq!(result.content, [ContentBlock::text("held")]);
        }
        client.close().await;
        during - before
    });
    drop(client_rt);
    drop(server_rt);
    gained
}

#[test]
fn a_calls_post_runs_in_its_callers_task_in_the_handshake_era() {
    let gained = tasks_gained_while_calls_are_held(false);
    // The callers, and at most one new connection each (one was pooled already).
    assert!(
        gained >= HELD,
        "{gained} tasks: the callers were not counted"
    );
    assert!(
        gained <= 2 * HELD,
        "{gained} tasks for {HELD} calls held open: more than a caller and a connection each"
    );
}

#[test]
fn a_calls_post_runs_in_its_callers_task_in_the_stateless_era() {
    let gained = tasks_gained_while_calls_are_held(true);
    assert!(
        gained >= HELD,
        "{gained} tasks: the callers were not counted"
    );
    assert!(
        gained <= 2 * HELD,
        "{gained} tasks for {HELD} calls held open: more than a caller and a connection each"
    );
}

/// The connections the server counts as open (`mcp_http_connections` on `/metrics`), the
/// fetch's own included.
async fn open_connections(fetcher: &Fetcher, url: &str) -> u64 {
    metric(fetcher, url, "mcp_http_connections").await
}

/// One unlabelled sample of the server's `/metrics`; panics if it is not there.
async fn metric(fetcher: &Fetcher, url: &str, name: &str) -> u64 {
    let metrics = url.replace("/mcp", "/metrics");
    let request = http::Request::get(metrics).body(Vec::new()).unwrap();
    let response = fetcher.send(request).await.unwrap();
    let text = String::from_utf8(response.into_body()).unwrap();
    let prefix = format!("{name} ");
    text.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .unwrap_or_else(|| panic!("no {name} in /metrics"))
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn spare_connections_are_closed_once_many_calls_are_over() {
    // Twice the spares the pool keeps.
    const MANY: usize = 64;
    let (server_rt, url, arrived, release) = holder();
    let client_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    client_rt.block_on(async {
        let mut session = ClientConfig::new(Implementation::new("it".into(), "0".into()));
        session.supported_versions = ProtocolVersion::HANDSHAKE.to_vec();
        let client = mcp_http::connect(HttpConfig::new("holder", url.clone()), session)
            .await
            .unwrap();
        let fetcher = Fetcher::new(FetchOptions::new()).unwrap();
        let callers: Vec<_> = (0..MANY)
            .map(|_| {
                let client = client.clone();
                let params = CallToolParams::new("hold".into());
                tokio::spawn(async move { client.call_tool(params, RequestOptions::DEFAULT).await })
            })
            .collect();
        arrived.acquire_many(MANY as u32).await.unwrap().forget();
        // A connection per call held open, the standalone stream's and the fetch's.
        let held = open_connections(&fetcher, &url).await;
        assert!(
            held >= MANY as u64 + 2,
            "{held} connections for {MANY} calls"
        );
        release.add_permits(MANY);
        for caller in callers {
            caller.await.unwrap().unwrap();
        }
        // The pool keeps 32 of the calls' connections and closes the rest; the server sees
        // them close a moment later.
        let mut open = held;
        for _ in 0..250 {
            open = open_connections(&fetcher, &url).await;
            if open <= 32 + 2 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert!(
            open <= 32 + 2,
            "{open} connections still open after {MANY} calls ended"
        );
        client.close().await;
    });
    drop(client_rt);
    drop(server_rt);
}

/// How many connections, beyond one per call in flight, a client may hold: the standalone
/// stream's, the test's own fetch of `/metrics`, and a few closing as others open.
const SPARE: usize = 8;

/// `callers` tasks each make `rounds` quick calls one after another, on a client runtime of one
/// thread or of two, in the given era, to a server that refuses any connection beyond one per
/// caller plus [`SPARE`]. Returns how many calls succeeded and the server's count of refused
/// connections.
fn quick_calls_back_to_back(
    callers: usize,
    rounds: usize,
    one_thread: bool,
    stateless: bool,
) -> (usize, u64) {
    let (server_rt, url, _arrived, _release) = holder_serving(callers + SPARE);
    let client_rt = if one_thread {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    };
    let outcome = client_rt.block_on(async {
        let mut session = ClientConfig::new(Implementation::new("it".into(), "0".into()));
        session.supported_versions = if stateless {
            vec![ProtocolVersion::V2026_07_28]
        } else {
            ProtocolVersion::HANDSHAKE.to_vec()
        };
        let client = mcp_http::connect(HttpConfig::new("holder", url.clone()), session)
            .await
            .unwrap();
        let era = if stateless {
            Era::Stateless
        } else {
            Era::Handshake
        };
        assert_eq!(client.server_info().era, era);
        let tasks: Vec<_> = (0..callers)
            .map(|_| {
                let client = client.clone();
                tokio::spawn(async move {
                    let mut succeeded = 0;
                    for _ in 0..rounds {
                        let params = CallToolParams::new("quick".into());
                        if client
                            .call_tool(params, RequestOptions::DEFAULT)
                            .await
                            .is_ok()
                        {
                            succeeded += 1;
                        }
                    }
                    succeeded
                })
            })
            .collect();
        let mut succeeded = 0;
        for task in tasks {
            succeeded += task.await.unwrap();
        }
        let fetcher = Fetcher::new(FetchOptions::new()).unwrap();
        let refused = metric(&fetcher, &url, "mcp_http_connections_refused_total").await;
        client.close().await;
        (succeeded, refused)
    });
    drop(client_rt);
    drop(server_rt);
    outcome
}

/// 256 callers, 100 calls each, and no connection refused: the client holds about one
/// connection per call in flight, whichever runtime drives it.
fn many_quick_calls_stay_within_a_connection_each(one_thread: bool, stateless: bool) {
    const CALLERS: usize = 256;
    const ROUNDS: usize = 100;
    let (succeeded, refused) = quick_calls_back_to_back(CALLERS, ROUNDS, one_thread, stateless);
    assert_eq!(refused, 0, "the server refused {refused} connections");
    assert_eq!(
        succeeded,
        CALLERS * ROUNDS,
        "{} calls failed",
        CALLERS * ROUNDS - succeeded
    );
}

#[test]
fn quick_calls_on_one_thread_hold_a_connection_each_in_the_handshake_era() {
    many_quick_calls_stay_within_a_connection_each(true, false);
}

#[test]
fn quick_calls_on_one_thread_hold_a_connection_each_in_the_stateless_era() {
    many_quick_calls_stay_within_a_connection_each(true, true);
}

#[test]
fn quick_calls_on_two_threads_hold_a_connection_each_in_the_handshake_era() {
    many_quick_calls_stay_within_a_connection_each(false, false);
}

#[test]
fn quick_calls_on_two_threads_hold_a_connection_each_in_the_stateless_era() {
    many_quick_calls_stay_within_a_connection_each(false, true);
}
