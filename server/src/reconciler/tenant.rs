//! What a member cluster must hold for its Loadbalancers: one AS3 ConfigMap per tenant
//! (validated before writing, written only when its bytes change), the nsselector labels on
//! namespaces with listeners, the CIS discovery labels on Services in pools (`labels`), the
//! Ingresses of F5 Ingresses (`ingress`). Planned as a whole from the current objects
//! (`desired`, no I/O), then applied as the difference, so a sync is idempotent and repairs any
//! drift.

use std::collections::HashMap;
use std::sync::Arc;

use app::domain::as3;
use app::domain::as3::placement::{self, Placement, TEMPLATE_KEY};
use app::domain::cis_ingress;
use app::domain::crd::{Condition, Lbrule, Lbticket, LbticketSpec, LbticketStatus, Loadbalancer};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use super::desired::{Cluster, Desired};
use super::labels::{self, Labels, Pass};
use super::live;
use super::plan::{Faults, Placed};
use super::status::set_condition;
use super::{Context, Error, Result, Step, ingress};

/// What the last successful sync of a member cluster placed, per tenant, and the labels that
/// asks for (the next sync reads only the namespaces and Services whose labels differ).
#[derive(Default)]
pub struct Synced {
    tenants: HashMap<String, Placed>,
    labels: Labels,
}

/// Per member cluster, what its last successful sync placed.
pub type Memo = HashMap<String, Synced>;

fn name_of(meta: &ObjectMeta) -> &str {
    meta.name.as_deref().unwrap_or_default()
}

/// Whether a ticket places anything in its member cluster now: listeners or F5 Ingresses.
pub(super) fn places(spec: &LbticketSpec, status: Option<&LbticketStatus>) -> bool {
    as3::is_live(spec, status) || cis_ingress::is_live(spec, status)
}

/// The ticket's `Rendered` condition, when it reports on the ticket's current generation.
pub(super) fn rendered(ticket: &Lbticket) -> Option<&Condition> {
    let status = ticket.status.as_ref()?;
    status.conditions.iter().find(|c| c.type_ == "Rendered" && c.observed_generation == ticket.metadata.generation)
}

/// Brings `cluster` to what its Loadbalancers, tickets and rules ask for (from the caches), and
/// tells the tickets whose listeners or F5 Ingresses could not be placed why.
/// `gone` names a ticket to leave out whatever the cache says (one being cleaned up).
/// Tenants whose inputs did not change since the last sync are left alone, unless `ensure`
/// asks for every generated object to be read back and repaired.
pub async fn sync(ctx: &Context, cluster: &str, gone: Option<&str>, ensure: bool) -> Result<Faults> {
    let lock = ctx.lock(cluster);
    let _one_at_a_time = lock.lock().await;
    let client = ctx
        .clusters
        .member(cluster)
        .ok_or_else(|| Error::Invalid(format!("cluster {cluster} is not known to lbdesk")))?;
    // NB: the cached objects are shared, not copied: a sync runs after every change.
    let caches = ctx.caches();
    let lbs: Vec<Arc<Loadbalancer>> =
        caches.loadbalancers.state().into_iter().filter(|lb| lb.spec.cluster == cluster && live(&**lb)).collect();
    let lb_names: Vec<&str> = lbs.iter().map(|l| name_of(&l.metadata)).collect();
    let tickets: Vec<Arc<Lbticket>> = caches
        .tickets
        .state()
        .into_iter()
        .filter(|t| {
            live(&**t) && t.metadata.name.as_deref() != gone && lb_names.contains(&t.spec.loadbalancer.as_str())
        })
        .collect();
    let rules: Vec<Arc<Lbrule>> = caches.rules.state().into_iter().filter(|r| live(&**r)).collect();
    let objects = Cluster::of(cluster, &lbs, &tickets, &rules, &ctx.config.ingress_class);

    // NB: taken out while the sync runs: a sync that fails half-way leaves no memo behind, so
    // the next one does everything again.
    let previous = ctx.memo.lock().unwrap_or_else(|p| p.into_inner()).remove(cluster).unwrap_or_default();
    let mut current = HashMap::new();
    for place in objects.to_read(&previous.tenants, ensure) {
        current.insert(place.tenant.clone(), deployed(&client, &place).await?);
    }
    // On ensure (or with nothing known of the last sync) every namespace and Service is read
    // back; otherwise only those whose labels the change concerns.
    let since = (!previous.tenants.is_empty() && !ensure).then_some(previous.labels);
    let templates = current.iter().map(|(t, cm)| (t.clone(), cm.as_ref().and_then(template_of).map(String::from)));
    let mut desired = objects.plan(&templates.collect(), previous.tenants, ensure);
    for (tenant, placed) in &desired.tenants {
        if placed.blocked {
            tracing::warn!(%cluster, %tenant, "declaration invalid; the last good ConfigMap stays");
        }
    }
    // The first error worth retrying, returned once everything else is done and reported.
    let (retry, labels) = place_tenants(&client, cluster, &mut desired, current, since.as_ref()).await?;
    let mut faults = desired.faults();
    // NB: the tickets here leave `gone` out, so its Ingresses go before it does.
    for (ticket, why) in ingress::apply(ctx, &client, cluster, &desired.ingresses, ensure).await? {
        faults.entry(ticket).or_insert(why);
    }
    report(ctx, &tickets, &faults).await?;
    super::cis::report(ctx, &client, cluster).await;
    let synced = Synced { tenants: desired.tenants, labels };
    ctx.memo.lock().unwrap_or_else(|p| p.into_inner()).insert(cluster.to_string(), synced);
    match retry {
        Some(e) => Err(e),
        None => Ok(faults),
    }
}

/// Applies what the tenants of `desired` place: the labels they come to want, then their
/// ConfigMaps (one the member cluster does not take holds its tenant back, and its tickets say
/// why), then the labels settled to what was placed (`labels::Pass` says why in that order).
/// `current`: the ConfigMaps read; `since`: the labels of the last sync, if it is to be trusted.
/// Returns the first write error worth retrying, and the labels placed.
async fn place_tenants(
    client: &kube::Client,
    cluster: &str,
    desired: &mut Desired,
    mut current: HashMap<String, Option<ConfigMap>>,
    since: Option<&Labels>,
) -> Result<(Option<Error>, Labels)> {
    let planned = desired.labels();
    labels::apply(client, &planned, since, None, Pass::Add).await?;
    let mut retry: Option<Error> = None;
    let mut held_back = false;
    for write in std::mem::take(&mut desired.configmaps) {
        let tenant = &write.place.tenant;
        // NB: a ConfigMap the member cluster will not take holds back its tenant alone: every
        // other tenant, and the cluster's F5 Ingresses, are still written and reported.
        match write_configmap(client, current.remove(tenant).flatten(), &write.place, &write.template).await {
            Ok(true) => super::crash::point(Step::ConfigMapWrite).await,
            Ok(false) => {}
            Err(e) => {
                held_back = true;
                tracing::warn!(%cluster, %tenant, error = %e, "the tenant's ConfigMap was not written; the last good one stays");
                match refused_for_good(&e) {
                    Some(why) => desired.unwritten(
                        &write,
                        format!("the member cluster refused the tenant's ConfigMap: {why}"),
                        false,
                    ),
                    None => {
                        // Not the content's fault: retried after a backoff.
                        desired.unwritten(
                            &write,
                            format!("the tenant's ConfigMap is not written yet: {e}; retrying"),
                            true,
                        );
                        retry.get_or_insert(e);
                    }
                }
            }
        }
    }
    // NB: what the tenants place changed only if one was held back.
    let settled = held_back.then(|| desired.labels());
    labels::apply(client, settled.as_ref().unwrap_or(&planned), since, Some(&planned), Pass::Settle).await?;
    Ok((retry, settled.unwrap_or(planned)))
}

/// Why the member cluster refused a ConfigMap for good (too large, invalid, forbidden, its
/// namespace missing): retrying the same content cannot help. `None`: retry.
fn refused_for_good(error: &Error) -> Option<String> {
    let Error::Kube(kube::Error::Api(status)) = error else { return None };
    matches!(status.code, 400 | 403 | 404 | 413 | 422).then(|| format!("{} ({})", status.message, status.code))
}

/// The `Rendered` condition (and message) of each live ticket: why its listeners or F5
/// Ingresses are not in the member cluster, or nothing (the cluster carries the ticket's
/// generation). Only those two fields are written, and only when they change.
async fn report(ctx: &Context, tickets: &[Arc<Lbticket>], faults: &Faults) -> Result<()> {
    let api: Api<Lbticket> = Api::all(ctx.clusters.mgmt().clone());
    for ticket in tickets.iter().filter(|t| places(&t.spec, t.status.as_ref())) {
        let name = name_of(&ticket.metadata);
        let fault = faults.get(name);
        let mut ticket = (**ticket).clone();
        // NB: on the version read. A ticket whose status changed since (its BIG-IP read back,
        // its phase) is read again and reported on as it is now; one whose spec changed is
        // reported by the sync its change brings, from what it is then.
        for _ in 0..REPORT_ATTEMPTS {
            let Some(patch) = rendered_patch(&ticket, fault) else { break };
            match api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                Ok(_) => break,
                Err(kube::Error::Api(e)) if e.code == 409 => match api.get_opt(name).await? {
                    Some(now) if now.metadata.generation == ticket.metadata.generation => ticket = now,
                    _ => break,
                },
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(())
}

/// Writes of a ticket's `Rendered` report tried, each on the ticket as then read.
const REPORT_ATTEMPTS: usize = 5;

/// The status patch saying whether `ticket`'s listeners and F5 Ingresses are in the member
/// cluster (`fault` why not), on its version; none when its status says so already.
fn rendered_patch(ticket: &Lbticket, fault: Option<&String>) -> Option<serde_json::Value> {
    let status = ticket.status.as_ref()?;
    let message = fault.map(String::as_str).unwrap_or_default();
    let (ok, reason) = if fault.is_some() { ("False", "Invalid") } else { ("True", "Written") };
    let reported = rendered(ticket)
        .is_some_and(|c| (c.status.as_str(), c.reason.as_str(), c.message.as_str()) == (ok, reason, message));
    if reported && status.message == message {
        return None;
    }
    let mut conditions = status.conditions.clone();
    set_condition(&mut conditions, "Rendered", fault.is_none(), reason, message, ticket.metadata.generation);
    Some(json!({
        "metadata": {"resourceVersion": ticket.metadata.resource_version},
        "status": {"message": message, "conditions": conditions},
    }))
}

/// The tenant's ConfigMap as it is now, if any.
async fn deployed(client: &kube::Client, place: &Placement) -> Result<Option<ConfigMap>> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &place.namespace);
    Ok(api.get_opt(&place.configmap).await?)
}

/// The declaration a ConfigMap holds.
fn template_of(cm: &ConfigMap) -> Option<&str> {
    cm.data.as_ref().and_then(|d| d.get(TEMPLATE_KEY)).map(String::as_str)
}

/// Creates or replaces the tenant's ConfigMap (`current`, as just read) when its content
/// differs; returns whether it wrote.
async fn write_configmap(
    client: &kube::Client,
    current: Option<ConfigMap>,
    place: &Placement,
    template: &str,
) -> Result<bool> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &place.namespace);
    let Placement { tenant, namespace, configmap: name } = place;
    let labels = placement::configmap_labels();
    match current {
        Some(mut cm) => {
            let current_labels = cm.labels();
            let labelled = labels.iter().all(|(k, v)| current_labels.get(k) == Some(v));
            if template_of(&cm) == Some(template) && cm.data.as_ref().is_some_and(|d| d.len() == 1) && labelled {
                return Ok(false);
            }
            cm.labels_mut().extend(labels);
            cm.data = Some(placement::configmap_data(template));
            // NB: a compare-and-swap on the version read: a concurrent change is a conflict,
            // retried by the next sync.
            api.replace(name, &PostParams::default(), &cm).await?;
        }
        None => {
            let cm = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    namespace: Some(namespace.clone()),
                    labels: Some(labels),
                    ..Default::default()
                },
                data: Some(placement::configmap_data(template)),
                ..Default::default()
            };
            api.create(&PostParams::default(), &cm).await?;
        }
    }
    tracing::info!(%tenant, %namespace, configmap = %name, "AS3 declaration written");
    Ok(true)
}

/// Deletes the tenant's ConfigMap (its Loadbalancer is gone).
pub async fn delete_configmap(ctx: &Context, cluster: &str, place: &Placement) -> Result<()> {
    let Some(client) = ctx.clusters.member(cluster) else { return Ok(()) };
    let api: Api<ConfigMap> = Api::namespaced(client, &place.namespace);
    match api.delete(&place.configmap, &Default::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use app::domain::as3::PoolLabels;
    use app::domain::as3::placement::{CIS_POOL, SERVICE_LABEL_KEYS};

    use super::super::desired::Write;
    use super::*;

    /// The ConfigMap of tenant `t1`, as the mocked API holds it: `template`, labelled or not.
    fn stored(template: &str, labelled: bool) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some("t1-as3".into()),
                namespace: Some("kube-system".into()),
                resource_version: Some("41".into()),
                labels: labelled.then(placement::configmap_labels),
                ..Default::default()
            },
            data: Some(placement::configmap_data(template)),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn a_configmap_is_written_only_when_its_bytes_or_labels_differ_as_a_compare_and_swap() {
        use super::super::fixtures::{Call, Scenario};
        use http::Method;
        let place = Placement { tenant: "t1".into(), namespace: "kube-system".into(), configmap: "t1-as3".into() };
        const CREATE: &str = "/api/v1/namespaces/kube-system/configmaps?";
        const REPLACE: &str = "/api/v1/namespaces/kube-system/configmaps/t1-as3?";
        let json = |cm: &ConfigMap| serde_json::to_value(cm).unwrap_or_default();
        // (what, stored now, the calls expected, written)
        let rows: Vec<(&str, Option<ConfigMap>, Vec<Call>, bool)> = vec![
            ("none yet: created", None, vec![Call::new(Method::POST, CREATE, 201, json(&stored("new", true)))], true),
            ("the same, labelled: nothing", Some(stored("new", true)), vec![], false),
            (
                "the same, its labels lost: put back",
                Some(stored("new", false)),
                vec![Call::new(Method::PUT, REPLACE, 200, json(&stored("new", true)))],
                true,
            ),
            (
                "another declaration: replaced",
                Some(stored("old", true)),
                vec![Call::new(Method::PUT, REPLACE, 200, json(&stored("new", true)))],
                true,
            ),
        ];
        for (what, now, calls, wrote) in rows {
            let (client, scenario) = Scenario::client(calls);
            let (result, bodies) = scenario.run(write_configmap(&client, now, &place, "new")).await;
            assert_eq!(result.ok(), Some(wrote), "{what}");
            for body in bodies {
                assert_eq!(body["data"][TEMPLATE_KEY], "new", "{what}: {body}");
                assert_eq!(body["metadata"]["labels"]["as3"], "true", "{what}: {body}");
                // NB: a replace carries the version read, so a concurrent change is a conflict.
                if body["metadata"]["resourceVersion"].is_string() {
                    assert_eq!(body["metadata"]["resourceVersion"], "41", "{what}");
                }
            }
        }

        // A member cluster refusing the ConfigMap (too large): the error says so, for good.
        let refusal = serde_json::json!({"kind": "Status", "code": 413, "message": "Request entity too large", "reason": "RequestEntityTooLarge"});
        let (client, scenario) = Scenario::client(vec![Call::new(Method::PUT, REPLACE, 413, refusal)]);
        let (result, _) = scenario.run(write_configmap(&client, Some(stored("old", true)), &place, "new")).await;
        let error = result.expect_err("refused");
        assert!(refused_for_good(&error).is_some_and(|why| why.contains("413")), "{error:?}");
    }

    /// A tenant whose pool moves from Service `default/old` to `default/new`, as planned, and
    /// what the last sync placed.
    fn moving_pool() -> (Desired, HashMap<String, Placed>) {
        let pool = |svc: &str| {
            let labels = PoolLabels { tenant: "t1".into(), app: "a1".into(), pool: format!("{svc}_pool") };
            BTreeMap::from([(("default".to_string(), svc.to_string()), placement::service_labels(&labels))])
        };
        let namespaces = BTreeMap::from([("default".to_string(), BTreeMap::from([("cis".into(), "on".into())]))]);
        let last = Placed { digest: 1, namespaces: namespaces.clone(), services: pool("old"), ..Default::default() };
        let now = Placed { digest: 2, namespaces, services: pool("new"), ..Default::default() };
        let write = Write {
            place: Placement { tenant: "t1".into(), namespace: "kube-system".into(), configmap: "t1-as3".into() },
            template: "new".into(),
            tickets: vec!["ticket-a".into()],
            held: Placed { digest: 2, blocked: true, ..last.clone() },
        };
        let desired = Desired {
            tenants: HashMap::from([("t1".to_string(), now)]),
            configmaps: vec![write],
            ingresses: Default::default(),
        };
        (desired, HashMap::from([("t1".to_string(), last)]))
    }

    /// Service `default/<name>` as the mocked API holds it, with the pool labels `of` a pool.
    fn service(name: &str, of: Option<&str>) -> serde_json::Value {
        let labels = of.map(|pool| {
            placement::service_labels(&PoolLabels { tenant: "t1".into(), app: "a1".into(), pool: pool.into() })
        });
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default", "labels": labels}})
    }

    #[tokio::test]
    async fn a_pools_labels_go_on_before_its_configmap_and_come_off_after() {
        use super::super::fixtures::{Call, Scenario};
        use http::Method;
        const NEW: &str = "/api/v1/namespaces/default/services/new";
        const NEW_PATCH: &str = "/api/v1/namespaces/default/services/new?";
        const OLD: &str = "/api/v1/namespaces/default/services/old";
        const OLD_PATCH: &str = "/api/v1/namespaces/default/services/old?";
        const CREATE: &str = "/api/v1/namespaces/kube-system/configmaps?";
        let labelled = |svc: &str, pool: &str| service(svc, Some(pool));
        // NB: what CIS reads between the calls: the new pool's Service is labelled before the
        // declaration naming the pool arrives, and the old one keeps its labels until after.
        let (client, scenario) = Scenario::client(vec![
            Call::new(Method::GET, NEW, 200, service("new", None)),
            Call::new(Method::PATCH, NEW_PATCH, 200, labelled("new", "new_pool")),
            Call::new(Method::POST, CREATE, 201, serde_json::to_value(stored("new", true)).unwrap_or_default()),
            Call::new(Method::GET, OLD, 200, labelled("old", "old_pool")),
            Call::new(Method::PATCH, OLD_PATCH, 200, service("old", None)),
        ]);
        let (mut desired, previous) = moving_pool();
        let since = Labels::of(&previous);
        let (result, bodies) =
            scenario.run(place_tenants(&client, "c1", &mut desired, HashMap::new(), Some(&since))).await;
        let (retry, placed) = result.expect("placed");
        assert!(retry.is_none(), "{retry:?}");
        // What the next sync starts from: the labels of what was placed.
        let new_service = ("default".to_string(), "new".to_string());
        assert_eq!(placed.services.keys().collect::<Vec<_>>(), [&new_service]);
        assert_eq!(bodies[1]["metadata"]["labels"][CIS_POOL], "new_pool", "{}", bodies[1]);
        assert_eq!(bodies[2]["data"][TEMPLATE_KEY], "new");
        for key in SERVICE_LABEL_KEYS {
            assert!(bodies[4]["metadata"]["labels"][key].is_null(), "{key} removed: {}", bodies[4]);
        }

        // The member cluster refuses the ConfigMap: the tenant is held back on its last good
        // declaration, so the new Service loses the labels it was given and the old keeps its.
        let refusal = json!({"kind": "Status", "code": 413, "message": "Request entity too large"});
        let (client, scenario) = Scenario::client(vec![
            Call::new(Method::GET, NEW, 200, service("new", None)),
            Call::new(Method::PATCH, NEW_PATCH, 200, labelled("new", "new_pool")),
            Call::new(Method::POST, CREATE, 413, refusal),
            Call::new(Method::GET, NEW, 200, labelled("new", "new_pool")),
            Call::new(Method::PATCH, NEW_PATCH, 200, service("new", None)),
        ]);
        let (mut desired, previous) = moving_pool();
        let (result, bodies) =
            scenario.run(place_tenants(&client, "c1", &mut desired, HashMap::new(), Some(&since))).await;
        let (retry, placed) = result.expect("placed");
        assert!(retry.is_none(), "refused for good, not retried: {retry:?}");
        // Held back: the labels the next sync starts from are the last good declaration's.
        let old_service = ("default".to_string(), "old".to_string());
        assert_eq!(placed.services.keys().collect::<Vec<_>>(), [&old_service]);
        assert!(bodies[4]["metadata"]["labels"][CIS_POOL].is_null(), "{}", bodies[4]);
        let held = &desired.tenants["t1"];
        assert!(held.blocked && held.services == previous["t1"].services, "{held:?}");
        assert!(held.faults["ticket-a"].contains("413"), "{:?}", held.faults);
    }
}
