//! The platform's own secret stores through `keyring-core`'s store crates: the Secret Service
//! (GNOME Keyring, KeePassXC, KWallet's bridge) over D-Bus on Linux, the Keychain on macOS, the
//! Credential Manager on Windows. Each is compiled in only for its own target.
//!
//! Entries are `(service, user)` pairs: the service is always `mcp-host`, the user names the
//! entry (`secret:NAME`, `oauth:…`), so that another program's entries are never read or
//! listed.

use std::collections::HashMap;
use std::sync::Arc;

use keyring_core::{CredentialStore, Entry, Error};

use super::SERVICE;

/// One platform store.
pub(super) struct Native {
    store: Arc<CredentialStore>,
}

impl std::fmt::Debug for Native {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Native").finish_non_exhaustive()
    }
}

fn text(e: &Error) -> String {
    // keyring-core's messages name the store and the failure, never a stored value (a
    // `BadEncoding` carries the bytes, which are not printed here).
    match e {
        Error::BadEncoding(_) => "the stored value is not UTF-8".to_owned(),
        Error::BadDataFormat(_, cause) => format!("the stored value is unreadable: {cause}"),
        other => other.to_string(),
    }
}

impl Native {
    /// The Secret Service on the session bus, checked by a look-up of an entry that is never
    /// written: no bus, or a bus with no Secret Service on it, is an error.
    #[cfg(all(target_os = "linux", feature = "secret-service"))]
    pub(super) fn secret_service() -> Result<Self, String> {
        let store = zbus_secret_service_keyring_store::Store::new().map_err(|e| text(&e))?;
        let this = Self { store };
        this.get("probe")?;
        Ok(this)
    }

    /// The login Keychain.
    #[cfg(target_os = "macos")]
    pub(super) fn keychain() -> Result<Self, String> {
        let store = apple_native_keyring_store::keychain::Store::new().map_err(|e| text(&e))?;
        Ok(Self { store })
    }

    /// The Windows Credential Manager.
    #[cfg(target_os = "windows")]
    pub(super) fn credential_manager() -> Result<Self, String> {
        let store = windows_native_keyring_store::Store::new().map_err(|e| text(&e))?;
        Ok(Self { store })
    }

    fn entry(&self, user: &str) -> Result<Entry, String> {
        Entry::new_in_store(&self.store, SERVICE, user).map_err(|e| text(&e))
    }

    pub(super) fn get(&self, user: &str) -> Result<Option<Vec<u8>>, String> {
        match self.entry(user)?.get_secret() {
            Ok(v) => Ok(Some(v)),
            Err(Error::NoEntry) => Ok(None),
            Err(e) => Err(text(&e)),
        }
    }

    pub(super) fn set(&self, user: &str, value: &[u8]) -> Result<(), String> {
        self.entry(user)?.set_secret(value).map_err(|e| text(&e))
    }

    pub(super) fn remove(&self, user: &str) -> Result<bool, String> {
        match self.entry(user)?.delete_credential() {
            Ok(()) => Ok(true),
            Err(Error::NoEntry) => Ok(false),
            Err(e) => Err(text(&e)),
        }
    }

    /// The users of this service's entries that start with `prefix`.
    pub(super) fn users(&self, prefix: &str) -> Result<Vec<String>, String> {
        let spec = HashMap::from([("service", SERVICE)]);
        let found = Entry::search_in_store(&self.store, &spec).map_err(|e| text(&e))?;
        Ok(found
            .iter()
            .filter_map(Entry::get_specifiers)
            .filter(|(service, _)| service == SERVICE)
            .map(|(_, user)| user)
            .filter(|u| u.starts_with(prefix))
            .collect())
    }
}
