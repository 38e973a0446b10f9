//! The server's half of the 2026-07-28 stateless era (spec `basic/index.mdx` §_meta,
//! `server/discover.mdx`, `server/utilities/caching.mdx`, `basic/patterns/subscriptions.mdx`):
//! reading a request's `_meta` envelope, the errors the era defines, `server/discover`, what
//! every result gains (`resultType`, `serverInfo`, cache hints), and the filters of
//! `subscriptions/listen` streams.
//!
//! [`ServerSession`](crate::ServerSession) calls these; they hold no state of their own.

use serde_json::{Value, json};

use crate::jsonrpc::{ErrorObject, RawJson, RequestId, code};
use crate::schema::{
    ClientCapabilities, Implementation, LoggingLevel, RequestMethod, SubscriptionFilter,
    may_need_input, meta_key, method,
};
use crate::session::server::{ClientInfo, ServerConfig};
use crate::version::{Era, ProtocolVersion};
use crate::wire::JsonObject;

/// The methods whose results carry cache hints (`CacheableResult` in the schema).
const CACHEABLE: [&str; 8] = [
    "server/discover",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    // The skills extension (SEP-2640): its list and get results are cacheable results.
    "skills/list",
    "skills/get",
];

/// The rank of a level name, by [`LoggingLevel::severity`]; an unknown name ranks as the
/// most severe, so a level we cannot place is never filtered out by mistake.
pub(crate) fn level_rank(level: &str) -> usize {
    LoggingLevel::from(level)
        .severity()
        .map_or(usize::MAX, usize::from)
}

/// What one stateless request declared about itself in `_meta`.
#[derive(Debug, Clone)]
pub(crate) struct Declared {
    /// The version, capabilities and identity the request declared.
    pub(crate) client: ClientInfo,
    /// The least severe log level the request wants (`logLevel`); `None` wants no log entries.
    pub(crate) log_rank: Option<usize>,
}

/// Reads the envelope of a stateless request, or says which member is missing or malformed
/// (the caller answers -32602). `clientInfo` is optional: it is a SHOULD, and servers must not
/// require it.
pub(crate) fn read_meta(params: Option<&RawJson>) -> Result<Declared, String> {
    let params: JsonObject = match params {
        Some(raw) => raw
            .decode()
            .map_err(|_| "params must be an object".to_owned())?,
        None => JsonObject::new(),
    };
    let Some(Value::Object(meta)) = params.get("_meta") else {
        return Err("missing _meta with the per-request protocol fields".to_owned());
    };
    let version = match meta.get(meta_key::PROTOCOL_VERSION) {
        Some(Value::String(v)) => ProtocolVersion::parse(v),
        Some(_) => {
            return Err(format!(
                "_meta {} must be a string",
                meta_key::PROTOCOL_VERSION
            ));
        }
        None => return Err(format!("_meta is missing {}", meta_key::PROTOCOL_VERSION)),
    };
    let capabilities: ClientCapabilities = match meta.get(meta_key::CLIENT_CAPABILITIES) {
        Some(value @ Value::Object(_)) => serde_json::from_value(value.clone())
            .map_err(|e| format!("_meta {} is invalid: {e}", meta_key::CLIENT_CAPABILITIES))?,
        Some(_) => {
            return Err(format!(
                "_meta {} must be an object",
                meta_key::CLIENT_CAPABILITIES
            ));
        }
        None => {
            return Err(format!(
                "_meta is missing {}",
                meta_key::CLIENT_CAPABILITIES
            ));
        }
    };
    let implementation = match meta.get(meta_key::CLIENT_INFO) {
        Some(value) => serde_json::from_value(value.clone())
            .map_err(|e| format!("_meta {} is invalid: {e}", meta_key::CLIENT_INFO))?,
        None => Implementation::new(String::new(), String::new()),
    };
    let log_rank = match meta.get(meta_key::LOG_LEVEL) {
        Some(Value::String(level)) => Some(level_rank(level)),
        Some(_) => return Err(format!("_meta {} must be a string", meta_key::LOG_LEVEL)),
        None => None,
    };
    Ok(Declared {
        client: ClientInfo {
            protocol_version: version,
            capabilities,
            implementation,
        },
        log_rank,
    })
}

/// Whether this server speaks `version` in the stateless era.
pub(crate) fn speaks(config: &ServerConfig, version: &ProtocolVersion) -> bool {
    version.era() == Some(Era::Stateless) && config.supported_versions.contains(version)
}

/// Whether the server speaks any stateless-era version at all.
pub(crate) fn speaks_stateless(config: &ServerConfig) -> bool {
    config
        .supported_versions
        .iter()
        .any(|v| v.era() == Some(Era::Stateless))
}

/// `UnsupportedProtocolVersionError` (-32022): the versions we speak and the one asked for.
pub(crate) fn unsupported_version(
    config: &ServerConfig,
    requested: &ProtocolVersion,
) -> ErrorObject {
    let mut error = ErrorObject::new(
        code::UNSUPPORTED_PROTOCOL_VERSION,
        format!("Unsupported protocol version: {requested}"),
    );
    error.data = Some(json!({
        "supported": supported(config),
        "requested": requested.as_str(),
    }));
    error
}

/// `MissingRequiredClientCapabilityError` (-32021): what a handler answers when the request
/// needs a capability its `_meta` did not declare. `required` is a `ClientCapabilities`
/// object naming what is missing, such as `{"sampling": {}}`; over HTTP the answer is a 400.
pub fn missing_capability_error(required: JsonObject) -> ErrorObject {
    let names: Vec<&str> = required.keys().map(String::as_str).collect();
    let mut error = ErrorObject::new(
        code::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!("Missing required client capability: {}", names.join(", ")),
    );
    error.data = Some(json!({ "requiredCapabilities": required }));
    error
}

/// The versions this server names in `server/discover` and in -32022: all it speaks, newest
/// first, so that a dual-era client sees both eras.
fn supported(config: &ServerConfig) -> Vec<String> {
    let mut versions = config.supported_versions.clone();
    versions.sort();
    versions.reverse();
    versions.iter().map(|v| v.as_str().to_owned()).collect()
}

/// The result of `server/discover`, from the configuration alone.
pub(crate) fn discover_result(config: &ServerConfig) -> Result<RawJson, ErrorObject> {
    let internal = |e: serde_json::Error| ErrorObject::new(code::INTERNAL_ERROR, e.to_string());
    let mut result = JsonObject::new();
    result.insert("supportedVersions".to_owned(), json!(supported(config)));
    // 2026-07-28 has no `capabilities.tasks`: tasks are the extension there, declared under
    // `extensions`; a dual-era server's 2025-11-25 `tasks` member is its handshake's alone.
    let mut capabilities = config.capabilities.clone();
    capabilities.tasks = None;
    result.insert(
        "capabilities".to_owned(),
        serde_json::to_value(&capabilities).map_err(internal)?,
    );
    if let Some(instructions) = &config.instructions {
        result.insert("instructions".to_owned(), json!(instructions));
    }
    let raw = RawJson::encode(&result).map_err(internal)?;
    decorate(config, <method::Discover as RequestMethod>::METHOD, &raw)
}

/// What every stateless result gains before it goes out: `resultType` (`complete` unless the
/// handler said otherwise), `_meta["io.modelcontextprotocol/serverInfo"]`, and on the
/// cacheable methods `ttlMs` and `cacheScope` from the configuration. Members the handler set
/// itself are kept. An input-required result on a method that may not return one is refused
/// (-32603): the client would not know what to do with it.
pub(crate) fn decorate(
    config: &ServerConfig,
    method: &str,
    result: &RawJson,
) -> Result<RawJson, ErrorObject> {
    let internal = |message: String| ErrorObject::new(code::INTERNAL_ERROR, message);
    let mut object: JsonObject = result
        .decode()
        .map_err(|e| internal(format!("a result must be a JSON object: {e}")))?;
    let kind = object
        .entry("resultType")
        .or_insert_with(|| json!("complete"))
        .clone();
    let input_required = kind == json!("input_required");
    if input_required && !may_need_input(method) {
        return Err(internal(format!(
            "{method} may not answer with an input_required result"
        )));
    }
    if !input_required && CACHEABLE.contains(&method) {
        object
            .entry("ttlMs")
            .or_insert_with(|| json!(config.cache_ttl_ms));
        object
            .entry("cacheScope")
            .or_insert_with(|| json!(config.cache_scope.as_str()));
    }
    let meta = object
        .entry("_meta")
        .or_insert_with(|| Value::Object(JsonObject::new()));
    if let Value::Object(meta) = meta
        && !meta.contains_key(meta_key::SERVER_INFO)
    {
        let info =
            serde_json::to_value(&config.server_info).map_err(|e| internal(e.to_string()))?;
        meta.insert(meta_key::SERVER_INFO.to_owned(), info);
    }
    RawJson::encode(&object).map_err(|e| internal(e.to_string()))
}

/// One open `subscriptions/listen` stream: the request that opened it and what it carries.
#[derive(Debug, Clone)]
pub(crate) struct Listen {
    pub(crate) id: RequestId,
    pub(crate) filter: SubscriptionFilter,
}

/// The part of a requested filter this server honours: only list changes it declared
/// `listChanged` for, and resource updates only if it declared `subscribe`.
pub(crate) fn honoured(config: &ServerConfig, asked: &SubscriptionFilter) -> SubscriptionFilter {
    let caps = &config.capabilities;
    let mut filter = SubscriptionFilter::new();
    let yes = |asked: Option<bool>, offered: Option<bool>| {
        (asked == Some(true) && offered == Some(true)).then_some(true)
    };
    filter.tools_list_changed = yes(
        asked.tools_list_changed,
        caps.tools.as_ref().and_then(|t| t.list_changed),
    );
    filter.prompts_list_changed = yes(
        asked.prompts_list_changed,
        caps.prompts.as_ref().and_then(|p| p.list_changed),
    );
    filter.resources_list_changed = yes(
        asked.resources_list_changed,
        caps.resources.as_ref().and_then(|r| r.list_changed),
    );
    if caps.resources.as_ref().and_then(|r| r.subscribe) == Some(true) {
        filter.resource_subscriptions = asked.resource_subscriptions.clone();
    }
    filter
}

/// The notifications `subscriptions/listen` streams carry, and nothing else does in the
/// stateless era.
const LISTENED: [&str; 4] = [
    "notifications/tools/list_changed",
    "notifications/prompts/list_changed",
    "notifications/resources/list_changed",
    "notifications/resources/updated",
];

/// Whether `method` goes to listen streams rather than with a request.
pub(crate) fn is_listened(method: &str) -> bool {
    LISTENED.contains(&method)
}

/// Whether a listen stream with `filter` carries this notification.
pub(crate) fn carries(filter: &SubscriptionFilter, method: &str, params: Option<&RawJson>) -> bool {
    let on = |flag: Option<bool>| flag == Some(true);
    match method {
        "notifications/tools/list_changed" => on(filter.tools_list_changed),
        "notifications/prompts/list_changed" => on(filter.prompts_list_changed),
        "notifications/resources/list_changed" => on(filter.resources_list_changed),
        "notifications/resources/updated" => {
            let uri = params
                .and_then(|p| p.decode::<JsonObject>().ok())
                .and_then(|p| p.get("uri").and_then(Value::as_str).map(str::to_owned));
            match (uri, &filter.resource_subscriptions) {
                (Some(uri), Some(uris)) => uris.contains(&uri),
                _ => false,
            }
        }
        _ => false,
    }
}

/// The `_meta` that ties a notification to the listen stream `listen` opened.
pub(crate) fn subscription_meta(listen: &RequestId) -> JsonObject {
    let mut meta = JsonObject::new();
    meta.insert(
        meta_key::SUBSCRIPTION_ID.to_owned(),
        serde_json::to_value(listen).unwrap_or_default(),
    );
    meta
}
