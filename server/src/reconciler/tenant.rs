//! What a member cluster must hold for its Loadbalancers: one AS3 ConfigMap per tenant
//! (validated before writing, written only when its bytes change), the nsselector labels on
//! namespaces with listeners, the CIS discovery labels on Services in pools. Computed as a
//! whole from the current objects, so a sync is idempotent and repairs any drift.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use app::domain::as3::{self, validate::validate};
use app::domain::crd::{Lbrule, Lbticket, Loadbalancer};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Service};
use kube::api::{ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use super::status::set_condition;
use super::{Context, Error, Result, Step};

/// Annotation listing the namespace label keys lbdesk set (so it removes only its own).
const MANAGED_LABELS: &str = "ebcpaas.io/managed-labels";
/// Label marking the Services lbdesk labelled for CIS.
const CIS_MARK: &str = "ebcpaas.io/cis-labels";
const CIS_KEYS: [&str; 3] = ["cis.f5.com/as3-tenant", "cis.f5.com/as3-app", "cis.f5.com/as3-pool"];

/// The name of a tenant's ConfigMap: DNS-safe, and unique (a hash is added when the tenant
/// name had to change to fit).
pub fn configmap_name(tenant: &str) -> String {
    let safe: String = tenant
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c.to_ascii_lowercase() } else { '-' })
        .collect();
    let name = format!("lbdesk-as3-{}", safe.trim_matches(|c: char| c == '-' || c == '.'));
    if safe == tenant { name } else { format!("{name}-{:08x}", crc32fast::hash(tenant.as_bytes())) }
}

/// A ticket refused by the renderer or the validator, and why.
pub type Faults = BTreeMap<String, String>;

fn live<K: kube::Resource>(o: &K) -> bool {
    o.meta().deletion_timestamp.is_none()
}

/// A member cluster's syncer: syncs when asked (requests arriving meanwhile are coalesced into
/// the next run) and every ensure period; a failed sync is retried with backoff.
pub async fn syncer(ctx: Arc<Context>, cluster: String) {
    let Some(requests) = ctx.sync_requests.get(&cluster).cloned() else { return };
    let key = format!("sync/{cluster}");
    // NB: an empty cache would withdraw everything: wait for the first complete lists.
    for ready in [
        ctx.tickets.wait_until_ready().await,
        ctx.rules.wait_until_ready().await,
        ctx.loadbalancers.wait_until_ready().await,
    ] {
        if ready.is_err() {
            return;
        }
    }
    loop {
        tokio::select! {
            _ = requests.notified() => {}
            _ = tokio::time::sleep(ctx.config.ensure_every) => {}
        }
        loop {
            match sync(&ctx, &cluster, None).await {
                Ok(_) => {
                    ctx.succeeded(&key);
                    ctx.counters.syncs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    break;
                }
                Err(e) => {
                    let delay = ctx.backoff(&key);
                    tracing::warn!(%cluster, error = %e, retry_in = ?delay, "sync failed");
                    tokio::time::sleep(delay).await;
                }
            }
        }
    }
}

/// Brings `cluster` to what its Loadbalancers, tickets and rules ask for (from the caches), and
/// tells the tickets whose listeners could not be placed why.
/// `gone` names a ticket to leave out whatever the cache says (one being cleaned up).
pub async fn sync(ctx: &Context, cluster: &str, gone: Option<&str>) -> Result<Faults> {
    let lock = ctx.sync_lock(cluster);
    let _one_at_a_time = lock.lock().await;
    let client = ctx
        .clusters
        .member(cluster)
        .ok_or_else(|| Error::Invalid(format!("cluster {cluster} is not known to lbdesk")))?
        .clone();
    let lbs: Vec<Loadbalancer> = ctx
        .loadbalancers
        .state()
        .iter()
        .filter(|lb| lb.spec.cluster == cluster && live(&***lb))
        .map(|lb| (**lb).clone())
        .collect();
    let tickets: Vec<Lbticket> = ctx
        .tickets
        .state()
        .iter()
        .filter(|t| {
            live(&***t)
                && Some(t.name_any().as_str()) != gone
                && lbs.iter().any(|lb| lb.name_any() == t.spec.loadbalancer)
        })
        .map(|t| (**t).clone())
        .collect();
    let rules: Vec<Lbrule> = ctx.rules.state().iter().filter(|r| live(&***r)).map(|r| (**r).clone()).collect();

    let lb_names: Vec<String> = lbs.iter().map(|l| l.name_any()).collect();
    let t_names: Vec<String> = tickets.iter().map(|t| t.name_any()).collect();
    let r_names: Vec<String> = rules.iter().map(|r| r.name_any()).collect();
    let lb_in: Vec<_> = lb_names.iter().zip(&lbs).map(|(n, l)| (n.as_str(), &l.spec)).collect();
    let t_in: Vec<_> = t_names.iter().zip(&tickets).map(|(n, t)| (n.as_str(), &t.spec, t.status.as_ref())).collect();
    let r_in: Vec<_> = r_names.iter().zip(&rules).map(|(n, r)| (n.as_str(), &r.spec)).collect();

    let mut faults = Faults::new();
    let mut blocked_tenants = BTreeSet::new();
    let mut ns_labels: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut svc_labels: BTreeMap<(String, String), BTreeMap<String, String>> = BTreeMap::new();
    for ((_, tenant), (t, r)) in as3::tenants(&lb_in, &t_in, &r_in) {
        let owner = lbs.iter().find(|lb| app::domain::policy::effective_partition(&lb.spec) == tenant);
        let Some(owner) = owner else { continue };
        let rendered = match as3::render(cluster, &tenant, &t, &r) {
            Ok(rendered) => rendered,
            Err(fault) => {
                blocked_tenants.insert(tenant.clone());
                let ticket = fault.origin.as_ref().map(|o| o.ticket.clone()).unwrap_or_default();
                faults.insert(ticket, fault.to_string());
                continue;
            }
        };
        let template = rendered.template();
        let deployed = deployed_template(&client, &owner.spec.cis.namespace, &tenant).await?;
        if deployed.as_deref() == Some(template.as_str()) {
            // NB: what is deployed was validated before it was written.
        } else if let Err(found) = validate(&rendered) {
            blocked_tenants.insert(tenant.clone());
            for fault in found {
                let ticket = fault.origin.as_ref().map(|o| o.ticket.clone()).unwrap_or_default();
                faults.entry(ticket).or_insert_with(|| fault.to_string());
            }
            tracing::warn!(%cluster, %tenant, "declaration invalid; the last good ConfigMap stays");
            continue;
        }
        write_configmap(ctx, &client, &owner.spec.cis.namespace, &tenant, &template).await?;
        for ns in &rendered.namespaces {
            ns_labels.entry(ns.clone()).or_default().extend(owner.spec.nsselector.clone());
        }
        for ((ns, svc), l) in &rendered.services {
            let labels = BTreeMap::from([
                (CIS_KEYS[0].to_string(), l.tenant.clone()),
                (CIS_KEYS[1].to_string(), l.app.clone()),
                (CIS_KEYS[2].to_string(), l.pool.clone()),
                (CIS_MARK.to_string(), "true".to_string()),
            ]);
            svc_labels.insert((ns.clone(), svc.clone()), labels);
        }
    }
    label_namespaces(ctx, &client, &ns_labels).await?;
    label_services(ctx, &client, &svc_labels, &blocked_tenants).await?;
    report(ctx, &tickets, &faults).await?;
    Ok(faults)
}

/// The `Rendered` condition (and message) of each live ticket: why its listeners are not on
/// the load balancer, or nothing. Only those two fields are written, and only when they change.
async fn report(ctx: &Context, tickets: &[Lbticket], faults: &Faults) -> Result<()> {
    let api: Api<Lbticket> = Api::all(ctx.clusters.mgmt().clone());
    for ticket in tickets.iter().filter(|t| as3::is_live(&t.spec, t.status.as_ref())) {
        let Some(status) = ticket.status.clone() else { continue };
        let fault = faults.get(&ticket.name_any());
        let mut next = status.clone();
        next.message = fault.cloned().unwrap_or_default();
        let (ok, reason) = if fault.is_some() { (false, "Invalid") } else { (true, "Written") };
        set_condition(&mut next.conditions, "Rendered", ok, reason, &next.message, ticket.metadata.generation);
        if next.message == status.message && next.conditions == status.conditions {
            continue;
        }
        let patch = json!({"status": {"message": next.message, "conditions": next.conditions}});
        api.patch_status(&ticket.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await?;
    }
    Ok(())
}

/// The declaration deployed for a tenant now, if any.
async fn deployed_template(client: &kube::Client, namespace: &str, tenant: &str) -> Result<Option<String>> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    Ok(api.get_opt(&configmap_name(tenant)).await?.and_then(|cm| cm.data).and_then(|mut d| d.remove("template")))
}

/// Creates or replaces the tenant's ConfigMap when its content differs.
async fn write_configmap(
    ctx: &Context,
    client: &kube::Client,
    namespace: &str,
    tenant: &str,
    template: &str,
) -> Result<()> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let name = configmap_name(tenant);
    let labels = BTreeMap::from([
        ("f5type".to_string(), "virtual-server".to_string()),
        ("as3".to_string(), "true".to_string()),
        ("app.kubernetes.io/managed-by".to_string(), "lbdesk".to_string()),
    ]);
    let data = BTreeMap::from([("template".to_string(), template.to_string())]);
    match api.get_opt(&name).await? {
        Some(mut cm) => {
            let current_labels = cm.labels();
            let labelled = labels.iter().all(|(k, v)| current_labels.get(k) == Some(v));
            if cm.data.as_ref() == Some(&data) && labelled {
                return Ok(());
            }
            cm.labels_mut().extend(labels);
            cm.data = Some(data);
            api.replace(&name, &PostParams::default(), &cm).await?;
        }
        None => {
            let cm = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    namespace: Some(namespace.into()),
                    labels: Some(labels),
                    ..Default::default()
                },
                data: Some(data),
                ..Default::default()
            };
            api.create(&PostParams::default(), &cm).await?;
        }
    }
    tracing::info!(%tenant, %namespace, configmap = %name, "AS3 declaration written");
    ctx.crash_point(Step::ConfigMapWrite).await;
    Ok(())
}

/// Deletes the tenant's ConfigMap (its Loadbalancer is gone).
pub async fn delete_configmap(ctx: &Context, cluster: &str, namespace: &str, tenant: &str) -> Result<()> {
    let Some(client) = ctx.clusters.member(cluster) else { return Ok(()) };
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    match api.delete(&configmap_name(tenant), &Default::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Namespaces get the nsselector labels of the Loadbalancers with listeners in them, and lose
/// the ones lbdesk set that are no longer wanted.
async fn label_namespaces(
    ctx: &Context,
    client: &kube::Client,
    wanted: &BTreeMap<String, BTreeMap<String, String>>,
) -> Result<()> {
    let api: Api<Namespace> = Api::all(client.clone());
    for ns in api.list(&ListParams::default()).await? {
        let name = ns.name_any();
        let want = wanted.get(&name).cloned().unwrap_or_default();
        let managed: BTreeSet<String> = ns
            .annotations()
            .get(MANAGED_LABELS)
            .map(|v| v.split(',').filter(|k| !k.is_empty()).map(String::from).collect())
            .unwrap_or_default();
        let labels = ns.labels();
        let mut patch_labels = serde_json::Map::new();
        for (k, v) in &want {
            if labels.get(k) != Some(v) {
                patch_labels.insert(k.clone(), json!(v));
            }
        }
        for k in managed.iter().filter(|k| !want.contains_key(*k)) {
            patch_labels.insert(k.clone(), Value::Null);
        }
        let keys: Vec<&str> = want.keys().map(String::as_str).collect();
        let annotation = keys.join(",");
        let annotation_differs = ns.annotations().get(MANAGED_LABELS).map(String::as_str).unwrap_or("") != annotation;
        if patch_labels.is_empty() && !annotation_differs {
            continue;
        }
        let annotation = if annotation.is_empty() { Value::Null } else { json!(annotation) };
        let patch = json!({"metadata": {"labels": patch_labels, "annotations": {MANAGED_LABELS: annotation}}});
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
        ctx.crash_point(Step::LabelWrite).await;
    }
    Ok(())
}

/// Services in pools get the CIS labels; Services lbdesk labelled lose them when no longer in
/// a pool (except those of a tenant whose declaration is blocked: its last good one stays).
async fn label_services(
    ctx: &Context,
    client: &kube::Client,
    wanted: &BTreeMap<(String, String), BTreeMap<String, String>>,
    blocked: &BTreeSet<String>,
) -> Result<()> {
    let api: Api<Service> = Api::all(client.clone());
    for svc in api.list(&ListParams::default()).await? {
        let (ns, name) = (svc.namespace().unwrap_or_default(), svc.name_any());
        let labels = svc.labels();
        let mut patch_labels = serde_json::Map::new();
        match wanted.get(&(ns.clone(), name.clone())) {
            Some(want) => {
                for (k, v) in want {
                    if labels.get(k) != Some(v) {
                        patch_labels.insert(k.clone(), json!(v));
                    }
                }
            }
            None if labels.contains_key(CIS_MARK) && !labels.get(CIS_KEYS[0]).is_some_and(|t| blocked.contains(t)) => {
                for k in CIS_KEYS.iter().chain([CIS_MARK].iter()) {
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
        ctx.crash_point(Step::LabelWrite).await;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configmap_names_are_dns_safe_and_distinct() {
        assert_eq!(configmap_name("acp-region01"), "lbdesk-as3-acp-region01");
        let a = configmap_name("Tenant_A");
        let b = configmap_name("tenant-a");
        assert!(a.starts_with("lbdesk-as3-tenant-a-"), "{a}");
        assert_ne!(a, b);
    }
}
