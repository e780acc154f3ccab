//! Rules of screen 3: listeners, their backends, and which Services may be picked.

use std::collections::{BTreeMap, BTreeSet};

use super::{MAX_LISTENERS, MAX_SERVICES, Refusal, TicketUse, Verdict, dns_label, service_name, ticket_editable};
use crate::domain::crd::{LbType, Listener, Phase, ServiceRef, Session};

/// Whether listeners may be added to a ticket: Enabled, and meant for listeners.
pub fn listener_creatable(phase: Phase, lbtype: LbType) -> Verdict {
    super::carries(phase, lbtype, LbType::Listener)
}

/// Whether `listener` may be deleted from a ticket used as `usage` says: not while rules use it.
pub fn listener_deletable(usage: &TicketUse, listener: &str) -> Verdict {
    let rules_on_it = usage.rules_on(listener);
    if rules_on_it > 0 {
        Err(Refusal::action(crate::msg!("refusals.listener.has_rules", n = rules_on_it)))
    } else {
        Ok(())
    }
}

/// Port and protocol are fixed once a listener exists.
pub fn listener_update(old: &Listener, new: &Listener) -> Verdict {
    if old.port != new.port {
        return Err(Refusal::field("port", crate::msg!("refusals.listener.port_fixed")));
    }
    if old.protocol != new.protocol {
        return Err(Refusal::field("protocol", crate::msg!("refusals.listener.protocol_fixed")));
    }
    Ok(())
}

/// Backends: 1–16 distinct Service ports whose integer weights sum to 100.
pub fn weights(services: &[ServiceRef]) -> Verdict {
    if services.is_empty() {
        return Err(Refusal::field("services", crate::msg!("refusals.services.none")));
    }
    if services.len() > MAX_SERVICES {
        return Err(Refusal::field("services", crate::msg!("refusals.services.too_many", max = MAX_SERVICES)));
    }
    let mut seen = BTreeSet::new();
    for (i, s) in services.iter().enumerate() {
        let field = format!("services[{i}]");
        service_name(&format!("{field}.service"), &s.service)?;
        if s.port == 0 {
            return Err(Refusal::field(format!("{field}.port"), crate::msg!("refusals.port_range")));
        }
        if s.weight > 100 {
            return Err(Refusal::field(format!("{field}.weight"), crate::msg!("refusals.services.weight_range")));
        }
        if !seen.insert((&s.service, s.port)) {
            return Err(Refusal::field(
                format!("{field}.service"),
                crate::msg!("refusals.services.twice", service = s.service, port = s.port),
            ));
        }
    }
    let total: u32 = services.iter().map(|s| s.weight).sum();
    if total != 100 {
        return Err(Refusal::field("services", crate::msg!("refusals.services.weights_sum", total = total)));
    }
    Ok(())
}

/// Field checks of one listener.
pub fn validate_listener(listener: &Listener) -> Verdict {
    dns_label("name", &listener.name)?;
    if listener.port == 0 {
        return Err(Refusal::field("port", crate::msg!("refusals.port_range")));
    }
    if listener.session == Session::Cookie && !listener.protocol.is_http() {
        return Err(Refusal::field("session", crate::msg!("refusals.listener.cookie_needs_http")));
    }
    weights(&listener.services)
}

/// Field checks of all listeners of a ticket: each valid, names and ports unique on the address.
pub fn validate_listeners(listeners: &[Listener]) -> Verdict {
    if listeners.len() > MAX_LISTENERS {
        return Err(Refusal::field("listeners", crate::msg!("refusals.listener.too_many", max = MAX_LISTENERS)));
    }
    let mut names = BTreeSet::new();
    let mut ports = BTreeMap::new();
    for (i, l) in listeners.iter().enumerate() {
        let at = format!("listeners[{i}]");
        validate_listener(l).map_err(|r| r.under(&at))?;
        if !names.insert(&l.name) {
            return Err(Refusal::field(
                format!("{at}.name"),
                crate::msg!("refusals.listener.name_taken", name = l.name),
            ));
        }
        if let Some(other) = ports.insert(l.port, &l.name) {
            return Err(Refusal::field(
                format!("{at}.port"),
                crate::msg!("refusals.listener.port_taken", port = l.port, other = other),
            ));
        }
    }
    Ok(())
}

/// Whether a ticket's listeners may change from `old` to `new` (added, edited, removed);
/// `usage` says which listeners rules are on.
pub fn listeners_change(
    old: &[Listener],
    new: &[Listener],
    phase: Phase,
    lbtype: LbType,
    usage: &TicketUse,
) -> Verdict {
    // A Created or Failed ticket may carry listeners waiting for Enabled (e.g. applied with kubectl).
    if ticket_editable(phase).is_err() {
        listener_creatable(phase, lbtype).map_err(|r| Refusal::field("listeners", r.reason))?;
    }
    for o in old {
        match new.iter().find(|n| n.name == o.name) {
            Some(n) => listener_update(o, n).map_err(|r| r.under(&format!("listener {}", o.name)))?,
            None => listener_deletable(usage, &o.name).map_err(|r| {
                let reason = crate::msg!("refusals.listener.named", name = o.name).with("reason", r.reason);
                Refusal::field("listeners", reason)
            })?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::crd::Protocol;

    fn svc(service: &str, port: u16, weight: u32) -> ServiceRef {
        ServiceRef { service: service.into(), port, weight }
    }

    fn listener(name: &str, port: u16, protocol: Protocol) -> Listener {
        Listener { name: name.into(), port, protocol, session: Session::None, services: vec![svc("svc01", 8080, 100)] }
    }

    #[test]
    fn listeners_need_an_enabled_listener_address() {
        assert!(listener_creatable(Phase::Enabled, LbType::Listener).is_ok());
        assert!(listener_creatable(Phase::Requested, LbType::Listener).is_err());
        assert!(listener_creatable(Phase::Enabled, LbType::Ingress).is_err());
    }

    fn rules_on_web(n: usize) -> TicketUse {
        TicketUse { rules: BTreeMap::from([("web".to_string(), n)]), ..Default::default() }
    }

    #[test]
    fn a_listener_with_rules_stays() {
        assert!(listener_deletable(&rules_on_web(0), "web").is_ok());
        assert!(listener_deletable(&rules_on_web(2), "api").is_ok(), "the rules are on another listener");
        assert_eq!(
            listener_deletable(&rules_on_web(2), "web").expect_err("rules").reason.to_string(),
            "This listener has 2 rules; delete them first."
        );
    }

    #[test]
    fn port_and_protocol_are_fixed() {
        let old = listener("web", 80, Protocol::Http);
        let mut new = old.clone();
        new.services = vec![svc("svc02", 8080, 100)];
        assert!(listener_update(&old, &new).is_ok());
        new.port = 81;
        assert_eq!(listener_update(&old, &new).expect_err("port").field.as_deref(), Some("port"));
        let mut new = old.clone();
        new.protocol = Protocol::Https;
        assert_eq!(listener_update(&old, &new).expect_err("protocol").field.as_deref(), Some("protocol"));
    }

    #[test]
    fn weights_are_integers_adding_up_to_100() {
        for (services, ok) in [
            (vec![svc("a", 80, 100)], true),
            (vec![svc("a", 80, 60), svc("b", 80, 40)], true),
            (vec![svc("a", 80, 60), svc("b", 80, 41)], false),
            (vec![svc("a", 80, 99)], false),
            (vec![svc("a", 80, 0), svc("b", 80, 100)], true),
            (vec![svc("a", 80, 50), svc("a", 80, 50)], false),
            (vec![svc("a", 80, 101)], false),
            (vec![svc("a", 0, 100)], false),
            (vec![svc("1a", 80, 100)], false),
            (vec![], false),
        ] {
            assert_eq!(weights(&services).is_ok(), ok, "{services:?}");
        }
        assert_eq!(
            weights(&[svc("a", 80, 70)]).expect_err("70").reason.to_string(),
            "The weights add up to 70; they must add up to 100."
        );
    }

    #[test]
    fn ports_and_names_are_unique_per_address() {
        let a = listener("web", 80, Protocol::Http);
        let b = listener("ssh", 22, Protocol::Tcp);
        assert!(validate_listeners(&[a.clone(), b.clone()]).is_ok());
        let clash = listener("web2", 80, Protocol::Tcp);
        let r = validate_listeners(&[a.clone(), clash]).expect_err("port");
        assert_eq!(r.field.as_deref(), Some("listeners[1].port"));
        assert_eq!(r.reason.to_string(), "Port 80 is already used by listener web on this address.");
        assert!(validate_listeners(&[a.clone(), listener("web", 81, Protocol::Http)]).is_err(), "names too");
        let mut cookie_tcp = b;
        cookie_tcp.session = Session::Cookie;
        assert_eq!(
            validate_listeners(&[cookie_tcp]).expect_err("cookie").field.as_deref(),
            Some("listeners[0].session")
        );
    }

    #[test]
    fn changes_keep_listeners_with_rules() {
        let a = listener("web", 80, Protocol::Http);
        let (ruled, free) = (rules_on_web(1), TicketUse::default());
        assert!(listeners_change(std::slice::from_ref(&a), &[], Phase::Enabled, LbType::Listener, &ruled).is_err());
        assert!(listeners_change(std::slice::from_ref(&a), &[], Phase::Enabled, LbType::Listener, &free).is_ok());
        assert!(listeners_change(&[], std::slice::from_ref(&a), Phase::Disabled, LbType::Listener, &free).is_err());
        assert!(listeners_change(&[], &[a], Phase::Created, LbType::Listener, &free).is_ok(), "waits for Enabled");
    }
}
