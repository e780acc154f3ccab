//! Rules of screen 2: address requests (tickets).

use std::net::IpAddr;

use super::{
    Refusal, TicketUse, Verdict, dns_label, escaped, ingresses_change, listeners_change, object_name,
    validate_ingresses, validate_listeners,
};
use crate::domain::crd::{DesiredState, LbType, LbticketSpec, Phase};
use crate::i18n::Msg;

/// Whether the request's addresses and choices may be edited (Created or Failed only).
pub fn ticket_editable(phase: Phase) -> Verdict {
    match phase {
        Phase::Created | Phase::Failed => Ok(()),
        other => {
            Err(Refusal::action(crate::msg!("refusals.ticket.edit_phase").with("phase", Msg::new(other.word_key()))))
        }
    }
}

/// Whether the request may be disabled: it must be Enabled, with no listener and no F5 Ingress.
pub fn ticket_disableable(phase: Phase, usage: &TicketUse) -> Verdict {
    let TicketUse { listeners, ingresses, .. } = *usage;
    if phase != Phase::Enabled {
        return Err(Refusal::action(
            crate::msg!("refusals.ticket.disable_phase").with("phase", Msg::new(phase.word_key())),
        ));
    }
    if listeners > 0 {
        return Err(Refusal::action(crate::msg!("refusals.ticket.disable_listeners", n = listeners)));
    }
    if ingresses > 0 {
        return Err(Refusal::action(crate::msg!("refusals.ticket.disable_ingresses", n = ingresses)));
    }
    Ok(())
}

/// Whether a Disabled request may be enabled again.
pub fn ticket_enableable(phase: Phase) -> Verdict {
    if phase == Phase::Disabled {
        Ok(())
    } else {
        Err(Refusal::action(crate::msg!("refusals.ticket.enable_phase").with("phase", Msg::new(phase.word_key()))))
    }
}

/// Whether the request may be deleted: Disabled, or Failed (a refused request has no approved
/// policy to keep, and could otherwise never go).
pub fn ticket_deletable(phase: Phase) -> Verdict {
    match phase {
        Phase::Disabled | Phase::Failed => Ok(()),
        Phase::Deleted => Err(Refusal::action(crate::msg!("refusals.ticket.already_deleted"))),
        other => {
            Err(Refusal::action(crate::msg!("refusals.ticket.delete_phase").with("phase", Msg::new(other.word_key()))))
        }
    }
}

/// Whether `old` may become `new` in `phase` (what admission and the server functions check).
/// `usage` is the use of the ticket as `new` would make it ([`TicketUse::of`] the new object).
pub fn ticket_update(old: &LbticketSpec, new: &LbticketSpec, phase: Phase, usage: &TicketUse) -> Verdict {
    if old.claimer != new.claimer {
        return Err(Refusal::field("claimer", crate::msg!("refusals.ticket.claimer_fixed")));
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
            DesiredState::Disabled => ticket_disableable(phase, usage)?,
            DesiredState::Active if phase == Phase::Deleted => {
                return Err(Refusal::action(crate::msg!("refusals.ticket.deleted_stays")));
            }
            DesiredState::Active => {}
            DesiredState::Deleted => ticket_deletable(phase)?,
        }
    }
    if old.listeners != new.listeners {
        listeners_change(&old.listeners, &new.listeners, phase, new.lbtype, usage)?;
    }
    if old.ingresses != new.ingresses {
        ingresses_change(&old.ingresses, &new.ingresses, phase, new.lbtype)?;
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
            return Err(Refusal::field(field, crate::msg!("refusals.value.not_ip", value = escaped(v))));
        }
    }
    if spec.lbtype == LbType::Ingress && !spec.listeners.is_empty() {
        return Err(Refusal::field("listeners", crate::msg!("refusals.ticket.ingress_no_listeners")));
    }
    if spec.lbtype == LbType::Listener && !spec.ingresses.is_empty() {
        return Err(Refusal::field("ingresses", crate::msg!("refusals.ticket.listeners_no_ingresses")));
    }
    validate_listeners(&spec.listeners)?;
    validate_ingresses(&spec.ingresses)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::crd::{F5Ingress, IngressRule, Listener, Protocol, ServiceRef, Session};

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
            assert_eq!(
                ticket_disableable(phase, &TicketUse::default()).is_ok(),
                phase == Phase::Enabled,
                "disable in {phase:?}"
            );
            assert_eq!(ticket_enableable(phase).is_ok(), phase == Phase::Disabled, "enable in {phase:?}");
            assert_eq!(
                ticket_deletable(phase).is_ok(),
                matches!(phase, Phase::Disabled | Phase::Failed),
                "delete in {phase:?}"
            );
        }
        assert_eq!(
            ticket_editable(Phase::Enabled).expect_err("refused").reason.to_string(),
            "Only a request that is Created or Failed can be edited; this one is Enabled."
        );
    }

    #[test]
    fn listeners_and_ingresses_block_disabling() {
        for (listeners, ingresses, refused) in [
            (0, 0, None),
            (1, 0, Some("Disabling would take its 1 listener off the load balancer; remove it first.")),
            (0, 2, Some("In use by 2 F5 Ingresses; remove them first.")),
        ] {
            let usage = TicketUse { listeners, ingresses, ..Default::default() };
            let got = ticket_disableable(Phase::Enabled, &usage).err().map(|r| r.reason.to_string());
            assert_eq!(got.as_deref(), refused, "{listeners} listeners, {ingresses} ingresses");
        }
    }

    fn spec() -> LbticketSpec {
        LbticketSpec {
            claimer: "alice".into(),
            loadbalancer: "demo".into(),
            namespace: "default".into(),
            ..Default::default()
        }
    }

    fn web() -> Listener {
        Listener {
            name: "web".into(),
            port: 80,
            protocol: Protocol::Http,
            session: Session::None,
            services: vec![ServiceRef { service: "svc01".into(), port: 8080, weight: 100 }],
        }
    }

    #[test]
    fn updates_are_checked_against_the_phase() {
        let free = TicketUse::default();
        let old = spec();
        let mut moved = old.clone();
        moved.veip = Some("20.1.0.20".into());
        assert!(ticket_update(&old, &moved, Phase::Failed, &free).is_ok());
        assert!(ticket_update(&old, &moved, Phase::Enabled, &free).is_err(), "addresses of an Enabled ticket");
        let mut stolen = old.clone();
        stolen.claimer = "mallory".into();
        assert_eq!(
            ticket_update(&old, &stolen, Phase::Created, &free).expect_err("claimer").field.as_deref(),
            Some("claimer")
        );
        let mut deleted = old.clone();
        deleted.state = DesiredState::Deleted;
        assert!(ticket_update(&old, &deleted, Phase::Enabled, &free).is_err());
        let mut disabled = old.clone();
        disabled.state = DesiredState::Disabled;
        assert!(ticket_update(&disabled, &deleted, Phase::Disabled, &free).is_ok());
        let with_ingress = TicketUse { ingresses: 1, ..Default::default() };
        assert!(ticket_update(&old, &disabled, Phase::Enabled, &with_ingress).is_err(), "used by an Ingress");
        let mut back = deleted.clone();
        back.state = DesiredState::Active;
        assert!(ticket_update(&deleted, &back, Phase::Deleted, &free).is_err());
        let mut with_listener = old.clone();
        with_listener.listeners.push(web());
        assert!(ticket_update(&old, &with_listener, Phase::Enabled, &free).is_ok());
        assert!(ticket_update(&old, &with_listener, Phase::Requested, &free).is_err());
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

    #[test]
    fn listeners_and_f5_ingresses_each_go_only_on_their_lbtype() {
        let ingress = F5Ingress {
            name: "web".into(),
            rules: vec![IngressRule { host: None, path: "/".into(), service: "svc01".into(), port: 8080 }],
            tls_secret: None,
        };
        for (lbtype, listeners, ingresses, refused_at) in [
            (LbType::Listener, vec![web()], vec![], None),
            (LbType::Ingress, vec![], vec![ingress.clone()], None),
            (LbType::Ingress, vec![web()], vec![], Some("listeners")),
            (LbType::Listener, vec![], vec![ingress], Some("ingresses")),
        ] {
            let ticket = LbticketSpec { lbtype, listeners, ingresses, ..spec() };
            let got = validate_ticket("test", &ticket).err().and_then(|r| r.field);
            assert_eq!(got.as_deref(), refused_at, "{lbtype:?}");
        }
    }
}
