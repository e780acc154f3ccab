//! Rules of screen 2: address requests (tickets).

use std::net::IpAddr;

use super::{Refusal, Verdict, count, dns_label, listeners_change, object_name, them, validate_listeners};
use crate::domain::crd::{DesiredState, LbType, LbticketSpec, Phase};

/// Whether the request's addresses and choices may be edited (Created or Failed only).
pub fn ticket_editable(phase: Phase) -> Verdict {
    match phase {
        Phase::Created | Phase::Failed => Ok(()),
        other => Err(Refusal::action(format!(
            "Only a request that is Created or Failed can be edited; this one is {}.",
            other.as_str()
        ))),
    }
}

/// Whether the request may be disabled: it must be Enabled, with no listener and no F5 Ingress.
pub fn ticket_disableable(phase: Phase, listeners: usize, ingresses: usize) -> Verdict {
    if phase != Phase::Enabled {
        return Err(Refusal::action(format!(
            "Only an Enabled request can be disabled; this one is {}.",
            phase.as_str()
        )));
    }
    if listeners > 0 {
        return Err(Refusal::action(format!(
            "Disabling would take its {} off the load balancer; remove {} first.",
            count(listeners, "listener", "listeners"),
            them(listeners)
        )));
    }
    if ingresses > 0 {
        return Err(Refusal::action(format!(
            "In use by {}; remove {} first.",
            count(ingresses, "F5 Ingress", "F5 Ingresses"),
            them(ingresses)
        )));
    }
    Ok(())
}

/// Whether a Disabled request may be enabled again.
pub fn ticket_enableable(phase: Phase) -> Verdict {
    if phase == Phase::Disabled {
        Ok(())
    } else {
        Err(Refusal::action(format!("Only a Disabled request can be enabled; this one is {}.", phase.as_str())))
    }
}

/// Whether the request may be deleted: Disabled, or Failed (a refused request has no approved
/// policy to keep, and could otherwise never go).
pub fn ticket_deletable(phase: Phase) -> Verdict {
    match phase {
        Phase::Disabled | Phase::Failed => Ok(()),
        Phase::Deleted => Err(Refusal::action("This request is already deleted.")),
        other => Err(Refusal::action(format!("Disable the request before deleting it; it is {}.", other.as_str()))),
    }
}

/// Whether `old` may become `new` in `phase` (what admission and the server functions check).
/// `rules_on` counts the Lbrules of a listener; `ingresses` the F5 Ingresses using the ticket.
pub fn ticket_update(
    old: &LbticketSpec,
    new: &LbticketSpec,
    phase: Phase,
    rules_on: &dyn Fn(&str) -> usize,
    ingresses: usize,
) -> Verdict {
    if old.claimer != new.claimer {
        return Err(Refusal::field("claimer", "The claimer of a request cannot change."));
    }
    let addressing_changed = old.loadbalancer != new.loadbalancer
        || old.namespace != new.namespace
        || old.veip != new.veip
        || old.ltmip != new.ltmip
        || old.lbtype != new.lbtype;
    if addressing_changed {
        ticket_editable(phase)?;
    }
    if old.state != new.state {
        match new.state {
            DesiredState::Disabled => ticket_disableable(phase, new.listeners.len(), ingresses)?,
            DesiredState::Active if phase == Phase::Deleted => {
                return Err(Refusal::action("A deleted request cannot be enabled again; request a new address."));
            }
            DesiredState::Active => {}
            DesiredState::Deleted => ticket_deletable(phase)?,
        }
    }
    if old.listeners != new.listeners {
        listeners_change(&old.listeners, &new.listeners, phase, new.lbtype, rules_on)?;
    }
    Ok(())
}

/// Field checks of a ticket (what admission checks for any write).
pub fn validate_ticket(name: &str, spec: &LbticketSpec) -> Verdict {
    object_name("metadata.name", name)?;
    object_name("loadbalancer", &spec.loadbalancer)?;
    dns_label("namespace", &spec.namespace)?;
    for (field, value) in [("veip", &spec.veip), ("ltmip", &spec.ltmip)] {
        if let Some(v) = value.as_deref().filter(|v| !v.is_empty())
            && v.trim().parse::<IpAddr>().is_err()
        {
            return Err(Refusal::field(field, format!("{v:?} is not an IP address")));
        }
    }
    if spec.lbtype == LbType::Ingress && !spec.listeners.is_empty() {
        return Err(Refusal::field("listeners", "An address for an F5 Ingress carries no listeners."));
    }
    validate_listeners(&spec.listeners)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::crd::{Listener, Protocol, ServiceRef, Session};

    const PHASES: [Phase; 6] =
        [Phase::Created, Phase::Requested, Phase::Enabled, Phase::Failed, Phase::Disabled, Phase::Deleted];

    #[test]
    fn each_action_follows_the_phase() {
        for phase in PHASES {
            assert_eq!(
                ticket_editable(phase).is_ok(),
                matches!(phase, Phase::Created | Phase::Failed),
                "edit in {phase:?}"
            );
            assert_eq!(ticket_disableable(phase, 0, 0).is_ok(), phase == Phase::Enabled, "disable in {phase:?}");
            assert_eq!(ticket_enableable(phase).is_ok(), phase == Phase::Disabled, "enable in {phase:?}");
            assert_eq!(
                ticket_deletable(phase).is_ok(),
                matches!(phase, Phase::Disabled | Phase::Failed),
                "delete in {phase:?}"
            );
        }
        assert_eq!(
            ticket_editable(Phase::Enabled).expect_err("refused").reason,
            "Only a request that is Created or Failed can be edited; this one is Enabled."
        );
    }

    #[test]
    fn listeners_and_ingresses_block_disabling() {
        assert!(
            ticket_disableable(Phase::Enabled, 1, 0)
                .expect_err("listener")
                .reason
                .starts_with("Disabling would take its 1 listener off")
        );
        assert!(
            ticket_disableable(Phase::Enabled, 0, 2)
                .expect_err("ingress")
                .reason
                .starts_with("In use by 2 F5 Ingresses; remove them")
        );
    }

    fn spec() -> LbticketSpec {
        LbticketSpec {
            claimer: "alice".into(),
            loadbalancer: "demo".into(),
            namespace: "default".into(),
            ..Default::default()
        }
    }

    fn no_rules(_: &str) -> usize {
        0
    }

    #[test]
    fn updates_are_checked_against_the_phase() {
        let old = spec();
        let mut moved = old.clone();
        moved.veip = Some("20.1.0.20".into());
        assert!(ticket_update(&old, &moved, Phase::Failed, &no_rules, 0).is_ok());
        assert!(ticket_update(&old, &moved, Phase::Enabled, &no_rules, 0).is_err(), "addresses of an Enabled ticket");
        let mut stolen = old.clone();
        stolen.claimer = "mallory".into();
        assert_eq!(
            ticket_update(&old, &stolen, Phase::Created, &no_rules, 0).expect_err("claimer").field.as_deref(),
            Some("claimer")
        );
        let mut deleted = old.clone();
        deleted.state = DesiredState::Deleted;
        assert!(ticket_update(&old, &deleted, Phase::Enabled, &no_rules, 0).is_err());
        let mut disabled = old.clone();
        disabled.state = DesiredState::Disabled;
        assert!(ticket_update(&disabled, &deleted, Phase::Disabled, &no_rules, 0).is_ok());
        assert!(ticket_update(&old, &disabled, Phase::Enabled, &no_rules, 1).is_err(), "used by an Ingress");
        let mut back = deleted.clone();
        back.state = DesiredState::Active;
        assert!(ticket_update(&deleted, &back, Phase::Deleted, &no_rules, 0).is_err());
        let mut with_listener = old.clone();
        with_listener.listeners.push(Listener {
            name: "web".into(),
            port: 80,
            protocol: Protocol::Http,
            session: Session::None,
            services: vec![ServiceRef { service: "svc01".into(), port: 8080, weight: 100 }],
        });
        assert!(ticket_update(&old, &with_listener, Phase::Enabled, &no_rules, 0).is_ok());
        assert!(ticket_update(&old, &with_listener, Phase::Requested, &no_rules, 0).is_err());
    }

    #[test]
    fn field_checks_name_the_field() {
        assert!(validate_ticket("test", &spec()).is_ok());
        let mut bad = spec();
        bad.veip = Some("20.1.0".into());
        assert_eq!(validate_ticket("test", &bad).expect_err("veip").field.as_deref(), Some("veip"));
        let mut bad = spec();
        bad.namespace = "Team_A".into();
        assert_eq!(validate_ticket("test", &bad).expect_err("ns").field.as_deref(), Some("namespace"));
        assert_eq!(validate_ticket("Test", &spec()).expect_err("name").field.as_deref(), Some("metadata.name"));
    }
}
