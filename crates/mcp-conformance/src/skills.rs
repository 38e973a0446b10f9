//! The skills the server offers for the `sep-2640-skills-*` scenarios (extension
//! `io.modelcontextprotocol/skills`), served by `mcp-protocol`'s [`SkillCatalog`] the way any
//! server author would: two skills, one with files in subfolders so that a directory read has
//! a folder to descend into, and pages of one so that every cursor is exercised.

use std::sync::LazyLock;

use mcp_protocol::SkillCatalog;
use mcp_protocol::schema::ServerCapabilities;
use serde_json::Value;

/// `pdf-processing`'s `SKILL.md`: frontmatter with optional fields and nested metadata, so the
/// entry's frontmatter is more than name and description.
const PDF_SKILL_MD: &str = "---
name: pdf-processing
description: Extract text and tables from PDF files and fill in PDF forms. Use when the user works with PDF documents.
license: Apache-2.0
metadata:
  author: mcp-conformance-server
  version: \"1.0\"
---
# PDF processing

To fill in a form, read [the form fields](references/FORMS.md) and run `scripts/fill_form.py`.
";

const PDF_FORMS: &str = "# Form fields

Every field has a name, a type and a value.
";

const PDF_FILL: &str = "import sys

print('filling', sys.argv[1])
";

/// `code-review`'s `SKILL.md`.
const REVIEW_SKILL_MD: &str = "---
name: code-review
description: Review a change for correctness, tests and style. Use when asked to review code.
---
# Code review

Go through [the checklist](checklists/CHECKLIST.md).
";

const REVIEW_CHECKLIST: &str = "- Does every test assert something that can fail?
- Are errors named by who is at fault?
";

/// The catalog, built once.
pub(crate) fn catalog() -> &'static SkillCatalog {
    static CATALOG: LazyLock<SkillCatalog> = LazyLock::new(|| {
        build().expect("the conformance server's built-in skills are valid (tested)")
    });
    &CATALOG
}

fn build() -> Result<SkillCatalog, mcp_protocol::SkillError> {
    let mut catalog = SkillCatalog::new().with_page_size(1);
    catalog.add(
        "pdf-processing",
        [
            ("SKILL.md", PDF_SKILL_MD),
            ("references/FORMS.md", PDF_FORMS),
            ("scripts/fill_form.py", PDF_FILL),
        ],
    )?;
    catalog.add(
        "code-review",
        [
            ("SKILL.md", REVIEW_SKILL_MD),
            ("checklists/CHECKLIST.md", REVIEW_CHECKLIST),
        ],
    )?;
    Ok(catalog)
}

/// Declares the extension (with `directoryRead`) next to whatever else `capabilities` holds.
pub(crate) fn declare(capabilities: &mut ServerCapabilities) {
    // Declaring writes a plain object into the capabilities; it cannot fail.
    let _ = catalog().declare(capabilities);
}

/// A `resources/list` result with the skills' `SKILL.md` resources added.
pub(crate) fn listed(mut result: Value) -> Value {
    if let Some(Value::Array(resources)) = result.get_mut("resources") {
        resources.extend(
            catalog()
                .resources()
                .iter()
                .filter_map(|r| serde_json::to_value(r).ok()),
        );
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_skills_are_valid_and_both_listed() {
        let catalog = build().unwrap();
        let uris: Vec<&str> = catalog.entries().map(|e| e.uri.as_str()).collect();
        assert_eq!(
            uris,
            [
                "skill://pdf-processing/SKILL.md",
                "skill://code-review/SKILL.md"
            ]
        );
        let listed = listed(serde_json::json!({"resources": [{"uri": "test://x", "name": "x"}]}));
        assert_eq!(listed["resources"].as_array().unwrap().len(), 3);
        assert_eq!(listed["resources"][1]["name"], "pdf-processing");
    }
}
