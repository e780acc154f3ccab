//! The one check of a change of an address request: what the server functions' save path and
//! admission both call, with the same view of the management cluster, so a page, a server
//! function and `kubectl` are refused for the same reasons, in the same order.

use crate::domain::crd::MAX_DECLARATION_BYTES;
use crate::domain::crd::{LABEL_CLUSTER, Lbquota, Lbrule, Lbticket, Loadbalancer, project_of};

use super::{
    Held, Limits, Refusal, TicketUse, Usage, lb_offered_to, ticket_deletable, ticket_update, validate_ticket,
    within_quota,
};

/// The management cluster around a change: what the checks read.
#[derive(Clone, Copy)]
pub struct View<'a> {
    pub tickets: &'a [Lbticket],
    pub loadbalancers: &'a [Loadbalancer],
    pub rules: &'a [Lbrule],
    pub quotas: &'a [Lbquota],
}

/// Why a change is refused: the object is malformed whatever else exists (a bad request), or
/// it is well-formed but not allowed now, here, or for this project (forbidden).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Denied {
    Malformed(Refusal),
    Forbidden(Refusal),
}

impl From<Denied> for Refusal {
    fn from(d: Denied) -> Refusal {
        match d {
            Denied::Malformed(r) | Denied::Forbidden(r) => r,
        }
    }
}

/// Whether request `name` may go from `before` (none: it is being created) to `after`: valid
/// fields; a new request only on a load balancer offered to its project and cluster; an update
/// only as its phase and what uses it allow (the grey-out rules); listeners and F5 Ingresses
/// only on Services no one else in the namespace uses; and the project within its quota.
/// `view` may hold `before` (it is left out and replaced by `after` where counted).
pub fn check_change(name: &str, before: Option<&Lbticket>, after: &Lbticket, view: &View) -> Result<(), Denied> {
    validate_ticket(name, &after.spec).map_err(Denied::Malformed)?;
    if before.is_some_and(|b| b.spec == after.spec) {
        return Ok(());
    }
    let lb = view.loadbalancers.iter().find(|l| l.metadata.name.as_deref() == Some(after.spec.loadbalancer.as_str()));
    let project = project_of(after);
    match before {
        None => {
            // NB: a load balancer applied after the request is fine; the reconciler waits.
            if let (Some(lb), Some(project)) = (lb, project) {
                let labels = after.metadata.labels.as_ref();
                let cluster = labels.and_then(|l| l.get(LABEL_CLUSTER)).unwrap_or(&lb.spec.cluster);
                lb_offered_to(&lb.spec, cluster, project).map_err(Denied::Forbidden)?;
            }
        }
        Some(b) => {
            let phase = b.status.as_ref().map(|s| s.phase).unwrap_or_default();
            ticket_update(&b.spec, &after.spec, phase, &TicketUse::of(after, view.rules)).map_err(Denied::Forbidden)?;
        }
    }
    let uses_changed = match before {
        None => !after.spec.listeners.is_empty() || !after.spec.ingresses.is_empty(),
        Some(b) => b.spec.listeners != after.spec.listeners || b.spec.ingresses != after.spec.ingresses,
    };
    if uses_changed {
        Usage::around(after, view.tickets, view.loadbalancers, view.rules)
            .admit(name, &after.spec)
            .map_err(Denied::Forbidden)?;
    }
    let (Some(project), Some(lb)) = (project, lb) else { return Ok(()) };
    let others = || view.tickets.iter().filter(|t| t.metadata.name.as_deref() != Some(name));
    let held_before = Held::of(project, &after.spec.loadbalancer, others().chain(before), view.rules);
    let held_after = Held::of(project, &after.spec.loadbalancer, others().chain([after]), view.rules);
    let limits = Limits::for_project(view.quotas, project, &lb.spec, MAX_DECLARATION_BYTES as u64);
    within_quota(&limits, &held_before, &held_after, &after.spec.loadbalancer).map_err(Denied::Forbidden)
}

/// The requests [`check_change`] reads around `after`: those of its namespace (whose Services
/// it must leave to their users) and, when it has a project, those of its project (its quota).
/// What a caller reading them from a cache of every request keeps.
/// NB: requests of no project are not one project: a request without one reads no quota, and
/// keeping every other project-less request copied thousands of them on each write.
pub fn read_around(after: &Lbticket) -> impl Fn(&Lbticket) -> bool + '_ {
    let project = project_of(after);
    move |t| t.spec.namespace == after.spec.namespace || (project.is_some() && project_of(t) == project)
}

/// Whether a request in the phase `before` has may be deleted: once Disabled or Failed, and the
/// record a Deleted request leaves at any time.
pub fn check_delete(before: &Lbticket) -> Result<(), Denied> {
    match before.status.as_ref().map(|s| s.phase).unwrap_or_default() {
        crate::domain::crd::Phase::Deleted => Ok(()),
        phase => ticket_deletable(phase).map_err(Denied::Forbidden),
    }
}

#[cfg(test)]
#[path = "change_tests.rs"]
mod tests;
