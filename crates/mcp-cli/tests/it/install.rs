//! What README.md's install section promises holds for this crate: `cargo install --path
//! crates/mcp-cli` and `cargo binstall mcp-cli` get a binary named `mcp-host`, and the binstall
//! metadata names an archive per version and target that holds that binary.

use super::*;

/// The lines of `[section]` of a manifest, up to the next section.
fn section<'a>(manifest: &'a str, name: &str) -> Vec<&'a str> {
    manifest
        .lines()
        .skip_while(|line| line.trim() != name)
        .skip(1)
        .take_while(|line| !line.trim_start().starts_with('['))
        .collect()
}

/// The string value of `key = "…"` among `lines`.
fn value<'a>(lines: &[&'a str], key: &str) -> Option<&'a str> {
    lines.iter().find_map(|line| {
        let rest = line
            .trim()
            .strip_prefix(key)?
            .trim_start()
            .strip_prefix('=')?;
        rest.trim().strip_prefix('"')?.strip_suffix('"')
    })
}

#[test]
fn the_install_commands_get_the_mcp_host_binary_and_binstall_finds_its_archive() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    assert_eq!(
        value(&section(&manifest, "[package]"), "name"),
        Some("mcp-cli")
    );
    assert_eq!(
        value(&section(&manifest, "[[bin]]"), "name"),
        Some("mcp-host")
    );
    assert!(bin().ends_with("/mcp-host"), "{}", bin());

    let binstall = section(&manifest, "[package.metadata.binstall]");
    let url = value(&binstall, "pkg-url").unwrap_or_else(|| panic!("no pkg-url: {binstall:?}"));
    let inner = value(&binstall, "bin-dir").unwrap_or_else(|| panic!("no bin-dir: {binstall:?}"));
    assert_eq!(value(&binstall, "pkg-fmt"), Some("tgz"));
    // Each release and target has an archive of its own, and binstall fills in the binary's
    // name: the archive and the path inside it agree.
    for placeholder in [
        "{ repo }",
        "{ version }",
        "{ target }",
        "{ bin }",
        "{ archive-suffix }",
    ] {
        assert!(url.contains(placeholder), "{placeholder} not in {url}");
    }
    let archive = url.rsplit('/').next().unwrap();
    let stem = archive.strip_suffix("{ archive-suffix }").unwrap();
    assert_eq!(inner, format!("{stem}/{{ bin }}{{ binary-ext }}"));

    // README.md's commands name this crate.
    let readme = std::fs::read_to_string(dir.join("../../README.md")).unwrap();
    for command in [
        "cargo install --locked --path crates/mcp-cli",
        "cargo install --locked mcp-cli",
        "cargo binstall mcp-cli",
    ] {
        assert!(readme.contains(command), "README.md lacks `{command}`");
    }
}
