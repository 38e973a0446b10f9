//! The configuration parsers: `mcp-host`'s native `config.json` (`{"version":1,"mcp":{…}}`),
//! the common `.mcp.json` (`{"mcpServers":{…}}`), and `mcp-gateway`'s gateway file; and the
//! command line's edits of a native file.
//!
//! The first byte picks the file (native global, `.mcp.json` project, native project, gateway
//! file); the rest is written to a file in a private temporary folder and loaded, with an
//! environment holding a secret that `{"env": "TOKEN"}` references resolve to.
//!
//! Properties, for any file:
//! - loading never panics, and the secret appears in nothing shown: not in the `Debug` of
//!   the loaded configuration or the gateway's entries, not in a problem or an error;
//! - in a native file, removing a server the load found (`remove_server`) leaves the others
//!   exactly as they were and that id gone, and disabling it (`set_enabled(false)`) leaves it
//!   disabled and otherwise unchanged.

#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mcp_host::LoadedConfig;
use mcp_host::config::{self, ConfigFile, Env, FileFormat, Scope};

/// What `{"env": "TOKEN"}` resolves to; the fuzzer never sees it compared with anything.
const SECRET: &str = "zQ9-fuzz-S3CR3T-7Kp";

fuzz_target!(|data: &[u8]| {
    let Some((&kind, file)) = data.split_first() else {
        return;
    };
    let dir = scratch();
    let env = Env::new()
        .with("TOKEN", SECRET)
        .with("HOME", dir.display().to_string());
    let leaks = |shown: &str| !contains(file, SECRET.as_bytes()) && shown.contains(SECRET);
    match kind % 4 {
        3 => {
            let path = dir.join("gateway.json");
            write(&path, file);
            let shown = match mcp_gateway::load(&path, &env, None) {
                Ok(loaded) => {
                    for entry in &loaded.entries {
                        assert!(loaded.file.mcp_servers.contains_key(&entry.id));
                    }
                    format!("{loaded:?} {}", loaded.warnings.join("\n"))
                }
                Err(e) => format!("{e} {e:?}"),
            };
            assert!(!leaks(&shown), "{shown}");
        }
        k => {
            let (name, scope, format) = match k {
                0 => ("config.json", Scope::Global, FileFormat::Native),
                1 => (".mcp.json", Scope::Project, FileFormat::McpServers),
                _ => ("project.json", Scope::Project, FileFormat::Native),
            };
            let path = dir.join(name);
            write(&path, file);
            let files = [ConfigFile::new(&path, scope, format)];
            let loaded = config::load_files(&files, &env, &dir);
            let problems: Vec<String> = loaded.problems.iter().map(ToString::to_string).collect();
            let shown = format!("{loaded:?} {}", problems.join("\n"));
            assert!(!leaks(&shown), "{shown}");
            if format == FileFormat::Native {
                edits(&path, file, &files, &env, &dir, &loaded);
            }
        }
    }
});

fn edits(
    path: &Path,
    file: &[u8],
    files: &[ConfigFile],
    env: &Env,
    dir: &Path,
    loaded: &LoadedConfig,
) {
    for server in &loaded.servers {
        write(path, file);
        config::remove_server(path, &server.id)
            .unwrap_or_else(|e| panic!("removing {:?}, which loaded: {e}", server.id));
        let after = config::load_files(files, env, dir);
        let others: Vec<_> = loaded
            .servers
            .iter()
            .filter(|s| s.id != server.id)
            .collect();
        assert_eq!(
            after.servers.iter().collect::<Vec<_>>(),
            others,
            "after removing {:?}",
            server.id
        );
        assert!(after.rejected.iter().all(|r| r.id != server.id));

        write(path, file);
        config::set_enabled(path, &server.id, false)
            .unwrap_or_else(|e| panic!("disabling {:?}, which loaded: {e}", server.id));
        let after = config::load_files(files, env, dir);
        let expected: Vec<_> = loaded
            .servers
            .iter()
            .map(|s| {
                let mut s = s.clone();
                if s.id == server.id {
                    s.enabled = false;
                }
                s
            })
            .collect();
        assert_eq!(after.servers, expected, "after disabling {:?}", server.id);
    }
}

/// A private folder of this process, made once.
fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("mcp-fuzz-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch folder in the temporary folder");
        dir
    })
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).expect("writing the scratch file");
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
