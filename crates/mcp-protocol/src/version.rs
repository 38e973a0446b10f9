//! MCP protocol revisions as an enumerated set, and the negotiation rules of
//! spec `basic/lifecycle.mdx#version-negotiation` (SPEC.md §1.2).
//!
//! Versions are never compared as date strings: a known revision is one of the variants, and a
//! string we do not know sorts below every known one, so it is never mistaken for "newer and
//! therefore fine".

use std::cmp::Ordering;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::wire::Key;

/// One MCP protocol revision.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProtocolVersion {
    /// The first revision: HTTP+SSE transport.
    V2024_11_05,
    /// Streamable HTTP and JSON-RPC batches.
    V2025_03_26,
    /// No batches; the `MCP-Protocol-Version` header.
    V2025_06_18,
    /// The baseline of this crate.
    V2025_11_25,
    /// The stateless revision: no handshake, `server/discover`, per-request `_meta`.
    V2026_07_28,
    /// A string that names no revision this crate knows.
    Unknown(String),
}

/// The eras that decide how a session starts and what each request carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Era {
    /// 2024-11-05 to 2025-11-25: `initialize`, then `notifications/initialized`, then operation.
    Handshake,
    /// 2026-07-28 and later: every request stands alone and carries its version in `_meta`.
    Stateless,
}

impl Era {
    /// `handshake` or `stateless`: the era as status views and JSON output spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Handshake => "handshake",
            Self::Stateless => "stateless",
        }
    }
}

impl fmt::Display for Era {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ProtocolVersion {
    /// The newest handshake-era revision: what a client offers in `initialize`.
    pub const LATEST_HANDSHAKE: Self = Self::V2025_11_25;

    /// Every revision this crate knows, oldest first.
    pub const KNOWN: [Self; 5] = [
        Self::V2024_11_05,
        Self::V2025_03_26,
        Self::V2025_06_18,
        Self::V2025_11_25,
        Self::V2026_07_28,
    ];

    /// The handshake-era revisions a session can speak today, oldest first.
    pub const HANDSHAKE: [Self; 4] = [
        Self::V2024_11_05,
        Self::V2025_03_26,
        Self::V2025_06_18,
        Self::V2025_11_25,
    ];

    /// Reads a version string; anything unrecognised is kept as [`ProtocolVersion::Unknown`].
    pub fn parse(s: &str) -> Self {
        match s {
            "2024-11-05" => Self::V2024_11_05,
            "2025-03-26" => Self::V2025_03_26,
            "2025-06-18" => Self::V2025_06_18,
            "2025-11-25" => Self::V2025_11_25,
            "2026-07-28" => Self::V2026_07_28,
            other => Self::Unknown(other.to_owned()),
        }
    }

    /// The string as it appears on the wire.
    pub fn as_str(&self) -> &str {
        match self {
            Self::V2024_11_05 => "2024-11-05",
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
            Self::Unknown(s) => s,
        }
    }

    /// The position in [`ProtocolVersion::KNOWN`]; unknown strings rank below all of them.
    fn rank(&self) -> Option<usize> {
        Self::KNOWN.iter().position(|v| v == self)
    }

    /// Whether this crate knows the revision.
    pub fn is_known(&self) -> bool {
        self.rank().is_some()
    }

    /// The era of a known revision; `None` for an unknown string.
    pub fn era(&self) -> Option<Era> {
        match self {
            Self::V2024_11_05 | Self::V2025_03_26 | Self::V2025_06_18 | Self::V2025_11_25 => {
                Some(Era::Handshake)
            }
            Self::V2026_07_28 => Some(Era::Stateless),
            Self::Unknown(_) => None,
        }
    }

    /// Whether a peer on this revision may send JSON-RPC batches (2025-03-26 only).
    pub fn allows_batches(&self) -> bool {
        *self == Self::V2025_03_26
    }

    /// Whether HTTP requests after initialization carry `MCP-Protocol-Version`
    /// (2025-06-18 and later).
    pub fn has_version_header(&self) -> bool {
        matches!(self.rank(), Some(r) if r >= 2)
    }

    /// The client's rule: accept the server's answer only if it is a version we support.
    pub fn client_accepts(offered: &Self, supported: &[Self]) -> bool {
        offered.is_known() && supported.contains(offered)
    }

    /// The server's rule: the requested version if supported, else our latest supported one.
    pub fn server_selects(requested: &Self, supported: &[Self]) -> Self {
        if requested.is_known() && supported.contains(requested) {
            return requested.clone();
        }
        supported
            .iter()
            .max()
            .cloned()
            .unwrap_or(Self::LATEST_HANDSHAKE)
    }

    /// The newest version both sides support, from a peer's list of version strings (the
    /// `data.supported` of an unsupported-version error).
    pub fn best_mutual<'a>(peer: impl IntoIterator<Item = &'a str>, ours: &[Self]) -> Option<Self> {
        peer.into_iter()
            .map(Self::parse)
            .filter(|v| v.is_known() && ours.contains(v))
            .max()
    }
}

impl PartialOrd for ProtocolVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ProtocolVersion {
    /// Known revisions in release order; unknown strings below them all, among themselves by
    /// text so that the order is total.
    fn cmp(&self, other: &Self) -> Ordering {
        match (self.rank(), other.rank()) {
            (Some(a), Some(b)) => a.cmp(&b),
            (Some(_), None) => Ordering::Greater,
            (None, Some(_)) => Ordering::Less,
            (None, None) => self.as_str().cmp(other.as_str()),
        }
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ProtocolVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ProtocolVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = Key::deserialize(deserializer)?;
        Ok(Self::parse(s.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::ProtocolVersion as V;

    #[test]
    fn unknown_versions_rank_below_known_ones() {
        let future = V::parse("2099-01-01");
        assert!(future < V::V2024_11_05);
        assert!(!V::client_accepts(&future, &V::HANDSHAKE));
        assert_eq!(V::server_selects(&future, &V::HANDSHAKE), V::V2025_11_25);
    }

    #[test]
    fn server_echoes_a_supported_version() {
        assert_eq!(
            V::server_selects(&V::V2025_03_26, &V::HANDSHAKE),
            V::V2025_03_26
        );
        assert_eq!(
            V::server_selects(&V::V2026_07_28, &V::HANDSHAKE),
            V::V2025_11_25
        );
    }

    #[test]
    fn best_mutual_picks_the_newest_shared_known_version() {
        let peer = ["2024-11-05", "2025-06-18", "1999-09-09"];
        assert_eq!(V::best_mutual(peer, &V::HANDSHAKE), Some(V::V2025_06_18));
        assert_eq!(V::best_mutual(["nope"], &V::HANDSHAKE), None);
    }

    #[test]
    fn per_revision_wire_rules() {
        assert!(V::V2025_03_26.allows_batches());
        assert!(!V::V2025_06_18.allows_batches());
        assert!(!V::V2025_03_26.has_version_header());
        assert!(V::V2025_06_18.has_version_header());
        assert!(V::V2026_07_28.has_version_header());
        assert!(!V::parse("x").has_version_header());
    }
}
