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
    rendered(view, lb, changed, |_| true)
}

/// [`tenant`], of the requests `keep` keeps.
fn rendered(
    view: &View,
    lb: &Loadbalancer,
    changed: Option<(&Lbticket, &[Lbrule])>,
    keep: impl Fn(&Lbticket) -> bool,
) -> Result<Rendered, Fault> {
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
        .filter(|t| keep(t))
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

/// The namespaces of `changed`'s project's requests on `lb` (in `view`, and `changed`'s): whose
/// applications are the project's share of the tenant. None for a request of no project.
fn namespaces<'v>(view: &View<'v>, lb: &Loadbalancer, changed: &'v Lbticket) -> Option<BTreeSet<&'v str>> {
    let project = project_of(changed)?;
    let lb_name = lb.metadata.name.as_deref().unwrap_or_default();
    let namespaces = view
        .tickets
        .iter()
        .chain([changed])
        .filter(|t| project_of(t) == Some(project) && t.spec.loadbalancer == lb_name)
        .map(|t| t.spec.namespace.as_str())
        .collect();
    Some(namespaces)
}

/// The bytes, as sent, the applications of `changed`'s project take of `lb`'s tenant rendered
/// as `rendered` ([`namespaces`]). None for a request of no project.
pub fn share(view: &View, lb: &Loadbalancer, changed: &Lbticket, rendered: &Rendered) -> Option<u64> {
    bytes_of(rendered, &namespaces(view, lb, changed)?)
}

/// The bytes the applications of `namespaces` take of `rendered`.
fn bytes_of(rendered: &Rendered, namespaces: &BTreeSet<&str>) -> Option<u64> {
    let adc = serde_json::from_str::<Value>(&rendered.adc).ok()?;
    Some(share_bytes(&adc, &rendered.tenant, namespaces) as u64)
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

/// What writing `changed` (with `rules` on it, in place of those stored) does to its project's
/// share of `lb`'s tenant; the fault that makes the project's applications impossible to render
/// with it. NB: an application holds the requests of its namespace alone, so only the project's
/// namespaces are rendered, and only the changed one twice: the cost follows the project and
/// the change, not the tenant.
pub fn growth(view: &View, lb: &Loadbalancer, changed: &Lbticket, rules: &[Lbrule]) -> Result<Growth, Fault> {
    let Some(namespaces) = namespaces(view, lb, changed) else { return Ok(Growth::default()) };
    // NB: the request as stored may be in another namespace, whose applications it leaves.
    let name = changed.metadata.name.as_deref();
    let stored = view.tickets.iter().find(|t| t.metadata.name.as_deref() == name);
    let touched: BTreeSet<&str> = [Some(changed.spec.namespace.as_str()), stored.map(|t| t.spec.namespace.as_str())]
        .into_iter()
        .flatten()
        .collect();
    let in_touched = |t: &Lbticket| touched.contains(t.spec.namespace.as_str());
    let after = rendered(view, lb, Some((changed, rules)), in_touched)?;
    let before = rendered(view, lb, None, in_touched).ok();
    let bytes = |r: &Rendered, of: &BTreeSet<&str>| bytes_of(r, of).unwrap_or(0);
    let others: BTreeSet<&str> = namespaces.difference(&touched).copied().collect();
    let untouched = match others.is_empty() {
        true => 0,
        false => {
            rendered(view, lb, None, |t| others.contains(t.spec.namespace.as_str())).map_or(0, |r| bytes(&r, &others))
        }
    };
    let mine: BTreeSet<&str> = touched.intersection(&namespaces).copied().collect();
    Ok(Growth {
        share_before: untouched + before.as_ref().map_or(0, |r| bytes(r, &mine)),
        share_after: untouched + bytes(&after, &mine),
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::domain::crd::{
        LABEL_PROJECT, LbticketSpec, LbticketStatus, Listener, LoadbalancerSpec, Phase, Protocol, ServiceRef, Session,
    };

    /// Request `name` of `project` in `namespace`, Enabled at `veip`, with `listeners` ports.
    fn ticket(name: &str, project: &str, namespace: &str, veip: &str, ports: &[u16]) -> Lbticket {
        let listener = |port: &u16| Listener {
            name: format!("l{port}"),
            port: *port,
            protocol: Protocol::Http,
            session: Session::None,
            services: vec![ServiceRef { service: format!("{name}-{port}"), port: 8080, weight: 100 }],
        };
        let spec = LbticketSpec {
            loadbalancer: "lb".into(),
            namespace: namespace.into(),
            listeners: ports.iter().map(listener).collect(),
            ..Default::default()
        };
        let mut t = Lbticket::new(name, spec);
        t.metadata.labels = Some(BTreeMap::from([(LABEL_PROJECT.to_string(), project.to_string())]));
        t.status = Some(LbticketStatus { phase: Phase::Enabled, veip: Some(veip.into()), ..Default::default() });
        t
    }

    #[test]
    fn a_change_is_charged_what_it_adds_to_its_projects_share_of_the_whole_tenant() {
        let mut spec = LoadbalancerSpec { cluster: "c1".into(), ..Default::default() };
        spec.partition = Some("shared".into());
        let lbs = vec![Loadbalancer::new("lb", spec)];
        let tickets = vec![
            ticket("a1", "a", "team-a", "10.0.0.1", &[80, 81]),
            ticket("a2", "a", "team-a2", "10.0.0.2", &[80]),
            ticket("b1", "b", "team-b", "10.0.0.3", &[80, 81, 82, 83]),
        ];
        let view = View { tickets: &tickets, loadbalancers: &lbs, rules: &[], quotas: &[] };
        let lb = &lbs[0];
        let changed = ticket("a1", "a", "team-a", "10.0.0.1", &[80, 81, 82]);
        let grown = growth(&view, lb, &changed, &[]).expect("renders");
        // The same shares, from the whole tenant as the reconciler renders it.
        let whole = |changed: Option<(&Lbticket, &[Lbrule])>| tenant(&view, lb, changed).expect("renders");
        assert_eq!(Some(grown.share_before), share(&view, lb, &changed, &whole(None)));
        assert_eq!(Some(grown.share_after), share(&view, lb, &changed, &whole(Some((&changed, &[])))));
        assert!(grown.added() > 0 && grown.share_before > 0, "{grown:?}");
        // Another project's change adds nothing to this one's, and a smaller one adds nothing.
        let fewer = ticket("a1", "a", "team-a", "10.0.0.1", &[80]);
        assert_eq!(growth(&view, lb, &fewer, &[]).map(|g| g.added()), Ok(0));
        let project_less = Lbticket { metadata: Default::default(), ..changed.clone() };
        assert_eq!(growth(&view, lb, &project_less, &[]), Ok(Growth::default()), "no project, no share");
    }
}
