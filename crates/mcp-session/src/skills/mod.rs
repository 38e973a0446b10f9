//! Reading a folder of skills into a [`SkillCatalog`], for a server that serves skills from
//! disk (SEP-2640).
//!
//! Every folder under the root that holds a `SKILL.md` is a skill; its path under the root is
//! the skill's path (`skill://{path}/SKILL.md`), and every file beneath it is one of its files.
//! Names starting with `.` (`.git`, `.DS_Store`) are left out, and symbolic links are never
//! followed: a link inside a skill could otherwise serve a file from anywhere on the machine.
//! Sizes are checked against the per-skill limit before a file is read, so a huge file is
//! refused without being read.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use mcp_protocol::SkillCatalog;
use mcp_protocol::schema::{MAX_FILES_PER_SKILL, MAX_SKILL_BYTES, SKILL_MD};

/// Reads every skill under `root` into a catalog, in path order.
///
/// It blocks on the file system: call it at startup, or from `spawn_blocking`. Errors name the
/// path they are about; a skill the catalog refuses (no `name`, a name that is not its
/// folder's, too many files or bytes, ...) is an [`io::ErrorKind::InvalidData`] error whose
/// source is the [`mcp_protocol::SkillError`].
pub fn load_skills(root: &Path) -> io::Result<SkillCatalog> {
    let mut catalog = SkillCatalog::new();
    if is_file(&root.join(SKILL_MD))? {
        // The root is itself one skill: its own name is its path.
        let name = root
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| invalid(root, "a skill folder needs a UTF-8 name"))?;
        add(&mut catalog, root, name)?;
        return Ok(catalog);
    }
    let mut skills = Vec::new();
    let mut pending = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, prefix)) = pending.pop() {
        for (path, name) in entries(&dir)? {
            if !fs::symlink_metadata(&path)
                .map_err(|e| at(&path, e))?
                .is_dir()
            {
                continue;
            }
            let skill_path = format!("{prefix}{name}");
            if is_file(&path.join(SKILL_MD))? {
                skills.push((skill_path, path));
            } else {
                pending.push((path, format!("{skill_path}/")));
            }
        }
    }
    skills.sort();
    for (skill_path, dir) in skills {
        add(&mut catalog, &dir, &skill_path)?;
    }
    Ok(catalog)
}

/// Adds the skill in `dir` at `skill_path`, reading its files within the limits.
fn add(catalog: &mut SkillCatalog, dir: &Path, skill_path: &str) -> io::Result<()> {
    let mut files = Vec::new();
    let mut total: u64 = 0;
    let mut pending = vec![(dir.to_path_buf(), String::new())];
    while let Some((folder, prefix)) = pending.pop() {
        for (path, name) in entries(&folder)? {
            let meta = fs::symlink_metadata(&path).map_err(|e| at(&path, e))?;
            let relative = format!("{prefix}{name}");
            if meta.is_dir() {
                pending.push((path, format!("{relative}/")));
                continue;
            }
            if !meta.is_file() {
                continue;
            }
            total = total.saturating_add(meta.len());
            if total > MAX_SKILL_BYTES || files.len() >= MAX_FILES_PER_SKILL {
                return Err(invalid(
                    dir,
                    &format!(
                        "the skill has more than {MAX_FILES_PER_SKILL} files or {MAX_SKILL_BYTES} bytes"
                    ),
                ));
            }
            let bytes = fs::read(&path).map_err(|e| at(&path, e))?;
            files.push((relative, bytes));
        }
    }
    catalog
        .add(skill_path, files)
        .map(|_| ())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// The entries of `dir` that are not hidden, by name.
fn entries(dir: &Path) -> io::Result<Vec<(PathBuf, String)>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| at(dir, e))? {
        let entry = entry.map_err(|e| at(dir, e))?;
        let path = entry.path();
        let name = entry
            .file_name()
            .into_string()
            .map_err(|_| invalid(&path, "a skill file needs a UTF-8 name"))?;
        if !name.starts_with('.') {
            out.push((path, name));
        }
    }
    out.sort_by(|a, b| a.1.cmp(&b.1));
    Ok(out)
}

/// Whether `path` is a regular file (not a link to one).
fn is_file(path: &Path) -> io::Result<bool> {
    match fs::symlink_metadata(path) {
        Ok(meta) => Ok(meta.is_file()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(at(path, e)),
    }
}

/// `e`, with the path it happened at.
fn at(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

fn invalid(path: &Path, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{}: {what}", path.display()),
    )
}

#[cfg(test)]
mod tests;
