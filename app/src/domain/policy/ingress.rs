//! Rules of screen 5: F5 Ingresses, kept with their ticket (`spec.ingresses`).

use std::collections::BTreeSet;

use super::{MAX_VALUE_LEN, Refusal, Verdict, bounded, escaped, object_name, service_name};
use crate::domain::crd::{F5Ingress, IngressRule, LbType, Phase};
use crate::i18n::Msg;

/// Most F5 Ingresses on one address.
pub const MAX_INGRESSES: usize = 16;
/// Most routes in one F5 Ingress.
pub const MAX_INGRESS_RULES: usize = 64;

/// Whether F5 Ingresses may be added to (or changed on) a ticket: Enabled, and meant for them.
pub fn ingress_creatable(phase: Phase, lbtype: LbType) -> Verdict {
    super::carries(phase, lbtype, LbType::Ingress)
}

/// Whether a ticket's F5 Ingresses may change from `old` to `new`: one added or edited needs
/// [`ingress_creatable`]; removing one is always allowed (it is withdrawn from the cluster).
pub fn ingresses_change(old: &[F5Ingress], new: &[F5Ingress], phase: Phase, lbtype: LbType) -> Verdict {
    let added_or_edited = new.iter().any(|n| !old.contains(n));
    if added_or_edited {
        ingress_creatable(phase, lbtype).map_err(|r| Refusal::field("ingresses", r.reason))?;
    }
    Ok(())
}

/// Field checks of one route: a host name (`*.` may lead), a path from `/`, a Service port.
fn validate_route(rule: &IngressRule) -> Verdict {
    if let Some(host) = rule.host.as_deref() {
        object_name("host", host.strip_prefix("*.").unwrap_or(host))?;
        // NB: as a Kubernetes API server refuses it: a host is a DNS name.
        if host.parse::<std::net::IpAddr>().is_ok() {
            return Err(Refusal::field("host", crate::msg!("refusals.ingress.host_ip", host = escaped(host))));
        }
    }
    bounded("path", &rule.path, MAX_VALUE_LEN)?;
    path(&rule.path)?;
    service_name("service", &rule.service)?;
    if rule.port == 0 {
        return Err(Refusal::field("port", crate::msg!("refusals.port_range")));
    }
    Ok(())
}

/// A `Prefix` path as a Kubernetes API server takes it (absolute, no `//`, `/./`, `/../`,
/// `%2F`, not ending in `/.` or `/..`: `validateIngressHTTPPath`) and CIS can route it (no `*`,
/// which CIS skips; the characters of an RFC 3986 path only, so no quote, bracket, brace,
/// backquote or backslash reaches a policy).
fn path(path: &str) -> Verdict {
    let refuse = |why: Msg| Err(Refusal::field("path", why.arg("path", escaped(path))));
    if !path.starts_with('/') {
        return refuse(crate::msg!("refusals.ingress.path_start"));
    }
    let lower = path.to_ascii_lowercase();
    if ["//", "/./", "/../", "%2f"].iter().any(|s| lower.contains(s)) || path.ends_with("/.") || path.ends_with("/..") {
        return refuse(crate::msg!("refusals.ingress.path_dots", encoded = "%2F"));
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || "-._~!$&'()+,;=:@/%".contains(c);
    if let Some(c) = path.chars().find(|c| !allowed(*c)) {
        return refuse(crate::msg!("refusals.ingress.path_char", char = escaped(&c.to_string())));
    }
    Ok(())
}

/// Field checks of one F5 Ingress.
pub fn validate_ingress(ingress: &F5Ingress) -> Verdict {
    object_name("name", &ingress.name)?;
    if ingress.rules.is_empty() {
        return Err(Refusal::field("rules", crate::msg!("refusals.ingress.no_route")));
    }
    if ingress.rules.len() > MAX_INGRESS_RULES {
        return Err(Refusal::field("rules", crate::msg!("refusals.ingress.too_many_routes", max = MAX_INGRESS_RULES)));
    }
    for (i, rule) in ingress.rules.iter().enumerate() {
        validate_route(rule).map_err(|r| r.under(&format!("rules[{i}]")))?;
    }
    if let Some(secret) = ingress.tls_secret.as_deref() {
        object_name("tlsSecret", secret)?;
    }
    Ok(())
}

/// Field checks of all F5 Ingresses of a ticket: each valid, their names unique.
pub fn validate_ingresses(ingresses: &[F5Ingress]) -> Verdict {
    if ingresses.len() > MAX_INGRESSES {
        return Err(Refusal::field("ingresses", crate::msg!("refusals.ingress.too_many", max = MAX_INGRESSES)));
    }
    let mut names = BTreeSet::new();
    for (i, ingress) in ingresses.iter().enumerate() {
        let at = format!("ingresses[{i}]");
        validate_ingress(ingress).map_err(|r| r.under(&at))?;
        if !names.insert(&ingress.name) {
            return Err(Refusal::field(
                format!("{at}.name"),
                crate::msg!("refusals.ingress.name_taken", name = ingress.name),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ingress(name: &str, host: Option<&str>, path: &str, service: &str, port: u16) -> F5Ingress {
        F5Ingress {
            name: name.into(),
            rules: vec![IngressRule { host: host.map(String::from), path: path.into(), service: service.into(), port }],
            tls_secret: None,
        }
    }

    #[test]
    fn each_ingress_field_is_checked_beside_its_field() {
        for (what, ingresses, refused_at) in [
            ("a plain route", vec![ingress("web", Some("a.example.com"), "/", "svc01", 80)], None),
            (
                "any host, a wildcard host",
                vec![ingress("web", None, "/api", "svc01", 80), ingress("w2", Some("*.example.com"), "/", "svc01", 80)],
                None,
            ),
            ("a bad name", vec![ingress("Web", None, "/", "svc01", 80)], Some("ingresses[0].name")),
            ("a bad host", vec![ingress("web", Some("a b"), "/", "svc01", 80)], Some("ingresses[0].rules[0].host")),
            (
                "an IP address as host",
                vec![ingress("web", Some("10.0.0.1"), "/", "svc01", 80)],
                Some("ingresses[0].rules[0].host"),
            ),
            ("a relative path", vec![ingress("web", None, "api", "svc01", 80)], Some("ingresses[0].rules[0].path")),
            (
                "a path with a space",
                vec![ingress("web", None, "/a b", "svc01", 80)],
                Some("ingresses[0].rules[0].path"),
            ),
            ("a bad Service", vec![ingress("web", None, "/", "1svc", 80)], Some("ingresses[0].rules[0].service")),
            ("a path with //", vec![ingress("web", None, "/a//b", "svc01", 80)], Some("ingresses[0].rules[0].path")),
            (
                "a path with /../",
                vec![ingress("web", None, "/a/../b", "svc01", 80)],
                Some("ingresses[0].rules[0].path"),
            ),
            ("a path ending /..", vec![ingress("web", None, "/a/..", "svc01", 80)], Some("ingresses[0].rules[0].path")),
            ("an encoded slash", vec![ingress("web", None, "/a%2Fb", "svc01", 80)], Some("ingresses[0].rules[0].path")),
            (
                "a wildcard CIS skips",
                vec![ingress("web", None, "/a*", "svc01", 80)],
                Some("ingresses[0].rules[0].path"),
            ),
            ("a quote", vec![ingress("web", None, "/a\"b", "svc01", 80)], Some("ingresses[0].rules[0].path")),
            (
                "brackets and braces",
                vec![ingress("web", None, "/[]${}", "svc01", 80)],
                Some("ingresses[0].rules[0].path"),
            ),
            ("a backquote", vec![ingress("web", None, "/`x`", "svc01", 80)], Some("ingresses[0].rules[0].path")),
            ("angle brackets", vec![ingress("web", None, "/<x>", "svc01", 80)], Some("ingresses[0].rules[0].path")),
            ("a legal path", vec![ingress("web", None, "/shop/v1.2/~a;b=c@d", "svc01", 80)], None),
            ("port 0", vec![ingress("web", None, "/", "svc01", 0)], Some("ingresses[0].rules[0].port")),
            (
                "the same name twice",
                vec![ingress("web", None, "/", "svc01", 80), ingress("web", None, "/b", "svc02", 80)],
                Some("ingresses[1].name"),
            ),
        ] {
            let got = validate_ingresses(&ingresses).err().and_then(|r| r.field);
            assert_eq!(got.as_deref(), refused_at, "{what}");
        }
    }

    #[test]
    fn ingresses_go_on_enabled_ingress_addresses_and_leave_any_time() {
        let one = vec![ingress("web", None, "/", "svc01", 80)];
        assert!(ingress_creatable(Phase::Enabled, LbType::Ingress).is_ok());
        assert!(ingress_creatable(Phase::Requested, LbType::Ingress).is_err());
        assert!(ingress_creatable(Phase::Enabled, LbType::Listener).is_err());
        assert!(ingresses_change(&[], &one, Phase::Enabled, LbType::Ingress).is_ok());
        let refused = ingresses_change(&[], &one, Phase::Disabled, LbType::Ingress).expect_err("disabled");
        assert_eq!(refused.field.as_deref(), Some("ingresses"));
        assert_eq!(
            refused.reason.to_string(),
            "F5 Ingresses can be added once the address is Enabled; it is Disabled."
        );
        assert!(ingresses_change(&one, &[], Phase::Disabled, LbType::Ingress).is_ok(), "removed while Disabled");
        let mut edited = one.clone();
        edited[0].rules[0].path = "/shop".into();
        assert!(ingresses_change(&one, &edited, Phase::Failed, LbType::Ingress).is_err(), "edited while Failed");
    }

    #[test]
    fn an_ingress_needs_a_route_and_a_valid_tls_secret() {
        let mut bare = ingress("web", None, "/", "svc01", 80);
        bare.rules.clear();
        assert_eq!(validate_ingress(&bare).expect_err("no route").reason.to_string(), "Add at least one route.");
        let mut tls = ingress("web", None, "/", "svc01", 80);
        tls.tls_secret = Some("web-tls".into());
        assert!(validate_ingress(&tls).is_ok());
        tls.tls_secret = Some("Web TLS".into());
        assert_eq!(validate_ingress(&tls).expect_err("bad secret").field.as_deref(), Some("tlsSecret"));
    }
}
