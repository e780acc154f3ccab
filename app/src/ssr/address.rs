//! The server side of the screens built on an address (listeners, rules, F5 Ingresses): the
//! request the caller may touch, what the management cluster holds around it, the Services its
//! namespace offers and the TLS Secrets it holds (a change of its spec is `ssr::change`).

use k8s_openapi::api::core::v1::{Secret, Service};
use kube::api::ListParams;
use kube::{Api, ResourceExt};

use super::guard::{Caller, not_found};
use super::{kube_error, refused};
use crate::domain::access::{Target, Verb};
use crate::domain::as3;
use crate::domain::cis_ingress;
use crate::domain::crd::MAX_DECLARATION_BYTES;
use crate::domain::crd::{LABEL_PROJECT, LbType, Lbquota, Lbrule, Lbticket, Loadbalancer, Phase};
use crate::domain::policy::{Limits, Owner, Usage, View, dns_label, escaped, object_name, ticket_cluster};
use crate::error::AppError;
use crate::wire::{ADDRESS_PAGE, AddressSummary, Carried, Page, ServiceChoice};

/// What a missing request, or another project's, is called in the answer (in the reader's
/// words).
pub fn what() -> &'static str {
    crate::i18n::t("errors.what.address_request")
}

/// What a request is to the authorization rule: an object of its project.
pub fn target(t: &Lbticket) -> Target<'_> {
    project_of(t).map_or(Target::Unowned, Target::Project)
}

pub use crate::domain::crd::project_of;

/// The request, if the caller may `verb` it (else "not found": its existence is not told), as
/// the watch cache holds it. NB: a write over a version the cache has not caught up with yet
/// loses the race on `resourceVersion` and is tried again ([`super::retrying`]).
pub async fn ticket(caller: &Caller, verb: Verb, name: &str) -> Result<Lbticket, AppError> {
    object_name("name", name).map_err(refused)?;
    let cached = super::state()?.caches.get::<Lbticket>(name).await;
    let t = cached.map_err(|e| super::internal("could not read the management cluster", e))?;
    let t = t.ok_or_else(|| not_found(what()))?;
    caller.may(verb, target(&t), what())?;
    Ok((*t).clone())
}

/// The requests the caller may see: their current project's (an admin's: `project`'s, or
/// every project's when it is empty).
pub async fn visible(caller: &Caller, project: &str) -> Result<Vec<Lbticket>, AppError> {
    if !project.is_empty() {
        dns_label("project", project).map_err(refused)?;
    }
    let wanted = if caller.may(Verb::Read, Target::AllProjects, what()).is_ok() {
        project.to_string()
    } else {
        caller.user.project.clone().unwrap_or_default()
    };
    let params = if wanted.is_empty() {
        ListParams::default()
    } else {
        ListParams::default().labels(&format!("{LABEL_PROJECT}={wanted}"))
    };
    let tickets =
        Api::<Lbticket>::all(super::mgmt()?).list(&params).await.map_err(|e| kube_error("address requests", e))?;
    Ok(tickets.items.into_iter().filter(|t| caller.may(Verb::Read, target(t), what()).is_ok()).collect())
}

/// A page of the addresses for `lbtype` the caller may see ([`visible`]), deleted ones left
/// out, by name: the first [`ADDRESS_PAGE`] after the name `after` (empty: from the first).
pub async fn addresses(
    caller: &Caller,
    project: &str,
    lbtype: LbType,
    after: &str,
) -> Result<Page<Lbticket>, AppError> {
    if !after.is_empty() {
        object_name("after", after).map_err(refused)?;
    }
    let tickets = visible(caller, project)
        .await?
        .into_iter()
        .filter(|t| t.spec.lbtype == lbtype)
        .filter(|t| t.status.as_ref().is_none_or(|s| s.phase != Phase::Deleted));
    Ok(page_after(tickets, after))
}

/// The first [`ADDRESS_PAGE`] of `tickets` by name after `after`, and the cursor of the next
/// page when there are more.
fn page_after(tickets: impl Iterator<Item = Lbticket>, after: &str) -> Page<Lbticket> {
    let mut rows: Vec<Lbticket> = tickets.filter(|t| t.name_any().as_str() > after).collect();
    rows.sort_by_key(|t| t.name_any());
    let next = (rows.len() > ADDRESS_PAGE).then(|| rows[ADDRESS_PAGE - 1].name_any());
    rows.truncate(ADDRESS_PAGE);
    Page { rows, next }
}

/// The request and object names a call gives (`name` empty: none yet), checked before
/// anything is read.
pub fn check_names(ticket: &str, name: &str) -> Result<(), AppError> {
    object_name("ticket", ticket).map_err(refused)?;
    if name.is_empty() { Ok(()) } else { dns_label("name", name).map_err(refused) }
}

/// The client of member cluster `cluster`.
pub fn member(cluster: &str) -> Result<kube::Client, AppError> {
    let state = super::state()?;
    state
        .clusters
        .member(cluster)
        .ok_or_else(|| AppError::Refused(crate::tf!("errors.member_unreachable", cluster = escaped(cluster))))
}

/// The management cluster's load balancers, requests, rules and quotas, read once per change
/// from the watch caches.
pub struct World {
    pub loadbalancers: Vec<Loadbalancer>,
    pub tickets: Vec<Lbticket>,
    pub rules: Vec<Lbrule>,
    pub quotas: Vec<Lbquota>,
}

impl World {
    /// Reads them.
    pub async fn load() -> Result<World, AppError> {
        let caches = super::state()?.caches;
        let unavailable = |e| super::internal("could not read the management cluster", e);
        Ok(World {
            loadbalancers: caches.list(|_| true).await.map_err(unavailable)?,
            tickets: caches.list(|_| true).await.map_err(unavailable)?,
            rules: caches.list(|_| true).await.map_err(unavailable)?,
            quotas: caches.list(|_| true).await.map_err(unavailable)?,
        })
    }

    /// The view the change checks read.
    pub fn view(&self) -> View<'_> {
        View { tickets: &self.tickets, loadbalancers: &self.loadbalancers, rules: &self.rules, quotas: &self.quotas }
    }

    /// What `project` may hold on `lb` and its tenant.
    pub fn limits(&self, project: &str, lb: &Loadbalancer) -> Limits {
        Limits::for_project(&self.quotas, project, &lb.spec, MAX_DECLARATION_BYTES as u64)
    }

    /// The load balancer of `t`.
    pub fn loadbalancer_of(&self, t: &Lbticket) -> Option<&Loadbalancer> {
        self.loadbalancers.iter().find(|lb| lb.metadata.name.as_deref() == Some(t.spec.loadbalancer.as_str()))
    }

    /// The member cluster of `t`.
    pub fn cluster_of<'a>(&'a self, t: &'a Lbticket) -> &'a str {
        ticket_cluster(t, &self.loadbalancers).unwrap_or_default()
    }

    /// The rules on `t`.
    pub fn rules_on<'a>(&'a self, t: &'a Lbticket) -> impl Iterator<Item = &'a Lbrule> + 'a {
        let name = t.metadata.name.as_deref().unwrap_or_default();
        self.rules.iter().filter(move |r| r.spec.lbticket == name)
    }
}

/// Whether the member cluster carries what `t` asks for now: its `Rendered` condition for the
/// current generation.
pub fn carried(t: &Lbticket) -> Carried {
    let status = t.status.as_ref();
    if !as3::is_live(&t.spec, status) && !cis_ingress::is_live(&t.spec, status) {
        return Carried::Idle;
    }
    let conditions = status.map(|s| s.conditions.as_slice()).unwrap_or_default();
    match conditions.iter().find(|c| c.type_ == "Rendered" && c.observed_generation == t.metadata.generation) {
        Some(c) if c.status == "True" => Carried::Yes,
        Some(c) => Carried::Refused(c.message.clone()),
        None => Carried::Pending,
    }
}

/// A request as the screens on it show it; `cluster` is its member cluster.
pub fn summary(t: &Lbticket, cluster: &str) -> AddressSummary {
    let status = t.status.clone().unwrap_or_default();
    AddressSummary {
        ticket: t.name_any(),
        project: project_of(t).unwrap_or_default().to_string(),
        cluster: cluster.to_string(),
        namespace: t.spec.namespace.clone(),
        veip: status.veip.unwrap_or_default(),
        phase: status.phase,
        lbtype: t.spec.lbtype,
        generation: t.metadata.generation.unwrap_or_default(),
        carried: carried(t),
    }
}

/// The names of the TLS Secrets of `namespace` in `cluster` (their data stays on the server).
pub async fn tls_secrets(cluster: &str, namespace: &str) -> Result<Vec<String>, AppError> {
    let api: Api<Secret> = Api::namespaced(member(cluster)?, namespace);
    let list = api.list(&ListParams::default()).await.map_err(|e| kube_error("Secrets", e))?;
    let mut names: Vec<String> =
        list.items.iter().filter(|s| s.type_.as_deref() == Some(TLS_SECRET_TYPE)).map(|s| s.name_any()).collect();
    names.sort();
    Ok(names)
}

/// The type of a Secret holding a certificate and its key.
const TLS_SECRET_TYPE: &str = "kubernetes.io/tls";

/// The Services of `namespace` in member cluster `cluster`, with their ports, by name.
pub async fn services(cluster: &str, namespace: &str) -> Result<Vec<ServiceChoice>, AppError> {
    let list = Api::<Service>::namespaced(member(cluster)?, namespace)
        .list(&ListParams::default())
        .await
        .map_err(|e| kube_error("Services", e))?;
    let mut choices: Vec<ServiceChoice> = list
        .items
        .iter()
        .map(|s| {
            let ports = s.spec.iter().flat_map(|spec| spec.ports.iter().flatten());
            let mut ports: Vec<u16> = ports.filter_map(|p| u16::try_from(p.port).ok()).collect();
            ports.sort_unstable();
            ports.dedup();
            ServiceChoice { name: s.name_any(), ports }
        })
        .collect();
    choices.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(choices)
}

/// The Services of `t`'s namespace that `me` may pick: those no one else uses.
pub async fn offered(world: &World, t: &Lbticket, me: &Owner) -> Result<Vec<ServiceChoice>, AppError> {
    let all = services(world.cluster_of(t), &t.spec.namespace).await?;
    let usage = Usage::around(t, &world.tickets, &world.loadbalancers, &world.rules);
    // NB: `around` leaves `t`'s own listeners out; its other ones still count as others.
    let mut usage = usage;
    let name = t.name_any();
    for l in &t.spec.listeners {
        usage.add_backends(&name, &l.name, &l.services);
    }
    for ingress in &t.spec.ingresses {
        for route in &ingress.rules {
            usage.add(&route.service, Owner::Ingress(ingress.name.clone()));
        }
    }
    Ok(all.into_iter().filter(|s| usage.available(&s.name, me).is_ok()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::crd::LbticketSpec;

    fn tickets(n: usize) -> impl Iterator<Item = Lbticket> {
        // NB: out of order, as a list may give them.
        (0..n).rev().map(|i| Lbticket::new(&format!("t-{i:03}"), LbticketSpec::default()))
    }

    fn names(page: &Page<Lbticket>) -> Vec<String> {
        page.rows.iter().map(|t| t.name_any()).collect()
    }

    #[test]
    fn pages_follow_one_another_by_name_with_nothing_lost_or_repeated() {
        let total = 2 * ADDRESS_PAGE + 3;
        let mut seen = Vec::new();
        let mut after = String::new();
        let mut pages = 0;
        loop {
            let page = page_after(tickets(total), &after);
            pages += 1;
            assert!(page.rows.len() <= ADDRESS_PAGE, "{}", page.rows.len());
            seen.extend(names(&page));
            match page.next {
                Some(next) => after = next,
                None => break,
            }
        }
        assert_eq!(pages, 3);
        let want: Vec<String> = (0..total).map(|i| format!("t-{i:03}")).collect();
        assert_eq!(seen, want);
    }

    #[test]
    fn a_list_that_fits_one_page_has_no_next() {
        let page = page_after(tickets(ADDRESS_PAGE), "");
        assert_eq!((page.rows.len(), page.next), (ADDRESS_PAGE, None));
        assert_eq!(page_after(tickets(3), "t-002").rows.len(), 0);
    }
}
