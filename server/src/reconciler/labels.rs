//! The labels a member cluster's CIS reads, following what the tenants placed: the
//! nsselector labels on namespaces with listeners, the CIS discovery labels on Services in
//! pools. lbdesk removes only the labels it set.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use app::domain::as3::placement::{CIS_MARK, CIS_TENANT, SERVICE_LABEL_KEYS};
use k8s_openapi::api::core::v1::{Namespace, Service};
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use super::plan::Placed;
use super::{Result, Step};

/// Annotation listing the namespace label keys lbdesk set (so it removes only its own).
const MANAGED_LABELS: &str = "ebcpaas.io/managed-labels";

/// Which labels a pass writes. NB: CIS looks for a pool's members by the Service labels when
/// it reads the declaration, and reads a ConfigMap only in a namespace it watches: so the
/// labels tenants come to want go on before their ConfigMaps are written (else CIS posts a new
/// pool empty, and BIG-IP serves it so until the labels follow), and the labels no longer
/// wanted come off after (else a withdrawn pool empties before it goes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Pass {
    /// Sets what is wanted, removes nothing.
    Add,
    /// Sets what is wanted and removes what lbdesk set that is not.
    Settle,
}

/// Brings namespaces and Services to the labels `wanted`, in `pass`. `since`: the labels of
/// the last sync, so that only the objects whose labels differ are read (none: every namespace
/// and Service is read back); `added`: what an `Add` pass before this one set, so that a
/// `Settle` does not read again what it already brought to `wanted`.
pub(super) async fn apply(
    client: &kube::Client,
    wanted: &Labels,
    since: Option<&Labels>,
    added: Option<&Labels>,
    pass: Pass,
) -> Result<()> {
    let namespaces = since.map(|s| visit(&s.namespaces, &wanted.namespaces, added.map(|a| &a.namespaces), pass));
    label_namespaces(client, wanted, namespaces, pass).await?;
    let services = since.map(|s| visit(&s.services, &wanted.services, added.map(|a| &a.services), pass));
    // NB: a blocked tenant's Services keep their labels, for its last good declaration. Those an
    // `Add` labelled for a declaration then refused are not its last good one's, when the last
    // sync's labels are known (`since`): they come off.
    let undo = match (since, added) {
        (Some(_), Some(a)) => a.services.keys().filter(|k| !wanted.services.contains_key(*k)).cloned().collect(),
        _ => BTreeSet::new(),
    };
    label_services(client, wanted, services, pass, &undo).await
}

/// The objects a pass reads: an `Add` those that gain or change labels since the last sync; a
/// `Settle` those whose labels differ from the last sync's or from what the `Add` set (a tenant
/// held back after it keeps its last labels), but not those the `Add` already set right.
fn visit<K: Ord + Clone, V: PartialEq>(
    since: &BTreeMap<K, V>,
    wanted: &BTreeMap<K, V>,
    added: Option<&BTreeMap<K, V>>,
    pass: Pass,
) -> BTreeSet<K> {
    let mut keys = differing(since, wanted);
    match pass {
        Pass::Add => keys.retain(|k| wanted.contains_key(k)),
        Pass::Settle => {
            keys.extend(added.into_iter().flat_map(|a| a.keys().cloned()));
            let added = |k: &K| added.and_then(|a| a.get(k));
            keys.retain(|k| wanted.get(k).is_none() || added(k) != wanted.get(k));
        }
    }
    keys
}

/// The labels placed tenants ask for.
#[derive(Default)]
pub(super) struct Labels {
    /// Per namespace, per label key, the values the load balancers placing there want. NB:
    /// load balancers of one cluster whose selectors give one key two values conflict (their
    /// cluster's one CIS watches one of them, and `CisReady` says so of the other).
    pub(super) namespaces: BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
    pub(super) services: BTreeMap<(String, String), BTreeMap<String, String>>,
    /// Tenants whose declaration is refused: their Services keep the labels they have.
    blocked: BTreeSet<String>,
}

impl Labels {
    pub(super) fn of(placed: &HashMap<String, Placed>) -> Labels {
        let mut labels = Labels { namespaces: BTreeMap::new(), services: BTreeMap::new(), blocked: BTreeSet::new() };
        for (tenant, p) in placed {
            if p.blocked {
                labels.blocked.insert(tenant.clone());
            }
            for (ns, wanted) in &p.namespaces {
                let keys = labels.namespaces.entry(ns.clone()).or_default();
                for (k, v) in wanted {
                    keys.entry(k.clone()).or_default().insert(v.clone());
                }
            }
            labels.services.extend(p.services.clone());
        }
        labels
    }
}

/// The labels a namespace gets from the values wanted for each key: the one it carries when that
/// is among them, else the first. NB: so two load balancers wanting one key two ways never
/// make the label flip between syncs (each flip would have the cluster's CIS drop, then take
/// up again, every ConfigMap of that namespace).
fn settled(
    wanted: Option<&BTreeMap<String, BTreeSet<String>>>,
    current: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (key, values) in wanted.into_iter().flatten() {
        let value = current.get(key).filter(|v| values.contains(*v)).or_else(|| values.first());
        if values.len() > 1 {
            tracing::warn!(key = %key, values = ?values, kept = ?value, "load balancers of one cluster want one namespace label two ways");
        }
        out.extend(value.map(|v| (key.clone(), v.clone())));
    }
    out
}

/// The keys whose values differ between two maps (added, changed or gone).
fn differing<K: Ord + Clone, V: PartialEq>(a: &BTreeMap<K, V>, b: &BTreeMap<K, V>) -> BTreeSet<K> {
    let one_way = |x: &BTreeMap<K, V>, y: &BTreeMap<K, V>| -> Vec<K> {
        x.iter().filter(|(k, v)| y.get(*k) != Some(*v)).map(|(k, _)| k.clone()).collect()
    };
    one_way(a, b).into_iter().chain(one_way(b, a)).collect()
}

/// Every object of `all`, or only those `named` (each by the API it lives in) that exist.
async fn every_or_named<K>(all: &Api<K>, named: Option<Vec<(Api<K>, String)>>) -> Result<Vec<K>>
where
    K: Clone + std::fmt::Debug + serde::de::DeserializeOwned,
{
    let Some(named) = named else { return Ok(all.list(&ListParams::default()).await?.items) };
    let mut found = Vec::new();
    for (api, name) in named {
        found.extend(api.get_opt(&name).await?);
    }
    Ok(found)
}

/// Namespaces get the nsselector labels of the Loadbalancers with listeners in them, and (in a
/// `Settle`) lose the ones lbdesk set that are no longer wanted.
async fn label_namespaces(
    client: &kube::Client,
    wanted: &Labels,
    only: Option<BTreeSet<String>>,
    pass: Pass,
) -> Result<()> {
    let api: Api<Namespace> = Api::all(client.clone());
    let named = only.map(|names| names.into_iter().map(|name| (api.clone(), name)).collect());
    for ns in every_or_named(&api, named).await? {
        let name = ns.name_any();
        let labels = ns.labels();
        let want = settled(wanted.namespaces.get(&name), labels);
        let managed: BTreeSet<String> = ns
            .annotations()
            .get(MANAGED_LABELS)
            .map(|v| v.split(',').filter(|k| !k.is_empty()).map(String::from).collect())
            .unwrap_or_default();
        let mut patch_labels = serde_json::Map::new();
        for (k, v) in &want {
            if labels.get(k) != Some(v) {
                patch_labels.insert(k.clone(), json!(v));
            }
        }
        // NB: lbdesk owns only the keys it set: one already there with the wanted value is
        // someone else's, and stays when lbdesk no longer needs it.
        let mut keys: BTreeSet<&str> = want
            .iter()
            .filter(|(k, v)| managed.contains(*k) || labels.get(*k) != Some(*v))
            .map(|(k, _)| k.as_str())
            .collect();
        for k in managed.iter().filter(|k| !want.contains_key(*k)) {
            match pass {
                Pass::Add => _ = keys.insert(k),
                Pass::Settle => _ = patch_labels.insert(k.clone(), Value::Null),
            }
        }
        let annotation = keys.into_iter().collect::<Vec<_>>().join(",");
        let annotation_differs = ns.annotations().get(MANAGED_LABELS).map(String::as_str).unwrap_or("") != annotation;
        if patch_labels.is_empty() && !annotation_differs {
            continue;
        }
        let annotation = if annotation.is_empty() { Value::Null } else { json!(annotation) };
        let patch = json!({"metadata": {"labels": patch_labels, "annotations": {MANAGED_LABELS: annotation}}});
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
        super::crash::point(Step::LabelWrite).await;
    }
    Ok(())
}

/// Services in pools get the CIS labels; in a `Settle`, Services lbdesk labelled lose them when
/// no longer in a pool (except those of a tenant whose declaration is blocked: its last good
/// one stays; but those `undo` names lose them all the same).
async fn label_services(
    client: &kube::Client,
    wanted: &Labels,
    only: Option<BTreeSet<(String, String)>>,
    pass: Pass,
    undo: &BTreeSet<(String, String)>,
) -> Result<()> {
    let named = only.map(|names| {
        names.into_iter().map(|(ns, name)| (Api::<Service>::namespaced(client.clone(), &ns), name)).collect()
    });
    let blocked = &wanted.blocked;
    for svc in every_or_named(&Api::all(client.clone()), named).await? {
        let (ns, name) = (svc.namespace().unwrap_or_default(), svc.name_any());
        let labels = svc.labels();
        let mut patch_labels = serde_json::Map::new();
        let key = (ns.clone(), name.clone());
        match wanted.services.get(&key) {
            Some(want) => {
                for (k, v) in want {
                    if labels.get(k) != Some(v) {
                        patch_labels.insert(k.clone(), json!(v));
                    }
                }
            }
            None if pass == Pass::Settle
                && labels.contains_key(CIS_MARK)
                && (undo.contains(&key) || !labels.get(CIS_TENANT).is_some_and(|t| blocked.contains(t))) =>
            {
                for k in SERVICE_LABEL_KEYS {
                    patch_labels.insert(k.to_string(), Value::Null);
                }
            }
            None => {}
        }
        if patch_labels.is_empty() {
            continue;
        }
        let services: Api<Service> = Api::namespaced(client.clone(), &ns);
        services
            .patch(&name, &PatchParams::default(), &Patch::Merge(&json!({"metadata": {"labels": patch_labels}})))
            .await?;
        super::crash::point(Step::LabelWrite).await;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_wanted_two_ways_keeps_the_value_it_has() {
        let wanted: BTreeMap<String, BTreeSet<String>> = BTreeMap::from([
            ("cis".to_string(), BTreeSet::from(["pairs".to_string(), "shared".to_string()])),
            ("zone".to_string(), BTreeSet::from(["f5".to_string()])),
        ]);
        let has = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let kept = settled(Some(&wanted), &has(&[("cis", "shared")]));
        assert_eq!(kept, has(&[("cis", "shared"), ("zone", "f5")]), "the current value stays");
        let first = settled(Some(&wanted), &has(&[("cis", "other")]));
        assert_eq!(first, has(&[("cis", "pairs"), ("zone", "f5")]), "else the first, the same every time");
        assert!(settled(None, &has(&[("cis", "shared")])).is_empty());
    }

    #[test]
    fn differing_keys_are_the_added_changed_and_gone() {
        let a = BTreeMap::from([("kept", 1), ("changed", 1), ("gone", 1)]);
        let b = BTreeMap::from([("kept", 1), ("changed", 2), ("added", 1)]);
        assert_eq!(differing(&a, &b), BTreeSet::from(["added", "changed", "gone"]));
        assert!(differing(&a, &a).is_empty());
    }

    /// What two tenants placed: `t1` wants `zone=f5` on team-a and Service team-a/web in a
    /// pool; `t2` is held back (its declaration refused).
    fn wanted() -> Labels {
        let pool =
            BTreeMap::from([(CIS_TENANT.to_string(), "t1".to_string()), (CIS_MARK.to_string(), "true".to_string())]);
        let t1 = Placed {
            namespaces: BTreeMap::from([("team-a".into(), BTreeMap::from([("zone".into(), "f5".into())]))]),
            services: BTreeMap::from([(("team-a".into(), "web".into()), pool)]),
            ..Default::default()
        };
        let t2 = Placed { blocked: true, ..Default::default() };
        Labels::of(&HashMap::from([("t1".to_string(), t1), ("t2".to_string(), t2)]))
    }

    /// An object as the mocked API lists it: `kind` named `name` (in `ns`), with `labels` and
    /// the managed-labels annotation `managed`.
    fn object(kind: &str, ns: Option<&str>, name: &str, labels: &[(&str, &str)], managed: Option<&str>) -> Value {
        let labels: serde_json::Map<String, Value> = labels.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
        let annotations: serde_json::Map<String, Value> =
            managed.map(|m| (MANAGED_LABELS.to_string(), json!(m))).into_iter().collect();
        json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": ns, "resourceVersion": "5", "labels": labels, "annotations": annotations}})
    }

    fn list(kind: &str, items: Vec<Value>) -> Value {
        json!({"apiVersion": "v1", "kind": format!("{kind}List"), "metadata": {}, "items": items})
    }

    #[tokio::test]
    async fn namespaces_get_the_labels_wanted_and_lose_only_those_lbdesk_set() {
        use super::super::fixtures::{Call, Scenario};
        use http::Method;
        const LIST: &str = "/api/v1/namespaces?";
        const TEAM_A: &str = "/api/v1/namespaces/team-a?";
        const OLD: &str = "/api/v1/namespaces/old?";
        const READ_TEAM_A: &str = "/api/v1/namespaces/team-a";
        let ns = |name, labels: &[(&str, &str)], managed| object("Namespace", None, name, labels, managed);
        let zone = [("zone", "f5")];
        let every = || {
            let all = vec![
                ns("team-a", &[], None),
                ns("old", &zone, Some("zone")),
                ns("theirs", &zone, None),
                ns("plain", &[], None),
            ];
            Call::new(Method::GET, LIST, 200, list("Namespace", all))
        };
        // (what, the pass, which namespaces, the calls in order, the patches' bodies)
        type Row = (&'static str, Pass, Option<BTreeSet<String>>, Vec<Call>, Vec<Value>);
        let rows: Vec<Row> = vec![
            (
                "every namespace read: one wanted is labelled, one lbdesk labelled and no longer wanted is \
                 cleared, one already carrying the label (someone else's) is left as it is",
                Pass::Settle,
                None,
                vec![
                    every(),
                    Call::new(Method::PATCH, TEAM_A, 200, ns("team-a", &zone, Some("zone"))),
                    Call::new(Method::PATCH, OLD, 200, ns("old", &[], None)),
                ],
                vec![
                    json!({"metadata": {"labels": {"zone": "f5"}, "annotations": {MANAGED_LABELS: "zone"}}}),
                    json!({"metadata": {"labels": {"zone": null}, "annotations": {MANAGED_LABELS: null}}}),
                ],
            ),
            (
                "an Add before the ConfigMaps: the wanted is labelled, the one no longer wanted keeps its \
                 label and lbdesk's mark on it until the Settle after",
                Pass::Add,
                None,
                vec![every(), Call::new(Method::PATCH, TEAM_A, 200, ns("team-a", &zone, Some("zone")))],
                vec![json!({"metadata": {"labels": {"zone": "f5"}, "annotations": {MANAGED_LABELS: "zone"}}})],
            ),
            (
                "converged, only team-a concerned: read, nothing written",
                Pass::Settle,
                Some(BTreeSet::from(["team-a".to_string()])),
                vec![Call::new(Method::GET, READ_TEAM_A, 200, ns("team-a", &zone, Some("zone")))],
                vec![],
            ),
            (
                "only the namespaces named are read; a missing one is skipped",
                Pass::Settle,
                Some(BTreeSet::from(["old".to_string(), "team-a".to_string()])),
                vec![
                    Call::new(
                        Method::GET,
                        "/api/v1/namespaces/old",
                        404,
                        json!({"kind": "Status", "code": 404, "reason": "NotFound", "message": "not found"}),
                    ),
                    Call::new(Method::GET, READ_TEAM_A, 200, ns("team-a", &[], None)),
                    Call::new(Method::PATCH, TEAM_A, 200, ns("team-a", &zone, Some("zone"))),
                ],
                vec![json!({"metadata": {"labels": {"zone": "f5"}, "annotations": {MANAGED_LABELS: "zone"}}})],
            ),
        ];
        for (what, pass, only, calls, patches) in rows {
            let (client, scenario) = Scenario::client(calls);
            let (result, bodies) = scenario.run(label_namespaces(&client, &wanted(), only, pass)).await;
            result.unwrap_or_else(|e| panic!("{what}: {e}"));
            let sent: Vec<&Value> = bodies.iter().filter(|b| !b.is_null()).collect();
            assert_eq!(sent, patches.iter().collect::<Vec<_>>(), "{what}");
        }
    }

    #[tokio::test]
    async fn services_in_pools_get_the_cis_labels_and_lose_them_unless_their_tenant_is_held_back() {
        use super::super::fixtures::{Call, Scenario};
        use http::Method;
        const LIST: &str = "/api/v1/services?";
        let svc = |name, labels: &[(&str, &str)]| object("Service", Some("team-a"), name, labels, None);
        let every = || {
            let all = vec![
                svc("web", &[]),
                svc("left", &[(CIS_MARK, "true"), (CIS_TENANT, "t1")]),
                svc("held", &[(CIS_MARK, "true"), (CIS_TENANT, "t2")]),
                svc("theirs", &[(CIS_TENANT, "t9")]),
            ];
            Call::new(Method::GET, LIST, 200, list("Service", all))
        };
        const WEB: &str = "/api/v1/namespaces/team-a/services/web?";
        let calls = vec![
            every(),
            Call::new(Method::PATCH, WEB, 200, svc("web", &[])),
            Call::new(Method::PATCH, "/api/v1/namespaces/team-a/services/left?", 200, svc("left", &[])),
        ];
        let (client, scenario) = Scenario::client(calls);
        let (result, bodies) =
            scenario.run(label_services(&client, &wanted(), None, Pass::Settle, &BTreeSet::new())).await;
        result.expect("labelled");
        let sent: Vec<&Value> = bodies.iter().filter(|b| !b.is_null()).collect();
        let gone: serde_json::Map<String, Value> =
            SERVICE_LABEL_KEYS.iter().map(|k| (k.to_string(), Value::Null)).collect();
        let labelled = json!({"metadata": {"labels": {CIS_TENANT: "t1", CIS_MARK: "true"}}});
        assert_eq!(
            sent,
            [&labelled, &json!({"metadata": {"labels": gone}})],
            "in a pool: labelled; left the pools: every label lbdesk sets removed; a held-back tenant's and \
             labels lbdesk did not set: left alone"
        );

        // An Add, before the ConfigMaps: labelled, and nothing removed yet.
        let (client, scenario) = Scenario::client(vec![every(), Call::new(Method::PATCH, WEB, 200, svc("web", &[]))]);
        let (result, bodies) =
            scenario.run(label_services(&client, &wanted(), None, Pass::Add, &BTreeSet::new())).await;
        result.expect("labelled");
        assert_eq!(bodies.iter().filter(|b| !b.is_null()).collect::<Vec<_>>(), [&labelled]);
    }

    #[test]
    fn a_pass_reads_only_what_it_may_change() {
        let map = |pairs: &[(&'static str, u8)]| pairs.iter().copied().collect::<BTreeMap<_, _>>();
        let since = map(&[("kept", 1), ("moved", 1), ("left", 1)]);
        let planned = map(&[("kept", 1), ("moved", 2), ("new", 1)]);
        // (what, the pass, the labels wanted, what the Add set, the objects read)
        type Row<'a> = (&'a str, Pass, &'a BTreeMap<&'a str, u8>, Option<&'a BTreeMap<&'a str, u8>>, &'a [&'a str]);
        let rows: [Row; 4] = [
            ("an Add: those gaining or changing labels", Pass::Add, &planned, None, &["moved", "new"]),
            ("a Settle alone: every difference", Pass::Settle, &planned, None, &["left", "moved", "new"]),
            ("a Settle after the Add set them: what is left", Pass::Settle, &planned, Some(&planned), &["left"]),
            (
                "a Settle after the tenant was held back (its last labels stay): what the Add set, back",
                Pass::Settle,
                &since,
                Some(&planned),
                &["moved", "new"],
            ),
        ];
        for (what, pass, wanted, added, read) in rows {
            assert_eq!(visit(&since, wanted, added, pass).into_iter().collect::<Vec<_>>(), read, "{what}");
        }
    }
}
