//! What a whole member cluster must hold, planned without I/O: from the management cluster's
//! objects (as the caches hold them), what the tenants' ConfigMaps hold now and what the last
//! sync placed, [`Cluster::plan`] gives the ConfigMaps to write, the labels CIS must find on
//! namespaces and Services, the Ingresses of the F5 Ingresses and what each ticket is told when
//! its part cannot be placed. `tenant::sync` reads, plans, then applies the difference.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use app::domain::as3::placement::{self, Placement};
use app::domain::as3::{self, RuleInput, TicketInput};
use app::domain::cis_ingress;
use app::domain::crd::{Lbrule, Lbticket, Loadbalancer, LoadbalancerSpec};
use app::domain::policy::effective_partition;

use super::ingress;
use super::labels::Labels;
use super::plan::{Faults, Placed, Plan, Tenant, held_back, plan};

/// One AS3 tenant's inputs, and their digest.
struct TenantInputs<'a> {
    name: String,
    owner: &'a LoadbalancerSpec,
    tickets: Vec<TicketInput<'a>>,
    rules: Vec<RuleInput<'a>>,
    /// The namespaces of its F5 Ingresses (CIS must watch them too).
    watched: Option<BTreeSet<String>>,
    digest: u64,
}

/// A member cluster's live objects, grouped as the plan reads them.
pub struct Cluster<'a> {
    name: &'a str,
    tenants: Vec<TenantInputs<'a>>,
    ingresses: ingress::Planned,
}

/// A tenant's ConfigMap to write, and what the tenant places if the write fails.
#[derive(Debug)]
pub struct Write {
    pub place: Placement,
    pub template: String,
    /// The tenant's tickets, each told why when the write fails.
    pub(super) tickets: Vec<String>,
    /// The tenant held back: the last good ConfigMap stays, and its labels with it.
    pub(super) held: Placed,
}

/// What a member cluster must hold.
#[derive(Debug)]
pub struct Desired {
    /// Per tenant, what it places once applied (the memo the next sync starts from).
    pub tenants: HashMap<String, Placed>,
    /// The ConfigMaps whose declaration differs from the one the cluster holds.
    pub configmaps: Vec<Write>,
    /// The Ingresses of the live F5 Ingresses.
    pub ingresses: ingress::Planned,
}

impl<'a> Cluster<'a> {
    /// The live `loadbalancers`, `tickets` and `rules` of member cluster `name` (as filtered by
    /// the caller), its CIS watching Ingresses of `class`.
    pub fn of(
        name: &'a str,
        loadbalancers: &'a [Arc<Loadbalancer>],
        tickets: &'a [Arc<Lbticket>],
        rules: &'a [Arc<Lbrule>],
        class: &str,
    ) -> Cluster<'a> {
        let named = |meta: &'a kube::api::ObjectMeta| meta.name.as_deref().unwrap_or_default();
        let lb_in: Vec<_> = loadbalancers.iter().map(|l| (named(&l.metadata), &l.spec)).collect();
        let t_in: Vec<_> = tickets.iter().map(|t| (named(&t.metadata), &t.spec, t.status.as_ref())).collect();
        let r_in: Vec<_> = rules.iter().map(|r| (named(&r.metadata), &r.spec)).collect();
        let mut watched = watched_namespaces(loadbalancers, tickets);
        let mut tenants = Vec::new();
        for ((_, tenant), (tickets, rules)) in as3::tenants(&lb_in, &t_in, &r_in) {
            let Some(owner) = placement::owner(&tenant, loadbalancers.iter().map(|lb| &lb.spec)) else {
                continue;
            };
            let watched = watched.remove(&tenant);
            let digest = as3::digest(name, &tenant, owner, &tickets, &rules) ^ as3::stable_hash(&watched);
            tenants.push(TenantInputs { name: tenant, owner, tickets, rules, watched, digest });
        }
        let ingresses = ingress::planned(loadbalancers, tickets, class);
        Cluster { name, tenants, ingresses }
    }

    /// Whether `tenant` must be planned again: its inputs changed since the last sync, or
    /// `ensure` asks for everything to be read back.
    fn stale(tenant: &TenantInputs, previous: &HashMap<String, Placed>, ensure: bool) -> bool {
        ensure || previous.get(&tenant.name).is_none_or(|last| last.digest != tenant.digest)
    }

    /// The tenants whose ConfigMap must be read before planning (the others are as last placed).
    pub fn to_read(&self, previous: &HashMap<String, Placed>, ensure: bool) -> Vec<Placement> {
        let stale = self.tenants.iter().filter(|t| Self::stale(t, previous, ensure));
        stale.map(|t| Placement::of(t.owner)).collect()
    }

    /// Plans the cluster: `deployed` holds, per tenant read (`to_read`), the declaration its
    /// ConfigMap holds now (none: no ConfigMap); `previous` is what the last sync placed (what
    /// a tenant left alone placed is moved over, not copied: a sync runs after every change).
    pub fn plan(
        self,
        deployed: &HashMap<String, Option<String>>,
        mut previous: HashMap<String, Placed>,
        ensure: bool,
    ) -> Desired {
        let mut desired = Desired { tenants: HashMap::new(), configmaps: Vec::new(), ingresses: self.ingresses };
        for t in &self.tenants {
            if !Self::stale(t, &previous, ensure) {
                desired.tenants.extend(previous.remove(&t.name).map(|last| (t.name.clone(), last)));
                continue;
            }
            let last = previous.get(&t.name);
            let now = deployed.get(&t.name).and_then(Option::as_deref);
            let input = Tenant {
                cluster: self.name,
                name: &t.name,
                owner: t.owner,
                tickets: &t.tickets,
                rules: &t.rules,
                watched: t.watched.as_ref(),
            };
            let Plan { placed, write } = plan(&input, now, last, t.digest);
            if let Some(template) = write {
                desired.configmaps.push(Write {
                    place: Placement::of(t.owner),
                    template,
                    tickets: t.tickets.iter().map(|ticket| ticket.name.to_string()).collect(),
                    held: Placed::held(last, t.digest, t.owner, Faults::new()),
                });
            }
            desired.tenants.insert(t.name.clone(), placed);
        }
        desired
    }
}

impl Desired {
    /// The labels the tenants' placements ask for, on namespaces and Services.
    pub fn labels(&self) -> Labels {
        Labels::of(&self.tenants)
    }

    /// What each ticket whose listeners or F5 Ingresses cannot be placed is told.
    pub fn faults(&self) -> Faults {
        let mut faults: Faults = self.tenants.values().flat_map(|p| p.faults.clone()).collect();
        for (ticket, why) in &self.ingresses.faults {
            faults.entry(ticket.clone()).or_insert_with(|| why.clone());
        }
        faults
    }

    /// `write` was not applied, for `why`: its tenant is held back (its last good ConfigMap and
    /// labels stay, its tickets say why). `retry`: not the content's fault, so the digest is
    /// forgotten and the next sync plans the tenant again.
    pub fn unwritten(&mut self, write: &Write, why: String, retry: bool) {
        let names: Vec<&str> = write.tickets.iter().map(String::as_str).collect();
        let mut held = write.held.clone();
        held.faults = held_back(&[as3::Fault { origin: None, message: why }], &names);
        if retry {
            held.digest = 0;
        }
        self.tenants.insert(write.place.tenant.clone(), held);
    }
}

/// Per AS3 tenant, the namespaces of its load balancers' live F5 Ingresses.
fn watched_namespaces(lbs: &[Arc<Loadbalancer>], tickets: &[Arc<Lbticket>]) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for t in tickets.iter().filter(|t| cis_ingress::is_live(&t.spec, t.status.as_ref())) {
        if let Some(lb) = lbs.iter().find(|lb| lb.metadata.name.as_deref() == Some(t.spec.loadbalancer.as_str())) {
            out.entry(effective_partition(&lb.spec).to_string()).or_default().insert(t.spec.namespace.clone());
        }
    }
    out
}

#[cfg(test)]
#[path = "desired_tests.rs"]
mod tests;
