//! Admission of Lbtickets: the one check of a change the server functions also make
//! (`policy::check_change`), on the management cluster as the watch caches hold it; a delete
//! only once Disabled (or Failed), or of the record a Deleted ticket leaves.

use app::domain::crd::{Charge, Lbrule, Lbticket, Loadbalancer, project_of};
use app::domain::policy::{Denied, Growth, Holdings, View, check_change, check_delete, growth, on_tenant, read_around};

use super::{Admission, Denial, Review};

/// Checks a create, update or delete of an Lbticket.
pub(super) async fn check(admission: &Admission, review: &Review) -> Result<(), Denial> {
    let new: Option<Lbticket> = review.after()?;
    let old: Option<Lbticket> = review.before()?;
    let verdict = match (&new, &old) {
        // NB: the same spec (a label, a finalizer, lbdesk's own bookkeeping) is checked for its
        // fields alone, which read nothing around it.
        (Some(t), Some(o)) if t.spec == o.spec => {
            let none = View { tickets: &[], loadbalancers: &[], rules: &[], quotas: &[] };
            check_change(&review.name, Some(o), t, &none)
        }
        (Some(t), before) => {
            let loadbalancers: Vec<Loadbalancer> = admission.list(|_| true).await?;
            let lb = loadbalancers.iter().find(|lb| lb.metadata.name.as_deref() == Some(t.spec.loadbalancer.as_str()));
            // NB: the checks read around the request, its tenant is rendered from the requests
            // on it; one pass over the cache keeps both.
            let (around, on) = (read_around(t), lb.map(|lb| on_tenant(lb, &loadbalancers)));
            let tickets = admission.tickets(|o| around(o) || on.as_ref().is_some_and(|on| on(o))).await?;
            let (rules, quotas) = (admission.list(|_| true).await?, admission.list(|_| true).await?);
            let view = View { tickets: &tickets, loadbalancers: &loadbalancers, rules: &rules, quotas: &quotas };
            check_change(&review.name, before.as_ref(), t, &view).map_err(denial)?;
            return match (project_of(t), lb) {
                // NB: the checks above read the caches, which may lag a write admitted a moment
                // ago; the charge counts that one too, and swaps.
                (Some(project), Some(lb)) => {
                    let on_it: Vec<_> = rules.iter().filter(|r| r.spec.lbticket == review.name).cloned().collect();
                    let growth = tenant_growth(&view, lb, t, &on_it);
                    let was = before.as_ref().map(|b| Charge::of_ticket(b, "")).unwrap_or_default();
                    let charge = Charge { declaration_bytes: growth.added(), ..Charge::of_ticket(t, "") };
                    let lb_name = lb.metadata.name.as_deref().unwrap_or_default();
                    let cached = Holdings::of(project, &tickets, &rules).sharing(lb_name, growth.share_before);
                    admission.charge(review, project, lb, charge, &was, cached).await
                }
                // NB: a load balancer applied after the ticket is fine; the reconciler waits.
                _ => Ok(()),
            };
        }
        (None, Some(o)) => check_delete(o),
        (None, None) => Ok(()),
    };
    verdict.map_err(denial)
}

/// What writing request `t` (with `rules` on it) does to its project's share of its load
/// balancer's AS3 tenant. NB: a tenant that cannot be rendered with it charges no bytes; the
/// reconciler says why on the request.
pub(super) fn tenant_growth(view: &View, lb: &Loadbalancer, t: &Lbticket, rules: &[Lbrule]) -> Growth {
    growth(view, lb, t, rules).unwrap_or_default()
}

fn denial(d: Denied) -> Denial {
    match d {
        Denied::Malformed(r) => Denial::invalid_field(r),
        Denied::Forbidden(r) => Denial::refused(r),
    }
}
