//! The environment a server starts with: a small allow-list of the host's variables, plus what
//! the configuration names. A server never sees the host's tokens and keys unless the user
//! passes them on purpose.

use mcp_protocol::Secrets;

/// Host variables a server gets by default: enough for a shell, a locale, temporary files, and
/// the Node and Python launchers (`npx`, `uvx`) to find their caches and certificates.
pub const ALLOWED_VARS: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    "TMP",
    "TEMP",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_RUNTIME_DIR",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "NVM_DIR",
    "VIRTUAL_ENV",
    "PYENV_ROOT",
    "UV_CACHE_DIR",
    "npm_config_cache",
    "SYSTEMROOT",
    "APPDATA",
    "LOCALAPPDATA",
    "USERPROFILE",
    "PROGRAMDATA",
    "COMSPEC",
    "PATHEXT",
];

/// Prefixes of host variables a server gets by default (the locale family).
pub const ALLOWED_PREFIXES: &[&str] = &["LC_"];

/// Whether a host variable passes the allow-list.
pub fn is_allowed(name: &str) -> bool {
    ALLOWED_VARS.contains(&name) || ALLOWED_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// The variables to start a server with: the allowed part of `host` (or all of it when
/// `inherit` is set), then `configured`, which wins.
pub fn build(
    host: impl IntoIterator<Item = (String, String)>,
    configured: &[(String, String)],
    inherit: bool,
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = host
        .into_iter()
        .filter(|(k, _)| inherit || is_allowed(k))
        .filter(|(k, _)| !configured.iter().any(|(c, _)| c == k))
        .collect();
    env.extend(configured.iter().cloned());
    env.sort();
    env
}

/// The values no text about a server may show (its stderr here, its errors and status in the
/// host): every configured value (at least [`Secrets::CONFIGURED_MIN`] bytes; a shorter one
/// would blank out common words), and the value of every variable the server started with
/// beyond the allow-list (at least [`Secrets::INHERITED_MIN`] bytes), which is how the host's
/// own tokens and keys reach a server with `inherit_env`. The allow-list's values (a `PATH`, a
/// `HOME`) stay: they are no secrets, and blanking them would garble the messages. `started`
/// is what [`build`] gave.
pub fn secrets(configured: &[(String, String)], started: &[(String, String)]) -> Secrets {
    let configured_values = configured
        .iter()
        .map(|(_, v)| v)
        .filter(|v| v.len() >= Secrets::CONFIGURED_MIN);
    let inherited = started
        .iter()
        .filter(|(k, _)| !is_allowed(k) && !configured.iter().any(|(c, _)| c == k))
        .map(|(_, v)| v)
        .filter(|v| v.len() >= Secrets::INHERITED_MIN);
    Secrets::new(configured_values.chain(inherited).cloned())
}

#[cfg(test)]
mod tests {
    use super::{Secrets, build, secrets};

    fn host() -> Vec<(String, String)> {
        [
            ("PATH", "/bin"),
            ("AWS_SECRET_ACCESS_KEY", "s3cr3t"),
            ("LC_ALL", "C"),
            ("HOME", "/h"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    #[test]
    fn only_the_allow_list_and_the_configuration_pass() {
        let configured = vec![
            ("API_KEY".to_owned(), "k".to_owned()),
            ("HOME".to_owned(), "/x".to_owned()),
        ];
        let env = build(host(), &configured, false);
        let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["API_KEY", "HOME", "LC_ALL", "PATH"]);
        assert!(
            env.contains(&("HOME".to_owned(), "/x".to_owned())),
            "configuration wins"
        );
    }

    #[test]
    fn inheritance_is_explicit() {
        let env = build(host(), &[], true);
        assert!(env.iter().any(|(k, _)| k == "AWS_SECRET_ACCESS_KEY"));
    }

    #[test]
    fn what_is_redacted_configured_and_inherited() {
        let configured = vec![
            ("API_KEY".to_owned(), "key-1234".to_owned()),
            ("SHORT".to_owned(), "abc".to_owned()),
        ];
        let mut host = host();
        host.push(("GITHUB_TOKEN".to_owned(), "ghp_0123456789".to_owned()));
        host.push(("DEBUG".to_owned(), "true".to_owned()));

        // With the allow-list, nothing of the host's beyond it is there to redact.
        let allowed = build(host.clone(), &configured, false);
        let only = |values: &[&str]| Secrets::new(values.iter().map(|v| (*v).to_owned()));
        assert_eq!(secrets(&configured, &allowed), only(&["key-1234"]));

        // Inherited, the host's keys are redacted too; its allow-listed values and short
        // values are not.
        let inherited = build(host, &configured, true);
        assert_eq!(
            secrets(&configured, &inherited),
            only(&["ghp_0123456789", "key-1234"])
        );
    }
}
