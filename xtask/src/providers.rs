//! `cargo xtask interop`'s model-API leg: the tool definitions `mcp-host tools --format …`
//! prints are accepted by the providers' own SDK types. The `anthropic`, `openai` and
//! `google-genai` packages (and `jsonschema`, for the draft 2020-12 metaschema) are installed
//! pinned from PyPI into `target/tools/provider-sdks`; `xtask/providers/check_tools.py`
//! validates each definition against their request parameter types, with no network.
//!
//! The tools come from three servers, as a user's `mcp-host` sees them: the serena fixture
//! and the hostile schemas of `fixtures/model-apis/` (both served by the testkit's fake
//! server), and the TypeScript everything server. The script first shows, on definitions
//! broken on purpose, that each of its checks can refuse.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context as _, bail};
use xshell::{Shell, cmd};

use crate::bounded::{self, PEER_STEP};
use crate::project_root;

/// The pinned packages: the three providers' official SDKs, and the JSON Schema metaschema.
const SDKS: &[(&str, &str)] = &[
    ("anthropic", "2.14.0"),
    ("openai", "3.57.0"),
    ("google-genai", "3.6.1"),
    ("jsonschema", "4.26.0"),
];

/// Every `--format`.
const FORMATS: &[&str] = &[
    "anthropic",
    "openai",
    "openai-responses",
    "openai-strict",
    "gemini",
];

/// Runs the leg; `node` and `everything` are the Node and the everything server's entry
/// script that interop installed.
pub(crate) fn run(sh: &Shell, node: &Path, everything: &Path) -> anyhow::Result<()> {
    let tools = project_root().join("target/tools");
    let python = provider_sdks(sh, &tools)?;
    let check = project_root().join("xtask/providers/check_tools.py");
    let versions: Vec<String> = SDKS.iter().map(|(n, v)| format!("{n}=={v}")).collect();
    eprintln!(
        "==> model API tool definitions against {}",
        versions.join(", ")
    );
    bounded::run(
        cmd!(sh, "{python} {check} selftest"),
        "the provider checks' self-test",
        PEER_STEP,
    )?;

    let mcp_host = crate::binaries::build(sh)?.join("mcp-host");
    let fake = crate::binaries::build(sh)?.join("mcp-fake-server");
    let fixtures = project_root().join("fixtures");
    let user = tools.join("interop-providers");
    let _ = std::fs::remove_dir_all(&user);
    let (home, project, out) = (user.join("home"), user.join("project"), user.join("out"));
    for dir in [&home, &project, &out] {
        std::fs::create_dir_all(dir)?;
    }
    let sh = sh.clone();
    let _dir = sh.push_dir(&project);
    let _home = sh.push_env("HOME", &home);
    let _config = sh.push_env("MCP_HOST_CONFIG", "");
    let _xdg = sh.push_env("XDG_CONFIG_HOME", "");
    let serena = fixtures.join("gateway/serena-tools.json");
    let hostile = fixtures.join("model-apis/hostile-tools.json");
    let quiet = |c: xshell::Cmd<'_>| c.quiet().ignore_stdout().ignore_stderr().run();
    quiet(cmd!(
        sh,
        "{mcp_host} add serena --scope global -- {fake} --tools-file {serena}"
    ))?;
    quiet(cmd!(
        sh,
        "{mcp_host} add hostile --scope global -- {fake} --tools-file {hostile}"
    ))?;
    quiet(cmd!(
        sh,
        "{mcp_host} add everything --scope global -- {node} {everything} stdio"
    ))?;

    for server in ["serena", "everything", "hostile"] {
        for format in FORMATS {
            let file = out.join(format!("{server}-{format}.json"));
            let notes = tools_as(&mcp_host, &home, &project, server, format, &file)?;
            let report = bounded::read(
                cmd!(sh, "{python} {check} {format} {file}"),
                &format!("checking {server}'s tools as {format}"),
                PEER_STEP,
            )
            .with_context(|| format!("{server}'s tools as {format}, in {}", file.display()))?;
            eprintln!("{server}: {}", report.trim());
            let left_out = notes
                .lines()
                .filter(|l| l.contains("): left out: "))
                .count();
            match server {
                // Well-formed servers lose nothing.
                "serena" | "everything" if left_out > 0 => {
                    bail!("{server}'s tools as {format} lost tools:\n{notes}")
                }
                // The hostile set holds schemas no API can take: they must be named, not sent.
                "hostile" if left_out < 4 => {
                    bail!("the hostile tools as {format}: too few left out:\n{notes}")
                }
                _ => {}
            }
            if !report.contains(" tool definitions accepted")
                || report.starts_with(&format!("{format}: 0 "))
            {
                bail!("{server}'s tools as {format}: nothing was checked: {report}");
            }
        }
    }
    Ok(())
}

/// `mcp-host tools SERVER --format FORMAT` into `file`; its notes (stderr) are returned.
fn tools_as(
    mcp_host: &Path,
    home: &Path,
    project: &Path,
    server: &str,
    format: &str,
    file: &Path,
) -> anyhow::Result<String> {
    let notes = file.with_extension("notes.txt");
    let mut command = Command::new(mcp_host);
    command
        .args(["tools", server, "--format", format])
        .current_dir(project)
        .env("HOME", home)
        .env("MCP_HOST_CONFIG", "")
        .env("XDG_CONFIG_HOME", "")
        .stderr(Stdio::from(std::fs::File::create(&notes)?));
    let json = bounded::read(
        command,
        &format!("`mcp-host tools {server} --format {format}`"),
        PEER_STEP,
    )?;
    std::fs::write(file, &json)?;
    Ok(std::fs::read_to_string(&notes)?)
}

/// A Python with the pinned SDKs, in a virtual environment under `tools`, reinstalled when a
/// version differs.
fn provider_sdks(sh: &Shell, tools: &Path) -> anyhow::Result<PathBuf> {
    let home = tools.join("provider-sdks");
    let python = home.join("bin/python");
    if installed(sh, &python) {
        return Ok(python);
    }
    let specs: Vec<String> = SDKS.iter().map(|(n, v)| format!("{n}=={v}")).collect();
    eprintln!(
        "==> installing {} from PyPI into {}",
        specs.join(" "),
        home.display()
    );
    let listed = specs.join(" ");
    let _ = std::fs::remove_dir_all(&home);
    cmd!(sh, "python3 -m venv {home}")
        .run()
        .context("python3 -m venv failed; is python3 with venv here?")?;
    cmd!(
        sh,
        "{python} -m pip install --quiet --disable-pip-version-check {specs...}"
    )
    .run()
    .with_context(|| format!("pip could not install {listed}"))?;
    if !installed(sh, &python) {
        bail!("after installing {listed}, the versions differ");
    }
    Ok(python)
}

/// Whether `python` has every pinned package at its version.
fn installed(sh: &Shell, python: &Path) -> bool {
    if !python.exists() {
        return false;
    }
    let probe = format!(
        "import importlib.metadata as m; print(all(m.version(n) == v for n, v in {:?}))",
        SDKS
    );
    cmd!(sh, "{python} -c {probe}")
        .quiet()
        .ignore_stderr()
        .read()
        .is_ok_and(|out| out.trim() == "True")
}
