//! The reconciler against the embedded API and the driver simulator over HTTP.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use app::domain::crd::{
    BondState, Lbaddress, Lbrule, Lbticket, LbticketSpec, Listener, Loadbalancer, Phase, Protocol, ServiceRef, Session,
};
use app::domain::ipam::Side;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Service};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::json;
use server::driver::DriverClient;
use server::driver::Hook;
use server::driver::sim::{Behaviour, Deny, Fault};
use server::reconciler::{self, Crash, Step};
use tokio::task::JoinHandle;

use crate::helpers::{Backend, Lbdesk, Options, after_rounds, spawn_lbdesk_with, until};
use crate::shared::Shared;

mod cluster_mode;
mod contention;
mod driver;
mod ensure;
mod faults;
mod halves;
mod ingresses;
mod metrics;
mod reachability;
mod upgrade;
mod webhook;
mod webhook_client_ca;

const CLUSTER: &str = "acp-region01";

fn loadbalancer(ve_cidr: &str, reserved: &[&str]) -> Loadbalancer {
    let mut lb: Loadbalancer = serde_json::from_value(json!({
        "apiVersion": "ebcpaas.io/v1", "kind": "Loadbalancer", "metadata": {"name": "demo"},
        "spec": {
            "ltm": {"url": "http://100.1.1.1/api", "tokenSecretRef": {"namespace": "lbdesk-system", "name": "demo-ltm"}, "cidr": "10.0.0.0/24"},
            "ve": {"addr": "200.1.1.1", "credentialsSecretRef": {"namespace": "lbdesk-system", "name": "demo-ve"}, "cidr": ve_cidr},
            "cluster": CLUSTER, "nsselector": {"zone": "f5"}, "cis": {"namespace": "kube-system"}
        }
    }))
    .expect("loadbalancer");
    lb.spec.reserved = reserved.iter().map(|r| r.to_string()).collect();
    lb
}

/// Shared by the tests whose load balancer, requests and namespace are their own (a `Scope`,
/// `own_loadbalancer`, `ticket_in`) and which assert nothing of the whole server.
/// The others start their own: they run reconcilers of their own (a crash, a stop, an
/// upgrade), or judge every write to the clusters, the reconciler's counters or every call to
/// the driver.
static LBDESK: Shared = Shared::with(options, false);

/// A load balancer like `demo` but of `scope`: its name, VE range `ve_cidr`, LTM URL and AS3
/// tenant its own. NB: its namespace selector is demo's, as CIS's namespace takes one value of
/// the label (`a_namespace_label_two_load_balancers_want_two_ways_never_flips`).
fn own_loadbalancer(scope: Scope, ve_cidr: &str, reserved: &[&str]) -> Loadbalancer {
    let mut lb = loadbalancer(ve_cidr, reserved);
    lb.metadata.name = Some(scope.lb.into());
    lb.spec.partition = Some(scope.tenant.into());
    lb.spec.ltm.url = format!("http://100.1.1.1/{}", scope.lb);
    lb.spec.cis.namespace = scope.cis.into();
    lb
}

/// A ticket like `ticket`'s, on the load balancer of `scope` in its namespace.
fn ticket_in(scope: Scope, name: &str, veip: Option<&str>, with_listener: bool) -> Lbticket {
    let mut t = ticket(name, veip, with_listener);
    t.spec.loadbalancer = scope.lb.into();
    t.spec.namespace = scope.namespace.into();
    t
}

/// The tickets on the load balancer of `scope`.
async fn tickets_in(tickets: &Api<Lbticket>, scope: Scope) -> Vec<Lbticket> {
    let all = tickets.list(&ListParams::default()).await.expect("list").items;
    all.into_iter().filter(|t| t.spec.loadbalancer == scope.lb).collect()
}

fn ticket(name: &str, veip: Option<&str>, with_listener: bool) -> Lbticket {
    let listeners = if with_listener {
        vec![Listener {
            name: "web".into(),
            port: 80,
            protocol: Protocol::Http,
            session: Session::Cookie,
            services: vec![
                ServiceRef { service: "web-v1".into(), port: 8080, weight: 70 },
                ServiceRef { service: "web-v2".into(), port: 8080, weight: 30 },
            ],
        }]
    } else {
        vec![]
    };
    Lbticket::new(
        name,
        LbticketSpec {
            claimer: "alice".into(),
            loadbalancer: "demo".into(),
            namespace: "team-a".into(),
            veip: veip.map(String::from),
            listeners,
            ..Default::default()
        },
    )
}

async fn phase(api: &Api<Lbticket>, name: &str) -> Option<Phase> {
    api.get(name).await.ok().and_then(|t| t.status).map(|s| s.phase)
}

async fn wait_phase(api: &Api<Lbticket>, name: &str, want: Phase) {
    until(&format!("{name} to be {want:?}"), 20, || async { phase(api, name).await == Some(want) }).await;
}

struct World {
    mgmt: Client,
    member: Client,
    tickets: Api<Lbticket>,
    lbs: Api<Loadbalancer>,
}

async fn world(lbdesk: &Lbdesk) -> World {
    let mgmt = lbdesk.client("mgmt").await;
    World { member: lbdesk.client(CLUSTER).await, tickets: Api::all(mgmt.clone()), lbs: Api::all(mgmt.clone()), mgmt }
}

/// Where a test's objects are: its load balancer, the AS3 tenant it writes, its requests'
/// namespace of acp-region01, and the namespace there its CIS reads (its ConfigMap's).
#[derive(Clone, Copy)]
struct Scope {
    lb: &'static str,
    tenant: &'static str,
    namespace: &'static str,
    cis: &'static str,
}

/// The load balancer `demo` (`loadbalancer`) and the requests `ticket` makes.
const DEMO: Scope = Scope { lb: "demo", tenant: "acp-region01", namespace: "team-a", cis: "kube-system" };

/// A ticket's whole life, on the shared lbdesk.
const LIFE: Scope = Scope { lb: "life", tenant: "life", namespace: "life", cis: "kube-system" };

/// A real delete and a protected load balancer, on the shared lbdesk.
const KEPT: Scope = Scope { lb: "kept", tenant: "kept", namespace: "kept", cis: "kube-system" };

/// The ADC inside the ConfigMap of the tenant of `scope`.
async fn deployed(member: &Client, scope: Scope) -> Option<serde_json::Value> {
    let cms: Api<ConfigMap> = Api::namespaced(member.clone(), scope.cis);
    let cm = cms.get_opt(&app::domain::as3::placement::configmap_name(scope.tenant)).await.ok()??;
    let template: serde_json::Value = serde_json::from_str(cm.data?.get("template")?).ok()?;
    Some(template["declaration"].clone())
}

/// What `lbdesk render` makes of the objects now in the management cluster, for the tenant of
/// `scope`.
async fn rendered(w: &World, scope: Scope) -> serde_json::Value {
    let objects = server::render::Objects {
        loadbalancers: w.lbs.list(&ListParams::default()).await.expect("lbs").items,
        tickets: w.tickets.list(&ListParams::default()).await.expect("tickets").items,
        rules: Api::<Lbrule>::all(w.mgmt.clone()).list(&ListParams::default()).await.expect("rules").items,
    };
    server::render::declarations(&objects).expect("renders")[&format!("{CLUSTER}/{}", scope.tenant)].clone()
}

/// The labels of the Service `name` of the namespace of `scope`.
async fn service_labels(member: &Client, scope: Scope, name: &str) -> BTreeMap<String, String> {
    let svcs: Api<Service> = Api::namespaced(member.clone(), scope.namespace);
    svcs.get(name).await.expect("service").labels().clone()
}

async fn namespace_labels(member: &Client, scope: Scope) -> BTreeMap<String, String> {
    Api::<Namespace>::all(member.clone()).get(scope.namespace).await.expect("namespace").labels().clone()
}

/// The pairs of load balancer `lb`, from its address objects: each VE address with its LTM
/// partner (the same ticket, the same state, pointing back), and no half pair.
async fn pairs(lbs: &Api<Loadbalancer>, lb: &str) -> Vec<(String, String, String, BondState)> {
    let addresses: Api<Lbaddress> = Api::all(lbs.clone().into_client());
    let selector = format!("ebcpaas.io/loadbalancer={lb}");
    let all = addresses.list(&ListParams::default().labels(&selector)).await.expect("list").items;
    let (ve, ltm): (Vec<_>, Vec<_>) = all.into_iter().partition(|a| a.spec.side == Side::Ve);
    assert_eq!(ve.len(), ltm.len(), "no half pair: {ve:?} {ltm:?}");
    for v in &ve {
        let half = |l: &&Lbaddress| {
            (&l.spec.address, &l.spec.partner, &l.spec.ticket, l.spec.state)
                == (&v.spec.partner, &v.spec.address, &v.spec.ticket, v.spec.state)
        };
        assert!(ltm.iter().any(|l| half(&l)), "{v:?} has its LTM half");
    }
    let mut p: Vec<_> = ve.into_iter().map(|a| (a.spec.ticket, a.spec.address, a.spec.partner, a.spec.state)).collect();
    p.sort();
    p
}

async fn set_state(tickets: &Api<Lbticket>, name: &str, state: &str) {
    tickets
        .patch(name, &PatchParams::default(), &Patch::Merge(json!({"spec": {"state": state}})))
        .await
        .expect("state");
}

/// How the tests' own reconcilers of `lbdesk` run: the default ingress class and retry ceiling,
/// no ensure pass meanwhile, its BIG-IP simulator read back every two seconds.
fn config(lbdesk: &Lbdesk) -> reconciler::Config {
    reconciler::Config {
        ensure_every: Duration::from_secs(300),
        ingress_class: app::domain::cis_ingress::DEFAULT_CLASS.into(),
        retry_ceiling: Duration::from_secs(60),
        bigip_every: Duration::from_secs(2),
        bigip_url: Some(lbdesk.bigip.1.clone()),
    }
}

/// A reconciler of `lbdesk`'s clusters on a task of its own, calling `driver` and halting at
/// `crash`; the test aborts the task as a process dying would end.
fn start_reconciler(lbdesk: &Lbdesk, driver: DriverClient, crash: Option<Arc<Crash>>) -> JoinHandle<()> {
    let ctx = reconciler::Context::new(lbdesk.clusters.clone(), driver, config(lbdesk));
    let run = reconciler::controllers::run(Arc::new(ctx), std::future::pending());
    match crash {
        Some(crash) => tokio::spawn(crash.during(run)),
        None => tokio::spawn(run),
    }
}

fn options() -> Options {
    Options {
        driver: Behaviour {
            deny: vec![Deny {
                cidr: Some("20.1.0.128/25".into()),
                message: "the payment zone is closed".into(),
                ..Default::default()
            }],
            ..Default::default()
        },
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ticket_goes_through_its_whole_life() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let w = world(&lbdesk).await;
    crate::user::own_namespace(&lbdesk, "acp-region01", "project-a", LIFE.namespace).await;
    w.lbs.create(&PostParams::default(), &own_loadbalancer(LIFE, "20.1.0.0/24", &[])).await.expect("lb");

    // A refused policy: Failed with the driver's message; the edit that fixes it reaches Enabled.
    w.tickets.create(&PostParams::default(), &ticket_in(LIFE, "life", Some("20.1.0.200"), true)).await.expect("ticket");
    wait_phase(&w.tickets, "life", Phase::Failed).await;
    let failed = w.tickets.get("life").await.expect("ticket").status.expect("status");
    assert_eq!(failed.message, "the payment zone is closed");
    w.tickets
        .patch("life", &PatchParams::default(), &Patch::Merge(json!({"spec": {"veip": "20.1.0.20"}})))
        .await
        .expect("edit");
    wait_phase(&w.tickets, "life", Phase::Enabled).await;
    let enabled = w.tickets.get("life").await.expect("ticket").status.expect("status");
    assert_eq!(enabled.veip.as_deref(), Some("20.1.0.20"));
    let phases: Vec<Phase> = enabled.history.iter().map(|h| h.phase).collect();
    assert_eq!(phases, [Phase::Created, Phase::Failed, Phase::Created, Phase::Enabled]);
    assert_eq!(pairs(&w.lbs, LIFE.lb).await, [("life".into(), "20.1.0.20".into(), "10.0.0.1".into(), BondState::Bond)]);

    // Enabled: the ConfigMap is what `lbdesk render` gives for the same objects.
    until("the ConfigMap", 10, || async { deployed(&w.member, LIFE).await.is_some() }).await;
    until("the declaration to equal render's", 10, || async {
        deployed(&w.member, LIFE).await == Some(rendered(&w, LIFE).await)
    })
    .await;
    // NB: a sync labels the Services and namespaces before it writes the ConfigMap, so CIS finds
    // the pool's members with the first declaration naming the pool.
    let labels = service_labels(&w.member, LIFE, "web-v1").await;
    assert_eq!(labels.get("cis.f5.com/as3-pool").map(String::as_str), Some("web-v1_8080_pool"), "{labels:?}");
    let labels = namespace_labels(&w.member, LIFE).await;
    assert_eq!(labels.get("zone").map(String::as_str), Some("f5"), "{labels:?}");
    // What CIS will post (issue #24): the ConfigMap is read (its namespace is labelled), the
    // pools are filled from the Endpoints, and the declaration is valid under CIS's schema.
    let cis = crate::cis::readme_args(&BTreeMap::from([("zone".to_string(), "f5".to_string())]));
    let pools = ["web-v1_8080_pool", "web-v2_8080_pool"];
    until("CIS to post the listener with its members", 10, || async {
        let posted = crate::cis::posted(&w.member, &cis).await;
        crate::cis::carries_listener(&posted, "life", "life_http_app", "vs_life_80", &pools)
    })
    .await;

    // Disabled: withdrawn, addresses kept.
    w.tickets
        .patch("life", &PatchParams::default(), &Patch::Merge(json!({"spec": {"listeners": null}})))
        .await
        .expect("no listeners");
    set_state(&w.tickets, "life", "Disabled").await;
    wait_phase(&w.tickets, "life", Phase::Disabled).await;
    until("the tenant to be empty", 10, || async {
        deployed(&w.member, LIFE).await.is_some_and(|d| d["life"] == json!({"class": "Tenant"}))
    })
    .await;
    let posted = crate::cis::posted(&w.member, &cis).await;
    assert_eq!(
        posted.tenant("life"),
        Some(&json!({"class": "Tenant", "defaultRouteDomain": 0})),
        "CIS posts the emptied tenant, which withdraws it from BIG-IP"
    );
    until("labels to go", 10, || async {
        !service_labels(&w.member, LIFE, "web-v1").await.contains_key("cis.f5.com/as3-pool")
            && !namespace_labels(&w.member, LIFE).await.contains_key("zone")
    })
    .await;
    assert_eq!(pairs(&w.lbs, LIFE.lb).await.len(), 1, "the pair is kept while Disabled");

    // Active again, then listeners back: regenerated.
    set_state(&w.tickets, "life", "Active").await;
    wait_phase(&w.tickets, "life", Phase::Enabled).await;
    let mut with_listener = ticket_in(LIFE, "life", None, true);
    with_listener.spec.veip = Some("20.1.0.20".into());
    w.tickets
        .patch(
            "life",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"listeners": with_listener.spec.listeners}})),
        )
        .await
        .expect("listener");
    until("regenerated", 10, || async {
        service_labels(&w.member, LIFE, "web-v2").await.contains_key("cis.f5.com/as3-pool")
    })
    .await;

    // Deleted (from Disabled): the pair is back, the policy revoked once per record.
    w.tickets
        .patch("life", &PatchParams::default(), &Patch::Merge(json!({"spec": {"listeners": null}})))
        .await
        .expect("no listeners");
    set_state(&w.tickets, "life", "Disabled").await;
    wait_phase(&w.tickets, "life", Phase::Disabled).await;
    set_state(&w.tickets, "life", "Deleted").await;
    wait_phase(&w.tickets, "life", Phase::Deleted).await;
    assert!(pairs(&w.lbs, LIFE.lb).await.is_empty(), "the pair is released");
    let revokes: Vec<String> = lbdesk
        .simulator
        .calls()
        .into_iter()
        .filter(|c| c.hook == Hook::RevokeNetworkPolicy && c.ticket == "life")
        .map(|c| c.record_id)
        .collect();
    assert!(!revokes.is_empty());
    let distinct: BTreeSet<&String> = revokes.iter().collect();
    assert_eq!(distinct.len(), 1, "one revocation, retried only with its own recordID: {revokes:?}");
    assert!(w.tickets.get("life").await.is_ok(), "the ticket stays as a record");
}

/// Everything the end state is judged on.
async fn versions(w: &World) -> (String, String) {
    let a = Api::<Namespace>::all(w.mgmt.clone()).list(&ListParams::default().limit(1)).await.expect("list");
    let b = Api::<Namespace>::all(w.member.clone()).list(&ListParams::default().limit(1)).await.expect("list");
    (a.metadata.resource_version.unwrap_or_default(), b.metadata.resource_version.unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_delete_cleans_up_and_a_protected_loadbalancer_stays() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let w = world(&lbdesk).await;
    crate::user::own_namespace(&lbdesk, "acp-region01", "project-a", KEPT.namespace).await;
    let mut lb = own_loadbalancer(KEPT, "20.63.0.0/24", &[]);
    lb.metadata.labels = Some([(app::domain::crd::LABEL_DO_NOT_DELETE.to_string(), "true".to_string())].into());
    w.lbs.create(&PostParams::default(), &lb).await.expect("lb");
    w.tickets.create(&PostParams::default(), &ticket_in(KEPT, "kept", None, true)).await.expect("ticket");
    wait_phase(&w.tickets, "kept", Phase::Enabled).await;
    until("the listener deployed", 10, || async {
        deployed(&w.member, KEPT).await.is_some_and(|d| d["kept"].get("kept_http_app").is_some())
    })
    .await;

    // Admission refuses deleting a request that is not Disabled.
    assert!(w.tickets.delete("kept", &DeleteParams::default()).await.is_err());
    w.tickets
        .patch("kept", &PatchParams::default(), &Patch::Merge(json!({"spec": {"listeners": null}})))
        .await
        .expect("no listeners");
    set_state(&w.tickets, "kept", "Disabled").await;
    wait_phase(&w.tickets, "kept", Phase::Disabled).await;
    w.tickets.delete("kept", &DeleteParams::default()).await.expect("delete");
    until("the ticket gone", 20, || async { w.tickets.get_opt("kept").await.expect("get").is_none() }).await;
    assert!(pairs(&w.lbs, KEPT.lb).await.is_empty(), "the pair is released");
    assert_eq!(
        deployed(&w.member, KEPT).await.map(|d| d["kept"].clone()),
        Some(json!({"class": "Tenant"})),
        "withdrawn"
    );
    assert!(!service_labels(&w.member, KEPT, "web-v1").await.contains_key("cis.f5.com/as3-pool"));
    assert!(
        lbdesk.simulator.calls().iter().any(|c| c.hook == Hook::RevokeNetworkPolicy && c.ticket == "kept"),
        "the policy is revoked"
    );

    let refused = w.lbs.delete(KEPT.lb, &DeleteParams::default()).await.expect_err("admission refuses");
    assert!(refused.to_string().contains("labelled ebcpaas.io/do-not-delete"), "{refused}");
    let kept = w.lbs.get(KEPT.lb).await.expect("a do-not-delete Loadbalancer stays");
    assert!(kept.metadata.deletion_timestamp.is_none());
    assert!(kept.finalizers().iter().any(|f| f == reconciler::FINALIZER), "and its finalizer would hold it too");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconciler_returns_when_told_to_stop_and_runs_again_on_the_same_context() {
    let lbdesk = spawn_lbdesk_with(Backend::Sqlite, Options { reconciler: false, ..options() }).await;
    let w = world(&lbdesk).await;
    w.lbs.create(&PostParams::default(), &loadbalancer("20.1.0.0/24", &[])).await.expect("lb");
    let ctx = Arc::new(reconciler::Context::new(lbdesk.clusters.clone(), lbdesk.driver.clone(), config(&lbdesk)));
    for term in ["first", "second"] {
        // As a leader would: run while holding the lease, stop when it is lost, win it back.
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let run = tokio::spawn(reconciler::controllers::run(ctx.clone(), async move {
            let _ = stopped.await;
        }));
        w.tickets.create(&PostParams::default(), &ticket(term, None, false)).await.expect("ticket");
        wait_phase(&w.tickets, term, Phase::Enabled).await;
        stop.send(()).expect("the run listens");
        tokio::time::timeout(Duration::from_secs(10), run)
            .await
            .unwrap_or_else(|_| panic!("the {term} run returns within 10 s of being told to stop"))
            .expect("the run ends without a panic");
    }
    let before = versions(&w).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(versions(&w).await, before, "nothing reconciles once stopped");
}
