//! How a policy's values match a request's: wildcards (`*`, `?`), policy variables, ARNs part
//! by part, dates, addresses in CIDR blocks and base64 bytes. Parsing and evaluating the
//! grammar is `policy.rs`; this is the matching it relies on.

use std::collections::HashMap;
use std::net::IpAddr;

/// Whether `text` matches `pattern`, where `*` is any run and `?` any one character.
pub(crate) fn glob(pattern: &str, text: &str) -> bool {
    matches_pattern(&plain_pattern(pattern), text)
}

/// One character of a pattern: itself, or a wildcard. A policy variable's value is all
/// literals, so a `*` in a user name or header matches only a `*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pc {
    Lit(char),
    /// `*`: any run of characters.
    Run,
    /// `?`: any one character.
    One,
}

impl Pc {
    /// The character as written (a wildcard's own).
    pub(super) fn char(self) -> char {
        match self {
            Pc::Lit(c) => c,
            Pc::Run => '*',
            Pc::One => '?',
        }
    }
}

/// A pattern without policy variables.
pub(super) fn plain_pattern(p: &str) -> Vec<Pc> {
    p.chars()
        .map(|c| match c {
            '*' => Pc::Run,
            '?' => Pc::One,
            c => Pc::Lit(c),
        })
        .collect()
}

/// A pattern with IAM's policy variables (`${aws:username}`, `${s3:prefix, 'default'}`, and
/// `${*}`, `${?}`, `${$}` for those characters) replaced by literals from the request's keys;
/// `None` when one names a key the request lacks (or holds several values for) and gives no
/// default, so the element matches nothing, as IAM evaluates it. `${` without its `}` is text.
pub(super) fn pattern_with_variables(p: &str, keys: &HashMap<String, Vec<String>>) -> Option<Vec<Pc>> {
    let mut out = Vec::with_capacity(p.len());
    let mut rest = p;
    while let Some(at) = rest.find("${") {
        out.extend(plain_pattern(&rest[..at]));
        let inner_start = at + 2;
        let Some(len) = rest[inner_start..].find('}') else {
            out.extend(plain_pattern(&rest[at..]));
            return Some(out);
        };
        let inner = &rest[inner_start..inner_start + len];
        rest = &rest[inner_start + len + 1..];
        let (name, default) = match inner.split_once(',') {
            Some((n, d)) => {
                let d = d.trim();
                let quoted = d.len() >= 2 && d.starts_with('\'') && d.ends_with('\'');
                (n.trim(), quoted.then(|| &d[1..d.len() - 1]))
            }
            None => (inner.trim(), None),
        };
        let value = match name {
            "*" | "?" | "$" => Some(name),
            _ => match keys.get(&name.to_ascii_lowercase()).map(Vec::as_slice) {
                Some([one]) => Some(one.as_str()),
                _ => default,
            },
        };
        out.extend(value?.chars().map(Pc::Lit));
    }
    out.extend(plain_pattern(rest));
    Some(out)
}

/// Whether `text` matches the pattern.
pub(super) fn matches_pattern(p: &[Pc], text: &str) -> bool {
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == Pc::One || p[pi] == Pc::Lit(t[ti])) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == Pc::Run {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == Pc::Run)
}

/// Parses `2026-11-24T10:00:00Z` (fractional seconds and offsets allowed), `2026-11-24`, or
/// seconds since the epoch, into Unix milliseconds.
pub(super) fn parse_date(s: &str) -> Option<i128> {
    use time::format_description::well_known::Rfc3339;
    if let Ok(t) = time::OffsetDateTime::parse(s, &Rfc3339) {
        return Some(t.unix_timestamp_nanos() / 1_000_000);
    }
    if let Ok(secs) = s.parse::<i64>() {
        return Some(i128::from(secs) * 1000);
    }
    let fmt = time::macros::format_description!("[year]-[month]-[day]");
    let d = time::Date::parse(s, &fmt).ok()?;
    Some(d.midnight().assume_utc().unix_timestamp_nanos() / 1_000_000)
}

/// An address and prefix length; a bare address is its own /32 or /128.
pub(super) fn parse_cidr(s: &str) -> Option<(IpAddr, u8)> {
    let (addr, len) = match s.split_once('/') {
        Some((a, l)) => (a.parse::<IpAddr>().ok()?, l.parse::<u8>().ok()?),
        None => {
            let a = s.parse::<IpAddr>().ok()?;
            (a, if a.is_ipv4() { 32 } else { 128 })
        }
    };
    let max = if addr.is_ipv4() { 32 } else { 128 };
    (len <= max).then_some((addr, len))
}

pub(super) fn cidr_contains((net, len): (IpAddr, u8), ip: IpAddr) -> bool {
    let ip = match (net, ip) {
        (IpAddr::V4(_), IpAddr::V6(v6)) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        _ => ip,
    };
    match (net, ip) {
        (IpAddr::V4(n), IpAddr::V4(a)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
            u32::from(n) & mask == u32::from(a) & mask
        }
        (IpAddr::V6(n), IpAddr::V6(a)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
            u128::from(n) & mask == u128::from(a) & mask
        }
        _ => false,
    }
}

/// Whether ARN `have` matches pattern `want` part by part (`arn:partition:service:region:
/// account:resource`, the resource keeping any further `:`); a value that is no ARN matches
/// nothing.
pub(super) fn arn_like(want: &str, have: &str) -> bool {
    arn_matches(&plain_pattern(want), have)
}

/// [`arn_like`] of a pattern.
pub(super) fn arn_matches(want: &[Pc], have: &str) -> bool {
    let h: Vec<&str> = have.splitn(6, ':').collect();
    let mut w: Vec<&[Pc]> = Vec::with_capacity(6);
    let mut rest = want;
    while w.len() < 5 {
        let Some(at) = rest.iter().position(|&c| c == Pc::Lit(':')) else {
            break;
        };
        w.push(&rest[..at]);
        rest = &rest[at + 1..];
    }
    w.push(rest);
    w.len() == 6 && h.len() == 6 && w.iter().zip(&h).all(|(w, h)| matches_pattern(w, h))
}

pub(super) fn base64_bytes(v: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(v).ok()
}
