//! The operating system's keyring: named secrets the user keeps out of every file
//! (`mcp-host secret set NAME`, `{"keyring": "NAME"}` in a configuration), and the OAuth token
//! store when the credentials store setting says `keyring` (or `auto` finds one).
//!
//! # Which keyring
//!
//! | Platform | Keyring | Lasts |
//! |---|---|---|
//! | Linux with a session bus | the Secret Service (GNOME Keyring, KeePassXC, KWallet's bridge) | on disk, encrypted by the service |
//! | Linux without one (servers, containers, SSH) | the kernel keyring (keyutils), the user keyring `@u` | in kernel memory, until reboot |
//! | macOS | the login Keychain | on disk |
//! | Windows | the Credential Manager | on disk |
//!
//! [`Keyring::open`] takes the first that answers, in that order on Linux (the Secret Service
//! only where `DBUS_SESSION_BUS_ADDRESS` says a session bus runs), and says which
//! ([`Keyring::kind`]); `MCP_HOST_KEYRING` (`secret-service`, `keyutils`, `keychain`,
//! `credential-manager`) names one and takes no other. Only the backends of the target are
//! compiled in; the Secret Service one needs this crate's `secret-service` feature (pure Rust,
//! zbus: no libdbus headers are needed to build).
//!
//! # Use from other modules (and the command line)
//!
//! ```no_run
//! # fn demo() -> Result<(), mcp_host::keyring::KeyringError> {
//! use mcp_host::config::{Env, Secret};
//! use mcp_host::keyring::Keyring;
//! let keyring = Keyring::open(&Env::from_process())?;
//! keyring.set_secret("github-token", &Secret::new("ghp_…"))?;
//! let token = keyring.secret("github-token")?; // Some(Secret), printed as [redacted]
//! let names = keyring.secret_names()?; // ["github-token"]
//! keyring.remove_secret("github-token")?;
//! # Ok(()) }
//! ```
//!
//! A configuration refers to a secret as `{"keyring": "github-token"}` wherever it may say
//! `{"env": "VAR"}` (`env` and `headers` values): resolved at load, an error naming the
//! server, the field and the entry when it is missing. A secret typed on the command line
//! (`mcp-host add --header …`) belongs here rather than in a project's file.
//!
//! Every call blocks (a D-Bus round trip, a system call); async code runs them with
//! `tokio::task::spawn_blocking`. Errors name the keyring, the operation and the entry, never
//! a value.

#[cfg(target_os = "linux")]
mod keyutils;
#[cfg(any(
    all(target_os = "linux", feature = "secret-service"),
    target_os = "macos",
    target_os = "windows"
))]
mod native;

#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::Arc;

use crate::config::{Env, Secret};

/// The service every entry of ours is filed under, so that another program's entries are
/// never read, listed or removed.
const SERVICE: &str = "mcp-host";

/// The prefix of the user's named secrets among our entries (the OAuth store has its own).
const SECRET_PREFIX: &str = "secret:";

/// The longest secret name: names are typed, and show in lists and errors.
const MAX_NAME: usize = 128;

/// Which keyring a [`Keyring`] talks to. `Display` is the name `MCP_HOST_KEYRING` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyringKind {
    /// The freedesktop Secret Service on the session bus (Linux).
    SecretService,
    /// The Linux kernel keyring: memory only, lost at reboot.
    Keyutils,
    /// The macOS login Keychain.
    Keychain,
    /// The Windows Credential Manager.
    CredentialManager,
}

impl KeyringKind {
    /// Every kind, in the order [`Keyring::open`] tries them on a platform that has them.
    pub const ALL: [Self; 4] = [
        Self::SecretService,
        Self::Keyutils,
        Self::Keychain,
        Self::CredentialManager,
    ];

    fn name(self) -> &'static str {
        match self {
            Self::SecretService => "secret-service",
            Self::Keyutils => "keyutils",
            Self::Keychain => "keychain",
            Self::CredentialManager => "credential-manager",
        }
    }

    /// Whether its secrets outlive a reboot (the kernel keyring's do not).
    pub fn is_persistent(self) -> bool {
        self != Self::Keyutils
    }
}

impl fmt::Display for KeyringKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why the keyring could not be used. Messages name the keyring, the operation and the
/// entry, never a value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyringError {
    /// No keyring answered (each one tried says why), or this build has none for the
    /// platform.
    #[error("no OS keyring is usable: {tried}")]
    Unavailable {
        /// Each keyring tried and why it failed.
        tried: String,
    },
    /// `MCP_HOST_KEYRING` names no keyring this build knows.
    #[error(
        "MCP_HOST_KEYRING={value} is not a keyring; use secret-service, keyutils, keychain or credential-manager"
    )]
    UnknownKind {
        /// The variable's value.
        value: String,
    },
    /// A secret name that is empty, too long, or has characters other than ASCII letters,
    /// digits, `-`, `_` and `.`.
    #[error("{name:?} is not a secret name: use up to 128 ASCII letters, digits, '-', '_' and '.'")]
    InvalidName {
        /// The name.
        name: String,
    },
    /// An empty value: no keyring keeps one (the kernel keyring cannot), and an empty
    /// secret is always a mistake.
    #[error("the value for {name} is empty")]
    EmptyValue {
        /// The entry.
        name: String,
    },
    /// The keyring refused or failed an operation.
    #[error("the {kind} keyring could not {op} {name}: {cause}")]
    Failed {
        /// The keyring.
        kind: KeyringKind,
        /// What was being done: `read`, `write`, `remove`, `list`.
        op: &'static str,
        /// The entry (or `entries` for a list).
        name: String,
        /// The keyring's own words.
        cause: String,
    },
}

/// One backend, compiled in only where it exists.
#[derive(Debug)]
enum Backend {
    #[cfg(target_os = "linux")]
    Keyutils(keyutils::Keyutils),
    #[cfg(any(
        all(target_os = "linux", feature = "secret-service"),
        target_os = "macos",
        target_os = "windows"
    ))]
    Native(native::Native),
    /// Keeps the enum inhabited-in-type on targets with no keyring compiled in; never built.
    #[allow(dead_code)]
    Unsupported(std::convert::Infallible),
}

/// A handle on the OS keyring: cheap to clone, shared between threads. `Debug` shows which
/// keyring.
#[derive(Clone)]
pub struct Keyring {
    kind: KeyringKind,
    backend: Arc<Backend>,
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyring").field("kind", &self.kind).finish()
    }
}

/// Whether `name` may name a secret: 1 to 128 ASCII letters, digits, `-`, `_` and `.`. The
/// same rule for every keyring, so that a name that works on one works on all.
pub fn is_valid_secret_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn checked(name: &str) -> Result<(), KeyringError> {
    if is_valid_secret_name(name) {
        Ok(())
    } else {
        Err(KeyringError::InvalidName {
            name: name.chars().take(MAX_NAME).collect(),
        })
    }
}

impl Keyring {
    /// The first usable keyring of this platform (see the module doc), or the one
    /// `MCP_HOST_KEYRING` names in `env`. Each candidate is checked with a look-up, so a
    /// session bus without a Secret Service on it is passed over, not taken.
    pub fn open(env: &Env) -> Result<Self, KeyringError> {
        let wanted = match env.var("MCP_HOST_KEYRING").filter(|v| !v.is_empty()) {
            Some(v) => Some(
                KeyringKind::ALL
                    .into_iter()
                    .find(|k| k.name() == v)
                    .ok_or_else(|| KeyringError::UnknownKind {
                        value: v.to_owned(),
                    })?,
            ),
            None => None,
        };
        let mut tried = Vec::new();
        for kind in KeyringKind::ALL {
            if wanted.is_some_and(|w| w != kind) {
                continue;
            }
            // A session runs a bus when it says where (every desktop session does): without
            // `DBUS_SESSION_BUS_ADDRESS` the Secret Service is not looked for unless named, so
            // that a process started with a cleared environment (a test, a service) never
            // lands in the desktop user's keyring by way of zbus's fallback address.
            if kind == KeyringKind::SecretService
                && wanted.is_none()
                && env
                    .var("DBUS_SESSION_BUS_ADDRESS")
                    .is_none_or(str::is_empty)
            {
                continue;
            }
            match Self::open_kind(kind) {
                Some(Ok(backend)) => {
                    return Ok(Self {
                        kind,
                        backend: Arc::new(backend),
                    });
                }
                Some(Err(why)) => tried.push(format!("{kind}: {why}")),
                None if wanted.is_some() => {
                    tried.push(format!("{kind}: not compiled into this build"));
                }
                None => {}
            }
        }
        if tried.is_empty() {
            tried.push("this build has no keyring for this platform".to_owned());
        }
        Err(KeyringError::Unavailable {
            tried: tried.join("; "),
        })
    }

    /// `None`: not compiled in for this target.
    fn open_kind(kind: KeyringKind) -> Option<Result<Backend, String>> {
        match kind {
            #[cfg(all(target_os = "linux", feature = "secret-service"))]
            KeyringKind::SecretService => {
                Some(native::Native::secret_service().map(Backend::Native))
            }
            #[cfg(target_os = "linux")]
            KeyringKind::Keyutils => Some(keyutils::Keyutils::open().map(Backend::Keyutils)),
            #[cfg(target_os = "macos")]
            KeyringKind::Keychain => Some(native::Native::keychain().map(Backend::Native)),
            #[cfg(target_os = "windows")]
            KeyringKind::CredentialManager => {
                Some(native::Native::credential_manager().map(Backend::Native))
            }
            _ => None,
        }
    }

    /// Which keyring this is.
    pub fn kind(&self) -> KeyringKind {
        self.kind
    }

    /// The secret called `name`, if the keyring has it.
    pub fn secret(&self, name: &str) -> Result<Option<Secret>, KeyringError> {
        checked(name)?;
        let bytes = self.get_entry(&format!("{SECRET_PREFIX}{name}"), name)?;
        bytes
            .map(|b| {
                String::from_utf8(b)
                    .map(Secret::new)
                    .map_err(|_| self.failed("read", name, "the stored value is not UTF-8".into()))
            })
            .transpose()
    }

    /// Stores `value` as the secret called `name`, replacing any value it had.
    pub fn set_secret(&self, name: &str, value: &Secret) -> Result<(), KeyringError> {
        checked(name)?;
        self.set_entry(
            &format!("{SECRET_PREFIX}{name}"),
            name,
            value.secret().as_bytes(),
        )
    }

    /// Removes the secret called `name`; `false` when there was none.
    pub fn remove_secret(&self, name: &str) -> Result<bool, KeyringError> {
        checked(name)?;
        self.remove_entry(&format!("{SECRET_PREFIX}{name}"), name)
    }

    /// The names of the secrets kept, sorted; never their values.
    pub fn secret_names(&self) -> Result<Vec<String>, KeyringError> {
        let mut names: Vec<String> = self
            .users(SECRET_PREFIX)?
            .into_iter()
            .filter_map(|u| u.strip_prefix(SECRET_PREFIX).map(str::to_owned))
            .filter(|n| is_valid_secret_name(n))
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    fn failed(&self, op: &'static str, name: &str, cause: String) -> KeyringError {
        KeyringError::Failed {
            kind: self.kind,
            op,
            name: name.to_owned(),
            cause,
        }
    }

    /// Our entry `user` (shown as `shown` in errors).
    pub(crate) fn get_entry(
        &self,
        user: &str,
        shown: &str,
    ) -> Result<Option<Vec<u8>>, KeyringError> {
        match &*self.backend {
            #[cfg(target_os = "linux")]
            Backend::Keyutils(k) => k.get(&description(user)),
            #[cfg(any(
                all(target_os = "linux", feature = "secret-service"),
                target_os = "macos",
                target_os = "windows"
            ))]
            Backend::Native(n) => n.get(user),
            Backend::Unsupported(never) => match *never {},
        }
        .map_err(|e| self.failed("read", shown, e))
    }

    pub(crate) fn set_entry(
        &self,
        user: &str,
        shown: &str,
        value: &[u8],
    ) -> Result<(), KeyringError> {
        if value.is_empty() {
            return Err(KeyringError::EmptyValue {
                name: shown.to_owned(),
            });
        }
        match &*self.backend {
            #[cfg(target_os = "linux")]
            Backend::Keyutils(k) => k.set(&description(user), value),
            #[cfg(any(
                all(target_os = "linux", feature = "secret-service"),
                target_os = "macos",
                target_os = "windows"
            ))]
            Backend::Native(n) => n.set(user, value),
            Backend::Unsupported(never) => match *never {},
        }
        .map_err(|e| self.failed("write", shown, e))
    }

    pub(crate) fn remove_entry(&self, user: &str, shown: &str) -> Result<bool, KeyringError> {
        match &*self.backend {
            #[cfg(target_os = "linux")]
            Backend::Keyutils(k) => k.remove(&description(user)),
            #[cfg(any(
                all(target_os = "linux", feature = "secret-service"),
                target_os = "macos",
                target_os = "windows"
            ))]
            Backend::Native(n) => n.remove(user),
            Backend::Unsupported(never) => match *never {},
        }
        .map_err(|e| self.failed("remove", shown, e))
    }

    fn users(&self, prefix: &str) -> Result<Vec<String>, KeyringError> {
        match &*self.backend {
            #[cfg(target_os = "linux")]
            Backend::Keyutils(k) => k.descriptions(&description(prefix)).map(|ds| {
                ds.into_iter()
                    .filter_map(|d| d.strip_prefix(&description("")).map(str::to_owned))
                    .collect()
            }),
            #[cfg(any(
                all(target_os = "linux", feature = "secret-service"),
                target_os = "macos",
                target_os = "windows"
            ))]
            Backend::Native(n) => n.users(prefix),
            Backend::Unsupported(never) => match *never {},
        }
        .map_err(|e| self.failed("list", "entries", e))
    }
}

/// The kernel keyring's description of our entry `user`: one namespace for the whole user
/// keyring, so the service is part of it.
#[cfg(target_os = "linux")]
fn description(user: &str) -> String {
    format!("{SERVICE}:{user}")
}
