//! Where a rule may be written: what its address request, its listener, the other rules and
//! the namespace's Services allow, beside the rule's own fields.

use super::{Owner, Refusal, Usage, Verdict, escaped, priority_unique, rule_creatable, validate_rule};
use crate::domain::crd::{Lbrule, LbruleSpec, Lbticket};

/// Whether rule `name` may take the form `spec` (`before`: its stored form, on an update), on
/// `ticket` (the address request it names, if it exists) beside `rules` (every rule) and the
/// Services its namespace uses (`usage`, from [`Usage::beside`]).
pub fn rule_write(
    name: &str,
    spec: &LbruleSpec,
    before: Option<&LbruleSpec>,
    ticket: Option<&Lbticket>,
    rules: &[Lbrule],
    usage: &Usage,
) -> Verdict {
    validate_rule(name, spec, None)?;
    if let Some(before) = before {
        if before.lbticket != spec.lbticket {
            return Err(Refusal::field("lbticket", crate::msg!("refusals.rule.stays_on_request")));
        }
        if before.listener != spec.listener {
            return Err(Refusal::field("listener", crate::msg!("refusals.rule.stays_on_listener")));
        }
    }
    let Some(ticket) = ticket else {
        return Err(Refusal::field(
            "lbticket",
            crate::msg!("refusals.rule.no_request", name = escaped(&spec.lbticket)),
        ));
    };
    let phase = ticket.status.as_ref().map(|s| s.phase).unwrap_or_default();
    let listener = ticket.spec.listeners.iter().find(|l| l.name == spec.listener);
    rule_creatable(phase, ticket.spec.lbtype, listener.is_some())?;
    validate_rule(name, spec, listener.map(|l| l.protocol))?;
    priority_unique(name, spec, rules.iter().map(|r| (r.metadata.name.as_deref().unwrap_or_default(), &r.spec)))?;
    let me = Owner::Listener { ticket: spec.lbticket.clone(), listener: spec.listener.clone() };
    for (j, s) in spec.services.iter().enumerate() {
        usage
            .available_on(&s.service, s.port, &me, Some(name))
            .map_err(|r| Refusal::field(format!("services[{j}].service"), r.reason))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::crd::{
        LbType, LbticketSpec, LbticketStatus, Listener, Operator, Phase, Protocol, RuleCondition, RuleType, RuleValue,
        ServiceRef, Session,
    };

    fn svc(service: &str) -> ServiceRef {
        ServiceRef { service: service.into(), port: 8080, weight: 100 }
    }

    fn listener(name: &str, protocol: Protocol, service: &str) -> Listener {
        Listener { name: name.into(), port: 80, protocol, session: Session::None, services: vec![svc(service)] }
    }

    fn shop(phase: Phase) -> Lbticket {
        let spec = LbticketSpec {
            namespace: "team-a".into(),
            listeners: vec![listener("web", Protocol::Http, "web-v1"), listener("db", Protocol::Tcp, "db")],
            ..Default::default()
        };
        let mut t = Lbticket::new("shop", spec);
        t.status = Some(LbticketStatus { phase, ..Default::default() });
        t
    }

    fn rule(listener: &str, priority: u32, service: &str, condition: RuleType) -> LbruleSpec {
        let (key, value) = match condition {
            RuleType::Ip => (None, "10.0.0.0/8"),
            _ => (Some("X-Canary".to_string()), "1"),
        };
        LbruleSpec {
            lbticket: "shop".into(),
            listener: listener.into(),
            priority,
            services: vec![svc(service)],
            rules: vec![RuleCondition {
                type_: condition,
                key,
                values: vec![RuleValue { operator: Operator::Equal, value: value.into() }],
            }],
            ..Default::default()
        }
    }

    fn field(verdict: Verdict) -> Option<String> {
        verdict.err().and_then(|r| r.field)
    }

    #[test]
    fn a_rule_goes_on_a_listener_of_an_enabled_address_with_a_free_priority_and_free_services() {
        let t = shop(Phase::Enabled);
        let usage = Usage::beside(&t, std::slice::from_ref(&t), &[], &[]);
        let canary = rule("web", 10, "web-v2", RuleType::Header);
        assert_eq!(rule_write("canary", &canary, None, Some(&t), &[], &usage), Ok(()));
        // The listener's own Service is the rule's too; another listener's is not.
        assert_eq!(
            rule_write("own", &rule("web", 10, "web-v1", RuleType::Header), None, Some(&t), &[], &usage),
            Ok(())
        );
        let theirs = rule("web", 10, "db", RuleType::Header);
        assert_eq!(
            field(rule_write("theirs", &theirs, None, Some(&t), &[], &usage)).as_deref(),
            Some("services[0].service")
        );

        let taken = [Lbrule::new("first", canary.clone())];
        assert_eq!(field(rule_write("second", &canary, None, Some(&t), &taken, &usage)).as_deref(), Some("priority"));
        assert_eq!(rule_write("first", &canary, Some(&canary), Some(&t), &taken, &usage), Ok(()), "itself");
    }

    #[test]
    fn the_address_its_phase_the_listener_and_its_protocol_decide() {
        let usage = Usage::default();
        let header = rule("web", 10, "web-v2", RuleType::Header);
        assert_eq!(field(rule_write("r", &header, None, None, &[], &usage)).as_deref(), Some("lbticket"));
        let created = shop(Phase::Created);
        assert_eq!(field(rule_write("r", &header, None, Some(&created), &[], &usage)).as_deref(), Some("lbticket"));
        let mut ingress = shop(Phase::Enabled);
        ingress.spec.lbtype = LbType::Ingress;
        assert_eq!(field(rule_write("r", &header, None, Some(&ingress), &[], &usage)).as_deref(), Some("lbticket"));
        let t = shop(Phase::Enabled);
        let elsewhere = rule("nope", 10, "web-v2", RuleType::Header);
        assert_eq!(field(rule_write("r", &elsewhere, None, Some(&t), &[], &usage)).as_deref(), Some("listener"));
        let on_tcp = rule("db", 10, "db-v2", RuleType::Header);
        assert_eq!(field(rule_write("r", &on_tcp, None, Some(&t), &[], &usage)).as_deref(), Some("rules[0].type"));
        assert_eq!(rule_write("r", &rule("db", 10, "db-v2", RuleType::Ip), None, Some(&t), &[], &usage), Ok(()));
    }

    #[test]
    fn a_rule_stays_on_its_listener() {
        let t = shop(Phase::Enabled);
        let before = rule("web", 10, "web-v2", RuleType::Ip);
        let moved = rule("db", 10, "web-v2", RuleType::Ip);
        let verdict = rule_write("r", &moved, Some(&before), Some(&t), &[], &Usage::default());
        assert_eq!(field(verdict).as_deref(), Some("listener"));
    }
}
