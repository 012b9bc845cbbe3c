//! The values a metadata service hands over: the join endpoints list (one tag or attribute) and Azure's
//! `compute` document. Pure parsing, standard library plus serde.
//!
//! The endpoints value is a list of entries separated by white space or commas (AWS tag values may not hold
//! commas; GCP attributes and Azure tags may): `HOST`, `HOST:PORT`, `IPv4`, `IPv4:PORT`, `IPv6` or
//! `[IPv6]:PORT`. HOST is a DNS name (RFC 1123 labels, e.g. an internal load balancer's name), resolved each
//! round. Without a port, [`crate::DEFAULT_JOIN_PORT`] (the join service's node port, 30090).

use std::net::{IpAddr, SocketAddr};

use crate::error::{MetadataError, clip};

/// Most endpoints one value may name (the same bound as `endpoints::MAX_JOIN_ENDPOINTS`).
pub const MAX_METADATA_ENDPOINTS: usize = 64;
/// Longest DNS name accepted (RFC 1035 §2.3.4: 255 octets on the wire, 253 characters written).
pub const MAX_HOST_NAME: usize = 253;

/// One join endpoint as the value names it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// An address.
    Addr(SocketAddr),
    /// A DNS name and port, resolved when used.
    Name {
        /// The name (lower-cased, without a trailing dot).
        host: String,
        /// The port.
        port: u16,
    },
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Addr(a) => write!(f, "{a}"),
            Endpoint::Name { host, port } => write!(f, "{host}:{port}"),
        }
    }
}

fn bad(entry: &str, reason: &str) -> MetadataError {
    MetadataError::BadEndpoint { entry: clip(entry, 200), reason: reason.to_owned() }
}

fn parse_port(entry: &str, s: &str) -> Result<u16, MetadataError> {
    if s.is_empty() || s.len() > 5 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad(entry, "the port is not a number from 1 to 65535"));
    }
    match s.parse::<u16>() {
        Ok(p) if p != 0 => Ok(p),
        _ => Err(bad(entry, "the port is not a number from 1 to 65535")),
    }
}

/// Whether `host` is a DNS name: labels of 1–63 letters, digits and inner hyphens, at most
/// [`MAX_HOST_NAME`] characters, not all-numeric in its last label (which would be a mistyped address).
fn is_host_name(host: &str) -> bool {
    if host.is_empty() || host.len() > MAX_HOST_NAME {
        return false;
    }
    let labels_ok = host.split('.').all(|l| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    });
    let last = host.rsplit('.').next().unwrap_or("");
    labels_ok && !last.bytes().all(|b| b.is_ascii_digit())
}

/// One entry.
pub fn parse_endpoint(entry: &str, default_port: u16) -> Result<Endpoint, MetadataError> {
    if let Some(rest) = entry.strip_prefix('[') {
        let (ip, after) = rest.split_once(']').ok_or_else(|| bad(entry, "unclosed '['"))?;
        let ip: std::net::Ipv6Addr = ip.parse().map_err(|_| bad(entry, "not an IPv6 address inside [ ]"))?;
        let port = match after {
            "" => default_port,
            p => parse_port(entry, p.strip_prefix(':').ok_or_else(|| bad(entry, "text after ']' is not :PORT"))?)?,
        };
        return Ok(Endpoint::Addr(SocketAddr::new(IpAddr::V6(ip), port)));
    }
    if let Ok(ip) = entry.parse::<IpAddr>() {
        return Ok(Endpoint::Addr(SocketAddr::new(ip, default_port)));
    }
    let (host, port) = match entry.rsplit_once(':') {
        Some((h, p)) => (h, parse_port(entry, p)?),
        None => (entry, default_port),
    };
    if let Ok(ip) = host.parse::<std::net::Ipv4Addr>() {
        return Ok(Endpoint::Addr(SocketAddr::new(IpAddr::V4(ip), port)));
    }
    let host = host.strip_suffix('.').unwrap_or(host);
    if !is_host_name(host) {
        return Err(bad(entry, "not an IP address or DNS name (IPv6 with a port needs [ ])"));
    }
    Ok(Endpoint::Name { host: host.to_ascii_lowercase(), port })
}

/// The endpoints a value names, in order, duplicates dropped.
pub fn parse_endpoint_list(value: &str, default_port: u16) -> Result<Vec<Endpoint>, MetadataError> {
    let mut out: Vec<Endpoint> = Vec::new();
    for entry in value.split(|c: char| c.is_whitespace() || c == ',').filter(|e| !e.is_empty()) {
        let e = parse_endpoint(entry, default_port)?;
        if out.contains(&e) {
            continue;
        }
        if out.len() == MAX_METADATA_ENDPOINTS {
            return Err(MetadataError::TooManyEndpoints { limit: MAX_METADATA_ENDPOINTS });
        }
        out.push(e);
    }
    if out.is_empty() {
        return Err(MetadataError::Empty);
    }
    Ok(out)
}

/// A tag of Azure IMDS's `compute.tagsList`.
#[derive(serde::Deserialize)]
struct AzureTag {
    name: String,
    value: String,
}

/// The part of Azure IMDS's `compute` document read here (`/metadata/instance/compute`).
#[derive(serde::Deserialize)]
struct AzureCompute {
    #[serde(rename = "tagsList")]
    tags_list: Option<Vec<AzureTag>>,
}

/// The value of tag `key` (Azure tag names are case-insensitive) in an Azure IMDS `compute` document.
pub fn azure_tag(url: &str, body: &[u8], key: &str) -> Result<String, MetadataError> {
    let doc: AzureCompute = serde_json::from_slice(body)
        .map_err(|e| MetadataError::Malformed { url: url.to_owned(), what: format!("not the compute JSON: {e}") })?;
    let tags =
        doc.tags_list.ok_or_else(|| MetadataError::Malformed { url: url.to_owned(), what: "no tagsList".into() })?;
    let mut found = tags.into_iter().filter(|t| t.name.eq_ignore_ascii_case(key));
    let tag = found.next().ok_or_else(|| MetadataError::NotFound { url: format!("{url} tag {key}") })?;
    if found.next().is_some() {
        return Err(MetadataError::Malformed { url: url.to_owned(), what: format!("tag {key} appears twice") });
    }
    Ok(tag.value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> Endpoint {
        Endpoint::Addr(s.parse().unwrap())
    }

    #[test]
    fn entries() {
        assert_eq!(parse_endpoint("10.0.0.5", 30090).unwrap(), addr("10.0.0.5:30090"));
        assert_eq!(parse_endpoint("10.0.0.5:9", 30090).unwrap(), addr("10.0.0.5:9"));
        assert_eq!(parse_endpoint("fd00::5", 30090).unwrap(), addr("[fd00::5]:30090"));
        assert_eq!(parse_endpoint("[fd00::5]:7", 30090).unwrap(), addr("[fd00::5]:7"));
        assert_eq!(parse_endpoint("[fd00::5]", 30090).unwrap(), addr("[fd00::5]:30090"));
        assert_eq!(
            parse_endpoint("Join.Internal.Example.:443", 1).unwrap(),
            Endpoint::Name { host: "join.internal.example".into(), port: 443 }
        );
        for bad in [
            "10.0.0.5:0",
            "10.0.0.5:65536",
            "10.0.0.5:+1",
            "10.0.0.5:",
            "[fd00::5",
            "[fd00::5]x",
            "[10.0.0.1]:1",
            "a..b",
            "-a.example",
            "a_b.example",
            "300.1.1.1",
            "1.2.3",
            "http://a",
            "a/b",
            "",
        ] {
            assert!(matches!(parse_endpoint(bad, 30090), Err(MetadataError::BadEndpoint { .. })), "{bad:?} accepted");
        }
        assert!(parse_endpoint(&format!("{}.example", "a".repeat(64)), 1).is_err());
        assert!(parse_endpoint(&["a"; 130].join("."), 1).is_err(), "longer than 253");
    }

    #[test]
    fn lists() {
        let l = parse_endpoint_list(" 10.0.0.1 10.0.0.2:1,10.0.0.1\n\tjoin.example ", 30090).unwrap();
        assert_eq!(l.len(), 3, "{l:?}");
        assert!(matches!(parse_endpoint_list(" ,, ", 1), Err(MetadataError::Empty)));
        let many: Vec<String> = (0..=MAX_METADATA_ENDPOINTS).map(|i| format!("10.0.{}.{}", i / 250, i % 250)).collect();
        assert!(matches!(
            parse_endpoint_list(&many.join(" "), 1),
            Err(MetadataError::TooManyEndpoints { limit: MAX_METADATA_ENDPOINTS })
        ));
        assert_eq!(parse_endpoint_list(&many[..MAX_METADATA_ENDPOINTS].join(" "), 1).unwrap().len(), 64);
    }

    #[test]
    fn azure_tags() {
        let doc = br#"{"name":"vm0","tagsList":[{"name":"other","value":"x"},{"name":"Attest-Join-Endpoints","value":"10.0.0.4"}]}"#;
        assert_eq!(azure_tag("u", doc, "attest-join-endpoints").unwrap(), "10.0.0.4");
        assert!(matches!(azure_tag("u", doc, "missing"), Err(MetadataError::NotFound { .. })));
        assert!(matches!(azure_tag("u", b"{", "k"), Err(MetadataError::Malformed { .. })));
        assert!(matches!(azure_tag("u", br#"{"tagsList":{}}"#, "k"), Err(MetadataError::Malformed { .. })));
        assert!(matches!(azure_tag("u", br#"{"name":"vm"}"#, "k"), Err(MetadataError::Malformed { .. })));
        let twice = br#"{"tagsList":[{"name":"k","value":"a"},{"name":"K","value":"b"}]}"#;
        assert!(matches!(azure_tag("u", twice, "k"), Err(MetadataError::Malformed { .. })));
    }

    proptest::proptest! {
        /// Any text: a typed answer, never a panic; what is accepted is within the limits and prints back to
        /// entries that parse to the same endpoints.
        #[test]
        fn any_value(value in "\\PC{0,300}") {
            if let Ok(list) = parse_endpoint_list(&value, 30090) {
                proptest::prop_assert!(!list.is_empty() && list.len() <= MAX_METADATA_ENDPOINTS);
                let printed: Vec<String> = list.iter().map(ToString::to_string).collect();
                proptest::prop_assert_eq!(parse_endpoint_list(&printed.join(" "), 1).unwrap(), list);
            }
        }

        /// Lists of well-formed entries are read back exactly.
        #[test]
        fn well_formed(ips in proptest::collection::vec((proptest::prelude::any::<[u8; 4]>(), 1u16..), 1..10)) {
            let addrs: Vec<SocketAddr> = ips.iter().map(|(ip, port)| SocketAddr::from((*ip, *port))).collect();
            let text: Vec<String> = addrs.iter().map(ToString::to_string).collect();
            let mut want: Vec<Endpoint> = Vec::new();
            for a in &addrs {
                if !want.contains(&Endpoint::Addr(*a)) {
                    want.push(Endpoint::Addr(*a));
                }
            }
            proptest::prop_assert_eq!(parse_endpoint_list(&text.join(","), 1).unwrap(), want);
        }
    }
}
