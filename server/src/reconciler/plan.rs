//! What one AS3 tenant of a member cluster must hold, planned without I/O from the management
//! cluster's objects and the declaration deployed now: the ConfigMap to write (only when its
//! bytes change), the labels CIS must find on namespaces and Services, and what each ticket
//! is told when the tenant cannot be written. The cluster's plan (`desired`) calls [`plan`] for
//! each tenant whose inputs changed.

use std::collections::{BTreeMap, BTreeSet};

use app::domain::as3::placement::{self, Placement};
use app::domain::as3::validate::{fits, validate_tenant};
use app::domain::as3::{self, RuleInput, TicketInput};
use app::domain::crd::LoadbalancerSpec;

/// A ticket refused by the renderer or the validator, and why.
pub type Faults = BTreeMap<String, String>;

/// What a ticket says when another request of its AS3 tenant keeps the tenant from being
/// written (naming nothing of that request, which may be another project's).
pub const HELD_BY_ANOTHER: &str = "held back: another address request sharing this AS3 tenant cannot be written; \
     the member cluster keeps the last good declaration until it is fixed";

/// What the last sync of a tenant placed, and from which inputs (its `as3::digest`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Placed {
    pub digest: u64,
    pub blocked: bool,
    pub faults: Faults,
    pub namespaces: BTreeMap<String, BTreeMap<String, String>>,
    pub services: BTreeMap<(String, String), BTreeMap<String, String>>,
}

/// One tenant of a member cluster, as the caches hold it.
pub struct Tenant<'a> {
    pub cluster: &'a str,
    pub name: &'a str,
    /// The load balancer whose tenant it is.
    pub owner: &'a LoadbalancerSpec,
    pub tickets: &'a [TicketInput<'a>],
    pub rules: &'a [RuleInput<'a>],
    /// The namespaces of its F5 Ingresses (CIS must watch them too).
    pub watched: Option<&'a BTreeSet<String>>,
}

/// What a tenant needs: what it places once applied, and the declaration to write (none: the
/// deployed one is right, or the tenant is held back and the last good one stays).
#[derive(Debug, PartialEq, Eq)]
pub struct Plan {
    pub placed: Placed,
    pub write: Option<String>,
}

impl Placed {
    /// A tenant that cannot be written: its last good ConfigMap stays, so CIS must keep reading
    /// it (its namespaces and Services keep the labels they had), and its tickets say why.
    pub fn held(last: Option<&Placed>, digest: u64, owner: &LoadbalancerSpec, faults: Faults) -> Placed {
        let (namespaces, services) = last.map(|l| (l.namespaces.clone(), l.services.clone())).unwrap_or_default();
        let mut held = Placed { digest, blocked: true, faults, namespaces, services };
        let home = Placement::of(owner).namespace;
        held.namespaces.entry(home).or_default().extend(owner.nsselector.clone());
        held
    }
}

/// Plans `tenant` against `deployed`, the declaration its ConfigMap holds now; `last` is what
/// the last sync placed, `digest` the tenant's inputs'.
pub fn plan(tenant: &Tenant, deployed: Option<&str>, last: Option<&Placed>, digest: u64) -> Plan {
    let names: Vec<&str> = tenant.tickets.iter().map(|t| t.name).collect();
    let held = |faults: &[as3::Fault]| Plan {
        placed: Placed::held(last, digest, tenant.owner, held_back(faults, &names)),
        write: None,
    };
    let rendered = match as3::render(tenant.cluster, tenant.name, tenant.tickets, tenant.rules) {
        Ok(rendered) => rendered,
        Err(fault) => return held(&[fault]),
    };
    let template = rendered.template();
    // NB: what is deployed was validated before it was written.
    let write = (deployed != Some(template.as_str())).then_some(template);
    if write.is_some()
        && let Err(found) = fits(&rendered.adc).map_err(|f| vec![f]).and_then(|()| validate_tenant(&rendered))
    {
        return held(&found);
    }
    let place = Placement::of(tenant.owner);
    let mut placed = Placed { digest, ..Default::default() };
    // NB: CIS reads a ConfigMap, an Ingress or a pool's Service only in a namespace its
    // --namespace-label selects (--hubmode widens the Service lookup, not the watches).
    let cis_reads = rendered.namespaces.iter().chain(tenant.watched.into_iter().flatten()).chain([&place.namespace]);
    for ns in cis_reads {
        placed.namespaces.entry(ns.clone()).or_default().extend(tenant.owner.nsselector.clone());
    }
    for ((ns, svc), l) in &rendered.services {
        placed.services.insert((ns.clone(), svc.clone()), placement::service_labels(l));
    }
    Plan { placed, write }
}

/// What each of the `tickets` of a tenant that cannot be written says, so that none is reported
/// written while the member cluster keeps the last good declaration: a ticket at fault why
/// (its own faults), every other that it is held back, by a fault of no one ticket (said), or
/// by another request (not named: it may be another project's).
pub fn held_back(faults: &[as3::Fault], tickets: &[&str]) -> Faults {
    let mut said = Faults::new();
    for fault in faults {
        if let Some(origin) = &fault.origin {
            said.entry(origin.ticket.clone()).or_insert_with(|| fault.to_string());
        }
    }
    let others = match faults.iter().find(|f| f.origin.is_none()) {
        Some(fault) => format!("held back: {fault}"),
        None => HELD_BY_ANOTHER.to_string(),
    };
    for ticket in tickets {
        said.entry(ticket.to_string()).or_insert_with(|| others.clone());
    }
    said
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
