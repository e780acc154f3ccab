//! Admission of Lbtickets: the one check of a change the server functions also make
//! (`policy::check_change`), on the management cluster as the watch caches hold it; a delete
//! only once Disabled (or Failed), or of the record a Deleted ticket leaves.

use app::domain::crd::{Charge, Lbticket, project_of};
use app::domain::policy::{Denied, View, check_change, check_delete, read_around};

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
            let tickets = admission.tickets(read_around(t)).await?;
            let (loadbalancers, rules, quotas) =
                (admission.list(|_| true).await?, admission.list(|_| true).await?, admission.list(|_| true).await?);
            let view = View { tickets: &tickets, loadbalancers: &loadbalancers, rules: &rules, quotas: &quotas };
            check_change(&review.name, before.as_ref(), t, &view).map_err(denial)?;
            let lb = loadbalancers.iter().find(|lb| lb.metadata.name.as_deref() == Some(t.spec.loadbalancer.as_str()));
            return match (project_of(t), lb) {
                // NB: the checks above read the caches, which may lag a write admitted a moment
                // ago; the charge counts that one too, and swaps.
                (Some(project), Some(lb)) => {
                    let was = before.as_ref().map(|b| Charge::of_ticket(b, "")).unwrap_or_default();
                    admission.charge(review, project, lb, Charge::of_ticket(t, ""), &was).await
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

fn denial(d: Denied) -> Denial {
    match d {
        Denied::Malformed(r) => Denial::invalid_field(r),
        Denied::Forbidden(r) => Denial::refused(r),
    }
}
