//! Skills (SEP-2640, extension `io.modelcontextprotocol/skills`): a server offers Agent
//! Skills, each a `SKILL.md` with its files under `skill://` URIs, and lists them with the
//! digest and size of every file and the frontmatter of the `SKILL.md`.
//!
//! A skill's text becomes instructions to a model, so a host must not take it on trust. The
//! host lists skills without reading any file (no prefetch); it reads a skill's `SKILL.md` only
//! when the skill is loaded, and its other files one at a time when asked. Every file read is
//! checked before use: its declared size against [`MAX_SKILL_FILE_BYTES`] before it is asked
//! for, then the bytes served against the listed size and `sha256:` digest, and a `SKILL.md`'s
//! YAML frontmatter field by field against the listed frontmatter. A mismatch refuses the skill
//! (or the file) with an error naming the server, the skill and what differed, and nothing more
//! is read. A URI outside the skill's folder (`skill://a/../b`) or missing from its listing is
//! refused without being asked for.

mod verify;

use base64::Engine as _;
use mcp_protocol::frontmatter;
use mcp_protocol::schema::{
    ReadResourceResult, SKILLS_EXTENSION, SkillEntry, SkillFile, SkillResources, SkillsCapability,
};

use crate::error::CallError;
use crate::host::Host;

pub use verify::Refusal;

/// The largest file this host reads for a skill, `SKILL.md` or another (4 MiB). A file listed
/// as larger is refused before it is asked for. Below the HTTP transport's 8 MiB message limit
/// even as base64, so that a refusal says why instead of a transport error.
pub const MAX_SKILL_FILE_BYTES: u64 = 4 << 20;

/// Why a skill or one of its files was not given to the consumer.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// Listing the skills or reading a file failed (the server is not ready, answered with an
    /// error, or the connection failed).
    #[error(transparent)]
    Call(#[from] CallError),
    /// The server lists no skill by this name or URI.
    #[error("server `{server}` lists no skill `{skill}`")]
    Unknown {
        /// The server id.
        server: String,
        /// The name or URI asked for.
        skill: String,
    },
    /// Several skills of the server have this name; the consumer must pick one by URI.
    #[error("server `{server}` lists {count} skills named `{skill}`: load one by its URI")]
    Ambiguous {
        /// The server id.
        server: String,
        /// The name asked for.
        skill: String,
        /// How many have it.
        count: usize,
    },
    /// The host refused the skill or one of its files: it did not verify, or could not be
    /// verified. Nothing further of the skill was read.
    #[error("server `{server}`: skill `{skill}`: `{uri}` refused: {refusal}")]
    Refused {
        /// The server id.
        server: String,
        /// The skill's name (its frontmatter's, else its URI).
        skill: String,
        /// The file refused.
        uri: String,
        /// What did not match, or why it could not be checked.
        refusal: Refusal,
    },
}

impl SkillError {
    /// Whether the host refused content that did not verify (as against a failure to reach
    /// the server or a name that matches nothing).
    pub fn is_refused(&self) -> bool {
        matches!(self, Self::Refused { .. })
    }
}

/// A loaded skill: its listing and its verified `SKILL.md`. Its other files are read with
/// [`Host::read_skill_file`], one at a time, when needed.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LoadedSkill {
    /// The server id.
    pub server: String,
    /// The skill as the server listed it.
    pub entry: SkillEntry,
    /// The text of its `SKILL.md`, frontmatter included, verified against the entry.
    pub instructions: String,
    /// Whether the `SKILL.md` was checked against a listed digest and size: false for a skill
    /// whose files are `"dynamic"` (only its frontmatter and the size limit were checked).
    pub verified: bool,
}

impl LoadedSkill {
    /// The skill's name, from its frontmatter.
    pub fn name(&self) -> &str {
        self.entry.name().unwrap_or(&self.entry.uri)
    }

    /// The `SKILL.md` after its frontmatter: the instructions proper.
    pub fn body(&self) -> &str {
        frontmatter::split(&self.instructions).map_or(&self.instructions, |(_, body)| body)
    }
}

/// One file of a loaded skill, read and verified.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SkillFileContent {
    /// Its URI.
    pub uri: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// Whether it was checked against a listed digest and size (false for a `"dynamic"`
    /// skill's file).
    pub verified: bool,
}

impl SkillFileContent {
    /// The bytes as text, if they are UTF-8.
    pub fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.bytes).ok()
    }
}

impl Host {
    /// The skills a ready server lists, every page, without reading any of their files.
    /// A server that does not declare the extension is not asked.
    pub async fn list_skills(&self, server: &str) -> Result<Vec<SkillEntry>, CallError> {
        let client = self.inner.ready_client(server)?;
        if SkillsCapability::of(&client.server_info().capabilities).is_none() {
            return Err(CallError::Failed {
                server: server.to_owned(),
                what: "skills/list".to_owned(),
                message: format!("the server does not offer skills (extension {SKILLS_EXTENSION})"),
            });
        }
        client
            .list_all_skills()
            .await
            .map_err(|e| self.inner.session_error(server, "skills/list", e))
    }

    /// Loads one skill of a server by its name (or its `SKILL.md` URI): lists the skills,
    /// reads that skill's `SKILL.md` and verifies it against the listing.
    pub async fn load_skill(&self, server: &str, skill: &str) -> Result<LoadedSkill, SkillError> {
        let skills = self.list_skills(server).await?;
        let mut found: Vec<SkillEntry> = skills
            .into_iter()
            .filter(|e| e.uri == skill || e.name() == Some(skill))
            .collect();
        match found.len() {
            0 => Err(SkillError::Unknown {
                server: server.to_owned(),
                skill: skill.to_owned(),
            }),
            1 => self.load_listed_skill(server, found.remove(0)).await,
            count => Err(SkillError::Ambiguous {
                server: server.to_owned(),
                skill: skill.to_owned(),
                count,
            }),
        }
    }

    /// Loads a skill from an entry [`list_skills`](Self::list_skills) returned: checks the
    /// entry, reads its `SKILL.md` (the one file read) and verifies its size, digest and
    /// frontmatter against the entry.
    pub async fn load_listed_skill(
        &self,
        server: &str,
        entry: SkillEntry,
    ) -> Result<LoadedSkill, SkillError> {
        let refused = |uri: &str, refusal| refusal_of(server, &entry, uri, refusal);
        verify::check_entry(&entry).map_err(|r| refused(&entry.uri, r))?;
        let listed = listed_file(&entry, &entry.uri).map_err(|r| refused(&entry.uri, r))?;
        let bytes = self
            .fetch(server, &entry, &entry.uri, listed.as_ref())
            .await?;
        let instructions =
            String::from_utf8(bytes).map_err(|_| refused(&entry.uri, Refusal::NotText))?;
        verify::check_frontmatter(&instructions, &entry.frontmatter)
            .map_err(|r| refused(&entry.uri, r))?;
        Ok(LoadedSkill {
            server: server.to_owned(),
            verified: listed.is_some(),
            entry,
            instructions,
        })
    }

    /// Reads one more file of a loaded skill, by its path in the skill's folder
    /// (`references/FORMS.md`) or its full URI, and verifies it against the listing. A path that
    /// leaves the folder, or a file the listing does not name, is refused without a read.
    pub async fn read_skill_file(
        &self,
        skill: &LoadedSkill,
        path: &str,
    ) -> Result<SkillFileContent, SkillError> {
        let entry = &skill.entry;
        let uri =
            verify::resolve(entry, path).map_err(|r| refusal_of(&skill.server, entry, path, r))?;
        let listed =
            listed_file(entry, &uri).map_err(|r| refusal_of(&skill.server, entry, &uri, r))?;
        let bytes = self
            .fetch(&skill.server, entry, &uri, listed.as_ref())
            .await?;
        Ok(SkillFileContent {
            uri,
            bytes,
            verified: listed.is_some(),
        })
    }

    /// Reads one file of a skill and checks it against its listed size and digest (`listed`,
    /// `None` for a dynamic skill, which has neither: then only the size limit holds).
    async fn fetch(
        &self,
        server: &str,
        entry: &SkillEntry,
        uri: &str,
        listed: Option<&SkillFile>,
    ) -> Result<Vec<u8>, SkillError> {
        let refused = |refusal| refusal_of(server, entry, uri, refusal);
        if let Some(file) = listed
            && file.size > MAX_SKILL_FILE_BYTES
        {
            return Err(refused(Refusal::TooLarge {
                size: file.size,
                limit: MAX_SKILL_FILE_BYTES,
            }));
        }
        let client = self.inner.ready_client(server)?;
        let result = client
            .read_resource(uri)
            .await
            .map_err(|e| self.inner.session_error(server, "resources/read", e))?;
        let bytes = contents(&result, uri).map_err(refused)?;
        if bytes.len() as u64 > MAX_SKILL_FILE_BYTES {
            return Err(refused(Refusal::TooLarge {
                size: bytes.len() as u64,
                limit: MAX_SKILL_FILE_BYTES,
            }));
        }
        if let Some(file) = listed {
            verify::check_file(file, &bytes).map_err(refused)?;
        }
        Ok(bytes)
    }
}

/// The listed entry of `uri` in a skill: `Some` for a listed file, `None` for a dynamic skill
/// (which lists none), refused when a listing exists and does not name it.
fn listed_file(entry: &SkillEntry, uri: &str) -> Result<Option<SkillFile>, Refusal> {
    match &entry.resources {
        SkillResources::Dynamic => Ok(None),
        _ => entry.file(uri).cloned().map(Some).ok_or(Refusal::NotListed),
    }
}

/// The bytes of the one content a read of `uri` returned, text or base64, bounded before
/// decoding.
fn contents(result: &ReadResourceResult, uri: &str) -> Result<Vec<u8>, Refusal> {
    let content = match result.contents.as_slice() {
        [only] => only,
        many => many
            .iter()
            .find(|c| c.uri == uri)
            .ok_or(Refusal::NoContent)?,
    };
    match (&content.text, &content.blob) {
        (Some(text), _) => Ok(text.as_bytes().to_vec()),
        (None, Some(blob)) => {
            let decoded = (blob.len() as u64 / 4) * 3;
            if decoded > MAX_SKILL_FILE_BYTES {
                return Err(Refusal::TooLarge {
                    size: decoded,
                    limit: MAX_SKILL_FILE_BYTES,
                });
            }
            base64::engine::general_purpose::STANDARD
                .decode(blob)
                .map_err(|_| Refusal::NoContent)
        }
        (None, None) => Err(Refusal::NoContent),
    }
}

fn refusal_of(server: &str, entry: &SkillEntry, uri: &str, refusal: Refusal) -> SkillError {
    SkillError::Refused {
        server: server.to_owned(),
        skill: entry.name().unwrap_or(&entry.uri).to_owned(),
        uri: uri.to_owned(),
        refusal,
    }
}

#[cfg(test)]
mod tests;
