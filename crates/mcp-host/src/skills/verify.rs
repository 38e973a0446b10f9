//! The checks a skill and its files pass before the host uses them, as pure functions over
//! the entry and the bytes served: no I/O, so that each refusal is tested on its own.

use mcp_protocol::schema::{
    MAX_FILES_PER_SKILL, MAX_SKILL_BYTES, SkillEntry, SkillFile, SkillResources, is_digest,
    skill_digest, skill_folder, skill_name_of,
};
use mcp_protocol::{JsonObject, frontmatter};

/// What did not match the listing, or why a file could not be checked. Texts quote only
/// digests, sizes, field names and URIs, never a file's content.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// The bytes served do not have the listed digest.
    #[error("digest mismatch: listed {listed}, served {served}")]
    Digest {
        /// The listed digest.
        listed: String,
        /// The digest of the bytes served.
        served: String,
    },
    /// The bytes served are not as many as listed.
    #[error("size mismatch: listed {listed} bytes, served {served}")]
    Size {
        /// The listed size.
        listed: u64,
        /// The size served.
        served: u64,
    },
    /// The `SKILL.md`'s frontmatter differs from the listed frontmatter (or cannot be read).
    #[error("frontmatter mismatch: {0}")]
    Frontmatter(String),
    /// The file is larger than the host reads.
    #[error("{size} bytes is over this host's limit of {limit}")]
    TooLarge {
        /// The listed or served size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The URI is not inside the skill's folder (`..`, another skill, another scheme).
    #[error("not inside the skill's folder")]
    OutsideSkill,
    /// The skill's listing does not name the file, so it has no digest to check against.
    #[error("not in the skill's listing")]
    NotListed,
    /// The entry itself breaks the extension's rules.
    #[error("malformed listing: {0}")]
    Malformed(String),
    /// The read returned no content for the file.
    #[error("the read returned no content")]
    NoContent,
    /// A `SKILL.md` that is not UTF-8 text.
    #[error("not UTF-8 text")]
    NotText,
}

/// Checks an entry before anything of it is read: a `SKILL.md` URI whose folder's last segment
/// is the frontmatter's name, no `.`/`..` segments, and a listing within the extension's
/// limits whose digests have the required form and whose files lie in the skill's folder.
pub(crate) fn check_entry(entry: &SkillEntry) -> Result<(), Refusal> {
    let folder = skill_folder(&entry.uri)
        .ok_or_else(|| Refusal::Malformed("the entry's uri does not end in /SKILL.md".into()))?;
    if !clean_uri(folder) {
        return Err(Refusal::OutsideSkill);
    }
    let name = entry
        .name()
        .ok_or_else(|| Refusal::Malformed("the frontmatter has no name".into()))?;
    if skill_name_of(&entry.uri) != Some(name) {
        return Err(Refusal::Malformed(format!(
            "the uri's last folder is not the skill's name `{name}`"
        )));
    }
    let SkillResources::Files(files) = &entry.resources else {
        return Ok(());
    };
    if files.len() > MAX_FILES_PER_SKILL {
        return Err(Refusal::Malformed(format!(
            "{} files, over the extension's {MAX_FILES_PER_SKILL}",
            files.len()
        )));
    }
    let total = files.iter().fold(0u64, |sum, f| sum.saturating_add(f.size));
    if total > MAX_SKILL_BYTES {
        return Err(Refusal::Malformed(format!(
            "{total} bytes in all, over the extension's {MAX_SKILL_BYTES}"
        )));
    }
    for file in files {
        if !is_digest(&file.digest) {
            return Err(Refusal::Malformed(format!(
                "`{}` has no sha256 digest",
                file.uri
            )));
        }
        if file.uri != entry.uri && inside(folder, &file.uri).is_none() {
            return Err(Refusal::Malformed(format!(
                "`{}` is not inside the skill's folder",
                file.uri
            )));
        }
    }
    Ok(())
}

/// Checks bytes served against their listing: the size first (a cheap refusal that needs no
/// hashing), then the digest.
pub(crate) fn check_file(file: &SkillFile, bytes: &[u8]) -> Result<(), Refusal> {
    let served = bytes.len() as u64;
    if served != file.size {
        return Err(Refusal::Size {
            listed: file.size,
            served,
        });
    }
    let digest = skill_digest(bytes);
    if digest != file.digest {
        return Err(Refusal::Digest {
            listed: file.digest.clone(),
            served: digest,
        });
    }
    Ok(())
}

/// Parses a `SKILL.md`'s frontmatter with the reader a server of this workspace lists it by
/// (mcp-protocol's) and compares it with the listed one, field by field.
pub(crate) fn check_frontmatter(text: &str, listed: &JsonObject) -> Result<(), Refusal> {
    let (head, _) = frontmatter::split(text)
        .ok_or_else(|| Refusal::Frontmatter("the file has no frontmatter".into()))?;
    let parsed = frontmatter::parse(head).map_err(|e| {
        Refusal::Frontmatter(format!("the file's frontmatter is not understood: {e}"))
    })?;
    frontmatter::compare(&parsed, listed).map_err(|m| Refusal::Frontmatter(m.to_string()))
}

/// The URI of a file of a skill given by its path in the folder or its full URI, if it lies
/// in the skill's folder.
pub(crate) fn resolve(entry: &SkillEntry, path: &str) -> Result<String, Refusal> {
    let folder = skill_folder(&entry.uri).ok_or(Refusal::OutsideSkill)?;
    let uri = if path.contains("://") {
        path.to_owned()
    } else {
        format!("{folder}/{path}")
    };
    if uri == entry.uri {
        return Ok(uri);
    }
    inside(folder, &uri).ok_or(Refusal::OutsideSkill)?;
    Ok(uri)
}

/// The path of `uri` below `folder`, if `uri` lies there by plain segments: no `.` or `..`,
/// no empty segment, no escapes that a server might decode into either, no query or fragment.
fn inside<'a>(folder: &str, uri: &'a str) -> Option<&'a str> {
    let rest = uri.strip_prefix(folder)?.strip_prefix('/')?;
    (!rest.is_empty() && clean_path(rest)).then_some(rest)
}

fn clean_uri(uri: &str) -> bool {
    uri.split_once("://")
        .is_some_and(|(scheme, rest)| !scheme.is_empty() && clean_path(rest))
}

fn clean_path(path: &str) -> bool {
    !path.contains(['\\', '?', '#'])
        && !path.to_ascii_lowercase().contains("%2e")
        && !path.to_ascii_lowercase().contains("%2f")
        && path
            .split('/')
            .all(|s| !s.is_empty() && s != "." && s != "..")
}
