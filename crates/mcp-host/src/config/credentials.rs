//! Where OAuth credentials are kept: the `mcp.credentials_store` setting of the user's own
//! (global) file, as Codex's `mcp_oauth_credentials_store`: `auto` (the default: the OS
//! keyring when one answers and keeps secrets across reboots, else the file), `keyring` (the
//! OS keyring, the Linux kernel keyring included, or an error), `file`
//! (`mcp-auth.json`, mode 0600). `MCP_HOST_CREDENTIALS_STORE` overrides the file for one run.
//!
//! Only the user's file is read for it: a project's file comes with a repository, and where
//! a user's tokens live is not a repository's choice (a project file that sets it gets a
//! warning, and is ignored).

use std::fmt;

use serde_json::Value;

use super::{ConfigPaths, Env};

/// Where OAuth tokens (and the client secrets of dynamic registration) are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CredentialsStore {
    /// The OS keyring when one is usable and outlives a reboot, else the file; the choice is
    /// logged.
    #[default]
    Auto,
    /// The OS keyring; without a usable one, OAuth logins fail and say why.
    Keyring,
    /// The file `mcp-auth.json` beside the global configuration (mode 0600).
    File,
}

impl CredentialsStore {
    /// The setting's value as written, or `None` for anything else.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "auto" => Some(Self::Auto),
            "keyring" => Some(Self::Keyring),
            "file" => Some(Self::File),
            _ => None,
        }
    }

    /// The setting for this user: `MCP_HOST_CREDENTIALS_STORE`, else the global file's
    /// `mcp.credentials_store`, else `auto`. A value that is not one of the three is taken as
    /// `auto` here; loading the configuration reports it as a problem of the file.
    pub fn for_user(paths: &ConfigPaths, env: &Env) -> Self {
        if let Some(v) = env
            .var("MCP_HOST_CREDENTIALS_STORE")
            .filter(|v| !v.is_empty())
        {
            return Self::parse(v).unwrap_or_default();
        }
        let Some(global) = paths.global.as_deref() else {
            return Self::default();
        };
        let Ok(bytes) = std::fs::read(global) else {
            return Self::default();
        };
        serde_json::from_slice::<Value>(&bytes)
            .ok()
            .and_then(|doc| {
                doc.get("mcp")?
                    .get("credentials_store")?
                    .as_str()
                    .and_then(Self::parse)
            })
            .unwrap_or_default()
    }
}

impl fmt::Display for CredentialsStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Auto => "auto",
            Self::Keyring => "keyring",
            Self::File => "file",
        })
    }
}
