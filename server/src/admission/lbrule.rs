//! Admission of Lbrules: valid fields, on a listener of an Enabled address request of type
//! listener, conditions its protocol can see, a priority free on the listener, Services no one
//! else in the namespace uses, and a rule that stays where it was created. A delete is always
//! allowed: a rule holds up its listener, never the other way round.

use app::domain::crd::{Charge, Lbrule, Lbticket, Loadbalancer, project_of};
use app::domain::policy::{Usage, rule_write, validate_rule};

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
    let (Some(t), None) = (ticket, &before) else { return Ok(()) };
    let on = |lb: &Loadbalancer| lb.metadata.name.as_deref() == Some(t.spec.loadbalancer.as_str());
    match (project_of(t), admission.list::<Loadbalancer>(on).await?.pop()) {
        (Some(project), Some(lb)) => {
            admission.charge(review, project, &lb, Charge::of_rule(&review.name, ""), &Charge::default()).await
        }
        _ => Ok(()),
    }
}
