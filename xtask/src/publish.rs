//! `cargo xtask ci`'s publish step (issue 21 §6): every product crate could go to crates.io.
//!
//! - Which crates are published is written here ([`PUBLISHED`]); every other member of the
//!   workspace says `publish = false`.
//! - One version for all: each published crate inherits the workspace's version, and each asks
//!   for exactly that version (`=`) of the others.
//! - The metadata crates.io shows: description, license, repository, keywords, categories,
//!   `rust-version`, a README in the package.
//! - A README's Rust code is true to the code: each of its Rust blocks is found, line for line,
//!   in the crate's `examples/` or in its crate documentation (where it compiles, and runs as a
//!   doctest).
//! - `cargo package --workspace` packages them all (cargo resolves each crate's dependencies on
//!   the others against a local overlay of the packages it just made), and each package holds
//!   its library or binary and its README, and no tests, benches or fixtures.
//!
//! `cargo package` runs without its verify build, which would build every crate again from its
//! package in a dependency profile of its own (minutes, and gigabytes of disk, on each CI run);
//! the examples and doctests that the packages ship are built by the clippy and test steps,
//! and `cargo xtask publish --verify` runs the whole `cargo publish --dry-run --workspace`.

use std::path::Path;

use anyhow::{Context as _, bail};
use serde_json::Value;
use xshell::{Shell, cmd};

/// The crates that go to crates.io. The others are test tools and automation
/// (`mcp-testkit`, `mcp-conformance`, `xtask`), with `publish = false`.
pub(crate) const PUBLISHED: &[&str] = &[
    "mcp-protocol",
    "mcp-session",
    "mcp-stdio",
    "mcp-http",
    "mcp-oauth",
    "mcp-host",
    "mcp-gateway",
    "mcp-cli",
];

/// Runs the checks; `verify` adds cargo's verify build (`cargo publish --dry-run`).
pub(crate) fn check(sh: &Shell, verify: bool) -> anyhow::Result<()> {
    eprintln!("==> publish: metadata, versions, READMEs");
    let root = crate::project_root();
    let manifest = sh.read_file(root.join("Cargo.toml"))?;
    let version = workspace_version(&manifest).context("no [workspace.package] version")?;
    let json = cmd!(sh, "cargo metadata --format-version 1 --no-deps").read()?;
    let meta: Value = serde_json::from_str(&json)?;
    let read = |path: &Path| std::fs::read_to_string(path).ok();
    let mut problems = check_metadata(&meta, &version, &read);

    let excluded: Vec<String> = meta["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["name"].as_str())
        .filter(|name| !PUBLISHED.contains(name))
        .flat_map(|name| ["--exclude".to_owned(), name.to_owned()])
        .collect();
    // The working tree as it is, committed or not: that is what the other steps check too.
    if verify {
        eprintln!("==> publish: cargo publish --dry-run --workspace");
        cmd!(
            sh,
            "cargo publish --dry-run --workspace --allow-dirty {excluded...}"
        )
        .run()?;
    } else {
        eprintln!("==> publish: cargo package --workspace --no-verify");
        // Quiet when it works: cargo warns of every test and bench left out, as `include` means.
        let out = cmd!(
            sh,
            "cargo package --workspace --no-verify --allow-dirty {excluded...}"
        )
        .quiet()
        .ignore_status()
        .output()?;
        if !out.status.success() {
            eprintln!("{}", String::from_utf8_lossy(&out.stderr));
            bail!("xtask ci: step `publish` failed: `cargo package --workspace` failed");
        }
    }
    let folder = crate::target_dir().join("package");
    for name in PUBLISHED {
        let file = folder.join(format!("{name}-{version}.crate"));
        let listing = cmd!(sh, "tar -tzf {file}")
            .quiet()
            .read()
            .with_context(|| format!("listing {}", file.display()))?;
        problems.extend(check_files(name, &listing));
    }
    if !problems.is_empty() {
        for p in &problems {
            eprintln!("    {p}");
        }
        bail!(
            "xtask ci: step `publish` failed: {} problem(s)",
            problems.len()
        );
    }
    eprintln!("==> publish: {} crates ready at {version}", PUBLISHED.len());
    Ok(())
}

/// The `version` of the manifest's `[workspace.package]` table.
pub(crate) fn workspace_version(manifest: &str) -> Option<String> {
    manifest
        .lines()
        .skip_while(|line| line.trim() != "[workspace.package]")
        .skip(1)
        .take_while(|line| !line.trim_start().starts_with('['))
        .find_map(|line| {
            let value = line.trim().strip_prefix("version")?.trim_start();
            let value = value.strip_prefix('=')?.trim();
            Some(value.strip_prefix('"')?.strip_suffix('"')?.to_owned())
        })
}

/// What is wrong with the workspace's packages (`cargo metadata --no-deps` output) for
/// publishing at `version`; `read` reads a file (README, example, crate root).
pub(crate) fn check_metadata(
    meta: &Value,
    version: &str,
    read: &dyn Fn(&Path) -> Option<String>,
) -> Vec<String> {
    let mut problems = Vec::new();
    let packages = meta["packages"].as_array().cloned().unwrap_or_default();
    for name in PUBLISHED {
        if !packages.iter().any(|p| p["name"] == *name) {
            problems.push(format!("{name}: not a member of the workspace"));
        }
    }
    for p in &packages {
        let name = p["name"].as_str().unwrap_or("?");
        // `publish = false` is an empty list of registries; unset is null.
        let publishable = !p["publish"].as_array().is_some_and(Vec::is_empty);
        let listed = PUBLISHED.contains(&name);
        if !listed {
            if publishable {
                problems.push(format!(
                    "{name}: not in xtask's PUBLISHED list, so it needs `publish = false`"
                ));
            }
            continue;
        }
        if !publishable {
            problems.push(format!("{name}: says `publish = false`"));
        }
        if p["version"] != version {
            problems.push(format!(
                "{name}: version {} is not the workspace's {version} (`version.workspace = true`)",
                p["version"]
            ));
        }
        for dep in p["dependencies"].as_array().into_iter().flatten() {
            let dep_name = dep["name"].as_str().unwrap_or("?");
            // Dev-dependencies on unpublished crates carry no version and are dropped.
            if PUBLISHED.contains(&dep_name) && dep["req"] != format!("={version}") {
                problems.push(format!(
                    "{name}: asks for {dep_name} {}, not `={version}` (the workspace's version)",
                    dep["req"]
                ));
            }
        }
        for field in ["description", "license", "repository", "rust_version"] {
            if p[field].as_str().is_none_or(|s| s.trim().is_empty()) {
                problems.push(format!("{name}: no `{}`", field.replace('_', "-")));
            }
        }
        for (field, limit) in [("keywords", 5), ("categories", 5)] {
            let n = p[field].as_array().map_or(0, Vec::len);
            if n == 0 || n > limit {
                problems.push(format!(
                    "{name}: {n} {field} (crates.io takes 1 to {limit})"
                ));
            }
        }
        for keyword in p["keywords"].as_array().into_iter().flatten() {
            let k = keyword.as_str().unwrap_or("");
            let ok = (1..=20).contains(&k.len())
                && k.starts_with(|c: char| c.is_ascii_alphanumeric())
                && k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if !ok {
                problems.push(format!("{name}: keyword {k:?} is not one crates.io takes"));
            }
        }
        let Some(manifest) = p["manifest_path"].as_str().map(Path::new) else {
            problems.push(format!("{name}: no manifest path"));
            continue;
        };
        let dir = manifest.parent().unwrap_or(Path::new("."));
        problems.extend(check_readme(name, p, dir, read));
    }
    problems
}

/// The README: named in the manifest, present, and each Rust block found in the crate's
/// examples or crate documentation. A library must show one.
fn check_readme(
    name: &str,
    package: &Value,
    dir: &Path,
    read: &dyn Fn(&Path) -> Option<String>,
) -> Vec<String> {
    let mut problems = Vec::new();
    if package["readme"] != "README.md" {
        problems.push(format!("{name}: `readme = \"README.md\"` is not set"));
        return problems;
    }
    let Some(readme) = read(&dir.join("README.md")) else {
        problems.push(format!("{name}: README.md is missing"));
        return problems;
    };
    let targets: Vec<&Value> = package["targets"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    let has_kind = |kind: &str| {
        targets.iter().any(|t| {
            t["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == kind))
        })
    };
    // Where a README's code may come from: the examples, and the crate root's documentation.
    let mut sources: Vec<(String, String)> = Vec::new();
    for t in &targets {
        let is_example = t["kind"]
            .as_array()
            .is_some_and(|k| k.iter().any(|k| k == "example"));
        let is_lib = t["kind"]
            .as_array()
            .is_some_and(|k| k.iter().any(|k| k == "lib"));
        if !(is_example || is_lib) {
            continue;
        }
        let Some(path) = t["src_path"].as_str().map(Path::new) else {
            continue;
        };
        let Some(text) = read(path) else {
            problems.push(format!("{name}: cannot read {}", path.display()));
            continue;
        };
        let shown = path.strip_prefix(dir).unwrap_or(path).display().to_string();
        let text = if is_lib { crate_doc(&text) } else { text };
        sources.push((shown, text));
    }
    let blocks = rust_blocks(&readme);
    if has_kind("lib") && blocks.is_empty() {
        problems.push(format!(
            "{name}: README.md shows no Rust example (a ```rust block from examples/ or the crate documentation)"
        ));
    }
    for block in &blocks {
        if !sources.iter().any(|(_, text)| contains_lines(text, block)) {
            let first = block
                .iter()
                .find(|l| !l.is_empty())
                .cloned()
                .unwrap_or_default();
            let places: Vec<&str> = sources.iter().map(|(p, _)| p.as_str()).collect();
            problems.push(format!(
                "{name}: README.md's Rust block starting {first:?} is not found in {} (keep it a copy of real code)",
                places.join(", ")
            ));
        }
    }
    problems
}

/// The crate root's `//!` documentation, without the `//!` markers.
fn crate_doc(source: &str) -> String {
    source
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("//!"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The ```rust blocks of a Markdown text, each as its lines, trimmed.
fn rust_blocks(markdown: &str) -> Vec<Vec<String>> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<String>> = None;
    for line in markdown.lines() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut current, fence) {
            (None, Some(info)) if info.trim() == "rust" => current = Some(Vec::new()),
            (Some(_), Some(_)) => blocks.extend(current.take()),
            (Some(lines), None) => lines.push(line.trim().to_owned()),
            (None, _) => {}
        }
    }
    blocks
}

/// Whether `block`'s lines appear in `text` one after another, indentation aside.
fn contains_lines(text: &str, block: &[String]) -> bool {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    !block.is_empty() && lines.windows(block.len()).any(|w| w == block)
}

/// What is wrong with one package's file list (`tar -tzf` of its `.crate`).
pub(crate) fn check_files(name: &str, listing: &str) -> Vec<String> {
    let files: Vec<&str> = listing
        .lines()
        .filter_map(|l| l.split_once('/').map(|(_, rest)| rest))
        .filter(|f| !f.is_empty() && !f.ends_with('/'))
        .collect();
    let mut problems = Vec::new();
    for needed in ["Cargo.toml", "README.md"] {
        if !files.contains(&needed) {
            problems.push(format!("{name}: the package lacks {needed}"));
        }
    }
    if !files
        .iter()
        .any(|f| *f == "src/lib.rs" || *f == "src/main.rs")
    {
        problems.push(format!(
            "{name}: the package has neither src/lib.rs nor src/main.rs"
        ));
    }
    for f in &files {
        let top = f.split('/').next().unwrap_or("");
        if ["tests", "benches", "fixtures", "proptest-regressions"].contains(&top)
            || f.contains("/snapshots/")
        {
            problems.push(format!(
                "{name}: the package ships {f}, which only the workspace's tests need"
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::path::PathBuf;

    use serde_json::json;

    use super::*;

    /// A workspace whose published crates are all ready at 1.2.3, plus a test tool.
    fn ready() -> (Value, HashMap<PathBuf, String>) {
        let mut files = HashMap::new();
        let mut packages = Vec::new();
        for name in PUBLISHED {
            let dir = format!("/w/crates/{name}");
            files.insert(
                PathBuf::from(format!("{dir}/README.md")),
                "# x\n\n```rust\nlet a = 1;\nlet b = a;\n```\n".to_owned(),
            );
            files.insert(
                PathBuf::from(format!("{dir}/src/lib.rs")),
                "//! Doc.\n//!\n//! ```\n//! let a = 1;\n//! let b = a;\n//! ```\n".to_owned(),
            );
            packages.push(json!({
                "name": name, "version": "1.2.3", "publish": null,
                "description": "d", "license": "MIT", "repository": "https://r",
                "rust_version": "1.90", "readme": "README.md",
                "keywords": ["mcp"], "categories": ["network-programming"],
                "manifest_path": format!("{dir}/Cargo.toml"),
                "targets": [{"kind": ["lib"], "src_path": format!("{dir}/src/lib.rs")}],
                "dependencies": [
                    {"name": "mcp-protocol", "req": "=1.2.3"},
                    {"name": "serde", "req": "^1.0"},
                    {"name": "mcp-testkit", "req": "*"}
                ],
            }));
        }
        packages.push(json!({"name": "mcp-testkit", "version": "1.2.3", "publish": []}));
        (json!({ "packages": packages }), files)
    }

    fn problems(meta: &Value, files: &HashMap<PathBuf, String>) -> Vec<String> {
        check_metadata(meta, "1.2.3", &|p| files.get(p).cloned())
    }

    #[test]
    fn the_workspace_version_is_the_one_of_workspace_package() {
        let manifest = "[package]\nversion = \"9.9.9\"\n[workspace.package]\nedition = \"2024\"\nversion = \"1.2.3\"\n[x]\nversion = \"7\"\n";
        assert_eq!(workspace_version(manifest).as_deref(), Some("1.2.3"));
        assert_eq!(
            workspace_version("[workspace.package]\n[x]\nversion = \"7\"\n"),
            None
        );
    }

    #[test]
    fn a_ready_workspace_passes_and_each_lack_is_named() {
        let (meta, files) = ready();
        assert_eq!(problems(&meta, &files), Vec::<String>::new());

        let broken = |edit: &dyn Fn(&mut Value), wanted: &str| {
            let mut meta = meta.clone();
            edit(&mut meta["packages"][5]);
            let found = problems(&meta, &files);
            assert!(
                found.len() == 1 && found[0].starts_with("mcp-host: ") && found[0].contains(wanted),
                "{wanted:?} in {found:?}"
            );
        };
        broken(
            &|p| p["version"] = json!("0.0.0"),
            "version \"0.0.0\" is not the workspace's",
        );
        broken(
            &|p| p["dependencies"][0]["req"] = json!("^1.2.3"),
            "not `=1.2.3`",
        );
        broken(&|p| p["publish"] = json!([]), "says `publish = false`");
        broken(&|p| p["description"] = json!(null), "no `description`");
        broken(&|p| p["repository"] = json!(""), "no `repository`");
        broken(&|p| p["rust_version"] = json!(null), "no `rust-version`");
        broken(&|p| p["keywords"] = json!([]), "0 keywords");
        broken(
            &|p| p["keywords"] = json!(["a", "b", "c", "d", "e", "f"]),
            "6 keywords",
        );
        broken(
            &|p| p["keywords"] = json!(["model context"]),
            "keyword \"model context\"",
        );
        broken(&|p| p["categories"] = json!(null), "0 categories");
        broken(
            &|p| p["readme"] = json!(null),
            "`readme = \"README.md\"` is not set",
        );
        broken(
            &|p| p["manifest_path"] = json!("/elsewhere/Cargo.toml"),
            "README.md is missing",
        );

        // A test tool that could be published, and a published crate that is gone.
        let mut meta2 = meta.clone();
        meta2["packages"][8]["publish"] = json!(null);
        let found = problems(&meta2, &files);
        assert!(
            found[0].starts_with("mcp-testkit: not in xtask's PUBLISHED"),
            "{found:?}"
        );
        let mut meta3 = meta.clone();
        meta3["packages"].as_array_mut().unwrap().remove(0);
        let found = problems(&meta3, &files);
        assert_eq!(found, ["mcp-protocol: not a member of the workspace"]);
    }

    #[test]
    fn a_readme_shows_code_that_is_in_the_crate() {
        let (meta, files) = ready();
        let readme = PathBuf::from("/w/crates/mcp-host/README.md");
        let with = |text: &str| {
            let mut files = files.clone();
            files.insert(readme.clone(), text.to_owned());
            problems(&meta, &files)
        };
        // Indentation aside, the lines must be there, in order, one after another.
        assert_eq!(with("```rust\n    let b = a;\n```\n"), Vec::<String>::new());
        let found = with("```rust\nlet b = a;\nlet a = 1;\n```\n");
        assert!(
            found.len() == 1
                && found[0].contains("starting \"let b = a;\" is not found in src/lib.rs"),
            "{found:?}"
        );
        // Other languages are not checked, but a library must show some Rust.
        let found = with("```sh\ncargo add mcp-host\n```\n");
        assert!(
            found.len() == 1 && found[0].contains("shows no Rust example"),
            "{found:?}"
        );
        // An example file counts as much as the crate documentation.
        let mut meta = meta.clone();
        meta["packages"][5]["targets"]
            .as_array_mut()
            .unwrap()
            .push(json!({"kind": ["example"], "src_path": "/w/crates/mcp-host/examples/e.rs"}));
        let mut files = files.clone();
        files.insert(
            PathBuf::from("/w/crates/mcp-host/examples/e.rs"),
            "fn main() {\n    run();\n}\n".to_owned(),
        );
        files.insert(readme, "```rust\nrun();\n```\n".to_owned());
        assert_eq!(problems(&meta, &files), Vec::<String>::new());
    }

    #[test]
    fn a_package_holds_its_code_and_readme_and_no_test_data() {
        let good = "mcp-x-1.2.3/Cargo.toml\nmcp-x-1.2.3/Cargo.toml.orig\nmcp-x-1.2.3/README.md\nmcp-x-1.2.3/src/lib.rs\nmcp-x-1.2.3/examples/e.rs\n";
        assert_eq!(check_files("mcp-x", good), Vec::<String>::new());
        let found = check_files(
            "mcp-x",
            &format!("{good}mcp-x-1.2.3/tests/it/main.rs\nmcp-x-1.2.3/src/a/snapshots/s.snap\n"),
        );
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].contains("ships tests/it/main.rs"), "{found:?}");
        let found = check_files("mcp-x", "mcp-x-1.2.3/Cargo.toml\nmcp-x-1.2.3/src/main.rs\n");
        assert_eq!(found, ["mcp-x: the package lacks README.md"]);
        let found = check_files("mcp-x", "");
        assert_eq!(
            found.len(),
            3,
            "an empty listing is not a package: {found:?}"
        );
    }
}
