//! Skills (SEP-2640) against the testkit's in-process skills server, honest and hostile:
//! listing reads no file, loading reads only `SKILL.md`, other files come on demand, and a
//! server that lies (digest, size, frontmatter, an oversized file, a path out of the skill) is
//! refused with an error naming the server, the skill and what differed, and nothing further is
//! read.

// Test code: an unwrap that fails is a failed test, with its location.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use mcp_host::permission::AllowAll;
use mcp_host::skills::{MAX_SKILL_FILE_BYTES, Refusal, SkillError};
use mcp_host::{Connect, Host, HostOptions, ServerEntry, ServerState};
use mcp_protocol::schema::Implementation;
use mcp_testkit::fake_skills::{FakeSkills, file_entry, skill_md};
use serde_json::json;

const SERVER: &str = "skills";
const FORMS: &str = "skill://pdf-processing/references/FORMS.md";
const PDF_MD: &str = "skill://pdf-processing/SKILL.md";

async fn fake() -> FakeSkills {
    let fake = FakeSkills::start().await;
    fake.add_skill(
        "pdf-processing",
        "Extract, fill, and assemble PDF documents",
        "Skill body.",
        &[("references/FORMS.md", "Supporting content.\n")],
    );
    fake.add_skill("other", "Another skill", "Other body.", &[]);
    fake
}

async fn host(fake: &FakeSkills) -> Host {
    let host = Host::new(HostOptions::new(
        Implementation::new("skills-test".into(), "0".into()),
        Arc::new(AllowAll),
    ));
    let mut entry = ServerEntry::new(
        SERVER,
        Connect::Http(mcp_http::HttpConfig::new(SERVER, fake.url.clone())),
    );
    entry.request_timeout = Duration::from_secs(10);
    host.start(vec![entry]).await;
    assert_eq!(
        host.server_status(SERVER).unwrap().state,
        ServerState::Ready
    );
    host
}

fn refusal(error: SkillError) -> (String, Refusal) {
    let text = error.to_string();
    match error {
        SkillError::Refused {
            server,
            skill,
            refusal,
            ..
        } => {
            assert_eq!(server, SERVER);
            assert_eq!(skill, "pdf-processing");
            (text, refusal)
        }
        other => panic!("expected a refusal, got {other}"),
    }
}

#[tokio::test]
async fn listing_reads_nothing_loading_reads_skill_md_and_files_come_on_demand() {
    let fake = fake().await;
    let host = host(&fake).await;
    let skills = host.list_skills(SERVER).await.unwrap();
    // Two pages, one skill each: both listed.
    let names: Vec<_> = skills
        .iter()
        .map(|s| s.name().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["pdf-processing", "other"]);
    assert_eq!(fake.reads(), Vec::<String>::new());

    let skill = host.load_skill(SERVER, "pdf-processing").await.unwrap();
    assert!(skill.verified);
    assert_eq!(skill.body(), "\nSkill body.\n");
    assert_eq!(fake.reads(), [PDF_MD]);

    let file = host
        .read_skill_file(&skill, "references/FORMS.md")
        .await
        .unwrap();
    assert_eq!(file.text(), Some("Supporting content.\n"));
    assert_eq!(fake.reads(), [PDF_MD, FORMS]);
    host.shutdown().await;
}

#[tokio::test]
async fn a_skill_md_that_does_not_match_its_listing_is_refused_and_nothing_more_is_read() {
    let fake = fake().await;
    let host = host(&fake).await;
    let honest = skill_md(
        "pdf-processing",
        "Extract, fill, and assemble PDF documents",
        "Skill body.",
    );

    // Same size, other bytes: the digest.
    fake.serve(PDF_MD, &honest.replace("Skill body.", "Evil body!!"));
    let (text, r) = refusal(host.load_skill(SERVER, "pdf-processing").await.unwrap_err());
    assert!(matches!(r, Refusal::Digest { .. }), "{text}");
    assert!(
        text.starts_with("server `skills`: skill `pdf-processing`: `skill://pdf-processing/SKILL.md` refused: digest mismatch: listed sha256:"),
        "{text}"
    );

    // More bytes than listed: the size, before any hashing.
    fake.serve(PDF_MD, &format!("{honest}extra bytes\n"));
    let (_, r) = refusal(host.load_skill(SERVER, "pdf-processing").await.unwrap_err());
    assert_eq!(
        r,
        Refusal::Size {
            listed: honest.len() as u64,
            served: honest.len() as u64 + 12
        }
    );

    // A frontmatter that differs from the listed one, with digest and size listed for it.
    let evil = honest.replace(
        "description: Extract, fill, and assemble PDF documents",
        "description: Exfiltrate credentials",
    );
    fake.serve(PDF_MD, &evil);
    fake.edit_entry("pdf-processing", |e| {
        e["resources"][0] = file_entry(PDF_MD, &evil);
    });
    let (text, r) = refusal(host.load_skill(SERVER, "pdf-processing").await.unwrap_err());
    assert_eq!(
        r,
        Refusal::Frontmatter("`description` differs between the file and the listing".into()),
        "{text}"
    );

    // Each attempt read SKILL.md and nothing after it.
    assert_eq!(fake.reads(), [PDF_MD, PDF_MD, PDF_MD]);
    host.shutdown().await;
}

#[tokio::test]
async fn oversized_files_and_paths_out_of_the_skill_are_refused_without_a_read() {
    let fake = fake().await;
    let host = host(&fake).await;
    let skill = host.load_skill(SERVER, "pdf-processing").await.unwrap();
    assert_eq!(fake.reads(), [PDF_MD]);

    for path in [
        "../other/SKILL.md",
        "skill://pdf-processing/../other/SKILL.md",
        "skill://other/SKILL.md",
    ] {
        let (_, r) = refusal(host.read_skill_file(&skill, path).await.unwrap_err());
        assert_eq!(r, Refusal::OutsideSkill, "{path}");
    }
    // Inside the folder but not listed: no digest to check against.
    let (_, r) = refusal(
        host.read_skill_file(&skill, "references/SECRET.md")
            .await
            .unwrap_err(),
    );
    assert_eq!(r, Refusal::NotListed);
    assert_eq!(fake.reads(), [PDF_MD]);

    // A listed file the server says is huge is not asked for.
    fake.edit_entry("pdf-processing", |e| {
        e["resources"][1]["size"] = json!(MAX_SKILL_FILE_BYTES + 1);
    });
    let skill = host.load_skill(SERVER, "pdf-processing").await.unwrap();
    let (text, r) = refusal(
        host.read_skill_file(&skill, "references/FORMS.md")
            .await
            .unwrap_err(),
    );
    assert_eq!(
        r,
        Refusal::TooLarge {
            size: MAX_SKILL_FILE_BYTES + 1,
            limit: MAX_SKILL_FILE_BYTES
        },
        "{text}"
    );
    // And a served file over the limit is dropped whatever was listed.
    let big = "x".repeat(MAX_SKILL_FILE_BYTES as usize + 1);
    fake.serve(FORMS, &big);
    fake.edit_entry("pdf-processing", |e| {
        e["resources"][1]["size"] = json!(20);
    });
    let skill = host.load_skill(SERVER, "pdf-processing").await.unwrap();
    let (_, r) = refusal(
        host.read_skill_file(&skill, "references/FORMS.md")
            .await
            .unwrap_err(),
    );
    assert!(matches!(r, Refusal::TooLarge { .. }), "{r}");
    assert_eq!(fake.reads(), [PDF_MD, PDF_MD, PDF_MD, FORMS]);

    // An entry listing a file out of its folder is refused before SKILL.md is read.
    fake.edit_entry("pdf-processing", |e| {
        e["resources"][1] = file_entry("skill://pdf-processing/../other/SKILL.md", "x");
    });
    let (_, r) = refusal(host.load_skill(SERVER, "pdf-processing").await.unwrap_err());
    assert!(
        matches!(r, Refusal::Malformed(ref m) if m.contains("not inside")),
        "{r}"
    );
    assert_eq!(fake.reads(), [PDF_MD, PDF_MD, PDF_MD, FORMS]);
    host.shutdown().await;
}

#[tokio::test]
async fn a_dynamic_skill_is_held_to_its_frontmatter_its_folder_and_the_size_limit() {
    let fake = fake().await;
    fake.edit_entry("pdf-processing", |e| e["resources"] = json!("dynamic"));
    let host = host(&fake).await;
    let skill = host.load_skill(SERVER, "pdf-processing").await.unwrap();
    assert!(!skill.verified);
    let file = host
        .read_skill_file(&skill, "references/FORMS.md")
        .await
        .unwrap();
    assert!(!file.verified);
    assert_eq!(file.text(), Some("Supporting content.\n"));
    let (_, r) = refusal(
        host.read_skill_file(&skill, "../other/SKILL.md")
            .await
            .unwrap_err(),
    );
    assert_eq!(r, Refusal::OutsideSkill);
    fake.serve(FORMS, &"x".repeat(MAX_SKILL_FILE_BYTES as usize + 1));
    let (_, r) = refusal(
        host.read_skill_file(&skill, "references/FORMS.md")
            .await
            .unwrap_err(),
    );
    assert!(matches!(r, Refusal::TooLarge { .. }), "{r}");
    // No digest to check, but the frontmatter still is.
    fake.serve(
        PDF_MD,
        &skill_md("pdf-processing", "Exfiltrate credentials", "Skill body."),
    );
    let (_, r) = refusal(host.load_skill(SERVER, "pdf-processing").await.unwrap_err());
    assert!(matches!(r, Refusal::Frontmatter(_)), "{r}");
    assert_eq!(fake.reads(), [PDF_MD, FORMS, FORMS, PDF_MD]);
    host.shutdown().await;
}
