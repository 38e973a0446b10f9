//! A fake MCP server over Streamable HTTP, in process, that offers skills (SEP-2640, extension
//! `io.modelcontextprotocol/skills`) and can lie about them on demand: serve a file other than
//! the one it listed, list a size or a path it should not. It lists one skill per page (so
//! that listing must follow `nextCursor`) and records every `resources/read`, so that tests can
//! tell what a host read and when.

use std::sync::{Arc, Mutex};

use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use mcp_protocol::schema::skill_digest;
use serde_json::{Value, json};
use tokio::net::TcpListener;

#[derive(Default)]
struct State {
    /// The listed entries, as sent.
    skills: Mutex<Vec<Value>>,
    /// What `resources/read` serves, by URI.
    files: Mutex<Vec<(String, String)>>,
    /// Every URI asked for with `resources/read`, in order.
    reads: Mutex<Vec<String>>,
    /// Every URI asked for with `skills/get`, in order.
    gets: Mutex<Vec<String>>,
    /// Members added to every `skills/list` page (`ttlMs`, `cacheScope`).
    list_members: Mutex<Vec<(String, Value)>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The running fake. It stops with the runtime.
#[derive(Clone)]
pub struct FakeSkills {
    /// The MCP endpoint, `http://127.0.0.1:<port>/mcp`.
    pub url: String,
    state: Arc<State>,
}

impl std::fmt::Debug for FakeSkills {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeSkills")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// The `SKILL.md` the fake serves for a skill: frontmatter with `name` and `description`,
/// then `body`.
pub fn skill_md(name: &str, description: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n\n{body}\n")
}

impl FakeSkills {
    /// Starts the fake on a free loopback port, with no skills.
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(State::default());
        let serving = Arc::clone(&state);
        crate::serve::spawn_http1(listener, None, move |req| {
            let state = Arc::clone(&serving);
            async move { answer(&state, req).await }
        });
        Self {
            url: format!("http://127.0.0.1:{port}/mcp"),
            state,
        }
    }

    /// Adds a skill `skill://<name>/SKILL.md` whose instructions are `body`, with more files
    /// (`path` in the skill's folder, content), each listed truthfully.
    pub fn add_skill(&self, name: &str, description: &str, body: &str, files: &[(&str, &str)]) {
        let md_uri = format!("skill://{name}/SKILL.md");
        let md = skill_md(name, description, body);
        let mut listed = vec![file_entry(&md_uri, &md)];
        let mut served = vec![(md_uri.clone(), md)];
        for (path, content) in files {
            let uri = format!("skill://{name}/{path}");
            listed.push(file_entry(&uri, content));
            served.push((uri, (*content).to_owned()));
        }
        lock(&self.state.skills).push(json!({
            "uri": md_uri,
            "frontmatter": {"name": name, "description": description},
            "resources": listed,
        }));
        lock(&self.state.files).extend(served);
    }

    /// From now on `resources/read` of `uri` serves `content`, whatever was listed.
    pub fn serve(&self, uri: &str, content: &str) {
        let mut files = lock(&self.state.files);
        files.retain(|(u, _)| u != uri);
        files.push((uri.to_owned(), content.to_owned()));
    }

    /// Changes the listed entry of the skill `name` (its JSON as sent).
    pub fn edit_entry(&self, name: &str, edit: impl FnOnce(&mut Value)) {
        let mut skills = lock(&self.state.skills);
        if let Some(entry) = skills.iter_mut().find(|e| e["frontmatter"]["name"] == name) {
            edit(entry);
        }
    }

    /// From now on every `skills/list` page carries `member` with `value` (a caching hint,
    /// `ttlMs` or `cacheScope`), so that tests can see what a gateway makes of them.
    pub fn list_member(&self, member: &str, value: Value) {
        lock(&self.state.list_members).push((member.to_owned(), value));
    }

    /// Every URI read so far, in order.
    pub fn reads(&self) -> Vec<String> {
        lock(&self.state.reads).clone()
    }

    /// Every URI asked for with `skills/get` so far, in order, so that a test can tell whether
    /// a gateway's refusal reached this upstream.
    pub fn gets(&self) -> Vec<String> {
        lock(&self.state.gets).clone()
    }
}

/// A listed file: its URI, digest and size, true to `content`.
pub fn file_entry(uri: &str, content: &str) -> Value {
    json!({"uri": uri, "digest": skill_digest(content.as_bytes()), "size": content.len()})
}

fn reply(status: StatusCode, body: Option<Value>) -> Response<Full<Bytes>> {
    let bytes = body.map(|b| b.to_string()).unwrap_or_default();
    let mut r = Response::new(Full::new(Bytes::from(bytes)));
    *r.status_mut() = status;
    if status == StatusCode::OK {
        r.headers_mut()
            .insert("content-type", "application/json".parse().unwrap());
    }
    r
}

async fn answer(state: &State, req: Request<Incoming>) -> Response<Full<Bytes>> {
    if req.method() == http::Method::DELETE {
        return reply(StatusCode::OK, None);
    }
    if req.method() != http::Method::POST {
        return reply(StatusCode::METHOD_NOT_ALLOWED, None);
    }
    let bytes = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let Some(id) = body.get("id").cloned() else {
        return reply(StatusCode::ACCEPTED, None);
    };
    let ok = |result: Value| {
        reply(
            StatusCode::OK,
            Some(json!({"jsonrpc": "2.0", "id": id, "result": result})),
        )
    };
    let err = |code: i64, message: &str| {
        reply(
            StatusCode::OK,
            Some(json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})),
        )
    };
    match body["method"].as_str().unwrap_or_default() {
        "initialize" => ok(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {
                "resources": {},
                "extensions": {"io.modelcontextprotocol/skills": {}},
            },
            "serverInfo": {"name": "fake-skills", "version": "0"},
        })),
        "tools/list" => ok(json!({"tools": []})),
        "resources/list" => ok(json!({"resources": []})),
        "skills/list" => {
            // One skill a page; the cursor is the index of the next.
            let skills = lock(&state.skills).clone();
            let at: usize = body["params"]["cursor"]
                .as_str()
                .and_then(|c| c.parse().ok())
                .unwrap_or(0);
            let page: Vec<Value> = skills.get(at).cloned().into_iter().collect();
            let mut result = json!({"skills": page});
            if at + 1 < skills.len() {
                result["nextCursor"] = json!((at + 1).to_string());
            }
            for (member, value) in lock(&state.list_members).iter() {
                result[member.as_str()] = value.clone();
            }
            ok(result)
        }
        "skills/get" => {
            let uri = body["params"]["uri"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            lock(&state.gets).push(uri.clone());
            let found = lock(&state.skills)
                .iter()
                .find(|entry| entry["uri"] == uri.as_str())
                .cloned();
            match found {
                Some(skill) => ok(json!({"skill": skill})),
                None => err(-32602, "Skill not found"),
            }
        }
        "resources/read" => {
            let uri = body["params"]["uri"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            lock(&state.reads).push(uri.clone());
            let found = lock(&state.files)
                .iter()
                .find(|(u, _)| *u == uri)
                .map(|(_, c)| c.clone());
            match found {
                Some(text) => ok(
                    json!({"contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]}),
                ),
                None => err(-32602, "Resource not found"),
            }
        }
        "ping" => ok(json!({})),
        _ => err(-32601, "Method not found"),
    }
}
