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

/// The labels placed tenants ask for.
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
pub(super) fn differing<K: Ord + Clone, V: PartialEq>(a: &BTreeMap<K, V>, b: &BTreeMap<K, V>) -> BTreeSet<K> {
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

/// Namespaces get the nsselector labels of the Loadbalancers with listeners in them, and lose
/// the ones lbdesk set that are no longer wanted.
pub(super) async fn label_namespaces(
    client: &kube::Client,
    wanted: &Labels,
    only: Option<BTreeSet<String>>,
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
        for k in managed.iter().filter(|k| !want.contains_key(*k)) {
            patch_labels.insert(k.clone(), Value::Null);
        }
        // NB: lbdesk owns only the keys it set: one already there with the wanted value is
        // someone else's, and stays when lbdesk no longer needs it.
        let keys: Vec<&str> = want
            .iter()
            .filter(|(k, v)| managed.contains(*k) || labels.get(*k) != Some(*v))
            .map(|(k, _)| k.as_str())
            .collect();
        let annotation = keys.join(",");
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

/// Services in pools get the CIS labels; Services lbdesk labelled lose them when no longer in
/// a pool (except those of a tenant whose declaration is blocked: its last good one stays).
pub(super) async fn label_services(
    client: &kube::Client,
    wanted: &Labels,
    only: Option<BTreeSet<(String, String)>>,
) -> Result<()> {
    let named = only.map(|names| {
        names.into_iter().map(|(ns, name)| (Api::<Service>::namespaced(client.clone(), &ns), name)).collect()
    });
    let blocked = &wanted.blocked;
    for svc in every_or_named(&Api::all(client.clone()), named).await? {
        let (ns, name) = (svc.namespace().unwrap_or_default(), svc.name_any());
        let labels = svc.labels();
        let mut patch_labels = serde_json::Map::new();
        match wanted.services.get(&(ns.clone(), name.clone())) {
            Some(want) => {
                for (k, v) in want {
                    if labels.get(k) != Some(v) {
                        patch_labels.insert(k.clone(), json!(v));
                    }
                }
            }
            None if labels.contains_key(CIS_MARK) && !labels.get(CIS_TENANT).is_some_and(|t| blocked.contains(t)) => {
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
}
