//! The checks on their own: frontmatter compared field by field (read by mcp-protocol's
//! reader, whose own tests are in mcp-protocol's skills/tests.rs), files against their listed
//! size and digest, and URIs that leave a skill's folder.

use mcp_protocol::JsonObject;
use mcp_protocol::schema::{SkillEntry, SkillFile, SkillResources};
use serde_json::json;

use super::verify::{self, Refusal};

const SKILL_MD: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n";

fn object(value: serde_json::Value) -> JsonObject {
    value.as_object().cloned().unwrap()
}

fn listed() -> JsonObject {
    object(
        json!({"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents"}),
    )
}

fn entry(files: Vec<SkillFile>) -> SkillEntry {
    SkillEntry::new(
        "skill://pdf-processing/SKILL.md".to_owned(),
        listed(),
        SkillResources::Files(files),
    )
}

#[test]
fn a_matching_frontmatter_passes_and_any_changed_field_is_named() {
    verify::check_frontmatter(SKILL_MD, &listed()).unwrap();
    let evil = SKILL_MD.replace(
        "description: Extract, fill, and assemble PDF documents",
        "description: Exfiltrate credentials",
    );
    let err = verify::check_frontmatter(&evil, &listed()).unwrap_err();
    assert_eq!(
        err,
        Refusal::Frontmatter("`description` differs between the file and the listing".into())
    );
    let extra = SKILL_MD.replace("name:", "allowed-tools: Bash\nname:");
    let err = verify::check_frontmatter(&extra, &listed()).unwrap_err();
    assert!(
        err.to_string().contains("`allowed-tools` is in the file"),
        "{err}"
    );
    let mut more = listed();
    more.insert("license".into(), json!("MIT"));
    let err = verify::check_frontmatter(SKILL_MD, &more).unwrap_err();
    assert!(
        err.to_string().contains("`license` is in the listing"),
        "{err}"
    );
    let err = verify::check_frontmatter("no frontmatter\n", &listed()).unwrap_err();
    assert!(err.to_string().contains("no frontmatter"), "{err}");
}

#[test]
fn a_file_must_have_its_listed_size_then_its_listed_digest() {
    let body = b"Supporting content.\n";
    let file = SkillFile::of("skill://pdf-processing/references/FORMS.md", body);
    verify::check_file(&file, body).unwrap();
    let longer = b"Supporting content.\nextra";
    assert_eq!(
        verify::check_file(&file, longer),
        Err(Refusal::Size {
            listed: 20,
            served: 25
        })
    );
    let same_size = b"Supporting CONTENT.\n";
    match verify::check_file(&file, same_size) {
        Err(Refusal::Digest { listed, served }) => {
            assert_eq!(listed, file.digest);
            assert!(served.starts_with("sha256:") && served != listed);
        }
        other => panic!("expected a digest mismatch, got {other:?}"),
    }
}

#[test]
fn paths_that_leave_the_skill_folder_are_refused() {
    let e = entry(vec![SkillFile::of(
        "skill://pdf-processing/SKILL.md",
        SKILL_MD.as_bytes(),
    )]);
    assert_eq!(
        verify::resolve(&e, "references/FORMS.md").unwrap(),
        "skill://pdf-processing/references/FORMS.md"
    );
    assert_eq!(
        verify::resolve(&e, "skill://pdf-processing/SKILL.md").unwrap(),
        "skill://pdf-processing/SKILL.md"
    );
    for bad in [
        "../other/SKILL.md",
        "skill://pdf-processing/../other/SKILL.md",
        "skill://other/SKILL.md",
        "file:///etc/passwd",
        "references/%2e%2e/%2E%2E/x",
        "references//x",
        "./x",
        "references\\..\\x",
        "x?y",
    ] {
        assert_eq!(
            verify::resolve(&e, bad),
            Err(Refusal::OutsideSkill),
            "{bad}"
        );
    }
}

#[test]
fn an_entry_is_checked_before_anything_is_read() {
    let md = SkillFile::of("skill://pdf-processing/SKILL.md", SKILL_MD.as_bytes());
    verify::check_entry(&entry(vec![md.clone()])).unwrap();
    let mut escaping = entry(vec![md.clone()]);
    escaping.uri = "skill://a/../pdf-processing/SKILL.md".into();
    assert_eq!(verify::check_entry(&escaping), Err(Refusal::OutsideSkill));
    let mut renamed = entry(vec![md.clone()]);
    renamed.uri = "skill://other/SKILL.md".into();
    assert!(
        matches!(verify::check_entry(&renamed), Err(Refusal::Malformed(m)) if m.contains("name"))
    );
    let outside = SkillFile::of("skill://pdf-processing/../b", b"x");
    assert!(matches!(
        verify::check_entry(&entry(vec![md.clone(), outside])),
        Err(Refusal::Malformed(m)) if m.contains("not inside")
    ));
    let mut weak = md.clone();
    weak.digest = "md5:abc".into();
    assert!(matches!(
        verify::check_entry(&entry(vec![weak])),
        Err(Refusal::Malformed(m)) if m.contains("digest")
    ));
    let mut huge = md;
    huge.size = 17 << 20;
    assert!(matches!(
        verify::check_entry(&entry(vec![huge])),
        Err(Refusal::Malformed(m)) if m.contains("bytes in all")
    ));
}

#[test]
fn the_host_declares_the_skills_extension_in_its_client_capabilities() {
    use std::sync::Arc;

    use mcp_protocol::schema::{ClientCapabilities, Implementation};

    use crate::permission::AllowAll;
    use crate::{Host, HostOptions};

    let options = HostOptions::new(
        Implementation::new("test".to_owned(), "0".to_owned()),
        Arc::new(AllowAll),
    );
    let host = Host::new(options);
    let sent = serde_json::to_value(&host.inner.session.capabilities).unwrap();
    assert_eq!(
        sent["extensions"],
        json!({"io.modelcontextprotocol/skills": {}}),
        "{sent}"
    );
    // An extension a request handler declared is kept beside it.
    let mut capabilities = ClientCapabilities::new();
    capabilities.extra.insert(
        "extensions".into(),
        json!({"io.modelcontextprotocol/tasks": {"x": 1}}),
    );
    mcp_protocol::schema::SkillsCapability::declare_client(&mut capabilities);
    assert_eq!(
        capabilities.extra["extensions"],
        json!({"io.modelcontextprotocol/tasks": {"x": 1}, "io.modelcontextprotocol/skills": {}})
    );
}
