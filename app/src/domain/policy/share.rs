//! A project's share of the AS3 tenant it shares with other projects: the tenant rendered with a
//! change by the reconciler's own functions, and the bytes the project's applications take of it.
//! The save path refuses with it (and previews it); admission refuses with it and charges what a
//! write adds to the project's quota, so parallel writers and replicas never take a project
//! past its share.

use std::collections::BTreeSet;

use serde_json::Value;

use super::View;
use crate::domain::as3::placement::Placement;
use crate::domain::as3::validate::share_bytes;
use crate::domain::as3::{self, Fault, Rendered};
use crate::domain::crd::{Lbrule, Lbticket, Loadbalancer, project_of};

/// The tenant of load balancer `lb`, rendered from `view`, with `changed`'s request and the
/// rules on it in place of those stored (as stored, when none).
pub fn tenant(view: &View, lb: &Loadbalancer, changed: Option<(&Lbticket, &[Lbrule])>) -> Result<Rendered, Fault> {
    let name = changed.and_then(|(t, _)| t.metadata.name.as_deref());
    let lbs: Vec<_> = view
        .loadbalancers
        .iter()
        .filter(|l| l.spec.cluster == lb.spec.cluster)
        .map(|l| (l.metadata.name.as_deref().unwrap_or_default(), &l.spec))
        .collect();
    let tickets: Vec<_> = view
        .tickets
        .iter()
        .filter(|t| name.is_none() || t.metadata.name.as_deref() != name)
        .chain(changed.map(|(t, _)| t))
        .map(|t| (t.metadata.name.as_deref().unwrap_or_default(), &t.spec, t.status.as_ref()))
        .collect();
    let rules: Vec<_> = view
        .rules
        .iter()
        .filter(|r| name.is_none_or(|n| r.spec.lbticket != n))
        .chain(changed.into_iter().flat_map(|(_, rules)| rules))
        .map(|r| (r.metadata.name.as_deref().unwrap_or_default(), &r.spec))
        .collect();
    let place = Placement::of(&lb.spec);
    let grouped = as3::tenants(&lbs, &tickets, &rules);
    let (t, r) = grouped.get(&(lb.spec.cluster.clone(), place.tenant.clone())).cloned().unwrap_or_default();
    as3::render(&lb.spec.cluster, &place.tenant, &t, &r)
}

/// Which requests the tenant of `lb` is rendered from: those on the load balancers of
/// `loadbalancers` that write the same tenant of the same member cluster. What a caller reading
/// them from a cache of every request keeps.
pub fn on_tenant<'a>(lb: &Loadbalancer, loadbalancers: &'a [Loadbalancer]) -> impl Fn(&Lbticket) -> bool + 'a {
    let tenant = Placement::of(&lb.spec).tenant;
    let names: BTreeSet<&str> = loadbalancers
        .iter()
        .filter(|l| l.spec.cluster == lb.spec.cluster && Placement::of(&l.spec).tenant == tenant)
        .filter_map(|l| l.metadata.name.as_deref())
        .collect();
    move |t| names.contains(t.spec.loadbalancer.as_str())
}

/// The bytes, as sent, the applications of `changed`'s project take of `lb`'s tenant rendered
/// as `rendered`: those of the namespaces of its requests on `lb` (in `view`, and `changed`'s).
/// None for a request of no project.
pub fn share(view: &View, lb: &Loadbalancer, changed: &Lbticket, rendered: &Rendered) -> Option<u64> {
    let project = project_of(changed)?;
    let lb_name = lb.metadata.name.as_deref().unwrap_or_default();
    let namespaces: BTreeSet<&str> = view
        .tickets
        .iter()
        .chain([changed])
        .filter(|t| project_of(t) == Some(project) && t.spec.loadbalancer == lb_name)
        .map(|t| t.spec.namespace.as_str())
        .collect();
    let tenant = Placement::of(&lb.spec).tenant;
    let adc = serde_json::from_str::<Value>(&rendered.adc).ok()?;
    Some(share_bytes(&adc, &tenant, &namespaces) as u64)
}

/// What a change does to its project's share of its tenant, as admission charges it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Growth {
    /// The project's share before the change, as `view` holds the tenant.
    pub share_before: u64,
    /// The project's share after.
    pub share_after: u64,
}

impl Growth {
    /// The bytes the change adds to its project's share (none when it shrinks it).
    pub fn added(&self) -> u64 {
        self.share_after.saturating_sub(self.share_before)
    }
}

/// What writing `changed` (with `rules` on it, in place of those stored) does to the tenant of
/// `lb` and its project's share; the fault that makes the tenant impossible to render with it.
pub fn growth(view: &View, lb: &Loadbalancer, changed: &Lbticket, rules: &[Lbrule]) -> Result<Growth, Fault> {
    let after = tenant(view, lb, Some((changed, rules)))?;
    let before = tenant(view, lb, None).ok();
    let share_of = |r: &Rendered| share(view, lb, changed, r).unwrap_or(0);
    Ok(Growth { share_before: before.as_ref().map_or(0, share_of), share_after: share_of(&after) })
}
