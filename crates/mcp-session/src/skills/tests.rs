//! Loading skills from a real folder on disk.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use mcp_protocol::schema::skill_digest;

use super::*;

/// A fresh folder under the system's temporary directory, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("mcp-session-skills-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    /// Writes `bytes` at `relative`, creating its folders.
    fn write(&self, relative: &str, bytes: &[u8]) -> PathBuf {
        let path = self.0.join(relative);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, bytes).unwrap();
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn skill_md(name: &str) -> Vec<u8> {
    format!("---\nname: {name}\ndescription: The {name} skill.\n---\nBody.\n").into_bytes()
}

fn uris(catalog: &SkillCatalog) -> Vec<String> {
    catalog.entries().map(|e| e.uri.clone()).collect()
}

#[test]
fn every_folder_with_a_skill_md_is_a_skill_with_every_file_under_it() {
    let root = Scratch::new();
    root.write("acme/pdf-processing/SKILL.md", &skill_md("pdf-processing"));
    root.write("acme/pdf-processing/references/FORMS.md", b"Fields.\n");
    root.write("acme/pdf-processing/.hidden", b"left out");
    root.write("code-review/SKILL.md", &skill_md("code-review"));
    root.write(
        "code-review/nested/SKILL.md",
        b"a file of code-review, not a skill",
    );
    root.write("notes/README.txt", b"no skill here");
    let catalog = load_skills(&root.0).unwrap();
    assert_eq!(
        uris(&catalog),
        [
            "skill://acme/pdf-processing/SKILL.md",
            "skill://code-review/SKILL.md"
        ]
    );
    let pdf = catalog.entries().next().unwrap();
    let files: Vec<(&str, &str, u64)> = pdf
        .resources
        .files()
        .unwrap()
        .iter()
        .map(|f| (f.uri.as_str(), f.digest.as_str(), f.size))
        .collect();
    let forms_digest = skill_digest(b"Fields.\n");
    let md_digest = skill_digest(&skill_md("pdf-processing"));
    assert_eq!(
        files,
        [
            (
                "skill://acme/pdf-processing/SKILL.md",
                md_digest.as_str(),
                skill_md("pdf-processing").len() as u64
            ),
            (
                "skill://acme/pdf-processing/references/FORMS.md",
                forms_digest.as_str(),
                8
            ),
        ]
    );
    let review = catalog.entries().nth(1).unwrap();
    assert!(review.file("skill://code-review/nested/SKILL.md").is_some());
}

#[test]
fn a_root_with_its_own_skill_md_is_one_skill() {
    let root = Scratch::new();
    let dir = root.0.join("pdf-processing");
    root.write("pdf-processing/SKILL.md", &skill_md("pdf-processing"));
    let catalog = load_skills(&dir).unwrap();
    assert_eq!(uris(&catalog), ["skill://pdf-processing/SKILL.md"]);
}

#[cfg(unix)]
#[test]
fn symbolic_links_are_not_followed_out_of_the_skill() {
    let root = Scratch::new();
    let secret = root.write("outside/secret.txt", b"not for clients");
    root.write(
        "skills/pdf-processing/SKILL.md",
        &skill_md("pdf-processing"),
    );
    root.write("skills/pdf-processing/real.txt", b"served");
    std::os::unix::fs::symlink(&secret, root.0.join("skills/pdf-processing/link.txt")).unwrap();
    std::os::unix::fs::symlink(
        root.0.join("outside"),
        root.0.join("skills/pdf-processing/linked-dir"),
    )
    .unwrap();
    let catalog = load_skills(&root.0.join("skills")).unwrap();
    let entry = catalog.entries().next().unwrap();
    assert!(entry.file("skill://pdf-processing/real.txt").is_some());
    let served: Vec<&str> = entry
        .resources
        .files()
        .unwrap()
        .iter()
        .map(|f| f.uri.as_str())
        .collect();
    assert_eq!(
        served,
        [
            "skill://pdf-processing/SKILL.md",
            "skill://pdf-processing/real.txt"
        ]
    );
}

#[test]
fn an_oversized_skill_is_refused_before_its_file_is_read() {
    let root = Scratch::new();
    root.write("big/SKILL.md", &skill_md("big"));
    // Sparse: its length is past the limit, its blocks are not written.
    let huge = fs::File::create(root.0.join("big/huge.bin")).unwrap();
    huge.set_len(MAX_SKILL_BYTES + 1).unwrap();
    let error = load_skills(&root.0).unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::InvalidData);
    assert!(error.to_string().contains("more than"), "{error}");
    // The loader refused it from the file's length; the catalog, which would have refused it
    // too, was never handed its bytes.
    let from_catalog = error
        .get_ref()
        .is_some_and(|e| e.is::<mcp_protocol::SkillError>());
    assert!(!from_catalog, "{error:?}");
}

#[test]
fn a_skill_the_catalog_refuses_is_invalid_data_naming_it() {
    let root = Scratch::new();
    root.write("pdf-processing/SKILL.md", &skill_md("another-name"));
    let error = load_skills(&root.0).unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::InvalidData);
    assert!(error.to_string().contains("pdf-processing"), "{error}");
    let source = error
        .get_ref()
        .and_then(|e| e.downcast_ref::<mcp_protocol::SkillError>());
    assert!(
        matches!(source, Some(mcp_protocol::SkillError::BadName { .. })),
        "{error:?}"
    );
}

#[test]
fn a_missing_root_is_an_error_naming_it() {
    let root = Scratch::new();
    let missing: &Path = &root.0.join("nothing");
    let error = load_skills(missing).unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::NotFound);
    assert!(error.to_string().contains("nothing"), "{error}");
}
