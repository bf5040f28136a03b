//! Where an OAuth login may connect: the addresses its discovery, its
//! authorization server's metadata and its endpoints lead to, checked as
//! rmcp's own OAuth client checks them (`AuthorizationManager::new`), on
//! this client's TLS settings.
//!
//! An MCP server names the documents a login reads, and they name the
//! endpoints it posts to: without a check, a server a client merely calls
//! could have it send requests — a client secret among them — to the
//! cloud's instance metadata (`169.254.169.254`) or a service on the
//! client's own network. So every address a login connects to is public,
//! unless the MCP server's own URL names one of the same kind: `localhost`
//! or a loopback address, a private address (`10.0.0.0/8`, `fc00::/7`, …),
//! or [`OAuth::private_addresses`](super::OAuth::private_addresses) allows
//! private ones. Link-local (instance metadata), unspecified, multicast,
//! broadcast and reserved addresses never are. Names are resolved here and
//! only the allowed addresses are connected to, so that a name cannot be
//! pointed at an internal address after it was checked; the hosts of the
//! proxies the environment names are not filtered (the proxy resolves).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// The kinds of address the policy tells apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Public,
    Loopback,
    Private,
    /// Link-local (instance metadata), unspecified, multicast, broadcast,
    /// documentation and reserved ranges: never connected to.
    Never,
}

/// What kind of address `ip` is; an IPv4 address inside an IPv6 one
/// (`::ffff:a.b.c.d`, `64:ff9b::a.b.c.d`) as the IPv4 address.
pub(super) fn kind(ip: IpAddr) -> Kind {
    match ip {
        IpAddr::V4(v4) => kind_v4(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => kind_v4(v4),
            None => kind_v6(v6),
        },
    }
}

fn kind_v4(ip: Ipv4Addr) -> Kind {
    let [a, b, c, _] = ip.octets();
    if CLOUD_METADATA_V4.contains(&ip) {
        Kind::Never
    } else if ip.is_loopback() {
        Kind::Loopback
    } else if ip.is_private() || (a == 100 && (64..128).contains(&b)) {
        Kind::Private
    } else if a == 0
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || a >= 240
        || (a, b, c) == (192, 0, 0)
        || (a, b, c) == (192, 0, 2)
        || (a, b, c) == (198, 51, 100)
        || (a, b, c) == (203, 0, 113)
        || (a == 198 && (b == 18 || b == 19))
    {
        Kind::Never
    } else {
        Kind::Public
    }
}

/// Instance metadata services outside the link-local range, never
/// connected to even where private addresses are: Alibaba Cloud's.
const CLOUD_METADATA_V4: [Ipv4Addr; 1] = [Ipv4Addr::new(100, 100, 100, 200)];

/// The same over IPv6, inside `fc00::/7`: AWS's (`fd00:ec2::254`) and
/// Google Cloud's (`fd20:ce::254`).
const CLOUD_METADATA_V6: [Ipv6Addr; 2] = [
    Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254),
    Ipv6Addr::new(0xfd20, 0xce, 0, 0, 0, 0, 0, 0x254),
];

fn kind_v6(ip: Ipv6Addr) -> Kind {
    let segments = ip.segments();
    let first = segments[0];
    if CLOUD_METADATA_V6.contains(&ip) {
        Kind::Never
    } else if ip.is_loopback() {
        Kind::Loopback
    } else if first & 0xfe00 == 0xfc00 {
        Kind::Private
    } else if ip.is_unspecified()
        || ip.is_multicast()
        // Link-local, and the old site-local.
        || first & 0xffc0 == 0xfe80
        || first & 0xffc0 == 0xfec0
        // Documentation.
        || segments[..2] == [0x2001, 0x0db8]
        // Teredo, whose IPv4 address is hidden; local-use NAT64, whose
        // translator may reach any IPv4 address.
        || segments[..2] == [0x2001, 0]
        || segments[..3] == [0x64, 0xff9b, 1]
    {
        Kind::Never
    } else {
        Kind::Public
    }
}

/// The IPv4 address an IPv6 one carries, as rmcp reads them: mapped
/// (`::ffff:0:0/96`), compatible (`::/96`, but `::` and `::1`), NAT64
/// (`64:ff9b::/96`) and 6to4 (`2002::/16`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let [a, b, c, d, e, f, g, h] = ip.segments();
    let low = Ipv4Addr::from((u32::from(g) << 16) | u32::from(h));
    match [a, b, c, d, e, f] {
        [0, 0, 0, 0, 0, 0xffff] | [0x64, 0xff9b, 0, 0, 0, 0] => Some(low),
        [0, 0, 0, 0, 0, 0] if !ip.is_loopback() && !ip.is_unspecified() => Some(low),
        [0x2002, ..] => Some(Ipv4Addr::from((u32::from(b) << 16) | u32::from(c))),
        _ => None,
    }
}

/// The addresses one login may connect to.
#[derive(Clone, Debug)]
pub(crate) struct Policy {
    /// The MCP server's own address, when its URL names one: always allowed.
    base: Option<IpAddr>,
    loopback: bool,
    private: bool,
    /// The proxies' hosts, which resolve the names they are asked for.
    proxies: Arc<[String]>,
}

impl Policy {
    /// The policy of a login for the MCP server at `url`; `private`: private
    /// addresses allowed whatever the URL names.
    pub(crate) fn new(url: &str, private: bool) -> Self {
        let host = url::Url::parse(url)
            .ok()
            .and_then(|url| url.host().map(|host| host.to_owned()));
        let base = match &host {
            Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(*ip)),
            Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(*ip)),
            _ => None,
        };
        let named = match (&host, base) {
            (_, Some(ip)) => kind(ip),
            (Some(url::Host::Domain(name)), None) if is_localhost(name) => Kind::Loopback,
            _ => Kind::Public,
        };
        let proxies = [
            "HTTP_PROXY",
            "http_proxy",
            "HTTPS_PROXY",
            "https_proxy",
            "ALL_PROXY",
            "all_proxy",
        ]
        .iter()
        .filter_map(|name| std::env::var(name).ok())
        .filter_map(|proxy| {
            let proxy = match proxy.contains("://") {
                true => proxy,
                false => format!("http://{proxy}"),
            };
            Some(normalized(url::Url::parse(&proxy).ok()?.host_str()?))
        })
        .collect();
        Policy {
            base,
            loopback: named == Kind::Loopback,
            private: private || named == Kind::Private,
            proxies,
        }
    }

    /// Whether a login may connect to `ip`.
    pub(super) fn allows(&self, ip: IpAddr) -> bool {
        self.base == Some(ip)
            || match kind(ip) {
                Kind::Public => true,
                Kind::Loopback => self.loopback,
                Kind::Private => self.private,
                Kind::Never => false,
            }
    }

    /// Whether a login may send a request to `url`: a host that is an
    /// address must be one it may connect to (reqwest connects to it
    /// without resolving); a name is checked where it is resolved.
    pub(super) fn allows_url(&self, url: &url::Url) -> bool {
        match url.host() {
            Some(url::Host::Ipv4(ip)) => self.allows(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => self.allows(IpAddr::V6(ip)),
            Some(url::Host::Domain(_)) => true,
            None => false,
        }
    }
}

/// A name that resolves to no address a login may connect to.
#[derive(Debug)]
pub(super) struct NotAllowed(pub(super) String);

impl std::fmt::Display for NotAllowed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotAllowed {}

impl NotAllowed {
    /// The refusal a request's `error` carries, if the policy refused the
    /// name it resolved (reqwest wraps the resolver's error in its own).
    pub(super) fn in_error(error: &reqwest::Error) -> Option<&NotAllowed> {
        std::iter::successors(std::error::Error::source(error), |cause| cause.source())
            .find_map(|cause| cause.downcast_ref::<NotAllowed>())
    }
}

/// `localhost`, or a name under it.
fn is_localhost(name: &str) -> bool {
    let name = normalized(name);
    name == "localhost" || name.ends_with(".localhost")
}

fn normalized(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

impl Resolve for Policy {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.clone();
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let resolved: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if policy.proxies.contains(&normalized(&host)) {
                return Ok(Box::new(resolved.into_iter()) as Addrs);
            }
            let allowed: Vec<SocketAddr> = resolved
                .into_iter()
                .filter(|address| policy.allows(address.ip()))
                .collect();
            if allowed.is_empty() {
                return Err(Box::new(NotAllowed(format!(
                    "an OAuth login may not connect to `{host}`: it resolves to no public address \
                     (a private one only with `OAuth::private_addresses`, this machine only when \
                     the MCP server is on it)"
                ))) as _);
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_address_is_told_apart() {
        for (ip, expected) in [
            ("93.184.216.34", Kind::Public),
            ("2606:4700::1111", Kind::Public),
            ("127.0.0.1", Kind::Loopback),
            ("127.9.9.9", Kind::Loopback),
            ("::1", Kind::Loopback),
            ("10.1.2.3", Kind::Private),
            ("172.16.0.1", Kind::Private),
            ("192.168.1.1", Kind::Private),
            ("100.64.0.1", Kind::Private),
            ("fd00::1", Kind::Private),
            ("169.254.169.254", Kind::Never),
            ("fe80::1", Kind::Never),
            ("0.0.0.0", Kind::Never),
            ("::", Kind::Never),
            ("224.0.0.1", Kind::Never),
            ("255.255.255.255", Kind::Never),
            ("240.0.0.1", Kind::Never),
            ("192.0.2.1", Kind::Never),
            ("2001:db8::1", Kind::Never),
            // IPv4 inside IPv6: judged as the IPv4 address.
            ("::ffff:169.254.169.254", Kind::Never),
            ("::ffff:127.0.0.1", Kind::Loopback),
            ("64:ff9b::a9fe:a9fe", Kind::Never),
            ("::a9fe:a9fe", Kind::Never),
            ("::ffff:10.0.0.1", Kind::Private),
            ("2002:a9fe:a9fe::1", Kind::Never),
            ("2002:0a00:0001::1", Kind::Private),
            ("2001:0:4136:e378::1", Kind::Never),
            ("64:ff9b:1::a00:9", Kind::Never),
            // Instance metadata where private addresses are.
            ("100.100.100.200", Kind::Never),
            ("fd00:ec2::254", Kind::Never),
            ("fd20:ce::254", Kind::Never),
        ] {
            assert_eq!(kind(ip.parse().unwrap()), expected, "{ip}");
        }
    }

    #[test]
    fn a_login_connects_where_the_servers_own_url_lets_it() {
        let public = Policy::new("https://mcp.example.com/mcp", false);
        let local = Policy::new("http://localhost:8080/mcp", false);
        let loopback = Policy::new("http://127.0.0.1:8080/mcp", false);
        let private = Policy::new("http://10.0.0.5/mcp", false);
        let allowed = Policy::new("https://mcp.corp/mcp", true);
        let ip = |text: &str| text.parse::<IpAddr>().unwrap();
        for policy in [&public, &local, &loopback, &private, &allowed] {
            assert!(policy.allows(ip("93.184.216.34")), "{policy:?}");
            assert!(!policy.allows(ip("169.254.169.254")), "{policy:?}");
            assert!(!policy.allows(ip("::ffff:169.254.169.254")), "{policy:?}");
        }
        assert!(!public.allows(ip("127.0.0.1")));
        assert!(!public.allows(ip("10.0.0.9")));
        assert!(local.allows(ip("127.0.0.1")) && !local.allows(ip("10.0.0.9")));
        assert!(loopback.allows(ip("::1")));
        assert!(private.allows(ip("10.9.9.9")) && !private.allows(ip("127.0.0.1")));
        assert!(allowed.allows(ip("192.168.0.7")) && !allowed.allows(ip("127.0.0.1")));
        let url = |text: &str| url::Url::parse(text).unwrap();
        assert!(!public.allows_url(&url("http://169.254.169.254/latest/meta-data/")));
        assert!(!public.allows_url(&url("http://[::ffff:a9fe:a9fe]/")));
        assert!(public.allows_url(&url("https://auth.example.com/token")));
    }

    /// A name is judged by the addresses it resolves to: `localhost` from
    /// a login for a server elsewhere resolves to none it may connect to.
    #[tokio::test]
    async fn a_name_that_resolves_inside_is_refused_where_it_is_resolved() {
        let name = |text: &str| text.parse::<Name>().unwrap();
        let public = Policy::new("https://mcp.example.com/mcp", false);
        let refused = match public.resolve(name("localhost")).await {
            Ok(addresses) => panic!("resolved: {:?}", addresses.collect::<Vec<_>>()),
            Err(error) => error,
        };
        assert!(refused.downcast_ref::<NotAllowed>().is_some(), "{refused}");
        let local = Policy::new("http://localhost:8080/mcp", false);
        let addresses: Vec<SocketAddr> = local.resolve(name("localhost")).await.unwrap().collect();
        assert!(!addresses.is_empty());
        assert!(addresses.iter().all(|address| address.ip().is_loopback()));
    }
}
