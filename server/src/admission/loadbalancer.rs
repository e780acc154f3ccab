//! Admission of Loadbalancers: valid fields on every write; unique among the others (LTM and
//! VE, AS3 tenant) when created or changed; the fields tickets rely on locked while in use;
//! deleted only when no ticket uses it and it is not marked never to be deleted.

use app::domain::crd::{LABEL_DO_NOT_DELETE, Loadbalancer};
use app::domain::policy::{lb_deletable, lb_unique, lb_update, loadbalancer_use, validate_lb};

use super::{Admission, Denial, Review};

/// Checks a create, update or delete of a Loadbalancer.
pub(super) async fn check(admission: &Admission, review: &Review) -> Result<(), Denial> {
    let name = review.name.as_str();
    let new: Option<Loadbalancer> = review.after()?;
    let old: Option<Loadbalancer> = review.before()?;
    if let Some(lb) = &new {
        validate_lb(name, &lb.spec).map_err(Denial::invalid_field)?;
    }
    // NB: metadata and status writes (labels, finalizers, every allocation) need no cluster read.
    if let (Some(n), Some(o)) = (&new, &old)
        && n.spec == o.spec
    {
        return Ok(());
    }
    let tickets = admission.tickets(|t| t.spec.loadbalancer == name).await?;
    // NB: the stored object carries the counters of the addresses it holds.
    let in_use = old.as_ref().map_or(0, |o| loadbalancer_use(o, tickets.iter().map(|t| (&t.spec, t.status.as_ref()))));
    match (&new, &old) {
        (Some(n), maybe_old) => {
            let others: Vec<Loadbalancer> = admission.list(|_| true).await?;
            lb_unique(name, &n.spec, others.iter().map(|o| (o.metadata.name.as_deref().unwrap_or(""), &o.spec)))
                .map_err(Denial::refused)?;
            if let Some(o) = maybe_old {
                lb_update(&o.spec, &n.spec, in_use).map_err(Denial::refused)?;
            }
            Ok(())
        }
        (None, Some(o)) => {
            let protected = o.metadata.labels.as_ref().is_some_and(|l| l.contains_key(LABEL_DO_NOT_DELETE));
            lb_deletable(in_use, protected).map_err(Denial::refused)
        }
        (None, None) => Ok(()),
    }
}
