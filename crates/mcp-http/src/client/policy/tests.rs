//! The address classes and the policy, as tables.

use std::net::IpAddr;

use super::AddressClass::{LinkLocal, Loopback, Private, Public, Unroutable};
use super::*;

#[test]
fn addresses_fall_in_their_class() {
    let table: &[(&str, AddressClass)] = &[
        ("127.0.0.1", Loopback),
        ("127.255.1.2", Loopback),
        ("::1", Loopback),
        ("::ffff:127.0.0.1", Loopback),
        ("64:ff9b::7f00:1", Loopback),
        ("2002:7f00:1::1", Loopback),
        ("10.0.0.1", Private),
        ("172.16.0.1", Private),
        ("172.31.255.255", Private),
        ("192.168.1.1", Private),
        ("100.64.0.1", Private),
        ("100.127.255.254", Private),
        ("::ffff:10.1.2.3", Private),
        ("::ffff:192.168.0.1", Private),
        ("fc00::1", Private),
        ("fd12:3456::1", Private),
        ("fec0::1", Private),
        ("169.254.169.254", LinkLocal),
        ("::ffff:169.254.169.254", LinkLocal),
        ("fe80::1", LinkLocal),
        ("febf::1", LinkLocal),
        ("0.0.0.0", Unroutable),
        ("0.1.2.3", Unroutable),
        ("::", Unroutable),
        ("::ffff:0.0.0.0", Unroutable),
        ("::127.0.0.1", Unroutable),
        ("224.0.0.1", Unroutable),
        ("255.255.255.255", Unroutable),
        ("240.0.0.1", Unroutable),
        ("192.0.2.1", Unroutable),
        ("198.51.100.7", Unroutable),
        ("203.0.113.9", Unroutable),
        ("198.18.0.1", Unroutable),
        ("ff02::1", Unroutable),
        ("2001:db8::1", Unroutable),
        ("2001:0:4136:e378::1", Unroutable),
        ("100::1", Unroutable),
        ("8.8.8.8", Public),
        ("1.1.1.1", Public),
        ("172.15.255.255", Public),
        ("172.32.0.1", Public),
        ("100.63.255.255", Public),
        ("100.128.0.1", Public),
        ("169.253.0.1", Public),
        ("::ffff:8.8.8.8", Public),
        ("2606:4700:4700::1111", Public),
        ("2002:808:808::1", Public),
        ("64:ff9b::808:808", Public),
    ];
    for (text, class) in table {
        let ip: IpAddr = text.parse().unwrap();
        assert_eq!(AddressClass::of(ip), *class, "{text}");
    }
}

#[test]
fn a_server_reaches_public_addresses_and_its_own_kind() {
    let classes = [Loopback, Private, LinkLocal, Public, Unroutable];
    // Rows: the server's class; columns: the target's, in the order of `classes`.
    let table = [
        (Loopback, [true, false, false, true, false]),
        (Private, [false, true, false, true, false]),
        (LinkLocal, [false, false, true, true, false]),
        (Public, [false, false, false, true, false]),
        (Unroutable, [false, false, false, true, false]),
    ];
    for (server, row) in table {
        for (target, expected) in classes.into_iter().zip(row) {
            assert_eq!(may_reach(server, target), expected, "{server} -> {target}");
            let plain = server == Loopback && target == Loopback;
            assert_eq!(
                may_use_plain_http(server, target),
                plain,
                "{server} -> {target}"
            );
        }
    }
}

#[test]
fn the_policy_names_the_rule_it_applies() {
    let ip = |s: &str| s.parse::<IpAddr>().unwrap();
    let public = AddressPolicy::beside(Public);
    assert_eq!(public.check(true, ip("8.8.8.8")), Ok(()));
    assert_eq!(
        public.check(true, ip("127.0.0.1")),
        Err(Refusal::Address {
            target: Loopback,
            server: Public
        })
    );
    assert_eq!(
        public.check(true, ip("::ffff:169.254.169.254")),
        Err(Refusal::Address {
            target: LinkLocal,
            server: Public
        })
    );
    assert_eq!(
        public.check(false, ip("8.8.8.8")),
        Err(Refusal::PlainHttp { target: Public })
    );
    let loopback = AddressPolicy::beside(Loopback);
    assert_eq!(loopback.check(false, ip("127.0.0.1")), Ok(()));
    assert_eq!(loopback.check(false, ip("::1")), Ok(()));
    assert_eq!(
        loopback.check(false, ip("8.8.8.8")),
        Err(Refusal::PlainHttp { target: Public })
    );
    assert_eq!(
        loopback.check(true, ip("10.0.0.1")),
        Err(Refusal::Address {
            target: Private,
            server: Loopback
        })
    );
    assert_eq!(
        loopback.check(true, ip("0.0.0.0")),
        Err(Refusal::Address {
            target: Unroutable,
            server: Loopback
        })
    );
    let private = AddressPolicy::beside(Private);
    assert_eq!(private.check(true, ip("192.168.0.10")), Ok(()));
    assert_eq!(
        private.check(false, ip("192.168.0.10")),
        Err(Refusal::PlainHttp { target: Private })
    );
    let text = public.check(true, ip("127.0.0.1")).unwrap_err().to_string();
    assert_eq!(
        text,
        "it resolves to a loopback address, which is not reached on behalf of a server at a public address"
    );
}
