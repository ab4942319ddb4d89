//! The egress policy of http steps (SPEC §17): which addresses a step may connect to.
//!
//! A step's URL can come from anywhere a template reads (an event payload, a model's answer), so
//! the address it reaches is checked, not the text of the URL: the host is resolved once, every
//! address it resolves to is checked, and the connection goes to exactly those addresses (the
//! http driver pins them, so a DNS answer that changes between the check and the connection
//! cannot swap in another). Every redirect hop is checked the same way.
//!
//! By default a step reaches public addresses only: loopback, private (RFC 1918), shared
//! (RFC 6598), link-local (cloud metadata services live there), unique-local, multicast,
//! reserved and unspecified addresses and every address of this host's interfaces are refused.
//! IPv4-mapped and NAT64 IPv6 addresses are judged by the IPv4 address they carry, and every
//! spelling of an IPv4 address (`127.1`, `0x7f000001`, `2130706433`, `0177.0.0.1`) arrives here
//! already parsed to the address it means (the URL parser normalizes them). `[http] allow` entries
//! open addresses, ranges or names (optionally one port), `[http] deny` entries close more; a
//! deny wins. The policy is the config's alone: nothing in a design can widen it.
//!
//! Written here rather than taken from a crate: the check needs the host's own addresses, name
//! rules with ports, and the resolved addresses handed to the client; `ipnet` gives the ranges.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

use ipnet::IpNet;
use reqwest::Url;
use serde::Deserialize;

/// One `[http] allow` or `deny` entry: an address or range, or a host name, each with an
/// optional port.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct Rule {
    target: RuleTarget,
    port: Option<u16>,
    /// The entry as written, for errors.
    text: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum RuleTarget {
    Net(IpNet),
    /// A lowercased host name without a trailing dot.
    Name(String),
}

impl TryFrom<String> for Rule {
    type Error = String;

    fn try_from(text: String) -> Result<Rule, String> {
        let bad = || {
            format!(
                "[http] entry {text:?} is not an address, a range or a host name (examples: \"10.0.0.0/8\", \"127.0.0.1:8080\", \"[::1]:9000\", \"internal.example:443\")"
            )
        };
        let t = text.trim();
        let port = |p: &str| p.parse::<u16>().ok().filter(|&p| p != 0).ok_or_else(bad);
        let net = |s: &str| s.parse::<IpNet>().ok().or_else(|| s.parse::<IpAddr>().ok().map(IpNet::from));
        let (target, port) = if let Some(n) = net(t) {
            (RuleTarget::Net(n), None)
        } else if let Some(rest) = t.strip_prefix('[') {
            let (inner, after) = rest.split_once(']').ok_or_else(bad)?;
            let n = net(inner).ok_or_else(bad)?;
            let p = match after {
                "" => None,
                a => Some(port(a.strip_prefix(':').ok_or_else(bad)?)?),
            };
            (RuleTarget::Net(n), p)
        } else if let Some((host, p)) = t.rsplit_once(':') {
            let target = match net(host) {
                Some(n) => RuleTarget::Net(n),
                None => RuleTarget::Name(host_name(host).ok_or_else(bad)?),
            };
            (target, Some(port(p)?))
        } else {
            (RuleTarget::Name(host_name(t).ok_or_else(bad)?), None)
        };
        Ok(Rule { target, port, text: t.to_string() })
    }
}

/// A host name as rules and URLs compare it: lowercase, no trailing dot; `None` if it is not one.
fn host_name(name: &str) -> Option<String> {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    let ok = !name.is_empty()
        && name.split('.').all(|label| {
            !label.is_empty() && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') && !label.starts_with('-')
        });
    ok.then_some(name)
}

impl Rule {
    fn matches(&self, name: Option<&str>, addr: SocketAddr) -> bool {
        if self.port.is_some_and(|p| p != addr.port()) {
            return false;
        }
        match &self.target {
            RuleTarget::Net(net) => net.contains(&canonical(addr.ip())) || net.contains(&addr.ip()),
            RuleTarget::Name(n) => name.is_some_and(|name| name == n),
        }
    }
}

/// Why an address is refused by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Loopback,
    Private,
    Shared,
    LinkLocal,
    UniqueLocal,
    Multicast,
    Reserved,
    Unspecified,
    /// An address of one of this host's network interfaces.
    ThisHost,
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Class::Loopback => "a loopback address",
            Class::Private => "a private address",
            Class::Shared => "a shared (carrier-grade NAT) address",
            Class::LinkLocal => "a link-local address",
            Class::UniqueLocal => "a unique-local address",
            Class::Multicast => "a multicast address",
            Class::Reserved => "a reserved address",
            Class::Unspecified => "the unspecified address",
            Class::ThisHost => "an address of this host",
        })
    }
}

/// A connection the policy refuses; its text is the step's error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// `reached` says where the connection would go: `127.0.0.1:80`, or `localhost
    /// (127.0.0.1:80)` for a name.
    #[error("{reached} is {class}, which http steps may not reach by default (to allow it, add \"{allow}\" to [http] allow in the config)", allow = shown_addr(*.addr))]
    Class { reached: String, addr: SocketAddr, class: Class },
    #[error("{reached} is denied by the [http] deny entry {rule:?}")]
    Denied { reached: String, addr: SocketAddr, rule: String },
    #[error("{host} cannot be resolved: {cause}")]
    Resolve { host: String, cause: String },
}

fn shown_addr(addr: SocketAddr) -> String {
    match canonical(addr.ip()) {
        IpAddr::V4(ip) => format!("{ip}:{}", addr.port()),
        IpAddr::V6(ip) => format!("[{ip}]:{}", addr.port()),
    }
}

/// The policy of one config: its allow and deny entries.
#[derive(Debug, Clone, Copy)]
pub struct Policy<'a> {
    pub allow: &'a [Rule],
    pub deny: &'a [Rule],
}

impl Policy<'_> {
    /// Resolves `url`'s host once and checks every address it resolves to: the addresses the
    /// request must connect to, or why it may not be made.
    ///
    /// A name that does not resolve within `within` is refused like one that does not resolve
    /// (the lookup itself cannot be cancelled: its thread ends when the resolver gives up).
    pub fn check(&self, url: &Url, within: Duration) -> Result<Vec<SocketAddr>, Refusal> {
        let port = url.port_or_known_default().unwrap_or(80);
        let host = url.host_str().unwrap_or_default().to_string();
        let (name, addrs) = match url.host() {
            Some(url::Host::Ipv4(ip)) => (None, vec![SocketAddr::new(IpAddr::V4(ip), port)]),
            Some(url::Host::Ipv6(ip)) => (None, vec![SocketAddr::new(IpAddr::V6(ip), port)]),
            Some(url::Host::Domain(d)) => {
                // An absolute name (`localhost.`) resolves as the name it spells: what it
                // resolves to is checked and pinned either way.
                let spelled = d.strip_suffix('.').filter(|n| !n.is_empty()).unwrap_or(d);
                let addrs = resolve(spelled, port, within).map_err(|cause| Refusal::Resolve { host: host.clone(), cause })?;
                if addrs.is_empty() {
                    return Err(Refusal::Resolve { host, cause: "no address".into() });
                }
                (host_name(d), addrs)
            }
            None => return Err(Refusal::Resolve { host, cause: "the URL names no host".into() }),
        };
        let own = own_addresses();
        for &addr in &addrs {
            self.judge(&host, name.as_deref(), addr, &own)?;
        }
        Ok(addrs)
    }

    fn judge(&self, host: &str, name: Option<&str>, addr: SocketAddr, own: &[IpAddr]) -> Result<(), Refusal> {
        let reached = || match name {
            Some(_) => format!("{host} ({addr})"),
            None => addr.to_string(),
        };
        if let Some(rule) = self.deny.iter().find(|r| r.matches(name, addr)) {
            return Err(Refusal::Denied { reached: reached(), addr, rule: rule.text.clone() });
        }
        if self.allow.iter().any(|r| r.matches(name, addr)) {
            return Ok(());
        }
        match class(addr.ip(), own) {
            Some(class) => Err(Refusal::Class { reached: reached(), addr, class }),
            None => Ok(()),
        }
    }
}

/// `name`'s addresses, looked up on a thread of its own so the step's timeout bounds the wait.
fn resolve(name: &str, port: u16, within: Duration) -> Result<Vec<SocketAddr>, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let owned = name.to_string();
    std::thread::Builder::new()
        .name("vwf-resolve".into())
        .spawn(move || {
            let _ = tx.send((owned.as_str(), port).to_socket_addrs().map(Iterator::collect::<Vec<_>>).map_err(|e| e.to_string()));
        })
        .map_err(|e| format!("cannot start the lookup: {e}"))?;
    match rx.recv_timeout(within) {
        Ok(answer) => answer,
        Err(_) => Err(format!("no answer within {} s", within.as_secs().max(1))),
    }
}

/// The addresses of this host's interfaces (none if they cannot be listed: the ranges above
/// still hold).
fn own_addresses() -> Vec<IpAddr> {
    if_addrs::get_if_addrs().map(|list| list.into_iter().map(|i| canonical(i.ip())).collect()).unwrap_or_default()
}

/// The address a connection really goes to: an IPv4-mapped (`::ffff:a.b.c.d`) or NAT64
/// (`64:ff9b::a.b.c.d`) IPv6 address is its IPv4 address.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return IpAddr::V4(v4);
            }
            let s = v6.segments();
            if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                return IpAddr::V4(Ipv4Addr::from(((s[6] as u32) << 16) | s[7] as u32));
            }
            IpAddr::V6(v6)
        }
        v4 => v4,
    }
}

/// Why `ip` is refused by default, if it is.
pub fn class(ip: IpAddr, own: &[IpAddr]) -> Option<Class> {
    let ip = canonical(ip);
    let by_range = match ip {
        IpAddr::V4(v4) => class_v4(v4),
        IpAddr::V6(v6) => class_v6(v6),
    };
    by_range.or_else(|| own.contains(&ip).then_some(Class::ThisHost))
}

fn class_v4(ip: Ipv4Addr) -> Option<Class> {
    let o = ip.octets();
    Some(match o {
        [0, ..] => Class::Unspecified,
        [127, ..] => Class::Loopback,
        [10, ..] | [192, 168, ..] => Class::Private,
        [172, b, ..] if (16..32).contains(&b) => Class::Private,
        [100, b, ..] if (64..128).contains(&b) => Class::Shared,
        [169, 254, ..] => Class::LinkLocal,
        [224..=239, ..] => Class::Multicast,
        [192, 0, 0 | 2, _] | [198, 18 | 19, ..] | [198, 51, 100, _] | [203, 0, 113, _] | [240..=255, ..] => Class::Reserved,
        _ => return None,
    })
}

fn class_v6(ip: Ipv6Addr) -> Option<Class> {
    let s = ip.segments();
    Some(if ip.is_unspecified() {
        Class::Unspecified
    } else if ip.is_loopback() {
        Class::Loopback
    } else if s[0] & 0xffc0 == 0xfe80 {
        Class::LinkLocal
    } else if s[0] & 0xffc0 == 0xfec0 {
        Class::Private
    } else if s[0] & 0xfe00 == 0xfc00 {
        Class::UniqueLocal
    } else if s[0] & 0xff00 == 0xff00 {
        Class::Multicast
    } else if s[..6] == [0; 6] || s[..4] == [0x100, 0, 0, 0] || s[..2] == [0x2001, 0xdb8] {
        // IPv4-compatible (deprecated), discard-only, documentation.
        Class::Reserved
    } else {
        return None;
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(entries: &[&str]) -> Vec<Rule> {
        entries.iter().map(|e| Rule::try_from(e.to_string()).unwrap()).collect()
    }

    fn check(allow: &[&str], deny: &[&str], url: &str) -> Result<Vec<SocketAddr>, Refusal> {
        let (allow, deny) = (rules(allow), rules(deny));
        Policy { allow: &allow, deny: &deny }.check(&Url::parse(url).unwrap(), Duration::from_secs(5))
    }

    fn class_of(url: &str) -> Option<Class> {
        match check(&[], &[], url) {
            Err(Refusal::Class { class, .. }) => Some(class),
            Ok(_) => None,
            Err(other) => panic!("{url}: {other}"),
        }
    }

    #[test]
    fn every_spelling_of_a_local_address_is_refused() {
        for url in [
            "http://127.0.0.1/",
            "http://127.1/",
            "http://0x7f000001/",
            "http://2130706433/",
            "http://0177.0.0.1/",
            "http://0177.1/",
            "http://127.0.0.1.:80/",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:7f00:1]/",
            "http://[64:ff9b::7f00:1]/",
            "http://localhost/",
            "http://localhost./",
            "http://LOCALHOST:8765/",
        ] {
            assert_eq!(class_of(url), Some(Class::Loopback), "{url}");
        }
        for (url, class) in [
            ("http://0.0.0.0/", Class::Unspecified),
            ("http://0/", Class::Unspecified),
            ("http://[::]/", Class::Unspecified),
            ("http://169.254.169.254/latest/meta-data/", Class::LinkLocal),
            ("http://[fe80::1]/", Class::LinkLocal),
            ("http://[::ffff:169.254.169.254]/", Class::LinkLocal),
            ("http://10.0.0.1/", Class::Private),
            ("http://172.16.0.1/", Class::Private),
            ("http://172.31.255.255/", Class::Private),
            ("http://192.168.1.1/", Class::Private),
            ("http://[::ffff:10.1.2.3]/", Class::Private),
            ("http://100.64.0.1/", Class::Shared),
            ("http://[fd00::1]/", Class::UniqueLocal),
            ("http://[fc00::1]/", Class::UniqueLocal),
            ("http://224.0.0.1/", Class::Multicast),
            ("http://[ff02::1]/", Class::Multicast),
            ("http://255.255.255.255/", Class::Reserved),
            ("http://[::127.0.0.1]/", Class::Reserved),
        ] {
            assert_eq!(class_of(url), Some(class), "{url}");
        }
        for url in ["http://172.32.0.1/", "http://8.8.8.8/", "http://[2606:4700::1111]/", "http://[::ffff:1.1.1.1]/", "http://100.128.0.1/"]
        {
            assert_eq!(class_of(url), None, "{url}");
        }
    }

    #[test]
    fn this_hosts_own_addresses_are_refused() {
        let own = [IpAddr::V4(Ipv4Addr::new(8, 8, 4, 4))];
        assert_eq!(class(IpAddr::V4(Ipv4Addr::new(8, 8, 4, 4)), &own), Some(Class::ThisHost));
        assert_eq!(class("::ffff:8.8.4.4".parse().unwrap(), &own), Some(Class::ThisHost));
        assert_eq!(class(IpAddr::V4(Ipv4Addr::new(8, 8, 8, 8)), &own), None);
    }

    #[test]
    fn allow_and_deny_entries() {
        assert!(check(&["127.0.0.1"], &[], "http://127.0.0.1:9/").is_ok());
        assert!(check(&["127.0.0.0/8"], &[], "http://127.1:9/").is_ok());
        assert!(check(&["127.0.0.1:9"], &[], "http://127.0.0.1:9/").is_ok());
        assert!(check(&["127.0.0.1:9"], &[], "http://127.0.0.1:10/").is_err(), "another port");
        assert!(check(&["[::1]:9"], &[], "http://[::1]:9/").is_ok());
        assert!(check(&["127.0.0.1"], &[], "http://[::ffff:127.0.0.1]:9/").is_ok(), "a mapped address is its IPv4 address");
        assert!(check(&["localhost:9"], &[], "http://localhost.:9/").is_ok(), "a name rule covers what the name resolves to");
        assert!(check(&["localhost:9"], &[], "http://127.0.0.1:9/").is_err(), "a name rule does not cover the address");
        let denied = check(&["127.0.0.0/8"], &["127.0.0.1:9"], "http://127.0.0.1:9/").unwrap_err();
        assert_eq!(denied.to_string(), "127.0.0.1:9 is denied by the [http] deny entry \"127.0.0.1:9\"", "a deny wins over an allow");
        assert!(matches!(check(&[], &["8.8.8.8"], "http://8.8.8.8/"), Err(Refusal::Denied { .. })), "deny closes public addresses");
        let refused = check(&[], &[], "http://[::ffff:127.0.0.1]:8765/").unwrap_err();
        assert_eq!(
            refused.to_string(),
            "[::ffff:127.0.0.1]:8765 is a loopback address, which http steps may not reach by default (to allow it, add \"127.0.0.1:8765\" to [http] allow in the config)"
        );
        for bad in ["", "10.0.0.0/33", "a b", "host:0", "host:99999", "[::1", "[::1]x", "-bad.example", "ex..ample"] {
            assert!(Rule::try_from(bad.to_string()).is_err(), "{bad}");
        }
        for good in ["10.0.0.0/8", "fd00::/8", "[fd00::/8]:443", "10.0.0.0/8:443", "internal.example", "Internal.Example.:443", "::1"] {
            assert!(Rule::try_from(good.to_string()).is_ok(), "{good}");
        }
    }
}
