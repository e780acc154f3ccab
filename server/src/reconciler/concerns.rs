//! Which member clusters' syncers a change the caches take in must wake: the cluster a ticket
//! or rule is placed on, and the one it was placed on before; every cluster when that cannot be
//! told (a Loadbalancer changed, or one not cached yet). A sync costs the whole cluster's
//! planning, so waking only the clusters concerned halves the syncs of a two-cluster lbdesk.

use std::collections::{BTreeSet, HashMap};

use app::domain::as3;
use app::domain::crd::{Lbrule, Lbticket, Loadbalancer};
use kube::ResourceExt;
use kube::runtime::reflector::{ObjectRef, Store};

use super::live;
use super::tenant::{places, rendered};

/// What a cache took in of an object of one kind.
pub enum Change<'a, K> {
    /// Applied, or listed: the cache holds it.
    Held(&'a K),
    /// Deleted: the last change of its name, and what is remembered of the name goes with it.
    Gone(&'a K),
    /// A list of every object ended (the watch began again): a name remembered that the cache
    /// does not hold (`holds`) was deleted while the watch was down, and goes as if deleted.
    Relisted(&'a dyn Fn(&str) -> bool),
}

/// The syncers a change wakes.
#[derive(Debug, PartialEq, Eq)]
pub enum Wake {
    Nobody,
    Clusters(BTreeSet<String>),
    /// Every syncer: which clusters the change concerns is not known.
    Everyone,
}

impl Wake {
    /// The clusters named; `None` is a cluster that could not be told, which wakes everyone.
    fn clusters(named: impl IntoIterator<Item = Option<String>>) -> Wake {
        named.into_iter().collect::<Option<BTreeSet<String>>>().map_or(Wake::Everyone, Wake::Clusters)
    }
}

/// Forgets the names remembered that the cache no longer `holds` (deleted while the watch was
/// down), waking the clusters they were on (`cluster`); nobody when none went.
fn missed<V>(
    remembered: &mut HashMap<String, V>,
    holds: &dyn Fn(&str) -> bool,
    cluster: impl Fn(&V) -> Option<String>,
) -> Wake {
    let mut gone = Vec::new();
    remembered.retain(|name, was| {
        holds(name) || {
            gone.push(cluster(was));
            false
        }
    });
    if gone.is_empty() { Wake::Nobody } else { Wake::clusters(gone) }
}

/// The member cluster of load balancer `name`, as cached.
fn cluster_of(lbs: &Store<Loadbalancer>, name: &str) -> Option<String> {
    lbs.get(&ObjectRef::new(name)).map(|lb| lb.spec.cluster.clone())
}

/// Which clusters a change of a ticket concerns: those where it changes what a live ticket
/// places (it became live, or its spec or address changed), where it ends a ticket's placement,
/// or where a live ticket lacks the `Rendered` report for its generation (a sync writes it). The
/// many writes of a ticket on its way to Enabled, and the sync's own report, concern no one.
/// A ticket moved to another load balancer concerns the cluster it left too.
pub fn tickets(lbs: Store<Loadbalancer>) -> impl FnMut(Change<Lbticket>) -> Wake + Send + 'static {
    // The digest of what each placed ticket places, and the cluster it places it on.
    let mut placed: HashMap<String, (u64, Option<String>)> = HashMap::new();
    move |change| {
        let (ticket, held) = match change {
            Change::Held(ticket) => (ticket, true),
            Change::Gone(ticket) => (ticket, false),
            Change::Relisted(holds) => return missed(&mut placed, holds, |(_, cluster)| cluster.clone()),
        };
        let name = ticket.name_any();
        let cluster = cluster_of(&lbs, &ticket.spec.loadbalancer);
        let placing = held && live(ticket);
        match ticket.status.as_ref().filter(|s| placing && places(&ticket.spec, Some(s))) {
            Some(status) => {
                let veip = status.veip.as_deref().unwrap_or_default();
                let digest = as3::ticket_digest(&as3::TicketInput { name: &name, spec: &ticket.spec, veip });
                let before = placed.insert(name, (digest, cluster.clone()));
                let moved = before.as_ref().map(|(d, _)| *d) != Some(digest);
                if moved || rendered(ticket).is_none() {
                    Wake::clusters(before.map(|(_, c)| c).into_iter().chain([cluster]))
                } else {
                    Wake::Nobody
                }
            }
            None => match placed.remove(&name) {
                Some((_, was)) => Wake::clusters([was, cluster]),
                None => Wake::Nobody,
            },
        }
    }
}

/// Which clusters a change of a rule concerns: the cluster of its ticket, and the one it was
/// on before.
pub fn rules(
    tickets: Store<Lbticket>,
    lbs: Store<Loadbalancer>,
) -> impl FnMut(Change<Lbrule>) -> Wake + Send + 'static {
    let mut on: HashMap<String, Option<String>> = HashMap::new();
    move |change| {
        let cluster_of_rule = |rule: &Lbrule| {
            tickets
                .get(&ObjectRef::new(&rule.spec.lbticket))
                .and_then(|ticket| cluster_of(&lbs, &ticket.spec.loadbalancer))
        };
        let (before, cluster) = match change {
            Change::Held(rule) => {
                let cluster = cluster_of_rule(rule);
                (on.insert(rule.name_any(), cluster.clone()), cluster)
            }
            Change::Gone(rule) => (on.remove(&rule.name_any()), cluster_of_rule(rule)),
            Change::Relisted(holds) => return missed(&mut on, holds, Clone::clone),
        };
        Wake::clusters(before.into_iter().chain([cluster]))
    }
}

/// Whether a change of a Loadbalancer can change what its member cluster holds: its spec
/// (a new generation), or its going. Its status (every allocation writes it) cannot. It wakes
/// everyone: the cluster it was on is not in the object.
pub fn loadbalancers() -> impl FnMut(Change<Loadbalancer>) -> Wake + Send + 'static {
    let mut seen = HashMap::new();
    move |change| {
        let lb = match change {
            Change::Held(lb) => lb,
            Change::Gone(lb) => {
                seen.remove(&lb.name_any());
                return Wake::Everyone;
            }
            // NB: the cluster a load balancer was on is not remembered: its going wakes everyone.
            Change::Relisted(holds) => return missed(&mut seen, holds, |_| None),
        };
        // NB: without a generation (not a Kubernetes API server), every write counts.
        let version = lb.metadata.generation.map(|g| g.to_string()).or_else(|| lb.metadata.resource_version.clone());
        let now = (version, live(lb));
        if seen.insert(lb.name_any(), now.clone()) != Some(now) { Wake::Everyone } else { Wake::Nobody }
    }
}

#[cfg(test)]
mod tests {
    use app::domain::crd::{F5Ingress, LbType, LbruleSpec, LbticketSpec, LbticketStatus, LoadbalancerSpec, Phase};
    use kube::runtime::reflector::{self, store::Writer};
    use kube::runtime::watcher;

    use super::super::status::set_condition;
    use super::Change::{Gone, Held, Relisted};
    use super::*;

    fn on(clusters: &[&str]) -> Wake {
        Wake::Clusters(clusters.iter().map(|c| c.to_string()).collect())
    }

    /// Load balancers `lb-a` on cluster `a` and `lb-b` on `b`, as the cache holds them.
    fn loadbalancers_cached() -> Store<Loadbalancer> {
        let (reader, mut writer): (_, Writer<Loadbalancer>) = reflector::store();
        for (name, cluster) in [("lb-a", "a"), ("lb-b", "b")] {
            let lb = Loadbalancer::new(name, LoadbalancerSpec { cluster: cluster.into(), ..Default::default() });
            writer.apply_watcher_event(&watcher::Event::Apply(lb));
        }
        reader
    }

    fn enabled(ticket: &mut Lbticket, veip: &str) {
        let status = ticket.status.get_or_insert_default();
        status.phase = Phase::Enabled;
        status.veip = Some(veip.into());
    }

    fn reported(ticket: &mut Lbticket) {
        let generation = ticket.metadata.generation;
        let status = ticket.status.get_or_insert_default();
        set_condition(&mut status.conditions, "Rendered", true, "Written", "", generation);
    }

    #[test]
    fn only_changes_of_placement_wake_the_syncers_of_its_cluster() {
        for lbtype in [LbType::Listener, LbType::Ingress] {
            let mut concerns = tickets(loadbalancers_cached());
            let spec = LbticketSpec { lbtype, loadbalancer: "lb-a".into(), ..Default::default() };
            let mut ticket = Lbticket::new("t", spec);
            ticket.metadata.generation = Some(1);
            assert_eq!(concerns(Held(&ticket)), Wake::Nobody, "no status: nothing placed");
            ticket.status = Some(LbticketStatus { phase: Phase::Created, ..Default::default() });
            assert_eq!(concerns(Held(&ticket)), Wake::Nobody, "on its way to Enabled");
            enabled(&mut ticket, "20.1.0.1");
            assert_eq!(concerns(Held(&ticket)), on(&["a"]), "{lbtype:?} became live");
            assert_eq!(concerns(Held(&ticket)), on(&["a"]), "live, not reported yet");
            reported(&mut ticket);
            assert_eq!(concerns(Held(&ticket)), Wake::Nobody, "the sync's own report");
            match lbtype {
                LbType::Listener => ticket.spec.namespace = "team-b".into(),
                LbType::Ingress => {
                    ticket.spec.ingresses.push(F5Ingress { name: "shop".into(), rules: vec![], tls_secret: None })
                }
            }
            assert_eq!(concerns(Held(&ticket)), on(&["a"]), "{lbtype:?}: spec changed");
            ticket.metadata.generation = Some(2);
            assert_eq!(concerns(Held(&ticket)), on(&["a"]), "the report is for an older generation");
            reported(&mut ticket);
            assert_eq!(concerns(Held(&ticket)), Wake::Nobody);
            ticket.status.get_or_insert_default().veip = Some("20.1.0.2".into());
            assert_eq!(concerns(Held(&ticket)), on(&["a"]), "{lbtype:?}: address changed");
            ticket.status.get_or_insert_default().phase = Phase::Disabled;
            assert_eq!(concerns(Held(&ticket)), on(&["a"]), "withdrawn");
            assert_eq!(concerns(Held(&ticket)), Wake::Nobody, "already withdrawn");
        }
    }

    #[test]
    fn a_ticket_wakes_the_cluster_it_left_and_everyone_when_its_cluster_is_unknown() {
        let mut concerns = tickets(loadbalancers_cached());
        let mut ticket = Lbticket::new("t", LbticketSpec { loadbalancer: "lb-a".into(), ..Default::default() });
        ticket.metadata.generation = Some(1);
        enabled(&mut ticket, "20.1.0.1");
        assert_eq!(concerns(Held(&ticket)), on(&["a"]));
        ticket.spec.loadbalancer = "lb-b".into();
        ticket.metadata.generation = Some(2);
        assert_eq!(concerns(Held(&ticket)), on(&["a", "b"]), "moved from a to b: a withdraws, b places");
        reported(&mut ticket);
        assert_eq!(concerns(Held(&ticket)), Wake::Nobody);
        ticket.status.get_or_insert_default().phase = Phase::Disabled;
        assert_eq!(concerns(Held(&ticket)), on(&["b"]), "withdrawn from b");

        let mut concerns = tickets(loadbalancers_cached());
        let mut stray = Lbticket::new("s", LbticketSpec { loadbalancer: "lb-new".into(), ..Default::default() });
        enabled(&mut stray, "20.1.0.9");
        assert_eq!(concerns(Held(&stray)), Wake::Everyone, "a load balancer not cached yet");
        stray.spec.loadbalancer = "lb-a".into();
        assert_eq!(concerns(Held(&stray)), Wake::Everyone, "where it was placed before is not known");
        assert_eq!(concerns(Held(&stray)), on(&["a"]));
        assert_eq!(concerns(Gone(&stray)), on(&["a"]), "deleted without its finalizer: withdrawn");
        assert_eq!(concerns(Gone(&stray)), Wake::Nobody, "nothing remembered of it");

        // Deleted while the watch was down: the list that follows does not have it.
        assert_eq!(concerns(Held(&stray)), on(&["a"]));
        enabled(&mut ticket, "20.1.0.2");
        assert_eq!(concerns(Held(&ticket)), on(&["b"]), "t placed on b");
        assert_eq!(concerns(Relisted(&|name| ["s", "t"].contains(&name))), Wake::Nobody, "both listed: nothing missed");
        assert_eq!(concerns(Relisted(&|name| name == "t")), on(&["a"]), "s missed: withdrawn from a");
        assert_eq!(concerns(Relisted(&|_| false)), on(&["b"]), "t missed: withdrawn from b");
        assert_eq!(concerns(Relisted(&|_| false)), Wake::Nobody, "nothing remembered of them");
    }

    #[test]
    fn a_rule_wakes_the_cluster_of_its_ticket_and_the_one_it_left() {
        let lbs = loadbalancers_cached();
        let (tickets_cached, mut writer): (_, Writer<Lbticket>) = reflector::store();
        for (name, lb) in [("t-a", "lb-a"), ("t-b", "lb-b")] {
            let ticket = Lbticket::new(name, LbticketSpec { loadbalancer: lb.into(), ..Default::default() });
            writer.apply_watcher_event(&watcher::Event::Apply(ticket));
        }
        let mut concerns = rules(tickets_cached, lbs);
        let mut rule = Lbrule::new("r", LbruleSpec { lbticket: "t-a".into(), ..Default::default() });
        assert_eq!(concerns(Held(&rule)), on(&["a"]));
        assert_eq!(concerns(Held(&rule)), on(&["a"]), "every change of a rule, its status too");
        rule.spec.lbticket = "t-b".into();
        assert_eq!(concerns(Held(&rule)), on(&["a", "b"]));
        assert_eq!(concerns(Gone(&rule)), on(&["b"]), "deleted: its cluster drops it");
        let again = Lbrule::new("r", LbruleSpec { lbticket: "t-a".into(), ..Default::default() });
        assert_eq!(concerns(Held(&again)), on(&["a"]), "the name made again: where it was is forgotten");
        assert_eq!(concerns(Relisted(&|name| name == "r")), Wake::Nobody, "listed: nothing missed");
        assert_eq!(concerns(Relisted(&|_| false)), on(&["a"]), "deleted while the watch was down");
        assert_eq!(concerns(Relisted(&|_| false)), Wake::Nobody, "nothing remembered of it");
        rule.spec.lbticket = "t-unknown".into();
        assert_eq!(concerns(Held(&rule)), Wake::Everyone);
    }

    #[test]
    fn a_loadbalancer_wakes_everyone_on_a_new_spec_or_its_going_only() {
        let mut concerns = loadbalancers();
        let mut lb = Loadbalancer::new("lb-a", LoadbalancerSpec { cluster: "a".into(), ..Default::default() });
        lb.metadata.generation = Some(1);
        assert_eq!(concerns(Held(&lb)), Wake::Everyone, "first seen");
        lb.metadata.resource_version = Some("7".into());
        assert_eq!(concerns(Held(&lb)), Wake::Nobody, "a status write");
        lb.metadata.generation = Some(2);
        assert_eq!(concerns(Held(&lb)), Wake::Everyone, "a new spec: the cluster it was on is not known");
        lb.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Default::default()));
        assert_eq!(concerns(Held(&lb)), Wake::Everyone, "going");
        assert_eq!(concerns(Gone(&lb)), Wake::Everyone, "gone");

        let mut lb = Loadbalancer::new("lb-b", LoadbalancerSpec { cluster: "b".into(), ..Default::default() });
        lb.metadata.generation = Some(1);
        assert_eq!(concerns(Held(&lb)), Wake::Everyone, "first seen");
        assert_eq!(concerns(Gone(&lb)), Wake::Everyone, "deleted at once");
        assert_eq!(concerns(Held(&lb)), Wake::Everyone, "the name made again is seen first");
        assert_eq!(concerns(Relisted(&|name| name == "lb-b")), Wake::Nobody, "listed: nothing missed");
        assert_eq!(concerns(Relisted(&|_| false)), Wake::Everyone, "deleted while the watch was down");
        assert_eq!(concerns(Relisted(&|_| false)), Wake::Nobody, "nothing remembered of it");
        assert_eq!(concerns(Held(&lb)), Wake::Everyone, "seen again after the list: first seen");
    }
}
