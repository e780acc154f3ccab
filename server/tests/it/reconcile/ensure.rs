//! The ensure pass, every second here: over a converged cluster it writes nothing; what is
//! changed by hand in the member cluster is put back (a ConfigMap, a Service's label, an F5
//! Ingress); a namespace label two load balancers want two ways never flips; a request the
//! driver failed shows why until the driver behaves.
//!
//! The tests share the module's lbdesk, each in a `Scope` of its own, its CIS namespace
//! included, and judge the writes to their own objects (`versions_of`). `CisReady`, read again
//! on each pass, is in `cis_ready`.

use k8s_openapi::api::networking::v1::Ingress;
use kube::api::ObjectMeta;

mod cis_ready;

use super::ingresses::{carries, f5, ingress_of, ingress_ticket, untouched, users_ingress, veip, written};
use super::*;

/// A failed reconcile is retried at most two seconds apart: a heal shows within seconds
/// however many attempts the faults took (the default ceiling, a minute, is tested in
/// `backoff`).
static LBDESK: Shared = Shared::with(|| Options { ensure_interval: 1, retry_max_delay: 2, ..options() }, false);

const RESYNC: Scope = Scope { lb: "resync", tenant: "resync", namespace: "resync", cis: "resync-cis" };
const FLIP: Scope = Scope { lb: "flip", tenant: "flip", namespace: "flip", cis: "flip-cis" };
/// The other load balancer of `FLIP`'s namespaces, selecting `zone=other`.
const FLOP: Scope = Scope { lb: "flop", tenant: "flop", namespace: "flip", cis: "flip-cis" };
const MEND: Scope = Scope { lb: "mend", tenant: "mend", namespace: "mend", cis: "mend-cis" };
const FAULTY: Scope = Scope { lb: "faulty", tenant: "faulty", namespace: "faulty", cis: "faulty-cis" };

/// The namespaces of `scope` (its requests', with the demo Services, and its CIS namespace) and
/// its load balancer, of VE range `ve_cidr`.
async fn own(lbdesk: &Lbdesk, w: &World, scope: Scope, ve_cidr: &str) {
    crate::user::own_namespace(lbdesk, CLUSTER, "project-a", scope.namespace).await;
    let cis = serde_json::from_value(json!({"metadata": {"name": scope.cis}})).expect("a namespace");
    let member = lbdesk.client(CLUSTER).await;
    Api::<Namespace>::all(member).create(&PostParams::default(), &cis).await.expect("the CIS namespace");
    w.lbs.create(&PostParams::default(), &own_loadbalancer(scope, ve_cidr, &[])).await.expect("lb");
}

/// The request `name` of `scope` (with a listener when `with_listener`), once Enabled.
async fn enabled(w: &World, scope: Scope, name: &str, with_listener: bool) {
    w.tickets.create(&PostParams::default(), &ticket_in(scope, name, None, with_listener)).await.expect("ticket");
    wait_phase(&w.tickets, name, Phase::Enabled).await;
}

/// The resource version of everything the reconciler writes for `scope` (any write bumps one):
/// its load balancer, requests and address objects; in the member cluster its two namespaces,
/// its CIS namespace's ConfigMaps, and its requests' namespace's Services and Ingresses.
async fn versions_of(w: &World, scope: Scope) -> Vec<(String, Option<String>)> {
    let version = |kind: &str, meta: &ObjectMeta| {
        (format!("{kind} {}", meta.name.as_deref().unwrap_or_default()), meta.resource_version.clone())
    };
    let mut all = vec![version("loadbalancer", &w.lbs.get(scope.lb).await.expect("the load balancer").metadata)];
    all.extend(tickets_in(&w.tickets, scope).await.iter().map(|t| version("lbticket", &t.metadata)));
    let selector = format!("ebcpaas.io/loadbalancer={}", scope.lb);
    let addresses = Api::<Lbaddress>::all(w.mgmt.clone()).list(&ListParams::default().labels(&selector)).await;
    all.extend(addresses.expect("the address objects").items.iter().map(|a| version("lbaddress", &a.metadata)));
    let namespaces = Api::<Namespace>::all(w.member.clone());
    for name in [scope.namespace, scope.cis] {
        all.push(version("namespace", &namespaces.get(name).await.expect("the namespace").metadata));
    }
    let configmaps = Api::<ConfigMap>::namespaced(w.member.clone(), scope.cis).list(&ListParams::default()).await;
    all.extend(configmaps.expect("the ConfigMaps").items.iter().map(|c| version("configmap", &c.metadata)));
    let services = Api::<Service>::namespaced(w.member.clone(), scope.namespace).list(&ListParams::default()).await;
    all.extend(services.expect("the Services").items.iter().map(|s| version("service", &s.metadata)));
    let ingresses = Api::<Ingress>::namespaced(w.member.clone(), scope.namespace).list(&ListParams::default()).await;
    all.extend(ingresses.expect("the Ingresses").items.iter().map(|i| version("ingress", &i.metadata)));
    all
}

/// Waits for `n` ensure passes: `n` seconds, and as many reconciles as `n` passes over every
/// request lbdesk holds make. NB: both, as another test's request retried every second or two
/// adds reconciles of its own.
async fn passes(lbdesk: &Lbdesk, w: &World, n: u64) {
    let started = std::time::Instant::now();
    let tickets = w.tickets.list(&ListParams::default()).await.expect("tickets").items.len();
    after_rounds(lbdesk, tickets, n).await;
    tokio::time::sleep(Duration::from_secs(n).saturating_sub(started.elapsed())).await;
}

/// Three ensure passes (of every request lbdesk holds) over what `scope` holds, converged:
/// fails if one wrote any of it. Returns the versions seen.
///
/// NB: converged is nothing of it written over two passes, within twenty. The load
/// balancer's capacity and a request's read-back follow an allocation later, the later the
/// busier the lbdesk; one written on every pass never converges.
async fn three_passes_write_nothing(lbdesk: &Lbdesk, w: &World, scope: Scope) -> Vec<(String, Option<String>)> {
    let mut before = versions_of(w, scope).await;
    for _ in 0..10 {
        passes(lbdesk, w, 2).await;
        let now = versions_of(w, scope).await;
        if now == before {
            passes(lbdesk, w, 3).await;
            assert_eq!(versions_of(w, scope).await, now, "three ensure passes over a converged cluster write nothing");
            return now;
        }
        before = now;
    }
    panic!("not converged within twenty passes: {before:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resync_writes_nothing_and_repairs_drift() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let w = world(&lbdesk).await;
    own(&lbdesk, &w, RESYNC, "20.71.0.0/24").await;
    enabled(&w, RESYNC, "resync-web", true).await;
    until("the labels", 10, || async {
        service_labels(&w.member, RESYNC, "web-v2").await.contains_key("cis.f5.com/as3-pool")
    })
    .await;
    let converged = three_passes_write_nothing(&lbdesk, &w, RESYNC).await;

    let good = deployed(&w.member, RESYNC).await.expect("deployed");
    let name = app::domain::as3::placement::configmap_name(RESYNC.tenant);
    let cms: Api<ConfigMap> = Api::namespaced(w.member.clone(), RESYNC.cis);
    cms.patch(&name, &PatchParams::default(), &Patch::Merge(json!({"data": {"template": "{}"}})))
        .await
        .expect("edit by hand");
    until("the edited ConfigMap restored", 10, || async { deployed(&w.member, RESYNC).await.as_ref() == Some(&good) })
        .await;
    cms.delete(&name, &DeleteParams::default()).await.expect("delete by hand");
    until("the deleted ConfigMap restored", 10, || async { deployed(&w.member, RESYNC).await.as_ref() == Some(&good) })
        .await;
    let svcs: Api<Service> = Api::namespaced(w.member.clone(), RESYNC.namespace);
    svcs.patch(
        "web-v1",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"cis.f5.com/as3-pool": null}}})),
    )
    .await
    .expect("unlabel");
    until("the label back", 10, || async {
        service_labels(&w.member, RESYNC, "web-v1").await.contains_key("cis.f5.com/as3-pool")
    })
    .await;
    // NB: the versions judged above see such writes (a check that could not fail would pass).
    assert_ne!(versions_of(&w, RESYNC).await, converged, "the hand edits and their repair are seen");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_label_two_load_balancers_want_two_ways_never_flips() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let w = world(&lbdesk).await;
    own(&lbdesk, &w, FLIP, "20.72.0.0/24").await;
    enabled(&w, FLIP, "flip-web", true).await;
    let cis_namespace = || async {
        let ns = Api::<Namespace>::all(w.member.clone()).get(FLIP.cis).await.expect("namespace");
        ns.labels().get("zone").cloned()
    };
    until("the CIS namespace labelled for the first", 10, || async { cis_namespace().await.as_deref() == Some("f5") })
        .await;
    // Another load balancer of the cluster, its ConfigMap in the same namespace, selecting
    // zone=other.
    let mut other = own_loadbalancer(FLOP, "20.74.0.0/24", &[]);
    other.spec.nsselector = BTreeMap::from([("zone".to_string(), "other".to_string())]);
    w.lbs.create(&PostParams::default(), &other).await.expect("lb");
    enabled(&w, FLOP, "flop-theirs", false).await;
    // Through four passes (one a second), the label keeps the value it had.
    let watched = async {
        loop {
            assert_eq!(cis_namespace().await.as_deref(), Some("f5"), "the label never flips");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    tokio::select! {
        () = passes(&lbdesk, &w, 4) => {}
        never = watched => never,
    }
    assert_eq!(cis_namespace().await.as_deref(), Some("f5"), "the label never flips");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hand_edit_of_an_f5_ingress_is_repaired_and_a_converged_one_writes_nothing() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let w = world(&lbdesk).await;
    own(&lbdesk, &w, MEND, "20.73.0.0/24").await;
    let own = users_ingress(&w.member, MEND, "own").await;
    // As `kubectl apply` of a whole ticket: the F5 Ingress is written once Enabled.
    let shop = f5("shop", "/", "web-v1");
    w.tickets
        .create(&PostParams::default(), &ingress_ticket(MEND, "mend", std::slice::from_ref(&shop)))
        .await
        .expect("ticket");
    wait_phase(&w.tickets, "mend", Phase::Enabled).await;
    let veip = veip(&w.tickets, "mend").await;
    until("the Ingress", 10, || carries(&w.member, MEND, "mend", &shop, &veip)).await;
    until("the report", 10, || written(&w.tickets, "mend")).await;
    let converged = three_passes_write_nothing(&lbdesk, &w, MEND).await;

    // A hand edit of what CIS reads is undone, of the annotations as of the spec; what lbdesk
    // does not own is kept.
    let api = Api::<Ingress>::namespaced(w.member.clone(), MEND.namespace);
    let annotations = json!({"metadata": {"annotations": {
        "virtual-server.f5.com/ip": "20.1.0.250",
        "virtual-server.f5.com/waf": "/Common/policy",
        "team.example.com/note": "kept"
    }}});
    api.patch("shop", &PatchParams::default(), &Patch::Merge(annotations)).await.expect("edit by hand");
    until("the annotations repaired", 10, || async {
        let found = ingress_of(&w.member, MEND, "shop").await;
        carries(&w.member, MEND, "mend", &shop, &veip).await
            && found.is_some_and(|i| {
                !i.annotations().contains_key("virtual-server.f5.com/waf")
                    && i.annotations().get("team.example.com/note").map(String::as_str) == Some("kept")
            })
    })
    .await;
    let rules = json!({"spec": {"rules": [{"host": "evil.example.com", "http": {"paths": [
        {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "api", "port": {"number": 8080}}}}
    ]}}]}});
    api.patch("shop", &PatchParams::default(), &Patch::Merge(rules)).await.expect("edit by hand");
    until("the rules repaired", 10, || carries(&w.member, MEND, "mend", &shop, &veip)).await;
    api.delete("shop", &DeleteParams::default()).await.expect("delete by hand");
    until("the deleted Ingress back", 10, || carries(&w.member, MEND, "mend", &shop, &veip)).await;
    untouched(&w.member, MEND, &own).await;
    assert_ne!(versions_of(&w, MEND).await, converged, "the hand edits and their repair are seen");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn driver_faults_show_on_the_ticket_until_the_driver_behaves() {
    const WEB: &str = "faulty-web";
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let w = world(&lbdesk).await;
    own(&lbdesk, &w, FAULTY, "20.75.0.0/24").await;
    let message =
        || async { w.tickets.get(WEB).await.ok().and_then(|t| t.status).map(|s| s.message).unwrap_or_default() };
    // NB: the faults are limited to this test's request, which the other tests here leave alone.
    lbdesk.simulator.change_behaviour(|b| b.fault_tickets.push(WEB.into()));
    for (fault, shown) in [
        (Fault::Unavailable, "HTTP 503"),
        (Fault::Garbage, "not the contract"),
        (Fault::Hang, "did not answer"),
        (Fault::Huge, "an answer of more than 64 KiB"),
    ] {
        lbdesk.simulator.change_behaviour(|b| b.fault = Some(fault));
        if w.tickets.get_opt(WEB).await.expect("get").is_none() {
            w.tickets.create(&PostParams::default(), &ticket_in(FAULTY, WEB, None, false)).await.expect("ticket");
        }
        until(&format!("{shown:?} on the ticket"), 30, || async { message().await.contains(shown) }).await;
        assert_ne!(phase(&w.tickets, WEB).await, Some(Phase::Enabled));
    }
    lbdesk.simulator.change_behaviour(|b| b.fault = None);
    until("the request to be Enabled once the driver behaves", 20, || async {
        phase(&w.tickets, WEB).await == Some(Phase::Enabled)
    })
    .await;
    assert!(message().await.is_empty(), "the error is cleared once the driver behaves");
}
