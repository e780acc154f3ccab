//! The Ingresses F5 CIS reads, one per F5 Ingress of every live ticket of lbtype `ingress`
//! (DESIGN §4.5): created, repaired and deleted so that a member cluster holds exactly what
//! the tickets ask for. lbdesk's Ingresses are those labelled `ebcpaas.io/lbticket`; no other
//! Ingress is ever read or written.

use std::collections::{BTreeMap, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use app::domain::cis_ingress;
use app::domain::crd::{F5Ingress, LABEL_LBTICKET, Lbticket, Loadbalancer};
use app::domain::policy::effective_partition;
use k8s_openapi::api::networking::v1::Ingress;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, ResourceExt};

use super::plan::Faults;
use super::{Context, Result, Step, Written};

/// The F5 Ingresses of one live ticket, and what their Ingresses are made from.
#[derive(Hash)]
struct Input<'a> {
    ticket: &'a str,
    namespace: &'a str,
    veip: &'a str,
    tenant: &'a str,
    ingresses: &'a [F5Ingress],
}

/// The live ingress tickets among `tickets` whose load balancer is one of `lbs`, oldest first:
/// a name two tickets want in one namespace stays with the one that had it first.
fn inputs<'a>(lbs: &'a [Arc<Loadbalancer>], tickets: &'a [Arc<Lbticket>]) -> Vec<Input<'a>> {
    let tenant_of: HashMap<&str, &str> =
        lbs.iter().map(|lb| (lb.metadata.name.as_deref().unwrap_or_default(), effective_partition(&lb.spec))).collect();
    let mut live: Vec<&Lbticket> =
        tickets.iter().map(|t| &**t).filter(|t| cis_ingress::is_live(&t.spec, t.status.as_ref())).collect();
    live.sort_by(|a, b| {
        (&a.metadata.creation_timestamp, &a.metadata.name).cmp(&(&b.metadata.creation_timestamp, &b.metadata.name))
    });
    live.into_iter()
        .filter_map(|t| {
            Some(Input {
                ticket: t.metadata.name.as_deref()?,
                namespace: &t.spec.namespace,
                veip: t.status.as_ref()?.veip.as_deref()?,
                tenant: tenant_of.get(t.spec.loadbalancer.as_str())?,
                ingresses: &t.spec.ingresses,
            })
        })
        .collect()
}

/// Everything the wanted Ingresses follow from (in-process only: the memo dies with it).
fn digest(class: &str, inputs: &[Input<'_>]) -> u64 {
    let mut hasher = DefaultHasher::new();
    (class, inputs).hash(&mut hasher);
    hasher.finish()
}

/// The Ingresses wanted, by (namespace, name), each with its ticket.
pub type Wanted = BTreeMap<(String, String), (String, Ingress)>;

/// The Ingresses wanted, and the tickets whose F5 Ingress's name an older ticket holds.
fn wanted(inputs: &[Input<'_>], class: &str) -> (Wanted, Faults) {
    let mut wanted = BTreeMap::new();
    let mut faults = Faults::new();
    for input in inputs {
        for f5 in input.ingresses {
            let key = (input.namespace.to_string(), f5.name.clone());
            if let Some((holder, _)) = wanted.get(&key) {
                let why = format!("F5 Ingress {}: {} in {} already has that name.", f5.name, holder, input.namespace);
                faults.entry(input.ticket.to_string()).or_insert(why);
                continue;
            }
            let ingress = cis_ingress::desired(input.ticket, input.namespace, f5, input.veip, input.tenant, class);
            wanted.insert(key, (input.ticket.to_string(), ingress));
        }
    }
    (wanted, faults)
}

/// The annotations lbdesk owns on its Ingresses: those CIS reads. Others' (a note, CIS's own
/// `status.virtual-server.f5.com/ip`) are kept, so no one fights over them.
fn owned(key: &str) -> bool {
    key == "kubernetes.io/ingress.class"
        || key.starts_with("virtual-server.f5.com/")
        || key.starts_with("ingress.kubernetes.io/")
}

/// Whether `have` is `want` as far as lbdesk owns it: the label, the CIS annotations, the spec.
fn matches(have: &Ingress, want: &Ingress) -> bool {
    let label = |i: &Ingress| i.labels().get(LABEL_LBTICKET).cloned();
    let annotations = |i: &Ingress| -> BTreeMap<String, String> {
        i.annotations().iter().filter(|(k, _)| owned(k)).map(|(k, v)| (k.clone(), v.clone())).collect()
    };
    label(have) == label(want) && annotations(have) == annotations(want) && have.spec == want.spec
}

/// `have` made `want` (what lbdesk owns), keeping everything else, its version included.
fn repaired(mut have: Ingress, want: &Ingress) -> Ingress {
    have.labels_mut().extend(want.labels().clone());
    let annotations = have.annotations_mut();
    annotations.retain(|k, _| !owned(k));
    annotations.extend(want.annotations().clone());
    have.spec = want.spec.clone();
    have
}

/// Why a write the API refused for good will not be retried until something changes: the
/// name is another's, the namespace is missing, the object is invalid. `None`: retry.
fn refused(error: &kube::Error, name: &str, namespace: &str) -> Option<String> {
    let kube::Error::Api(status) = error else { return None };
    if status.is_already_exists() {
        return Some(format!("F5 Ingress {name}: {namespace} has an Ingress of that name that is not lbdesk's."));
    }
    (status.is_not_found() || status.is_invalid() || status.code == 400)
        .then(|| format!("F5 Ingress {name}: the member cluster refused it: {}", status.message))
}

/// The Ingresses a member cluster must hold, planned without I/O.
#[derive(Debug, Default)]
pub struct Planned {
    pub wanted: Wanted,
    /// The tickets whose F5 Ingress's name an older ticket holds.
    pub faults: Faults,
    /// Everything the wanted Ingresses follow from.
    digest: u64,
}

/// The Ingresses the live ingress tickets among `tickets` (on `lbs`, one cluster's) ask for,
/// for a CIS watching `class`.
pub fn planned(lbs: &[Arc<Loadbalancer>], tickets: &[Arc<Lbticket>], class: &str) -> Planned {
    let inputs = inputs(lbs, tickets);
    let (wanted, faults) = wanted(&inputs, class);
    Planned { wanted, faults, digest: digest(class, &inputs) }
}

/// Brings the Ingresses of `client`'s cluster to `planned`, and returns the tickets whose F5
/// Ingresses the cluster refused, with why. Skipped when nothing they follow from changed since
/// the last successful sync, unless `ensure` asks for every one to be read back and repaired.
pub async fn apply(
    ctx: &Context,
    client: &kube::Client,
    cluster: &str,
    planned: &Planned,
    ensure: bool,
) -> Result<Faults> {
    // NB: taken out while the sync runs: one that fails half-way leaves none, so the next
    // does everything again.
    let last = ctx.ingresses.lock().unwrap_or_else(|p| p.into_inner()).remove(cluster);
    let written = match last.filter(|last| last.digest == planned.digest && !ensure) {
        Some(last) => last,
        None => Written { digest: planned.digest, faults: write(client, &planned.wanted).await? },
    };
    let faults = written.faults.clone();
    ctx.ingresses.lock().unwrap_or_else(|p| p.into_inner()).insert(cluster.to_string(), written);
    Ok(faults)
}

/// Reads lbdesk's Ingresses back and writes the difference: deletes the unwanted, replaces
/// (compare-and-swap on the version read) the differing, creates the missing; returns the
/// tickets whose Ingresses the cluster refused for good, with why.
async fn write(client: &kube::Client, wanted: &Wanted) -> Result<Faults> {
    let mut faults = Faults::new();
    let all: Api<Ingress> = Api::all(client.clone());
    let ours = all.list(&ListParams::default().labels(LABEL_LBTICKET)).await?.items;
    let mut current = BTreeMap::new();
    for have in ours {
        let (namespace, name) = (have.namespace().unwrap_or_default(), have.name_any());
        let api: Api<Ingress> = Api::namespaced(client.clone(), &namespace);
        if wanted.contains_key(&(namespace.clone(), name.clone())) {
            current.insert((namespace, name), have);
            continue;
        }
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => tracing::info!(%namespace, ingress = %name, "Ingress withdrawn"),
            Err(kube::Error::Api(e)) if e.is_not_found() => {}
            Err(e) => return Err(e.into()),
        }
        super::crash::point(Step::IngressWrite).await;
    }
    for ((namespace, name), (ticket, want)) in wanted {
        let api: Api<Ingress> = Api::namespaced(client.clone(), namespace);
        let result = match current.remove(&(namespace.clone(), name.clone())) {
            Some(have) if matches(&have, want) => continue,
            Some(have) => api.replace(name, &PostParams::default(), &repaired(have, want)).await,
            None => api.create(&PostParams::default(), want).await,
        };
        match result {
            Ok(_) => tracing::info!(%namespace, ingress = %name, %ticket, "Ingress written"),
            Err(e) => match refused(&e, name, namespace) {
                Some(why) => {
                    tracing::warn!(%namespace, ingress = %name, %ticket, reason = %why, "Ingress refused");
                    faults.entry(ticket.clone()).or_insert(why);
                    continue;
                }
                None => return Err(e.into()),
            },
        }
        super::crash::point(Step::IngressWrite).await;
    }
    Ok(faults)
}

#[cfg(test)]
mod tests {
    use app::domain::crd::{DesiredState, IngressRule, LbType, LbticketSpec, LbticketStatus, LoadbalancerSpec, Phase};

    use super::*;

    fn shop(name: &str) -> F5Ingress {
        let route = IngressRule { host: None, path: "/".into(), service: "web".into(), port: 8080 };
        F5Ingress { name: name.into(), rules: vec![route], tls_secret: None }
    }

    fn ticket(name: &str, age: i64, state: DesiredState, phase: Phase, ingresses: &[&str]) -> Arc<Lbticket> {
        let spec = LbticketSpec {
            loadbalancer: "demo".into(),
            namespace: "team-a".into(),
            lbtype: LbType::Ingress,
            state,
            ingresses: ingresses.iter().map(|n| shop(n)).collect(),
            ..Default::default()
        };
        let mut t = Lbticket::new(name, spec);
        let at = k8s_openapi::jiff::Timestamp::from_second(1_700_000_000 + age).expect("a time");
        t.metadata.creation_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(at));
        t.status = Some(LbticketStatus { phase, veip: Some("20.1.0.7".into()), ..Default::default() });
        Arc::new(t)
    }

    fn lb() -> Arc<Loadbalancer> {
        let spec =
            LoadbalancerSpec { cluster: "acp-region01".into(), partition: Some("shared".into()), ..Default::default() };
        Arc::new(Loadbalancer::new("demo", spec))
    }

    #[test]
    fn only_live_ingress_tickets_want_ingresses_and_an_older_ticket_keeps_its_name() {
        let lbs = [lb()];
        let tickets = [
            ticket("newer", 2, DesiredState::Active, Phase::Enabled, &["shop", "cart"]),
            ticket("older", 1, DesiredState::Active, Phase::Enabled, &["shop"]),
            ticket("disabled", 0, DesiredState::Disabled, Phase::Disabled, &["off"]),
            ticket("pending", 0, DesiredState::Active, Phase::Requested, &["early"]),
        ];
        let inputs = inputs(&lbs, &tickets);
        let (wanted, faults) = wanted(&inputs, "f5");
        let keys: Vec<(&str, &str)> = wanted.keys().map(|(ns, n)| (ns.as_str(), n.as_str())).collect();
        assert_eq!(keys, [("team-a", "cart"), ("team-a", "shop")]);
        assert_eq!(wanted[&("team-a".into(), "shop".into())].0, "older");
        assert!(faults.get("newer").is_some_and(|f| f.contains("older")), "{faults:?}");
        let cart = &wanted[&("team-a".into(), "cart".into())].1;
        assert_eq!(
            cart.annotations().get("virtual-server.f5.com/partition").map(String::as_str),
            Some("shared_ingress")
        );
        assert_ne!(digest("f5", &inputs), digest("bigip", &inputs), "the class is an input");
    }

    #[tokio::test]
    async fn the_write_deletes_the_unwanted_repairs_the_differing_and_reports_a_name_taken() {
        use super::super::fixtures::{Call, Scenario};
        use http::Method;
        const LIST: &str = "/apis/networking.k8s.io/v1/ingresses?&labelSelector=ebcpaas.io%2Flbticket";
        const OLD: &str = "/apis/networking.k8s.io/v1/namespaces/team-a/ingresses/old?";
        const SHOP: &str = "/apis/networking.k8s.io/v1/namespaces/team-a/ingresses/shop?";
        const CREATE: &str = "/apis/networking.k8s.io/v1/namespaces/team-a/ingresses?";
        let lbs = [lb()];
        let tickets = [ticket("pay", 1, DesiredState::Active, Phase::Enabled, &["shop"])];
        let planned = planned(&lbs, &tickets, "f5");
        let want = planned.wanted[&("team-a".into(), "shop".into())].1.clone();
        let json = |i: &Ingress| serde_json::to_value(i).unwrap_or_default();
        let list = |items: Vec<Ingress>| serde_json::json!({"apiVersion": "networking.k8s.io/v1", "kind": "IngressList", "metadata": {}, "items": items});
        let mut edited = want.clone();
        edited.metadata.resource_version = Some("7".into());
        edited.annotations_mut().insert("virtual-server.f5.com/ip".into(), "1.2.3.4".into());
        let mut old = cis_ingress::desired("gone", "team-a", &shop("old"), "20.1.0.9", "shared", "f5");
        old.metadata.resource_version = Some("3".into());
        let taken = serde_json::json!({"kind": "Status", "code": 409, "reason": "AlreadyExists", "message": "ingresses \"shop\" already exists"});

        // (what, the calls expected in order, the fault the ticket is told)
        let rows: Vec<(&str, Vec<Call>, Option<&str>)> = vec![
            (
                "converged: read back, nothing written",
                vec![Call::new(Method::GET, LIST, 200, list(vec![want.clone()]))],
                None,
            ),
            (
                "one unwanted and one hand-edited: deleted, then replaced on the version read",
                vec![
                    Call::new(Method::GET, LIST, 200, list(vec![old.clone(), edited.clone()])),
                    Call::new(Method::DELETE, OLD, 200, json(&old)),
                    Call::new(Method::PUT, SHOP, 200, json(&want)),
                ],
                None,
            ),
            (
                "missing, its name another's: the ticket is told, nothing retried",
                vec![Call::new(Method::GET, LIST, 200, list(vec![])), Call::new(Method::POST, CREATE, 409, taken)],
                Some("has an Ingress of that name that is not lbdesk's"),
            ),
        ];
        for (what, calls, fault) in rows {
            let (client, scenario) = Scenario::client(calls);
            let (result, bodies) = scenario.run(write(&client, &planned.wanted)).await;
            let faults = result.unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(
                faults.get("pay").is_some_and(|f| fault.is_some_and(|want| f.contains(want))),
                fault.is_some(),
                "{what}: {faults:?}"
            );
            for body in bodies.iter().filter(|b| b["kind"] == "Ingress") {
                assert_eq!(body["metadata"]["annotations"]["virtual-server.f5.com/ip"], "20.1.0.7", "{what}: {body}");
                if body["metadata"]["resourceVersion"].is_string() {
                    assert_eq!(body["metadata"]["resourceVersion"], "7", "{what}: a compare-and-swap");
                }
            }
        }
    }

    #[test]
    fn a_repair_restores_what_lbdesk_owns_and_keeps_the_rest() {
        let want = cis_ingress::desired("pay", "team-a", &shop("shop"), "20.1.0.7", "shared", "f5");
        let mut have = want.clone();
        have.metadata.resource_version = Some("42".into());
        have.annotations_mut().insert("status.virtual-server.f5.com/ip".into(), "20.1.0.7".into());
        have.annotations_mut().insert("note".into(), "kept".into());
        have.labels_mut().insert("team".into(), "a".into());
        assert!(matches(&have, &want), "others' annotations and labels are not lbdesk's to judge");
        have.annotations_mut().insert("virtual-server.f5.com/ip".into(), "1.2.3.4".into());
        have.annotations_mut().insert("virtual-server.f5.com/waf".into(), "/Common/x".into());
        assert!(!matches(&have, &want), "a hand edit of a CIS annotation");
        let fixed = repaired(have, &want);
        assert!(matches(&fixed, &want));
        assert!(!fixed.annotations().contains_key("virtual-server.f5.com/waf"));
        assert_eq!(fixed.annotations().get("note").map(String::as_str), Some("kept"));
        assert_eq!(fixed.labels().get("team").map(String::as_str), Some("a"));
        assert_eq!(fixed.metadata.resource_version.as_deref(), Some("42"), "a compare-and-swap");
    }
}
