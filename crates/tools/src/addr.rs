//! Which network addresses `http_fetch` may connect to, and name resolution that checks
//! every address before anything connects.
//!
//! The host is resolved here, once per request, and every address it gives is checked.
//! ureq is then handed a [`Pinned`] resolver that returns exactly those checked addresses,
//! so a second DNS answer (DNS rebinding) can never steer the connection somewhere the
//! check did not see.

use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::sync::mpsc;
use std::time::Instant;

/// A check on one address: `Some(kind)` when it is refused, naming the kind of address.
pub type Check = fn(IpAddr) -> Option<&'static str>;

/// The check used when `allow_private` is set: every address is allowed.
pub fn allow_all(_: IpAddr) -> Option<&'static str> {
    None
}

/// The default check: refuses loopback, private, link-local, shared, unspecified,
/// multicast, broadcast and reserved addresses, and IPv6 forms that embed such an IPv4
/// address.
pub fn refusal(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => refusal_v4(v4),
        IpAddr::V6(v6) => refusal_v6(v6),
    }
}

fn refusal_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, _, _] = ip.octets();
    if a == 0 {
        // 0.0.0.0/8 is "this network"; connecting to 0.0.0.0 reaches the local host.
        Some("this-network (0.0.0.0/8)")
    } else if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_private() {
        Some("private")
    } else if ip.is_link_local() {
        // 169.254.169.254 is the cloud metadata service, the classic SSRF target.
        Some("link-local")
    } else if a == 100 && (b & 0xc0) == 64 {
        // 100.64.0.0/10: carrier-grade NAT space, and where tailnets put their hosts.
        Some("shared (100.64.0.0/10)")
    } else if ip.is_broadcast() {
        Some("broadcast")
    } else if ip.is_multicast() {
        Some("multicast")
    } else if a >= 240 {
        Some("reserved (240.0.0.0/4)")
    } else {
        None
    }
}

fn refusal_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let seg = ip.segments();
    if ip.is_unspecified() {
        return Some("unspecified");
    }
    if ip.is_loopback() {
        return Some("loopback");
    }
    // ::ffff:a.b.c.d reaches the IPv4 address a.b.c.d, so it is judged as that address.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return refusal_v4(v4);
    }
    // 64:ff9b::/96 is NAT64: a gateway forwards it to the embedded IPv4 address.
    if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return refusal_v4(embedded_v4(seg));
    }
    // ::ffff:0:a.b.c.d is SIIT's IPv4-translated form (RFC 6145): a translator forwards
    // it to a.b.c.d.
    if seg[..6] == [0, 0, 0, 0, 0xffff, 0] {
        return refusal_v4(embedded_v4(seg))
            .map(|_| "SIIT (::ffff:0:0:0/96) of a refused IPv4 address");
    }
    // 64:ff9b:1::/48 is local-use NAT64 (RFC 8215): the operator picks the prefix length,
    // so the IPv4 address may sit at any of RFC 6052's places; refused when any reading
    // of it is a refused address.
    if seg[..3] == [0x64, 0xff9b, 1] {
        let o = ip.octets();
        let readings = [
            [o[6], o[7], o[9], o[10]],    // /48 (octet 8 is the reserved `u` octet)
            [o[7], o[9], o[10], o[11]],   // /56
            [o[9], o[10], o[11], o[12]],  // /64
            [o[12], o[13], o[14], o[15]], // /96
        ];
        if readings
            .into_iter()
            .any(|v4| refusal_v4(Ipv4Addr::from(v4)).is_some())
        {
            return Some("local-use NAT64 (64:ff9b:1::/48) of a refused IPv4 address");
        }
    }
    // 2002:AABB:CCDD::/48 is 6to4: a relay sends it to the IPv4 address AA.BB.CC.DD.
    if seg[0] == 0x2002 {
        let [a, b] = seg[1].to_be_bytes();
        let [c, d] = seg[2].to_be_bytes();
        if refusal_v4(Ipv4Addr::new(a, b, c, d)).is_some() {
            return Some("6to4 (2002::/16) of a refused IPv4 address");
        }
    }
    // ::a.b.c.d (IPv4-compatible, deprecated) has no legitimate use on the internet.
    if seg[..6] == [0; 6] {
        return Some("IPv4-compatible (::/96)");
    }
    match seg[0] {
        s if s & 0xfe00 == 0xfc00 => Some("unique local (fc00::/7)"),
        s if s & 0xffc0 == 0xfe80 => Some("link-local (fe80::/10)"),
        // fec0::/10 was site-local, the old IPv6 private range; some stacks still route it.
        s if s & 0xffc0 == 0xfec0 => Some("site-local (fec0::/10)"),
        s if s & 0xff00 == 0xff00 => Some("multicast"),
        _ => None,
    }
}

fn embedded_v4(seg: [u16; 8]) -> Ipv4Addr {
    let [h, l] = [seg[6], seg[7]];
    Ipv4Addr::new((h >> 8) as u8, h as u8, (l >> 8) as u8, l as u8)
}

/// Why a host could not be turned into addresses it is safe to connect to.
#[derive(Debug, Clone, PartialEq)]
pub enum ResolveError {
    /// The name did not resolve; the message is the resolver's.
    Lookup { host: String, message: String },
    /// The name resolved to nothing.
    NoAddress { host: String },
    /// The deadline passed while the lookup was still running.
    TimedOut { host: String },
    /// One of the addresses is refused by the check.
    Refused {
        host: String,
        addr: IpAddr,
        kind: &'static str,
    },
}

/// Tells the owner reading the log which setting would allow the address.
const PRIVATE_OFF: &str = " (tools.http_fetch.allow_private is off)";

impl fmt::Display for ResolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResolveError::Lookup { host, message } => {
                write!(f, "cannot resolve host {host}: {message}")
            }
            ResolveError::NoAddress { host } => write!(f, "host {host} has no address"),
            ResolveError::TimedOut { host } => {
                write!(f, "timed out resolving host {host}")
            }
            ResolveError::Refused { host, addr, kind } if host == &addr.to_string() => {
                write!(f, "address {addr} ({kind}) is not fetched{PRIVATE_OFF}")
            }
            ResolveError::Refused { host, addr, kind } => write!(
                f,
                "host {host} resolves to {addr} ({kind}), which is not fetched{PRIVATE_OFF}"
            ),
        }
    }
}

/// Resolves `host` (a name or an address literal) and checks every address it gives.
/// Any refused address refuses the whole host: a name that answers with one public and
/// one private address is exactly what a rebinding attack looks like.
pub fn resolve_checked(
    host: &url::Host<&str>,
    port: u16,
    deadline: Instant,
    check: Check,
) -> Result<Vec<SocketAddr>, ResolveError> {
    let (name, addrs) = match host {
        url::Host::Ipv4(ip) => (ip.to_string(), vec![SocketAddr::new((*ip).into(), port)]),
        url::Host::Ipv6(ip) => (ip.to_string(), vec![SocketAddr::new((*ip).into(), port)]),
        url::Host::Domain(name) => (name.to_string(), lookup(name, port, deadline)?),
    };
    if addrs.is_empty() {
        return Err(ResolveError::NoAddress { host: name });
    }
    for a in &addrs {
        if let Some(kind) = check(a.ip()) {
            return Err(ResolveError::Refused {
                host: name,
                addr: a.ip(),
                kind,
            });
        }
    }
    Ok(addrs)
}

/// `getaddrinfo` cannot be interrupted, so it runs on its own thread and the caller waits
/// only until the deadline. A lookup that outlives the deadline finishes on its own (the
/// system resolver has its own timeouts) and its answer is dropped.
fn lookup(name: &str, port: u16, deadline: Instant) -> Result<Vec<SocketAddr>, ResolveError> {
    let (tx, rx) = mpsc::channel();
    let owned = name.to_string();
    let spawned = std::thread::Builder::new()
        .name("http_fetch-dns".into())
        .spawn(move || {
            let answer = (owned.as_str(), port)
                .to_socket_addrs()
                .map(|it| it.collect::<Vec<_>>());
            // The receiver is gone when the caller gave up; nobody wants the answer then.
            let _ = tx.send(answer);
        });
    if let Err(e) = spawned {
        return Err(ResolveError::Lookup {
            host: name.into(),
            message: format!("cannot start the lookup thread: {e}"),
        });
    }
    let wait = deadline.saturating_duration_since(Instant::now());
    match rx.recv_timeout(wait) {
        Ok(Ok(addrs)) => Ok(addrs),
        Ok(Err(e)) => Err(ResolveError::Lookup {
            host: name.into(),
            message: e.to_string(),
        }),
        Err(mpsc::RecvTimeoutError::Timeout) => Err(ResolveError::TimedOut { host: name.into() }),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(ResolveError::Lookup {
            host: name.into(),
            message: "the lookup thread stopped without an answer".into(),
        }),
    }
}

/// A ureq resolver that answers every lookup with addresses already checked. Each request
/// builds its own agent around one `Pinned`, and redirects are followed by hand, so the
/// only host ureq ever asks about is the one these addresses belong to.
pub struct Pinned(pub Vec<SocketAddr>);

impl ureq::Resolver for Pinned {
    fn resolve(&self, _netloc: &str) -> io::Result<Vec<SocketAddr>> {
        Ok(self.0.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn refused(s: &str) -> bool {
        refusal(s.parse().unwrap()).is_some()
    }

    #[test]
    fn every_listed_private_range_is_refused() {
        for a in [
            "127.0.0.1",
            "127.255.255.254",
            "10.0.0.1",
            "10.255.255.255",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "0.0.0.0",
            "0.1.2.3",
            "255.255.255.255",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "::",
            "::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "febf::1",
            "fec0::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::7f00:1",
            "64:ff9b::a00:1",
            "::127.0.0.1",
            // SIIT, local-use NAT64 at /96 and /48, 6to4: each embedding 127/8 or 10/8.
            "::ffff:0:7f00:1",
            "::ffff:0:a00:1",
            "64:ff9b:1::7f00:1",
            "64:ff9b:1:7f00:1:100::",
            "2002:7f00:1::1",
            "2002:a00:1::",
            "2002:c0a8:101::1",
        ] {
            assert!(refused(a), "{a} should be refused");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for a in [
            "1.1.1.1",
            "8.8.8.8",
            "172.15.255.255",
            "172.32.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "169.253.0.1",
            "192.167.1.1",
            "2606:4700::1111",
            "2001:4860:4860::8888",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "::ffff:0:808:808",
            "2002:808:808::1",
        ] {
            assert!(!refused(a), "{a} should pass");
        }
    }

    #[test]
    fn a_literal_loopback_host_is_refused_naming_the_address() {
        let deadline = Instant::now() + Duration::from_secs(5);
        let host = url::Host::Ipv4(Ipv4Addr::LOCALHOST);
        let e = resolve_checked(&host, 80, deadline, refusal).unwrap_err();
        assert_eq!(
            e.to_string(),
            "address 127.0.0.1 (loopback) is not fetched (tools.http_fetch.allow_private is off)"
        );
    }

    #[test]
    fn localhost_resolves_to_a_refused_address() {
        let deadline = Instant::now() + Duration::from_secs(30);
        let e =
            resolve_checked(&url::Host::Domain("localhost"), 80, deadline, refusal).unwrap_err();
        assert!(
            matches!(
                e,
                ResolveError::Refused {
                    kind: "loopback",
                    ..
                }
            ),
            "{e}"
        );
        assert!(
            e.to_string().starts_with("host localhost resolves to "),
            "{e}"
        );
    }

    #[test]
    fn allow_all_lets_loopback_through() {
        let deadline = Instant::now() + Duration::from_secs(5);
        let host = url::Host::Ipv4(Ipv4Addr::LOCALHOST);
        let addrs = resolve_checked(&host, 8080, deadline, allow_all).unwrap();
        assert_eq!(addrs, vec![SocketAddr::from(([127, 0, 0, 1], 8080))]);
    }
}
