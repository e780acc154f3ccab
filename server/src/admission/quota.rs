//! Admission of what counts against a project's quota, and of the quotas themselves: a
//! `kubectl` write is held to the quota as a page's is (`policy::within_quota`), and an
//! Lbquota's limits are checked as the Users page checks them.

use app::domain::crd::MAX_DECLARATION_BYTES;
use app::domain::crd::{Lbquota, Lbrule, Lbticket, Loadbalancer, project_of};
use app::domain::policy::{Held, Limits, validate_quota, within_quota};

use super::{Admission, Denial, Review};

/// Checks a create or update of an Lbquota.
pub(super) async fn check(review: &Review) -> Result<(), Denial> {
    let Some(quota) = review.after::<Lbquota>()? else { return Ok(()) };
    validate_quota(&review.name, &quota.spec).map_err(Denial::invalid_field)
}

impl Admission {
    /// Whether the change of `before` into `after` (a ticket created, changed, or a rule added
    /// to one: `rules_after` against `rules`) keeps its project within its quota.
    pub(super) async fn within_quota(
        &self,
        before: Option<&Lbticket>,
        after: &Lbticket,
        rules: &[Lbrule],
        rules_after: &[Lbrule],
    ) -> Result<(), Denial> {
        let Some(project) = project_of(after) else { return Ok(()) };
        let lbs: Vec<Loadbalancer> = self.list(|_| true).await?;
        let Some(lb) = lbs.iter().find(|l| l.metadata.name.as_deref() == Some(after.spec.loadbalancer.as_str())) else {
            // NB: a load balancer applied after the ticket is fine; the reconciler waits.
            return Ok(());
        };
        let name = after.metadata.name.as_deref();
        let mut tickets =
            self.tickets(|t| project_of(t) == Some(project) && t.metadata.name.as_deref() != name).await?;
        let held_before = {
            let with_before: Vec<&Lbticket> = tickets.iter().chain(before).collect();
            Held::of(project, &after.spec.loadbalancer, with_before, rules)
        };
        tickets.push(after.clone());
        let held_after = Held::of(project, &after.spec.loadbalancer, &tickets, rules_after);
        let limits = Limits::for_project(
            &self.list::<Lbquota>(|_| true).await?,
            project,
            &lb.spec,
            MAX_DECLARATION_BYTES as u64,
        );
        within_quota(&limits, &held_before, &held_after, &after.spec.loadbalancer).map_err(Denial::refused)
    }
}
