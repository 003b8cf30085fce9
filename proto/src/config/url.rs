//! What a base URL in the config may look like (`llama.url`, `honcho.url`,
//! `matrix.homeserver`; docs/config.md, 'Validation'): `http://` or `https://`, a host (a
//! name, an IPv4 address or an IPv6 address in brackets), an optional port and an optional
//! path. Checked when the file is read, so a malformed one is refused naming its key at
//! start or at a reload, never met later by the HTTP client as a DNS failure or a parse
//! error that names no key.

// `core::net`: the address types only, no sockets (proto does no I/O).
use core::net::{Ipv4Addr, Ipv6Addr};

/// The longest host name DNS can carry (253 characters written out, RFC 1035): a longer
/// one can never resolve.
const MAX_HOST_NAME: usize = 253;

/// The longest label of a host name DNS can carry (RFC 1035).
const MAX_HOST_LABEL: usize = 63;

/// What is wrong with `url` as a base URL, in words that follow the URL itself; `Ok` when
/// it is one.
pub(super) fn check(url: &str) -> Result<(), String> {
    let Some(rest) = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
    else {
        return Err("it does not start with http:// or https://".into());
    };
    if let Some(c) = url.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "it holds {c:?}, and white space and control characters have no place in a url"
        ));
    }
    if rest.contains(['?', '#']) {
        return Err(
            "it has a query or a fragment (`?`, `#`); a base url is a host, a port and a path"
                .into(),
        );
    }
    let authority = rest
        .split_once('/')
        .map_or(rest, |(authority, _path)| authority);
    if authority.contains('@') {
        return Err("it holds a user name (`…@`); a base url is a host, a port and a path".into());
    }
    let (host, port) = split_port(authority)?;
    check_host(host)?;
    match port {
        None => Ok(()),
        Some(port) => check_port(port),
    }
}

/// The host and the port (what follows its `:`, when there is one) of `authority`.
fn split_port(authority: &str) -> Result<(&str, Option<&str>), String> {
    if authority.starts_with('[') {
        let Some(end) = authority.find(']') else {
            return Err(format!("host {authority:?} opens `[` and never closes it"));
        };
        let (host, after) = authority.split_at(end + 1);
        return match after {
            "" => Ok((host, None)),
            _ => match after.strip_prefix(':') {
                Some(port) => Ok((host, Some(port))),
                None => Err(format!(
                    "{after:?} follows the host {host}; only `:PORT` may"
                )),
            },
        };
    }
    match authority.split_once(':') {
        Some((_, port)) if port.contains(':') => Err(
            "it has more than one `:` before its path; an IPv6 address is written in brackets, as in http://[::1]:8080".into(),
        ),
        Some((host, port)) => Ok((host, Some(port))),
        None => Ok((authority, None)),
    }
}

fn check_host(host: &str) -> Result<(), String> {
    if host.is_empty() {
        return Err("it has no host".into());
    }
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return match inner.parse::<Ipv6Addr>() {
            Ok(_) => Ok(()),
            Err(_) => Err(format!("host {host} is not an IPv6 address")),
        };
    }
    if let Some(c) = host
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Err(format!(
            "host {host:?} holds {c:?}: a host is a name (ASCII letters, digits, `-`, `_` and `.`; an international name in its xn-- form), an IPv4 address, or an IPv6 address in brackets"
        ));
    }
    // One trailing dot is a fully qualified name, and resolves the same.
    let name = host.strip_suffix('.').unwrap_or(host);
    if name.len() > MAX_HOST_NAME {
        return Err(format!(
            "host {host:?} is longer than a name can be ({MAX_HOST_NAME} characters)"
        ));
    }
    let labels: Vec<&str> = name.split('.').collect();
    if labels.iter().any(|l| l.is_empty()) {
        return Err(format!("host {host:?} has an empty part between its dots"));
    }
    if let Some(long) = labels.iter().find(|l| l.len() > MAX_HOST_LABEL) {
        return Err(format!(
            "host {host:?} has a part longer than {MAX_HOST_LABEL} characters ({long:?})"
        ));
    }
    // A name whose last part is a number is read as an IPv4 address by HTTP clients
    // (`1.2.3` as 1.2.0.3, `0x7f.1` as 127.0.0.1): only a plain dotted quad is taken, so
    // the address connected to is the one written.
    let last = labels.last().copied().unwrap_or_default();
    let numeric = last.bytes().all(|b| b.is_ascii_digit())
        || last
            .strip_prefix("0x")
            .or_else(|| last.strip_prefix("0X"))
            .is_some_and(|hex| hex.bytes().all(|b| b.is_ascii_hexdigit()));
    if numeric && name.parse::<Ipv4Addr>().is_err() {
        return Err(format!(
            "host {host:?} is not an IPv4 address (four numbers 0 to 255, as in 127.0.0.1), and a name may not end in a number"
        ));
    }
    Ok(())
}

fn check_port(port: &str) -> Result<(), String> {
    if port.is_empty() {
        return Err("it has a `:` but no port after it".into());
    }
    // Digits only: a number parser would take a sign (`+80`).
    let number = match port.bytes().all(|b| b.is_ascii_digit()) {
        true => port.parse::<u16>().ok(),
        false => None,
    };
    match number {
        Some(0) | None => Err(format!("port {port:?} is not a number from 1 to 65535")),
        Some(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn hosts_written_as_names_addresses_and_bracketed_ipv6_with_ports_and_paths_pass() {
        for good in [
            "http://127.0.0.1:8080",
            "https://matrix.example.org",
            "http://[::1]:8008/",
            "http://localhost:8080/base",
            "http://localhost",
            "https://honcho.example.org:443/v2/",
            "http://llama_box.lan:65535",
            "http://example.org.:1/",
            "http://[2001:db8::1]",
            "http://xn--bcher-kva.example/",
        ] {
            assert_eq!(check(good), Ok(()), "{good}");
        }
    }

    #[test]
    fn what_is_not_scheme_host_port_and_path_is_refused_saying_what_is_wrong() {
        for (bad, why) in [
            ("http://", "no host"),
            ("https://", "no host"),
            ("http:///slots", "no host"),
            ("http://:8080", "no host"),
            ("http://exa mple:99999/", "' '"),
            ("http://example\t/", "'\\t'"),
            ("http://example/\u{7f}", "'\\u{7f}'"),
            ("http://example:99999/", "port \"99999\""),
            ("http://example:0", "port \"0\""),
            ("http://example:", "no port"),
            ("http://example:+80", "port \"+80\""),
            ("http://example:8o80", "port \"8o80\""),
            ("http://user:pw@example", "user name"),
            ("http://example?x=1", "query"),
            ("http://example/a#b", "fragment"),
            ("http://::1:8080", "brackets"),
            ("http://[::1", "never closes"),
            ("http://[::g]:80", "not an IPv6 address"),
            ("http://[::1]x", "only `:PORT`"),
            ("http://exa%6dple", "'%'"),
            ("http://bücher.example", "'ü'"),
            ("http://a..b", "empty part"),
            ("http://.example", "empty part"),
            ("http://1.2.3", "not an IPv4 address"),
            ("http://300.1.1.1:80", "not an IPv4 address"),
            ("http://0x7f.1", "not an IPv4 address"),
            ("http://example.123", "not an IPv4 address"),
            ("ftp://example", "http:// or https://"),
            ("example.org", "http:// or https://"),
        ] {
            let e = check(bad).expect_err(bad);
            assert!(e.contains(why), "{bad}: {e}");
        }
        let long_label = format!("http://{}.org", "a".repeat(64));
        assert!(check(&long_label)
            .expect_err("label")
            .contains("longer than 63"));
        let long_name = format!("http://{}org", "abcdefghi.".repeat(26));
        assert!(check(&long_name).expect_err("name").contains("253"));
    }
}
