//! The skills extension (SEP-2640, extension id `io.modelcontextprotocol/skills`): a server
//! offers Agent Skills (a folder with a `SKILL.md` and its files) under `skill://` URIs.
//!
//! A client learns of the skills with `skills/list` (paginated) or `skills/get` (one URI), each
//! entry naming its `SKILL.md`, that file's YAML frontmatter rendered as JSON, and every file of
//! the skill with its `sha256:` digest and byte size, so that a host can verify what it later
//! reads with `resources/read` before it trusts it. A server that also sets `directoryRead`
//! answers `resources/directory/read`, listing the direct children of a folder.
//!
//! The three requests are routed [`ClientRequest`](crate::schema::ClientRequest) variants
//! (`ListSkills`, `GetSkill`, `ReadDirectory`), which a server session offers only when its
//! capabilities declare the extension (and `directoryRead` for the last): a server without
//! skills still answers them -32601.

use std::fmt::{self, Write as _};

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::schema::resources::Resource;
use crate::schema::stateless::CacheScope;
use crate::schema::{ClientCapabilities, ServerCapabilities};
use crate::wire::{JsonObject, wire_struct};

/// The extension's identifier, the key under `capabilities.extensions`.
pub const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";

/// The capability member (SEP-2133) under which extensions are declared, by identifier. It is
/// kept in the capability types' `extra`, where the tasks extension reads it too.
const EXTENSIONS: &str = "extensions";

/// The URI scheme servers should use for the files of a skill.
pub const SKILL_SCHEME: &str = "skill://";

/// The file every skill has at its root.
pub const SKILL_MD: &str = "SKILL.md";

/// The MIME type a `SKILL.md` resource should carry.
pub const SKILL_MD_MIME_TYPE: &str = "text/markdown";

/// The MIME type of a folder in a `resources/directory/read` result, so a client can descend.
pub const DIRECTORY_MIME_TYPE: &str = "inode/directory";

/// The string a skill entry's `resources` holds instead of a file list when the server
/// generates the skill's files on demand.
pub const DYNAMIC_RESOURCES: &str = "dynamic";

/// The prefix of a `sha256:` digest.
pub const DIGEST_PREFIX: &str = "sha256:";

/// How many files (SKILL.md included) a server should not exceed in one skill.
pub const MAX_FILES_PER_SKILL: usize = 512;

/// How many bytes a skill's files should not exceed together (16 MiB).
pub const MAX_SKILL_BYTES: u64 = 16 * 1024 * 1024;

wire_struct! {
    /// The settings a server declares under `capabilities.extensions["io.modelcontextprotocol/skills"]`.
    /// They sit inline under the identifier (no `config` envelope); `{}` declares the
    /// extension with no optional feature.
    pub struct SkillsCapability {
        required {}
        optional {
            /// Whether the server answers `resources/directory/read`.
            directory_read: bool = "directoryRead",
        }
    }
}

impl SkillsCapability {
    /// The skills settings a server declared, if it declared the extension: `None` when the
    /// key is absent or its value is not an object (which a client must not read as support).
    pub fn of(capabilities: &ServerCapabilities) -> Option<Self> {
        let value = capabilities
            .extra
            .get(EXTENSIONS)?
            .as_object()?
            .get(SKILLS_EXTENSION)?;
        serde_json::from_value(value.clone()).ok()
    }

    /// Adds this declaration to `capabilities.extensions`, keeping any other extension there.
    pub fn declare(&self, capabilities: &mut ServerCapabilities) -> Result<(), serde_json::Error> {
        let value = serde_json::to_value(self)?;
        declare_in(&mut capabilities.extra, value);
        Ok(())
    }

    /// Adds the extension to a client's `capabilities.extensions` (SEP-2133: a client lists
    /// the extensions it supports as a server does), with no settings, since every setting is
    /// the server's; any other extension there is kept. A client that lists and loads skills
    /// says so, and a server may hold its skills back from one that does not.
    pub fn declare_client(capabilities: &mut ClientCapabilities) {
        declare_in(&mut capabilities.extra, Value::Object(JsonObject::new()));
    }
}

/// Sets the extension's settings under `extensions` in a capabilities object's members,
/// keeping the other extensions (an `extensions` that is not an object is replaced).
fn declare_in(extra: &mut JsonObject, settings: Value) {
    let extensions = extra
        .entry(EXTENSIONS)
        .or_insert_with(|| Value::Object(JsonObject::new()));
    if !extensions.is_object() {
        *extensions = Value::Object(JsonObject::new());
    }
    if let Value::Object(extensions) = extensions {
        extensions.insert(SKILLS_EXTENSION.to_owned(), settings);
    }
}

/// The `sha256:` digest of a file's raw bytes, as an entry carries it: `sha256:` and 64
/// lowercase hex digits.
pub fn skill_digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut out = String::with_capacity(DIGEST_PREFIX.len() + 64);
    out.push_str(DIGEST_PREFIX);
    for byte in hash {
        // Writing into a String cannot fail.
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// Whether `digest` has the form an entry must use: `sha256:` and 64 lowercase hex digits.
pub fn is_digest(digest: &str) -> bool {
    digest.strip_prefix(DIGEST_PREFIX).is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

wire_struct! {
    /// One file of a skill: its URI, the digest of its raw bytes and their number.
    pub struct SkillFile {
        required {
            /// The file's URI: the skill's `SKILL.md` or a file under the skill's folder.
            uri: String = "uri",
            /// `sha256:` and 64 lowercase hex digits, over the raw bytes.
            digest: String = "digest",
            /// The length of the raw bytes.
            size: u64 = "size",
        }
        optional {}
    }
}

impl SkillFile {
    /// Describes `bytes` served at `uri`.
    pub fn of(uri: impl Into<String>, bytes: &[u8]) -> Self {
        Self::new(uri.into(), skill_digest(bytes), bytes.len() as u64)
    }

    /// Whether `bytes` are the file this entry describes: the same size and the same digest.
    pub fn matches(&self, bytes: &[u8]) -> bool {
        self.size == bytes.len() as u64 && self.digest == skill_digest(bytes)
    }
}

/// A skill entry's `resources`: the complete list of its files, or `"dynamic"` when the server
/// makes them on demand and publishes no manifest.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SkillResources {
    /// Every file of the skill, each once, its `SKILL.md` included.
    Files(Vec<SkillFile>),
    /// `"dynamic"`: no manifest; a host cannot verify the files ahead of reading them.
    Dynamic,
}

impl SkillResources {
    /// The files, unless the skill is dynamic.
    pub fn files(&self) -> Option<&[SkillFile]> {
        match self {
            Self::Files(files) => Some(files),
            Self::Dynamic => None,
        }
    }
}

impl Serialize for SkillResources {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Files(files) => files.serialize(serializer),
            Self::Dynamic => serializer.serialize_str(DYNAMIC_RESOURCES),
        }
    }
}

impl<'de> Deserialize<'de> for SkillResources {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Read once, then pick the form by the JSON type: never "try each form in turn".
        match Value::deserialize(deserializer)? {
            Value::String(s) if s == DYNAMIC_RESOURCES => Ok(Self::Dynamic),
            Value::Array(items) => items
                .into_iter()
                .map(serde_json::from_value)
                .collect::<Result<_, _>>()
                .map(Self::Files)
                .map_err(de::Error::custom),
            other => Err(de::Error::custom(format_args!(
                "resources must be an array of files or \"{DYNAMIC_RESOURCES}\", not {}",
                Kind(&other)
            ))),
        }
    }
}

/// Names a JSON value's type for an error message, without its content.
struct Kind<'a>(&'a Value);

impl fmt::Display for Kind<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "another string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        })
    }
}

wire_struct! {
    /// One skill as `skills/list` and `skills/get` describe it.
    pub struct SkillEntry {
        required {
            /// The full URI of the skill's `SKILL.md`; its folder's last segment is the
            /// skill's name.
            uri: String = "uri",
            /// The YAML frontmatter of that `SKILL.md`, as a JSON object, identical in content
            /// to the file's; `name` and `description` are always there.
            frontmatter: JsonObject = "frontmatter",
            /// The skill's files, or `"dynamic"`.
            resources: SkillResources = "resources",
        }
        optional {
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

impl SkillEntry {
    /// The frontmatter's `name`, if it is a string.
    pub fn name(&self) -> Option<&str> {
        self.frontmatter.get("name").and_then(Value::as_str)
    }

    /// The frontmatter's `description`, if it is a string.
    pub fn description(&self) -> Option<&str> {
        self.frontmatter.get("description").and_then(Value::as_str)
    }

    /// The entry for one file of this skill, by URI.
    pub fn file(&self, uri: &str) -> Option<&SkillFile> {
        self.resources.files()?.iter().find(|f| f.uri == uri)
    }

    /// The skill's folder: its URI without the trailing `/SKILL.md`.
    pub fn folder(&self) -> Option<&str> {
        skill_folder(&self.uri)
    }
}

/// The folder of a skill whose `SKILL.md` is at `uri`: `uri` without `/SKILL.md`.
pub fn skill_folder(uri: &str) -> Option<&str> {
    uri.strip_suffix(SKILL_MD)?.strip_suffix('/')
}

/// The name a `SKILL.md` URI gives its skill: the last segment of its folder, if the URI has
/// at least an authority and that segment after the scheme.
pub fn skill_name_of(uri: &str) -> Option<&str> {
    let (_, rest) = uri.split_once("://")?;
    let mut segments = rest.split('/').filter(|s| !s.is_empty()).rev();
    if segments.next()? != SKILL_MD {
        return None;
    }
    segments.next()
}

wire_struct! {
    /// The result of `skills/list`: one page of entries. An entry is never split across pages.
    pub struct ListSkillsResult {
        required {
            /// This page of skills.
            skills: Vec<SkillEntry> = "skills",
        }
        optional {
            /// The cursor of the next page.
            next_cursor: String = "nextCursor",
            /// How long the result may be cached (2026-07-28 and later).
            ttl_ms: u64 = "ttlMs",
            /// Who may reuse it (2026-07-28 and later).
            cache_scope: CacheScope = "cacheScope",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// Parameters of `skills/get`.
    pub struct GetSkillParams {
        required {
            /// The URI of the skill's `SKILL.md`, as its entry names it.
            uri: String = "uri",
        }
        optional {
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// The result of `skills/get`: the one entry, shaped as in `skills/list`, and no cursor.
    pub struct GetSkillResult {
        required {
            /// The skill.
            skill: SkillEntry = "skill",
        }
        optional {
            /// How long the result may be cached (2026-07-28 and later).
            ttl_ms: u64 = "ttlMs",
            /// Who may reuse it (2026-07-28 and later).
            cache_scope: CacheScope = "cacheScope",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// Parameters of `resources/directory/read`: a folder's URI and, after the first page, the
    /// cursor of the next.
    pub struct ReadDirectoryParams {
        required {
            /// The folder's URI.
            uri: String = "uri",
        }
        optional {
            /// An opaque cursor from the previous page's `nextCursor`.
            cursor: String = "cursor",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}

wire_struct! {
    /// The result of `resources/directory/read`: one page of the folder's direct children; a
    /// child folder has the MIME type [`DIRECTORY_MIME_TYPE`].
    pub struct ReadDirectoryResult {
        required {
            /// This page of children.
            resources: Vec<Resource> = "resources",
        }
        optional {
            /// The cursor of the next page.
            next_cursor: String = "nextCursor",
            /// Protocol metadata.
            meta: JsonObject = "_meta",
        }
    }
}
