//! Admission of Lbtickets: valid fields on every write; a new ticket only on a load balancer
//! offered to its project and cluster; an update only as its phase and what uses it allow;
//! listeners and F5 Ingresses only on Services no one else in the namespace uses; a delete only
//! once Disabled (or Failed), or of the record a Deleted ticket leaves.

use app::domain::crd::{LABEL_CLUSTER, LABEL_PROJECT, Lbrule, Lbticket, Loadbalancer, Phase};
use app::domain::policy::{TicketUse, Usage, lb_offered_to, ticket_deletable, ticket_update, validate_ticket};

use super::{Admission, Denial, Review};

/// Checks a create, update or delete of an Lbticket.
pub(super) async fn check(admission: &Admission, review: &Review) -> Result<(), Denial> {
    let name = review.name.as_str();
    let new: Option<Lbticket> = review.after()?;
    let old: Option<Lbticket> = review.before()?;
    let phase = |t: &Lbticket| t.status.as_ref().map(|s| s.phase).unwrap_or_default();
    match (&new, &old) {
        (Some(t), None) => {
            validate_ticket(name, &t.spec).map_err(Denial::invalid_field)?;
            let lbs: Vec<Loadbalancer> = admission.list().await?;
            if !t.spec.listeners.is_empty() || !t.spec.ingresses.is_empty() {
                services_free(admission, t, &lbs, &admission.list().await?).await?;
            }
            let lb = lbs.iter().find(|l| l.metadata.name.as_deref() == Some(t.spec.loadbalancer.as_str()));
            // NB: a load balancer applied after the ticket is fine; the reconciler waits.
            let Some(lb) = lb else { return Ok(()) };
            let labels = t.metadata.labels.clone().unwrap_or_default();
            if let Some(project) = labels.get(LABEL_PROJECT) {
                let cluster = labels.get(LABEL_CLUSTER).cloned().unwrap_or_else(|| lb.spec.cluster.clone());
                lb_offered_to(&lb.spec, &cluster, project).map_err(Denial::refused)?;
            }
            admission.within_quota(None, t, &[], &[]).await
        }
        (Some(t), Some(o)) => {
            validate_ticket(name, &t.spec).map_err(Denial::invalid_field)?;
            if t.spec == o.spec {
                return Ok(());
            }
            let rules: Vec<Lbrule> = admission.list().await?;
            ticket_update(&o.spec, &t.spec, phase(o), &TicketUse::of(t, &rules)).map_err(Denial::refused)?;
            if t.spec.listeners != o.spec.listeners || t.spec.ingresses != o.spec.ingresses {
                services_free(admission, t, &admission.list().await?, &rules).await?;
                admission.within_quota(Some(o), t, &rules, &rules).await?;
            }
            Ok(())
        }
        (None, Some(o)) if phase(o) == Phase::Deleted => Ok(()),
        (None, Some(o)) => ticket_deletable(phase(o)).map_err(Denial::refused),
        (None, None) => Ok(()),
    }
}

/// Whether every Service the ticket's listeners and F5 Ingresses use is free in its namespace,
/// and its F5 Ingresses' names are not taken there.
async fn services_free(
    admission: &Admission,
    ticket: &Lbticket,
    lbs: &[Loadbalancer],
    rules: &[Lbrule],
) -> Result<(), Denial> {
    let tickets = admission.tickets(|t| t.spec.namespace == ticket.spec.namespace).await?;
    let name = ticket.metadata.name.as_deref().unwrap_or_default();
    Usage::around(ticket, &tickets, lbs, rules).admit(name, &ticket.spec).map_err(Denial::refused)
}
