//! Which addresses a [`Fetcher`](crate::Fetcher) may connect to: the server-side request
//! forgery (SSRF) rules of the MCP security best practices, as a pure function of address
//! classes, applied by the connector to every address it is about to connect to.
//!
//! A server under someone else's control names URLs that its client then fetches (OAuth
//! metadata, registration and token endpoints). Without limits it could make the client reach
//! what only the client's machine or network can reach: a loopback admin port, a router, a
//! cloud metadata service. The rule: public addresses are always reachable; loopback, private
//! and link-local ones only on behalf of a server that is itself at such an address (a
//! loopback server may have a loopback authorization server, a private-network one a private
//! one); unroutable ones never. Plain `http` is allowed only between loopback addresses, so a
//! token never crosses a network unencrypted.

#[cfg(test)]
mod tests;

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What kind of network an IP address belongs to, as far as request forgery goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AddressClass {
    /// This machine: `127.0.0.0/8`, `::1` (and IPv4-mapped or NAT64 forms of them).
    Loopback,
    /// A private network: `10/8`, `172.16/12`, `192.168/16`, carrier-grade NAT `100.64/10`,
    /// IPv6 unique-local `fc00::/7` and the deprecated site-local `fec0::/10`.
    Private,
    /// The local link: `169.254/16` (where cloud metadata services live), `fe80::/10`.
    LinkLocal,
    /// Anything else that is routable on the internet.
    Public,
    /// Never a server's address: unspecified (`0.0.0.0/8`, `::`, which reach this machine on
    /// some systems), multicast, broadcast, documentation, benchmarking and reserved ranges,
    /// deprecated IPv4-compatible IPv6 and Teredo.
    Unroutable,
}

impl AddressClass {
    /// The class of `ip`. An IPv6 address that carries an IPv4 one (IPv4-mapped
    /// `::ffff:0:0/96`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) has the class of the IPv4
    /// address it reaches.
    pub fn of(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(v4) => Self::of_v4(v4),
            IpAddr::V6(v6) => Self::of_v6(v6),
        }
    }

    fn of_v4(ip: Ipv4Addr) -> Self {
        let [a, b, c, _] = ip.octets();
        match (a, b, c) {
            (127, _, _) => Self::Loopback,
            (10, _, _) | (192, 168, _) => Self::Private,
            (172, 16..=31, _) | (100, 64..=127, _) => Self::Private,
            (169, 254, _) => Self::LinkLocal,
            (0, _, _) | (224..=255, _, _) => Self::Unroutable,
            (192, 0, 0 | 2) | (198, 51, 100) | (203, 0, 113) | (198, 18 | 19, _) => {
                Self::Unroutable
            }
            _ => Self::Public,
        }
    }

    fn of_v6(ip: Ipv6Addr) -> Self {
        if let Some(v4) = ip.to_ipv4_mapped() {
            return Self::of_v4(v4);
        }
        let s = ip.segments();
        let embedded = |hi: u16, lo: u16| {
            let [a, b] = hi.to_be_bytes();
            let [c, d] = lo.to_be_bytes();
            Self::of_v4(Ipv4Addr::new(a, b, c, d))
        };
        match s {
            [0, 0, 0, 0, 0, 0, 0, 1] => Self::Loopback,
            // NAT64's well-known prefix reaches the IPv4 address in its last 32 bits.
            [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => embedded(hi, lo),
            // 6to4 reaches the IPv4 address in bits 16 to 48.
            [0x2002, hi, lo, ..] => embedded(hi, lo),
            // `::`, and the deprecated IPv4-compatible `::a.b.c.d`.
            [0, 0, 0, 0, 0, 0, _, _] => Self::Unroutable,
            // Discard-only `100::/64`.
            [0x100, 0, 0, 0, ..] => Self::Unroutable,
            // Teredo `2001::/32` and documentation `2001:db8::/32`.
            [0x2001, 0 | 0xdb8, ..] => Self::Unroutable,
            [first, ..] if first & 0xfe00 == 0xfc00 => Self::Private,
            [first, ..] if first & 0xffc0 == 0xfec0 => Self::Private,
            [first, ..] if first & 0xffc0 == 0xfe80 => Self::LinkLocal,
            [first, ..] if first & 0xff00 == 0xff00 => Self::Unroutable,
            _ => Self::Public,
        }
    }
}

impl fmt::Display for AddressClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Loopback => "loopback",
            Self::Private => "private",
            Self::LinkLocal => "link-local",
            Self::Public => "public",
            Self::Unroutable => "unroutable",
        })
    }
}

/// Whether a request made on behalf of a server at a `server` address may reach a `target`
/// address: public ones always, loopback, private and link-local ones only from a server of
/// the same class, unroutable ones never.
pub fn may_reach(server: AddressClass, target: AddressClass) -> bool {
    match target {
        AddressClass::Public => true,
        AddressClass::Unroutable => false,
        AddressClass::Loopback | AddressClass::Private | AddressClass::LinkLocal => {
            target == server
        }
    }
}

/// Whether plain `http` may be used for such a request: only when the server and the target
/// are both on loopback, where nothing travels over a network.
pub fn may_use_plain_http(server: AddressClass, target: AddressClass) -> bool {
    server == AddressClass::Loopback && target == AddressClass::Loopback
}

/// The addresses a [`Fetcher`](crate::Fetcher) may connect to, for requests made on behalf
/// of one server (OAuth discovery and token requests for an MCP server).
///
/// The connector applies it to every address it is about to connect to, after name
/// resolution (so a name that resolves to a forbidden address, first or at a later
/// connection, is refused), and again to the address actually connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressPolicy {
    server: AddressClass,
}

impl AddressPolicy {
    /// The policy for requests made on behalf of a server at a `server` address.
    pub fn beside(server: AddressClass) -> Self {
        Self { server }
    }

    /// The class of the server the requests are made for.
    pub fn server(&self) -> AddressClass {
        self.server
    }

    /// Whether a connection to `ip` may carry a request over `https` (`true`) or plain
    /// `http`; the refusal names the rule broken.
    pub fn check(&self, https: bool, ip: IpAddr) -> Result<(), Refusal> {
        let target = AddressClass::of(ip);
        if !may_reach(self.server, target) {
            return Err(Refusal::Address {
                target,
                server: self.server,
            });
        }
        if !https && !may_use_plain_http(self.server, target) {
            return Err(Refusal::PlainHttp { target });
        }
        Ok(())
    }
}

/// `a loopback address`, `an unroutable address`.
struct An(AddressClass);

impl fmt::Display for An {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let article = match self.0 {
            AddressClass::Unroutable => "an",
            _ => "a",
        };
        write!(f, "{article} {} address", self.0)
    }
}

/// Which rule of an [`AddressPolicy`] a connection would break.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// The address is of a class this server may not make us reach.
    #[error(
        "it resolves to {}, which is not reached on behalf of a server at {}",
        An(*target),
        An(*server)
    )]
    Address {
        /// The class of the address refused.
        target: AddressClass,
        /// The class of the server the request is made for.
        server: AddressClass,
    },
    /// Plain `http` to an address that is not on loopback, or for a server that is not.
    #[error(
        "plain http to {}; https is required unless the server and this address are both on loopback",
        An(*target)
    )]
    PlainHttp {
        /// The class of the address refused.
        target: AddressClass,
    },
}
