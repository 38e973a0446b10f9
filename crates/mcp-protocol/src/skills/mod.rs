//! The server half of the skills extension (SEP-2640): a [`SkillCatalog`] holds a server's
//! skills in memory and answers `skills/list`, `skills/get`, `resources/directory/read` and
//! the `resources/read` of their files.
//!
//! Everything a client verifies is computed here once, from the files themselves, when a skill
//! is added: each file's `sha256:` digest and size, and the entry's `frontmatter` parsed from
//! the `SKILL.md` (so the two cannot differ). A skill that breaks a rule a client relies on (no
//! `SKILL.md`, no `name` or `description`, a name that is not the folder's, a path that leaves
//! the skill, more than 512 files or 16 MiB) is refused when it is added, not served wrong.
//!
//! The catalog does no I/O: a server reads the files (`mcp-session`'s `load_skills` reads a
//! folder) and hands their bytes over.

pub mod frontmatter;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;
use std::fmt;

use serde::Serialize;
use serde_json::{Value, json};

use crate::jsonrpc::{ErrorObject, RawJson, code};
use crate::schema::method::{GetSkill, ListSkills, ReadDirectory, ReadResource};
use crate::schema::{
    ClientRequest, DIRECTORY_MIME_TYPE, GetSkillParams, GetSkillResult, ListSkillsResult,
    MAX_FILES_PER_SKILL, MAX_SKILL_BYTES, PaginatedParams, ReadDirectoryParams,
    ReadDirectoryResult, ReadResourceResult, RequestMethod, Resource, ResourceContents,
    ResourcesCapability, SKILL_MD, SKILL_MD_MIME_TYPE, SKILL_SCHEME, ServerCapabilities,
    SkillEntry, SkillFile, SkillResources, SkillsCapability, decode_params,
};
use crate::wire::JsonObject;

/// Why a skill could not be added to a [`SkillCatalog`]. Each says which skill (by its path)
/// and what is wrong, so a server author can fix the folder.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// The skill path or a file path is not one a `skill://` URI can carry safely: empty
    /// segments, `.` or `..`, or characters outside RFC 3986's unreserved and sub-delims.
    #[error("skill `{skill}`: bad path `{path}`: {reason}")]
    BadPath {
        /// The skill's path.
        skill: String,
        /// The offending path.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The skill has no `SKILL.md` at its root.
    #[error("skill `{skill}`: no SKILL.md at its root")]
    NoSkillMd {
        /// The skill's path.
        skill: String,
    },
    /// The `SKILL.md` has no frontmatter, or frontmatter this reader refuses.
    #[error("skill `{skill}`: SKILL.md frontmatter: {detail}")]
    Frontmatter {
        /// The skill's path.
        skill: String,
        /// What is wrong, with the line.
        detail: String,
    },
    /// The frontmatter's `name` is not the folder's name, or breaks the Agent Skills naming
    /// rules (1-64 characters, lowercase letters, digits and single inner hyphens).
    #[error("skill `{skill}`: {detail}")]
    BadName {
        /// The skill's path.
        skill: String,
        /// What is wrong.
        detail: String,
    },
    /// The skill has more files or bytes than a server should serve.
    #[error("skill `{skill}`: {detail}")]
    TooLarge {
        /// The skill's path.
        skill: String,
        /// Which limit, and by how much.
        detail: String,
    },
    /// A skill with the same path, or a file with the same path within it, is there already.
    #[error("skill `{skill}`: `{path}` is there twice")]
    Duplicate {
        /// The skill's path.
        skill: String,
        /// The path given twice.
        path: String,
    },
}

/// One file of a skill, as served.
#[derive(Clone, PartialEq, Eq)]
struct File {
    /// The file's full URI.
    uri: String,
    /// Its path within the skill, `/`-separated.
    path: String,
    bytes: Vec<u8>,
    mime_type: &'static str,
}

impl fmt::Debug for File {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("File")
            .field("uri", &self.uri)
            .field("size", &self.bytes.len())
            .finish()
    }
}

/// One skill, as served: its entry (computed once) and its files.
#[derive(Debug, Clone)]
struct Skill {
    entry: SkillEntry,
    files: Vec<File>,
}

/// A server's skills, held in memory, ready to answer the skills extension's requests.
///
/// ```
/// use mcp_protocol::SkillCatalog;
///
/// let mut catalog = SkillCatalog::new();
/// catalog.add("pdf-processing", [
///     ("SKILL.md", &b"---\nname: pdf-processing\ndescription: Fill PDF forms.\n---\nSteps.\n"[..]),
///     ("references/FORMS.md", &b"Form fields.\n"[..]),
/// ]).unwrap();
/// let page = catalog.list(None).unwrap();
/// assert_eq!(page.skills[0].uri, "skill://pdf-processing/SKILL.md");
/// ```
#[derive(Debug, Clone)]
pub struct SkillCatalog {
    skills: Vec<Skill>,
    page_size: usize,
}

impl Default for SkillCatalog {
    fn default() -> Self {
        Self::new()
    }
}

/// How many entries a page holds unless the server says otherwise.
const DEFAULT_PAGE_SIZE: usize = 50;

impl SkillCatalog {
    /// An empty catalog with pages of 50.
    pub fn new() -> Self {
        Self {
            skills: Vec::new(),
            page_size: DEFAULT_PAGE_SIZE,
        }
    }

    /// The same catalog with `size` entries to a page of `skills/list` and of
    /// `resources/directory/read` (at least one).
    #[must_use]
    pub fn with_page_size(mut self, size: usize) -> Self {
        self.page_size = size.max(1);
        self
    }

    /// Adds the skill at `skill_path` (its URI is `skill://{skill_path}/SKILL.md`; the last
    /// segment is the skill's name, the first the URI's authority) with its files, each a path
    /// within the skill and its raw bytes. `SKILL.md` must be among them.
    pub fn add<P, B>(
        &mut self,
        skill_path: &str,
        files: impl IntoIterator<Item = (P, B)>,
    ) -> Result<&mut Self, SkillError>
    where
        P: AsRef<str>,
        B: Into<Vec<u8>>,
    {
        let skill = skill_path.to_owned();
        check_path(&skill, &skill, true)?;
        let folder = format!("{SKILL_SCHEME}{skill_path}");
        if self
            .skills
            .iter()
            .any(|s| s.entry.folder() == Some(&folder))
        {
            return Err(SkillError::Duplicate {
                path: skill.clone(),
                skill,
            });
        }
        let mut served = Vec::new();
        let mut seen = BTreeSet::new();
        let mut total: u64 = 0;
        for (path, bytes) in files {
            let path = path.as_ref().to_owned();
            check_path(&skill, &path, false)?;
            if !seen.insert(path.clone()) {
                return Err(SkillError::Duplicate { skill, path });
            }
            let bytes = bytes.into();
            total = total.saturating_add(bytes.len() as u64);
            served.push(File {
                uri: format!("{folder}/{path}"),
                mime_type: mime_type(&path, &bytes),
                path,
                bytes,
            });
        }
        if served.len() > MAX_FILES_PER_SKILL {
            return Err(SkillError::TooLarge {
                skill,
                detail: format!(
                    "{} files, more than the {MAX_FILES_PER_SKILL} a skill should have",
                    served.len()
                ),
            });
        }
        if total > MAX_SKILL_BYTES {
            return Err(SkillError::TooLarge {
                skill,
                detail: format!(
                    "{total} bytes, more than the {MAX_SKILL_BYTES} a skill should have"
                ),
            });
        }
        // SKILL.md first, the rest in path order: a stable listing.
        served.sort_by(|a, b| (a.path != SKILL_MD, &a.path).cmp(&(b.path != SKILL_MD, &b.path)));
        let Some(skill_md) = served.first().filter(|f| f.path == SKILL_MD) else {
            return Err(SkillError::NoSkillMd { skill });
        };
        let frontmatter = frontmatter_of(&skill, &skill_md.bytes)?;
        check_name(&skill, &frontmatter)?;
        let resources = served
            .iter()
            .map(|f| SkillFile::of(f.uri.clone(), &f.bytes))
            .collect();
        let entry = SkillEntry::new(
            skill_md.uri.clone(),
            frontmatter,
            SkillResources::Files(resources),
        );
        self.skills.push(Skill {
            entry,
            files: served,
        });
        Ok(self)
    }

    /// Whether the catalog has no skill.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// Every skill's entry, in the order added.
    pub fn entries(&self) -> impl Iterator<Item = &SkillEntry> {
        self.skills.iter().map(|s| &s.entry)
    }

    /// Declares the extension in `capabilities` (with `directoryRead`), and the `resources`
    /// capability it requires if it is not there: skill files are read with `resources/read`.
    pub fn declare(&self, capabilities: &mut ServerCapabilities) -> Result<(), serde_json::Error> {
        let mut settings = SkillsCapability::new();
        settings.directory_read = Some(true);
        settings.declare(capabilities)?;
        capabilities
            .resources
            .get_or_insert_with(ResourcesCapability::new);
        Ok(())
    }

    /// One page of `skills/list`: from `cursor` (a previous page's `nextCursor`), at most the
    /// page size of whole entries. A cursor this catalog did not issue is -32602.
    pub fn list(&self, cursor: Option<&str>) -> Result<ListSkillsResult, ErrorObject> {
        let (page, next) = paginate(&self.skills, cursor, self.page_size)?;
        let mut result = ListSkillsResult::new(page.iter().map(|s| s.entry.clone()).collect());
        result.next_cursor = next;
        Ok(result)
    }

    /// `skills/get`: the entry of the skill whose `SKILL.md` is at `uri`; -32602 for any URI
    /// that is not one.
    pub fn get(&self, uri: &str) -> Result<GetSkillResult, ErrorObject> {
        self.skills
            .iter()
            .find(|s| s.entry.uri == uri)
            .map(|s| GetSkillResult::new(s.entry.clone()))
            .ok_or_else(|| invalid(format!("no skill is served at {uri}"), uri))
    }

    /// `resources/read` of a skill file: `None` when `uri` is not one (the server's own
    /// resources answer it). UTF-8 files come back as text, others as a base64 blob; either
    /// way the bytes are the ones the digest covers.
    pub fn read(&self, uri: &str) -> Option<ReadResourceResult> {
        let file = self.file(uri)?;
        let mut contents = ResourceContents::new(file.uri.clone());
        contents.mime_type = Some(file.mime_type.to_owned());
        match std::str::from_utf8(&file.bytes) {
            Ok(text) => contents.text = Some(text.to_owned()),
            Err(_) => contents.blob = Some(base64(&file.bytes)),
        }
        Some(ReadResourceResult::new(vec![contents]))
    }

    /// What a server adds to its `resources/list`: each skill's `SKILL.md`, named and described
    /// by its frontmatter.
    pub fn resources(&self) -> Vec<Resource> {
        self.skills
            .iter()
            .filter_map(|s| {
                let file = s.files.first()?;
                let mut resource = Resource::new(
                    file.uri.clone(),
                    s.entry.name().unwrap_or_default().to_owned(),
                );
                resource.description = s.entry.description().map(str::to_owned);
                resource.mime_type = Some(SKILL_MD_MIME_TYPE.to_owned());
                resource.size = Some(file.bytes.len() as u64);
                Some(resource)
            })
            .collect()
    }

    /// One page of `resources/directory/read`: the direct children of the folder at `uri` (a
    /// skill's folder, a folder within it, or a folder of skill folders), child folders with
    /// the MIME type `inode/directory`. A URI that is not a folder, a file's included, is
    /// -32602.
    pub fn read_directory(
        &self,
        uri: &str,
        cursor: Option<&str>,
    ) -> Result<ReadDirectoryResult, ErrorObject> {
        let folder = uri.trim_end_matches('/');
        let not_folder = || invalid(format!("{uri} is not a folder served here"), uri);
        if folder.len() <= SKILL_SCHEME.len() || !folder.starts_with(SKILL_SCHEME) {
            return Err(not_folder());
        }
        let prefix = format!("{folder}/");
        // Each direct child once, in URI order: a file, or the folder a deeper file is in.
        let mut children: Vec<(String, Option<&File>)> = Vec::new();
        let mut folders = BTreeSet::new();
        for file in self.skills.iter().flat_map(|s| &s.files) {
            let Some(rest) = file.uri.strip_prefix(&prefix) else {
                continue;
            };
            match rest.split_once('/') {
                None => children.push((file.uri.clone(), Some(file))),
                Some((child, _)) => {
                    if folders.insert(child.to_owned()) {
                        children.push((format!("{prefix}{child}"), None));
                    }
                }
            }
        }
        if children.is_empty() {
            return Err(not_folder());
        }
        children.sort_by(|a, b| a.0.cmp(&b.0));
        let (page, next) = paginate(&children, cursor, self.page_size)?;
        let resources = page
            .iter()
            .map(|(child, file)| {
                let name = child.rsplit('/').next().unwrap_or(child).to_owned();
                let mut resource = Resource::new(child.clone(), name);
                match file {
                    Some(file) => {
                        resource.mime_type = Some(file.mime_type.to_owned());
                        resource.size = Some(file.bytes.len() as u64);
                    }
                    None => resource.mime_type = Some(DIRECTORY_MIME_TYPE.to_owned()),
                }
                resource
            })
            .collect();
        let mut result = ReadDirectoryResult::new(resources);
        result.next_cursor = next;
        Ok(result)
    }

    /// Answers `request` if it is the catalog's: `skills/list`, `skills/get`,
    /// `resources/directory/read`, or a `resources/read` of a skill file. `None` for anything
    /// else, which the server answers itself. Malformed parameters are -32602.
    pub fn handle(&self, request: &ClientRequest) -> Option<Result<RawJson, ErrorObject>> {
        let answer = match request {
            ClientRequest::ReadResource(params) => {
                return self.read(&params.uri).map(|r| encode(&r));
            }
            ClientRequest::ListSkills(params) => {
                self.list(params.cursor.as_deref()).and_then(|r| encode(&r))
            }
            ClientRequest::GetSkill(params) => self.get(&params.uri).and_then(|r| encode(&r)),
            ClientRequest::ReadDirectory(params) => self
                .read_directory(&params.uri, params.cursor.as_deref())
                .and_then(|r| encode(&r)),
            ClientRequest::Other { method, params } => {
                return self.handle_method(method, params.as_ref());
            }
            _ => return None,
        };
        Some(answer)
    }

    /// [`handle`](Self::handle) by method name and raw parameters, for a server that routes
    /// requests itself (a request the session left as `ClientRequest::Other` comes here too).
    pub fn handle_method(
        &self,
        method: &str,
        params: Option<&RawJson>,
    ) -> Option<Result<RawJson, ErrorObject>> {
        let answer = match method {
            ListSkills::METHOD => decode::<PaginatedParams>(params)
                .and_then(|p| self.list(p.cursor.as_deref()))
                .and_then(|r| encode(&r)),
            GetSkill::METHOD => decode::<GetSkillParams>(params)
                .and_then(|p| self.get(&p.uri))
                .and_then(|r| encode(&r)),
            ReadDirectory::METHOD => decode::<ReadDirectoryParams>(params)
                .and_then(|p| self.read_directory(&p.uri, p.cursor.as_deref()))
                .and_then(|r| encode(&r)),
            ReadResource::METHOD => {
                let params = decode::<crate::schema::ResourceUriParams>(params).ok()?;
                return self.read(&params.uri).map(|r| encode(&r));
            }
            _ => return None,
        };
        Some(answer)
    }

    fn file(&self, uri: &str) -> Option<&File> {
        self.skills
            .iter()
            .flat_map(|s| &s.files)
            .find(|f| f.uri == uri)
    }
}

/// The page of `items` that `cursor` names, and the cursor of the next page. Cursors are
/// offsets, refused unless they point inside the list.
fn paginate<'a, T>(
    items: &'a [T],
    cursor: Option<&str>,
    size: usize,
) -> Result<(&'a [T], Option<String>), ErrorObject> {
    let start = match cursor {
        None => 0,
        Some(c) => c
            .parse::<usize>()
            .ok()
            .filter(|&n| n > 0 && n < items.len())
            .ok_or_else(|| {
                let mut e = ErrorObject::new(code::INVALID_PARAMS, format!("invalid cursor {c:?}"));
                e.data = Some(json!({"cursor": c}));
                e
            })?,
    };
    let end = start.saturating_add(size).min(items.len());
    let next = (end < items.len()).then(|| end.to_string());
    Ok((&items[start..end], next))
}

/// -32602 naming the URI.
fn invalid(message: String, uri: &str) -> ErrorObject {
    let mut error = ErrorObject::new(code::INVALID_PARAMS, message);
    error.data = Some(json!({"uri": uri}));
    error
}

fn decode<T: serde::de::DeserializeOwned>(params: Option<&RawJson>) -> Result<T, ErrorObject> {
    decode_params(params)
        .map_err(|e| ErrorObject::new(code::INVALID_PARAMS, format!("invalid params: {e}")))
}

fn encode<T: Serialize>(value: &T) -> Result<RawJson, ErrorObject> {
    RawJson::encode(value).map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, e.to_string()))
}

/// Refuses a path a URI cannot carry as is, or that could name something outside the skill.
/// A skill path is one or more segments, the first of which becomes the URI's authority.
fn check_path(skill: &str, path: &str, is_skill_path: bool) -> Result<(), SkillError> {
    let bad = |reason| SkillError::BadPath {
        skill: skill.to_owned(),
        path: path.to_owned(),
        reason,
    };
    if path.is_empty() {
        return Err(bad("it is empty"));
    }
    for segment in path.split('/') {
        if segment.is_empty() {
            return Err(bad("it has an empty segment"));
        }
        if segment == "." || segment == ".." {
            return Err(bad("it has a `.` or `..` segment"));
        }
        let allowed = |c: char| c.is_ascii_alphanumeric() || "-._~!$&'()*+,;=@".contains(c);
        if !segment.chars().all(allowed) {
            return Err(bad(
                "it has a character outside RFC 3986's unreserved and sub-delims",
            ));
        }
    }
    if is_skill_path && path.split('/').next().is_some_and(|a| a.contains('@')) {
        return Err(bad("its first segment, the URI's authority, has an `@`"));
    }
    Ok(())
}

/// The frontmatter of `SKILL.md`, as JSON, with a non-empty string `name` and `description`.
fn frontmatter_of(skill: &str, bytes: &[u8]) -> Result<JsonObject, SkillError> {
    let error = |detail: String| SkillError::Frontmatter {
        skill: skill.to_owned(),
        detail,
    };
    let text = std::str::from_utf8(bytes).map_err(|_| error("SKILL.md is not UTF-8".to_owned()))?;
    let (yaml, _body) = frontmatter::split(text).ok_or_else(|| {
        error("SKILL.md does not begin with a `---` frontmatter block".to_owned())
    })?;
    let map = frontmatter::parse(yaml)
        .map_err(|e| error(format!("line {}: {}", e.line + 1, e.detail)))?;
    for key in ["name", "description"] {
        if map
            .get(key)
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return Err(error(format!("`{key}` must be a non-empty string")));
        }
    }
    Ok(map)
}

/// The name must follow the Agent Skills rules and be the skill folder's last segment.
fn check_name(skill: &str, frontmatter: &JsonObject) -> Result<(), SkillError> {
    let name = frontmatter
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let bad = |detail: String| SkillError::BadName {
        skill: skill.to_owned(),
        detail,
    };
    let valid = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--");
    if !valid {
        return Err(bad(format!(
            "name `{name}` breaks the naming rules (1-64 lowercase letters, digits and single inner hyphens)"
        )));
    }
    let folder = skill.rsplit('/').next().unwrap_or(skill);
    if folder != name {
        return Err(bad(format!(
            "name `{name}` is not the skill folder's name `{folder}`"
        )));
    }
    Ok(())
}

/// A file's MIME type by its extension; bytes that are not UTF-8 are
/// `application/octet-stream` unless the extension names a binary type.
fn mime_type(path: &str, bytes: &[u8]) -> &'static str {
    let extension = path
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    let known = match extension.as_str() {
        "md" | "markdown" => Some(SKILL_MD_MIME_TYPE),
        "txt" => Some("text/plain"),
        "json" => Some("application/json"),
        "yaml" | "yml" => Some("application/yaml"),
        "py" => Some("text/x-python"),
        "sh" => Some("text/x-shellscript"),
        "js" | "mjs" => Some("text/javascript"),
        "ts" => Some("text/x-typescript"),
        "html" | "htm" => Some("text/html"),
        "css" => Some("text/css"),
        "csv" => Some("text/csv"),
        "xml" => Some("application/xml"),
        "png" => Some("image/png"),
        "jpg" | "jpeg" => Some("image/jpeg"),
        "gif" => Some("image/gif"),
        "svg" => Some("image/svg+xml"),
        "pdf" => Some("application/pdf"),
        _ => None,
    };
    known.unwrap_or(if std::str::from_utf8(bytes).is_ok() {
        "text/plain"
    } else {
        "application/octet-stream"
    })
}

/// Standard base64 with padding, for a file's `blob`.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}
