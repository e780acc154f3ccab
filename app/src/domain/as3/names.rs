//! AS3 object names from Kubernetes names.
//!
//! AS3 names match `^[A-Za-z]([0-9A-Za-z_.-]{0,188}[0-9A-Za-z_.])?$` at every level. Kubernetes
//! names are lower-case letters, digits, `-` and `.`, ending in a letter or digit, and may start
//! with a digit. So a Kubernetes name is used as is when it starts with a letter, and gets the
//! prefix `x_` when it does not: Kubernetes names never contain `_`, so no prefixed name can
//! equal an unprefixed one. The parts of a composite name are joined with `_` (never inside a
//! part), so different inputs always give different names.
//!
//! | object | name |
//! |---|---|
//! | tenant | `Loadbalancer.spec.partition`, else the cluster name |
//! | application | `<namespace>_<protocol>_app` |
//! | pool | `<service>_<port>_pool` |
//! | virtual server | `vs_<ticket>_<port>` (one app may hold several addresses) |
//! | iRule | `vs_<ticket>_<port>_irule` |

use std::borrow::Cow;

use crate::domain::crd::Protocol;

/// A Kubernetes name as an AS3 name part.
pub fn part(k8s: &str) -> Cow<'_, str> {
    if k8s.starts_with(|c: char| c.is_ascii_alphabetic()) { Cow::Borrowed(k8s) } else { Cow::Owned(format!("x_{k8s}")) }
}

/// The application of a namespace and protocol.
pub fn application(namespace: &str, protocol: Protocol) -> String {
    format!("{}_{}_app", part(namespace), protocol.as_str())
}

/// The pool of a Service port.
pub fn pool(service: &str, port: u16) -> String {
    let mut name = String::with_capacity(service.len() + 13);
    push_pool(&mut name, service, port);
    name
}

/// Appends the pool name of a Service port (no allocation when the Service starts with a letter).
pub fn push_pool(out: &mut String, service: &str, port: u16) {
    out.push_str(&part(service));
    out.push('_');
    push_u16(out, port);
    out.push_str("_pool");
}

/// Appends a port number in decimal.
fn push_u16(out: &mut String, n: u16) {
    let mut digits = [0u8; 5];
    let mut i = digits.len();
    let mut n = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for d in &digits[i..] {
        out.push(char::from(*d));
    }
}

/// The virtual server of a listener (a ticket's address and a port).
pub fn virtual_server(ticket: &str, port: u16) -> String {
    format!("vs_{ticket}_{port}")
}

/// The iRule of a virtual server.
pub fn irule(virtual_server: &str) -> String {
    format!("{virtual_server}_irule")
}

/// Whether `name` is a legal AS3 item name (also applied to tenants and applications).
pub fn is_legal(name: &str) -> bool {
    let bytes = name.as_bytes();
    let inner = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-');
    !bytes.is_empty()
        && bytes.len() <= 190
        && bytes[0].is_ascii_alphabetic()
        && bytes.iter().all(inner)
        && bytes.last().is_some_and(|b| *b != b'-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_seed_names_become_legal() {
        assert_eq!(application("default", Protocol::Http), "default_http_app");
        assert_eq!(application("1team", Protocol::Tcp), "x_1team_tcp_app");
        assert_eq!(pool("svc01", 8080), "svc01_8080_pool");
        assert_eq!(virtual_server("test", 80), "vs_test_80");
        assert_eq!(irule("vs_test_80"), "vs_test_80_irule");
        assert!(!is_legal("80_vs"), "the seed's name starts with a digit");
        assert!(!is_legal("vs-"));
        assert!(is_legal("vs_1.2"));
    }

    proptest! {
        #[test]
        fn kubernetes_names_give_legal_distinct_names(
            a in "[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?",
            b in "[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?",
            p in 1u16..,
        ) {
            for name in [part(&a).into_owned(), application(&a, Protocol::Https), pool(&a, p), virtual_server(&a, p), irule(&virtual_server(&a, p))] {
                prop_assert!(is_legal(&name), "{name}");
            }
            if a != b {
                prop_assert_ne!(part(&a), part(&b));
                prop_assert_ne!(application(&a, Protocol::Http), application(&b, Protocol::Http));
                prop_assert_ne!(pool(&a, p), pool(&b, p));
                prop_assert_ne!(virtual_server(&a, p), virtual_server(&b, p));
            }
        }
    }
}
