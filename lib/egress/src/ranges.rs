//! Which addresses a guarded deployment never connects to, and why: the ranges of RFC 6890's
//! special-purpose registries that reach the deployment's own machine or network, and the
//! IPv6 forms that carry such an IPv4 address inside them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The range `ip` falls in, in words, if it is one a guarded deployment refuses; `None` for a
/// public address.
pub fn refused_range(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => refused_v4(v4),
        IpAddr::V6(v6) => refused_v6(v6),
    }
}

fn refused_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    Some(match (a, b) {
        _ if ip.is_unspecified() => "an unspecified address",
        (0, _) => "an address of \"this network\" (0.0.0.0/8)",
        (127, _) => "a loopback address",
        (10, _) | (172, 16..=31) | (192, 168) => "a private address (RFC 1918)",
        (100, 64..=127) => "a shared address (100.64.0.0/10)",
        (169, 254) => "a link-local address (169.254.0.0/16, instance metadata included)",
        (224..=239, _) => "a multicast address",
        _ if ip.is_broadcast() => "the broadcast address",
        (240..=255, _) => "a reserved address (240.0.0.0/4)",
        _ => return None,
    })
}

fn refused_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let segments = ip.segments();
    if ip.is_unspecified() {
        return Some("an unspecified address");
    }
    if ip.is_loopback() {
        return Some("a loopback address");
    }
    // The IPv4 address inside: mapped (::ffff:a.b.c.d), compatible (::a.b.c.d, deprecated),
    // NAT64 (64:ff9b::/96 and the local-use 64:ff9b:1::/48) and 6to4 (2002:aabb:ccdd::/48).
    let last32 = || Ipv4Addr::from((u32::from(segments[6]) << 16) | u32::from(segments[7]));
    let embedded = match segments {
        [0, 0, 0, 0, 0, 0xffff, ..] | [0, 0, 0, 0, 0, 0, ..] => Some(last32()),
        [0x64, 0xff9b, 0, 0, 0, 0, ..] | [0x64, 0xff9b, 1, ..] => Some(last32()),
        [0x2002, hi, lo, ..] => Some(Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo))),
        _ => None,
    };
    if let Some(v4) = embedded {
        return refused_v4(v4);
    }
    Some(match segments[0] {
        s if s & 0xfe00 == 0xfc00 => {
            "a unique-local address (fc00::/7, instance metadata included)"
        }
        s if s & 0xffc0 == 0xfe80 => "a link-local address (fe80::/10)",
        s if s & 0xffc0 == 0xfec0 => "a site-local address (fec0::/10)",
        s if s & 0xff00 == 0xff00 => "a multicast address",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(s: &str) -> bool {
        refused_range(s.parse().unwrap()).is_some()
    }

    #[test]
    fn every_range_of_the_deployments_own_network_is_refused() {
        for ip in [
            "127.0.0.1",
            "127.255.255.254",
            "0.0.0.0",
            "0.1.2.3",
            "10.0.0.1",
            "10.255.255.255",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "100.64.0.1",
            "100.127.255.255",
            "169.254.169.254",
            "169.254.0.1",
            "224.0.0.1",
            "239.255.255.255",
            "255.255.255.255",
            "240.0.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd00:ec2::254",
            "fe80::1",
            "febf::1",
            "fec0::1",
            "ff02::1",
        ] {
            assert!(refused(ip), "{ip} must be refused");
        }
    }

    #[test]
    fn ipv4_addresses_inside_ipv6_forms_are_judged_as_themselves() {
        for ip in [
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b::7f00:1",
            "64:ff9b:1::c0a8:1",
            "2002:7f00:1::",
            "2002:a9fe:a9fe::1",
        ] {
            assert!(refused(ip), "{ip} must be refused");
        }
        for ip in [
            "::ffff:93.184.216.34",
            "64:ff9b::5db8:d822",
            "2002:5db8:d822::1",
        ] {
            assert!(!refused(ip), "{ip} is public");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "172.15.255.255",
            "172.32.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "169.253.1.1",
            "192.167.1.1",
            "223.255.255.255",
            "1.1.1.1",
            "2606:4700:4700::1111",
            "2001:db8::1",
            "fbff::1",
        ] {
            assert!(!refused(ip), "{ip} is public");
        }
    }

    #[test]
    fn the_rule_is_named_in_words() {
        let rule = refused_range("169.254.169.254".parse().unwrap()).unwrap();
        assert!(
            rule.contains("link-local") && rule.contains("metadata"),
            "{rule}"
        );
        let rule = refused_range("192.168.0.1".parse().unwrap()).unwrap();
        assert!(rule.contains("RFC 1918"), "{rule}");
    }
}
