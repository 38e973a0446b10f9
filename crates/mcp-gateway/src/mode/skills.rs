//! Skills (SEP-2640, extension `io.modelcontextprotocol/skills`) in passthrough mode with
//! several upstreams. One upstream's skills requests are relayed as sent, like any extension's
//! (see `passthrough::relay_other`); with several, the gateway answers `skills/list` itself
//! with every upstream's skills, and routes `skills/get`, `resources/directory/read` and the
//! reads of a skill's files to the upstream that listed the skill.
//!
//! Skill URIs are not renamed, as resource URIs are not: a client verifies a skill's files
//! against the digests its upstream listed, and the bytes pass through unchanged. Each skill's
//! folder (its `SKILL.md` URI without `/SKILL.md`) is remembered with the upstream that listed
//! it; a later listing of the same folder by another upstream takes it over, as a resource URI
//! listed twice does.
//!
//! The merged `skills/list` is paged ([`PAGE_SIZE`] entries, the cursor the offset of the
//! next), since `skills/list` is a paginated result and a client may stop after a page; each
//! page is cut from the upstreams' lists as they are when it is asked for. Its caching hints
//! (2026-07-28 `ttlMs`, `cacheScope`) are the strictest any upstream gave: the shortest time
//! to live, and `private` if any upstream's list is private.

use std::collections::HashMap;
use std::sync::Mutex;

use mcp_protocol::schema::{
    CacheScope, ListSkillsResult, PaginatedParams, RequestMethod as _, ServerCapabilities,
    SkillsCapability, method, skill_folder,
};
use mcp_protocol::{ErrorObject, RawJson, RequestOptions, code};
use mcp_session::{Client, RequestContext};
use serde_json::{Value, json};

use super::upstream::{is_multi, ready_with, upstream_error};
use crate::reply::{self, encode};
use crate::shared::Shared;
use crate::sync::lock;

/// How many entries a page of the merged `skills/list` holds.
pub(crate) const PAGE_SIZE: usize = 50;

/// How many pages of one upstream's `skills/list` are followed before the rest is dropped.
const MAX_PAGES: usize = 100;

/// Which upstream listed each skill, by the skill's folder.
#[derive(Debug, Default)]
pub(crate) struct SkillRoutes {
    folders: Mutex<HashMap<String, String>>,
}

impl SkillRoutes {
    /// The upstream that listed the skill whose folder holds `uri` (the deepest such folder),
    /// if a listing through this gateway named it.
    pub(crate) fn upstream_of(&self, uri: &str) -> Option<String> {
        lock(&self.folders)
            .iter()
            .filter(|(folder, _)| {
                uri.strip_prefix(folder.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            })
            .max_by_key(|(folder, _)| folder.len())
            .map(|(_, id)| id.clone())
    }
}

/// Whether the gateway answers `method` here: a skills request with several upstreams.
pub(crate) fn handles(shared: &Shared, method: &str) -> bool {
    is_multi(shared)
        && [
            method::ListSkills::METHOD,
            method::GetSkill::METHOD,
            method::ReadDirectory::METHOD,
        ]
        .contains(&method)
}

/// Declares the extension when several upstreams are configured and a ready one declares it,
/// with `directoryRead` when one of those does (a directory read goes to the upstream that
/// listed the skill, which may refuse it).
pub(crate) fn declare(shared: &Shared, caps: &mut ServerCapabilities) {
    let declared: Vec<SkillsCapability> = with_skills(shared)
        .iter()
        .filter_map(|(_, c)| SkillsCapability::of(&c.server_info().capabilities))
        .collect();
    if is_multi(shared) && !declared.is_empty() {
        let mut skills = SkillsCapability::new();
        skills.directory_read = declared
            .iter()
            .any(|s| s.directory_read == Some(true))
            .then_some(true);
        // A settings object of a flag always encodes.
        let _ = skills.declare(caps);
    }
}

/// While upstreams are still connecting, what they will offer is not known: the extension is
/// declared with `directoryRead`, as every other family the gateway relays is, and a request
/// no upstream can answer gets the upstream's error. A client's session keeps what it was
/// declared at its start, so this is what a client that came early can use.
pub(crate) fn declare_while_connecting(caps: &mut ServerCapabilities) {
    let mut skills = SkillsCapability::new();
    skills.directory_read = Some(true);
    let _ = skills.declare(caps);
}

/// Answers a skills request for several upstreams ([`handles`]).
///
/// The file's rules apply as to resources: only the skills of upstreams the caller may use
/// are listed, and a skill of another is asked for as one nobody listed (of the upstreams it
/// may use), so the answer does not tell whether it exists.
pub(crate) async fn handle(
    routes: &SkillRoutes,
    shared: &Shared,
    method: &str,
    params: &Value,
    context: &RequestContext,
) -> Result<RawJson, ErrorObject> {
    if method == method::ListSkills::METHOD {
        return list(routes, shared, params["cursor"].as_str(), context).await;
    }
    let uri = params["uri"].as_str().unwrap_or_default();
    let upstreams: Vec<(String, Client)> = with_skills(shared)
        .into_iter()
        .filter(|(id, _)| shared.may_use_upstream(context, id))
        .collect();
    let routed = routes
        .upstream_of(uri)
        .filter(|id| upstreams.iter().any(|(i, _)| i == id));
    let candidates: Vec<&(String, Client)> = match routed {
        Some(id) => upstreams.iter().filter(|(i, _)| *i == id).collect(),
        None => upstreams.iter().collect(),
    };
    let mut upstream_params = params.clone();
    if let Some(object) = upstream_params.as_object_mut() {
        // The client's own metadata is not the upstream's business.
        object.remove("_meta");
    }
    let encoded = RawJson::encode(&upstream_params).map_err(reply::internal)?;
    let mut first_error = None;
    for (id, client) in candidates {
        match client
            .request_raw(method, Some(encoded.clone()), RequestOptions::DEFAULT, None)
            .await
        {
            Ok(result) => return Ok(result),
            Err(e) => {
                first_error.get_or_insert_with(|| upstream_error(id, &shared.host.secrets(id), &e));
            }
        }
    }
    Err(first_error
        .unwrap_or_else(|| reply::invalid_params(format!("no upstream serves the skill at {uri}"))))
}

/// One page of `skills/list` over every ready upstream that offers skills, each followed to
/// its last page, from `cursor` (the offset a previous page gave). A failing upstream is left
/// out and logged, as with the other lists; a cursor this gateway did not give is -32602.
async fn list(
    routes: &SkillRoutes,
    shared: &Shared,
    cursor: Option<&str>,
    context: &RequestContext,
) -> Result<RawJson, ErrorObject> {
    let mut all = ListSkillsResult::new(Vec::new());
    for (id, client) in with_skills(shared) {
        if !shared.may_use_upstream(context, &id) {
            continue;
        }
        match list_upstream(&client).await {
            Ok(listed) => {
                let mut folders = lock(&routes.folders);
                for skill in &listed.skills {
                    if let Some(folder) = skill_folder(&skill.uri) {
                        folders.insert(folder.to_owned(), id.clone());
                    }
                }
                drop(folders);
                merge(&mut all, listed);
            }
            Err(e) => shared.log.line(&format!(
                "upstream {id}: skills/list failed: {}",
                upstream_error(&id, &shared.host.secrets(&id), &e).message
            )),
        }
    }
    encode(&page(all, cursor)?)
}

/// Every page of one upstream's `skills/list`, as one result with the strictest caching
/// hints its pages gave.
async fn list_upstream(client: &Client) -> Result<ListSkillsResult, mcp_session::Error> {
    let mut all = ListSkillsResult::new(Vec::new());
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let mut params = PaginatedParams::new();
        params.cursor.clone_from(&cursor);
        let mut page = client
            .request::<method::ListSkills>(&params, RequestOptions::DEFAULT)
            .await?;
        let next = page.next_cursor.take();
        merge(&mut all, page);
        match next {
            Some(next) if cursor.as_deref() != Some(next.as_str()) => cursor = Some(next),
            _ => break,
        }
    }
    Ok(all)
}

/// Adds `page`'s entries to `all`, and its caching hints: the shorter time to live, and
/// `private` over `public`.
fn merge(all: &mut ListSkillsResult, page: ListSkillsResult) {
    all.skills.extend(page.skills);
    all.ttl_ms = match (all.ttl_ms, page.ttl_ms) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    all.cache_scope = match (all.cache_scope.take(), page.cache_scope) {
        (Some(CacheScope::Private), _) | (_, Some(CacheScope::Private)) => {
            Some(CacheScope::Private)
        }
        (a, b) => a.or(b),
    };
}

/// The page of `all` that starts at `cursor` (an offset this gateway gave, within the list),
/// with the cursor of the next when entries remain.
fn page(mut all: ListSkillsResult, cursor: Option<&str>) -> Result<ListSkillsResult, ErrorObject> {
    let start = match cursor {
        None => 0,
        Some(c) => c
            .parse::<usize>()
            .ok()
            .filter(|&n| n > 0 && n < all.skills.len())
            .ok_or_else(|| {
                let mut e = ErrorObject::new(code::INVALID_PARAMS, format!("invalid cursor {c:?}"));
                e.data = Some(json!({ "cursor": c }));
                e
            })?,
    };
    let end = start.saturating_add(PAGE_SIZE).min(all.skills.len());
    all.next_cursor = (end < all.skills.len()).then(|| end.to_string());
    all.skills.truncate(end);
    all.skills.drain(..start);
    Ok(all)
}

/// The ready upstreams that declare the skills extension.
fn with_skills(shared: &Shared) -> Vec<(String, Client)> {
    ready_with(shared, |c| SkillsCapability::of(c).is_some())
}
