//! The Linux kernel keyring (keyutils), for machines with no session bus: servers, containers,
//! SSH sessions. Entries are `user` keys in the user keyring (`@u`), shared by every process
//! of this user and readable by no other user; they live in kernel memory and are lost at
//! reboot.
//!
//! A key is added with its possessor's rights only; it is then opened to its owner (view,
//! read, write, search, link, setattr; never group or others), so that a later process of the
//! same user, which does not possess it through a session keyring (a container's processes
//! often have none), can find and read it.

use linux_keyutils::{KeyError, KeyPermissionsBuilder, KeyRing, KeyRingIdentifier, Permission};

/// The user keyring.
#[derive(Debug)]
pub(super) struct Keyutils {
    ring: KeyRing,
}

fn text(e: KeyError) -> String {
    format!("{e:?}")
}

impl Keyutils {
    /// The user keyring, checked by a search for an entry that is never written.
    pub(super) fn open() -> Result<Self, String> {
        let ring = KeyRing::from_special_id(KeyRingIdentifier::User, false).map_err(text)?;
        let this = Self { ring };
        this.get("mcp-host:probe")?;
        Ok(this)
    }

    pub(super) fn get(&self, description: &str) -> Result<Option<Vec<u8>>, String> {
        match self.ring.search(description) {
            Ok(key) => key.read_to_vec().map(Some).map_err(text),
            Err(KeyError::KeyDoesNotExist | KeyError::KeyRevoked | KeyError::KeyExpired) => {
                Ok(None)
            }
            Err(e) => Err(text(e)),
        }
    }

    pub(super) fn set(&self, description: &str, value: &[u8]) -> Result<(), String> {
        let key = self.ring.add_key(description, value).map_err(text)?;
        let perms = KeyPermissionsBuilder::builder()
            .posessor(Permission::ALL)
            .user(Permission::ALL)
            .build();
        key.set_perms(perms).map_err(text)
    }

    pub(super) fn remove(&self, description: &str) -> Result<bool, String> {
        match self.ring.search(description) {
            Ok(key) => {
                // Unlinked first, so that a search right after no longer finds it; then
                // invalidated, so that no other keyring keeps it alive.
                self.ring.unlink_key(key).map_err(text)?;
                key.invalidate().map_err(text)?;
                Ok(true)
            }
            Err(KeyError::KeyDoesNotExist | KeyError::KeyRevoked | KeyError::KeyExpired) => {
                Ok(false)
            }
            Err(e) => Err(text(e)),
        }
    }

    /// The descriptions in the user keyring that start with `prefix`.
    pub(super) fn descriptions(&self, prefix: &str) -> Result<Vec<String>, String> {
        let links = self.ring.get_links(4096).map_err(text)?;
        Ok(links
            .iter()
            .filter_map(|node| node.as_key())
            .filter_map(|key| key.metadata().ok())
            .map(|m| m.get_description().to_owned())
            .filter(|d| d.starts_with(prefix))
            .collect())
    }
}
