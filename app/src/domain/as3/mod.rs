//! AS3 declarations: one per (member cluster, AS3 tenant), from its Loadbalancers' Enabled
//! listener tickets (every namespace) and their rules. Output is byte-stable: the same objects
//! always give the same bytes, so an unchanged tenant causes no write.

pub mod names;
pub mod placement;
#[cfg(feature = "ssr")]
pub mod validate;

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{BuildHasher, Hash};

use rustc_hash::{FxHashMap, FxHashSet};
use std::fmt;

use serde::Serialize;

use super::crd::{
    DesiredState, LbType, LbruleSpec, LbticketSpec, LbticketStatus, LoadbalancerSpec, Phase, Protocol, ServiceRef,
    Session,
};
use super::irule;
use super::policy::effective_partition;

/// The AS3 schema version written (CIS 2.20 validates against 3.52 and refuses newer).
pub const SCHEMA_VERSION: &str = "3.50.0";

/// A ticket the renderer places: name, spec and its allocated VE address.
#[derive(Clone, Copy, Debug)]
pub struct TicketInput<'a> {
    pub name: &'a str,
    pub spec: &'a LbticketSpec,
    pub veip: &'a str,
}

/// A rule the renderer places.
#[derive(Clone, Copy, Debug)]
pub struct RuleInput<'a> {
    pub name: &'a str,
    pub spec: &'a LbruleSpec,
}

/// Which ticket, listener and rule an AS3 item comes from, for messages.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Origin {
    pub ticket: String,
    pub listener: String,
    pub rule: Option<String>,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ticket {}, listener {}", self.ticket, self.listener)?;
        if let Some(rule) = &self.rule {
            write!(f, ", rule {rule}")?;
        }
        Ok(())
    }
}

/// Something in the objects that makes the tenant impossible to render or validate.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", origin.as_ref().map(|o| format!("{o}: ")).unwrap_or_default())]
pub struct Fault {
    pub origin: Option<Origin>,
    pub message: String,
}

/// The CIS service-discovery labels of one Service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolLabels {
    pub tenant: String,
    pub app: String,
    pub pool: String,
}

/// `<app>/<virtual server>` → the ticket and listener it comes from.
pub type Origins = FxHashMap<String, Origin>;

/// Where the item `item` of application `app` comes from: a virtual server, or the iRule of one.
pub fn origin_of<'o>(origins: &'o Origins, app: &str, item: &str) -> Option<&'o Origin> {
    let vs = item.strip_suffix("_irule").unwrap_or(item);
    origins.get(&format!("{app}/{vs}"))
}

/// A rendered tenant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rendered {
    pub cluster: String,
    pub tenant: String,
    /// The ADC declaration, compact JSON.
    pub adc: String,
    /// (namespace, Service) → the labels it must carry.
    pub services: FxHashMap<(String, String), PoolLabels>,
    /// Namespaces holding listeners (they get the Loadbalancer's nsselector labels).
    pub namespaces: BTreeSet<String>,
    /// `<app>/<virtual server>` → where it comes from (see [`Rendered::origin`]).
    pub origins: Origins,
    /// Rules not placed (their ticket or listener is not rendered), and why.
    pub skipped: Vec<(String, String)>,
}

impl Rendered {
    /// The ConfigMap `data.template`: the ADC inside the AS3 request CIS reads.
    pub fn template(&self) -> String {
        template_of(&self.adc)
    }
}

/// The AS3 request CIS reads around an ADC declaration.
pub fn template_of(adc: &str) -> String {
    format!(r#"{{"class":"AS3","action":"deploy","persist":true,"declaration":{adc}}}"#)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Adc<'a> {
    class: &'static str,
    schema_version: &'static str,
    id: String,
    label: &'static str,
    remark: &'static str,
    #[serde(flatten)]
    tenant: BTreeMap<&'a str, Tenant>,
}

#[derive(Serialize)]
struct Tenant {
    class: &'static str,
    #[serde(flatten)]
    apps: BTreeMap<String, Application>,
}

#[derive(Serialize)]
struct Application {
    class: &'static str,
    template: &'static str,
    #[serde(flatten)]
    items: BTreeMap<String, Item>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Item {
    Service(VirtualServer),
    Pool(Pool),
    IRule(IRule),
}

#[derive(Serialize)]
struct BigIp {
    bigip: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct VirtualServer {
    class: &'static str,
    remark: String,
    virtual_addresses: [String; 1],
    virtual_port: u16,
    persistence_methods: Vec<&'static str>,
    pool: String,
    #[serde(rename = "iRules")]
    irules: [String; 1],
    #[serde(skip_serializing_if = "Option::is_none")]
    redirect80: Option<bool>,
    #[serde(rename = "serverTLS", skip_serializing_if = "Option::is_none")]
    server_tls: Option<BigIp>,
    #[serde(rename = "clientTLS", skip_serializing_if = "Option::is_none")]
    client_tls: Option<BigIp>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Member {
    service_port: u16,
    server_addresses: [String; 0],
    /// NB: CIS copies this into every member it fills and writes `null` when it is absent,
    /// which AS3 refuses (issue #24). `true` puts the nodes in `/Common`, so that one pod
    /// backing pools of two tenants (listeners and F5 Ingresses) is one node on BIG-IP.
    share_nodes: bool,
}

/// A pool monitor: a built-in name, or a path on BIG-IP.
#[derive(Serialize)]
#[serde(untagged)]
enum Monitor {
    Name(&'static str),
    BigIp(BigIp),
}

#[derive(Serialize)]
struct Pool {
    class: &'static str,
    monitors: [Monitor; 1],
    members: [Member; 1],
}

#[derive(Serialize)]
struct IRule {
    class: &'static str,
    #[serde(rename = "iRule")]
    text: String,
    expand: bool,
}

/// Keys of an ADC body that a tenant cannot be named.
const ADC_KEYS: [&str; 9] =
    ["class", "schemaVersion", "id", "label", "remark", "updateMode", "controls", "constants", "Common"];

fn service_class(p: Protocol) -> &'static str {
    match p {
        Protocol::Http => "Service_HTTP",
        Protocol::Https => "Service_HTTPS",
        Protocol::Tcp => "Service_TCP",
        Protocol::Udp => "Service_UDP",
    }
}

/// The pool monitor of a listener protocol: HTTPS listeners re-encrypt, so backends speak TLS.
/// NB: UDP's is named by its BIG-IP path: the name `udp` is not in the AS3 3.52 schema CIS
/// validates against (it came in a later AS3), so CIS would refuse the whole declaration.
fn monitor(p: Protocol) -> Monitor {
    match p {
        Protocol::Udp => Monitor::BigIp(BigIp { bigip: "/Common/udp" }),
        other => Monitor::Name(other.as_str()),
    }
}

fn persistence(s: Session) -> Vec<&'static str> {
    match s {
        Session::Cookie => vec!["cookie"],
        Session::SourceAddress => vec!["source-address"],
        Session::None => vec![],
    }
}

/// Renders one tenant of one cluster from its tickets (already filtered to those to render)
/// and the rules of those tickets.
pub fn render(cluster: &str, tenant: &str, tickets: &[TicketInput], rules: &[RuleInput]) -> Result<Rendered, Fault> {
    if !names::is_legal(tenant) || ADC_KEYS.contains(&tenant) {
        return Err(Fault {
            origin: None,
            message: format!("{tenant:?} cannot be an AS3 tenant name; set a partition on the load balancer"),
        });
    }
    let mut out = Rendered {
        cluster: cluster.to_string(),
        tenant: tenant.to_string(),
        adc: String::new(),
        services: FxHashMap::default(),
        namespaces: BTreeSet::new(),
        origins: Origins::default(),
        skipped: Vec::new(),
    };
    let mut apps: BTreeMap<String, Application> = BTreeMap::new();
    // Rules by (ticket, listener); those left after placing every listener are skipped.
    let mut rules_of: FxHashMap<(&str, &str), Vec<(&str, &LbruleSpec)>> = FxHashMap::default();
    for r in rules {
        rules_of.entry((r.spec.lbticket.as_str(), r.spec.listener.as_str())).or_default().push((r.name, r.spec));
    }
    // (namespace, Service) → (app, pool, first user as (ticket, listener, rule)): CIS labels a
    // Service for one pool.
    type User<'r> = (&'r str, &'r str, Option<&'r str>);
    let mut pool_of_service: FxHashMap<(&str, &str), (String, String, User)> = FxHashMap::default();
    let mut sorted: Vec<&TicketInput> = tickets.iter().collect();
    sorted.sort_by_key(|t| t.name);
    for ticket in sorted {
        let ns = &ticket.spec.namespace;
        for listener in &ticket.spec.listeners {
            let origin = Origin { ticket: ticket.name.to_string(), listener: listener.name.clone(), rule: None };
            let app = names::application(ns, listener.protocol);
            let vs = names::virtual_server(ticket.name, listener.port);
            let irule_name = names::irule(&vs);
            let own_rules = rules_of.remove(&(ticket.name, listener.name.as_str())).unwrap_or_default();
            let own_rules = own_rules.as_slice();
            if !apps.contains_key(&app) {
                apps.insert(
                    app.clone(),
                    Application { class: "Application", template: "generic", items: BTreeMap::new() },
                );
            }
            let Some(Application { items, .. }) = apps.get_mut(&app) else {
                continue;
            };
            // Backends of the listener, then of its rules: (backend, rule it comes from).
            let backends =
                listener.services.iter().map(|s| (s, None)).chain(
                    own_rules.iter().flat_map(|(name, rule)| rule.services.iter().map(move |s| (s, Some(*name)))),
                );
            for (backend, rule) in backends {
                let pool = names::pool(&backend.service, backend.port);
                match pool_of_service.get(&(ns.as_str(), backend.service.as_str())) {
                    Some((other_app, other_pool, (t, l, r))) if *other_app != app || *other_pool != pool => {
                        let first =
                            Origin { ticket: t.to_string(), listener: l.to_string(), rule: r.map(str::to_string) };
                        return Err(Fault {
                            origin: Some(Origin { rule: rule.map(str::to_string), ..origin.clone() }),
                            message: format!(
                                "Service {} of namespace {ns} would back pool {other_app}/{other_pool} ({first}) and pool {app}/{pool}; CIS puts a Service in one pool only",
                                backend.service
                            ),
                        });
                    }
                    Some(_) => continue,
                    None => {}
                }
                pool_of_service.insert(
                    (ns.as_str(), backend.service.as_str()),
                    (app.clone(), pool.clone(), (ticket.name, listener.name.as_str(), rule)),
                );
                items.entry(pool).or_insert_with(|| {
                    Item::Pool(Pool {
                        class: "Pool",
                        monitors: [monitor(listener.protocol)],
                        members: [Member { service_port: backend.port, server_addresses: [], share_nodes: true }],
                    })
                });
            }
            let prefix = format!("/{tenant}/{app}/");
            let full = |out: &mut String, s: &ServiceRef| {
                out.push_str(&prefix);
                names::push_pool(out, &s.service, s.port);
            };
            let https = listener.protocol == Protocol::Https;
            let default_pool = listener.services.iter().find(|s| s.weight > 0).or(listener.services.first());
            items.insert(
                vs.clone(),
                Item::Service(VirtualServer {
                    class: service_class(listener.protocol),
                    remark: remark(&origin),
                    virtual_addresses: [ticket.veip.to_string()],
                    virtual_port: listener.port,
                    persistence_methods: persistence(listener.session),
                    pool: default_pool.map(|s| names::pool(&s.service, s.port)).unwrap_or_default(),
                    irules: [irule_name.clone()],
                    redirect80: https.then_some(false),
                    server_tls: https.then_some(BigIp { bigip: "/Common/clientssl" }),
                    client_tls: https.then_some(BigIp { bigip: "/Common/serverssl" }),
                }),
            );
            items.insert(
                irule_name.clone(),
                Item::IRule(IRule { class: "iRule", text: irule::render(listener, own_rules, &full), expand: false }),
            );
            out.origins.insert(format!("{app}/{vs}"), origin);
            out.namespaces.insert(ns.clone());
        }
    }
    let mut left: Vec<(&str, &LbruleSpec)> = rules_of.into_values().flatten().collect();
    left.sort_by_key(|(name, _)| *name);
    for (name, rule) in left {
        out.skipped.push((
            name.to_string(),
            format!("listener {} of ticket {} is not on the load balancer", rule.listener, rule.lbticket),
        ));
    }
    out.services = pool_of_service
        .into_iter()
        .map(|((ns, service), (app, pool, _))| {
            ((ns.to_string(), service.to_string()), PoolLabels { tenant: tenant.to_string(), app, pool })
        })
        .collect();
    let listeners: usize = tickets.iter().map(|t| t.spec.listeners.len()).sum();
    let adc = Adc {
        class: "ADC",
        schema_version: SCHEMA_VERSION,
        id: format!("lbdesk-{cluster}-{tenant}"),
        label: "lbdesk",
        remark: "Generated by lbdesk; do not edit",
        tenant: [(tenant, Tenant { class: "Tenant", apps })].into_iter().collect(),
    };
    let mut bytes = Vec::with_capacity(1024 + 4096 * listeners);
    serde_json::to_writer(&mut bytes, &adc)
        .map_err(|e| Fault { origin: None, message: format!("could not serialise: {e}") })?;
    out.adc =
        String::from_utf8(bytes).map_err(|e| Fault { origin: None, message: format!("could not serialise: {e}") })?;
    Ok(out)
}

/// A remark naming the origin (AS3 remarks: at most 64 characters, no `"` or `\`).
fn remark(origin: &Origin) -> String {
    // NB: ticket, listener and rule names are Kubernetes names: ASCII, no quote or backslash.
    let mut text = format!("lbdesk {origin}");
    text.truncate(64);
    text
}

/// Whether a ticket's listeners belong on BIG-IP now: Enabled, Active, a listener address.
pub fn is_live(spec: &LbticketSpec, status: Option<&LbticketStatus>) -> bool {
    spec.lbtype == LbType::Listener
        && spec.state == DesiredState::Active
        && status.is_some_and(|s| s.phase == Phase::Enabled && s.veip.is_some())
}

/// Every (cluster, tenant) of the Loadbalancers, each with the live tickets and their rules.
/// A Loadbalancer without tickets still yields its tenant (written empty).
pub type Tenants<'a> = BTreeMap<(String, String), (Vec<TicketInput<'a>>, Vec<RuleInput<'a>>)>;

/// Groups objects by (cluster, tenant), as the reconciler and `lbdesk render` write them.
pub fn tenants<'a>(
    loadbalancers: &[(&'a str, &'a LoadbalancerSpec)],
    tickets: &[(&'a str, &'a LbticketSpec, Option<&'a LbticketStatus>)],
    rules: &[(&'a str, &'a LbruleSpec)],
) -> Tenants<'a> {
    let mut out: Tenants<'a> = BTreeMap::new();
    let mut tenant_of: FxHashMap<&str, (String, String)> = FxHashMap::default();
    for (name, lb) in loadbalancers {
        let key = (lb.cluster.clone(), effective_partition(lb).to_string());
        out.entry(key.clone()).or_default();
        tenant_of.insert(name, key);
    }
    // NB: called on every sync with every ticket: no copies, and only the tickets that rules
    // name are remembered.
    let ruled: FxHashSet<&str> = rules.iter().map(|(_, r)| r.lbticket.as_str()).collect();
    let mut live: FxHashMap<&str, &(String, String)> = FxHashMap::default();
    for (name, spec, status) in tickets {
        if let (true, Some(key)) = (is_live(spec, *status), tenant_of.get(spec.loadbalancer.as_str())) {
            let veip = status.and_then(|s| s.veip.as_deref()).unwrap_or_default();
            if let Some(entry) = out.get_mut(key) {
                entry.0.push(TicketInput { name, spec, veip });
            }
            if ruled.contains(name) {
                live.insert(name, key);
            }
        }
    }
    for (name, spec) in rules {
        if let Some(key) = live.get(spec.lbticket.as_str())
            && let Some(entry) = out.get_mut(key)
        {
            entry.1.push(RuleInput { name, spec });
        }
    }
    out
}

/// A digest of everything a tenant's declaration and its placement come from: equal digests
/// render equal declarations, so a sync can leave an unchanged tenant alone. The order of the
/// tickets and rules does not matter (caches list them in any order).
pub fn digest(
    cluster: &str,
    tenant: &str,
    loadbalancer: &LoadbalancerSpec,
    tickets: &[TicketInput<'_>],
    rules: &[RuleInput<'_>],
) -> u64 {
    let tickets = tickets.iter().fold(0u64, |sum, t| sum.wrapping_add(ticket_digest(t)));
    let rules = rules.iter().fold(0u64, |sum, r| sum.wrapping_add(stable_hash((r.name, r.spec))));
    stable_hash((cluster, tenant, loadbalancer, tickets, rules))
}

/// The part of one ticket in its tenant's `digest`: what changes its placement.
pub fn ticket_digest(ticket: &TicketInput<'_>) -> u64 {
    stable_hash((ticket.name, ticket.spec, ticket.veip))
}

/// A hash that is the same in every process, for digests.
// NB: foldhash's quality variant: as well distributed as SipHash for this purpose, several
// times faster over 10,000 tickets, and the same in every process.
pub fn stable_hash(item: impl Hash) -> u64 {
    foldhash::quality::FixedState::with_seed(0).hash_one(item)
}

#[cfg(test)]
mod tests;
