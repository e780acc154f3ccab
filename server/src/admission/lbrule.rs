//! Admission of Lbrules: valid fields, on a listener of an Enabled address request of type
//! listener, conditions its protocol can see, a priority free on the listener, Services no one
//! else in the namespace uses, and a rule that stays where it was created. A delete is always
//! allowed: a rule holds up its listener, never the other way round.

use app::domain::crd::{Charge, Lbrule, Lbticket, Loadbalancer, project_of};
use app::domain::policy::{Holdings, Usage, View, on_tenant, rule_write, validate_rule};

use super::lbticket::tenant_growth;
use super::{Admission, Denial, Review};

/// Checks a create, update or delete of an Lbrule.
pub(super) async fn check(admission: &Admission, review: &Review) -> Result<(), Denial> {
    // NB: a stored rule that no longer parses can still be deleted: only the new object is read
    // before anything else.
    let Some(rule) = review.after::<Lbrule>()? else { return Ok(()) };
    let before: Option<Lbrule> = review.before().ok().flatten();
    if before.as_ref().is_some_and(|b| b.spec == rule.spec) {
        return Ok(());
    }
    // NB: a malformed rule is a bad request (400); one that is well-formed but not allowed
    // where it goes is refused (403).
    validate_rule(&review.name, &rule.spec, None).map_err(Denial::invalid_field)?;
    let own = |t: &Lbticket| t.metadata.name.as_deref() == Some(rule.spec.lbticket.as_str());
    let namespace = admission.tickets(own).await?.pop().map(|t| t.spec.namespace);
    let tickets = admission.tickets(|t| Some(&t.spec.namespace) == namespace.as_ref()).await?;
    let rules: Vec<Lbrule> = admission.list(|_| true).await?;
    let ticket = tickets.iter().find(|t| own(t));
    let usage = match ticket {
        Some(t) => Usage::beside(t, &tickets, &admission.list::<Loadbalancer>(|_| true).await?, &rules),
        None => Usage::default(),
    };
    rule_write(&review.name, &rule.spec, before.as_ref().map(|b| &b.spec), ticket, &rules, &usage)
        .map_err(Denial::refused)?;
    let Some(t) = ticket else { return Ok(()) };
    let loadbalancers = admission.list::<Loadbalancer>(|_| true).await?;
    let lb = loadbalancers.iter().find(|lb| lb.metadata.name.as_deref() == Some(t.spec.loadbalancer.as_str()));
    let (Some(project), Some(lb)) = (project_of(t), lb) else { return Ok(()) };
    // NB: the rule's bytes are those it adds to its request's part of the tenant.
    let others =
        |r: &&Lbrule| r.spec.lbticket == rule.spec.lbticket && r.metadata.name.as_deref() != Some(&review.name);
    let on_it: Vec<Lbrule> = rules.iter().filter(others).cloned().chain([rule.clone()]).collect();
    // NB: what the project holds and its share come from one read of the caches.
    let on = on_tenant(lb, &loadbalancers);
    let read = admission.tickets(|o| on(o) || project_of(o) == Some(project)).await?;
    let view = View { tickets: &read, loadbalancers: &loadbalancers, rules: &rules, quotas: &[] };
    let growth = tenant_growth(&view, lb, t, &on_it);
    let lb_name = lb.metadata.name.as_deref().unwrap_or_default();
    let was = before.as_ref().map(|b| Charge::of_rule(b, lb_name, "")).unwrap_or_default();
    let charge = Charge { declaration_bytes: growth.added(), ..Charge::of_rule(&rule, lb_name, "") };
    let cached = Holdings::of(project, &read, &rules).sharing(lb_name, growth.share_before);
    admission.charge(review, project, lb, charge, &was, cached).await
}
