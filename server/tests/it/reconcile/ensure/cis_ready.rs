//! `CisReady`: lbdesk reads the CIS Deployment of each load balancer's member cluster and
//! says, on the load balancer, its list row, its requests and in the metrics, when CIS's
//! arguments would keep what lbdesk writes from BIG-IP (issue #24).

use app::domain::crd::{CONDITION_CIS_READY, Condition, Loadbalancer, Phase};
use app::screens::loadbalancers::LbRow;
use app::screens::tickets::TicketDetail;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;

use super::super::metrics::scrape;
use super::super::reachability::call;
use super::super::{Scope, own_loadbalancer, ticket_in, wait_phase, world};
use super::LBDESK;
use crate::helpers::{Backend, signed_in, until};

/// A load balancer of the test's own whose CIS is the simulated one of acp-region01 (in
/// kube-system), which no other test here reads.
const READY: Scope = Scope { lb: "ready", tenant: "ready", namespace: "ready", cis: "kube-system" };

async fn cis_ready(lbs: &Api<Loadbalancer>) -> Option<Condition> {
    let lb = lbs.get(READY.lb).await.ok()?;
    lb.status?.conditions.into_iter().find(|c| c.type_ == CONDITION_CIS_READY)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cis_deployments_arguments_decide_cis_ready_and_a_change_shows_with_its_reason() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let w = world(&lbdesk).await;
    crate::user::own_namespace(&lbdesk, "acp-region01", "project-a", READY.namespace).await;
    // The namespace selector the embedded clusters' CIS is configured for (README).
    let mut lb = own_loadbalancer(READY, "20.76.0.0/24", &[]);
    lb.spec.nsselector = [("cis".to_string(), "shared".to_string())].into();
    w.lbs.create(&PostParams::default(), &lb).await.expect("lb");
    w.tickets.create(&PostParams::default(), &ticket_in(READY, "ready-web", None, false)).await.expect("ticket");
    wait_phase(&w.tickets, "ready-web", Phase::Enabled).await;
    until("CisReady True for the README's arguments", 20, || async {
        cis_ready(&w.lbs).await.is_some_and(|c| c.status == "True")
    })
    .await;

    // An operator switches CIS to per-tenant posts: F5 Ingresses would no longer be posted.
    let deployments: Api<Deployment> = Api::namespaced(w.member.clone(), "kube-system");
    let mut cis = deployments.get("k8s-bigip-ctlr").await.expect("the simulated CIS");
    let args: Vec<String> = app::domain::cis::args::README_ARGS
        .iter()
        .map(|a| if a.starts_with("--filter-tenants") { "--filter-tenants=true".to_string() } else { a.to_string() })
        .collect();
    let mut containers = cis.spec.template.spec.take().expect("a pod spec");
    containers.containers[0].args = Some(args);
    cis.spec.template.spec = Some(containers);
    deployments.replace("k8s-bigip-ctlr", &PostParams::default(), &cis).await.expect("replace");
    let said = "CIS in acp-region01 runs with --filter-tenants=true: F5 Ingresses will not be posted";
    until("CisReady False with the reason", 20, || async {
        cis_ready(&w.lbs).await.is_some_and(|c| c.status == "False" && c.message == said)
    })
    .await;
    let metrics = scrape(&lbdesk.metrics_url).await;
    assert!(metrics.lines().any(|l| l == r#"lbdesk_cis_ready{loadbalancer="ready"} 0"#), "{metrics}");
    let admin = signed_in(&lbdesk, "admin").await;
    let rows: Vec<LbRow> = call(&admin, &lbdesk.url, "lb/list", json!({"search": READY.lb})).await;
    assert_eq!(rows.iter().find(|r| r.name == READY.lb).and_then(|r| r.cis_not_ready.clone()).as_deref(), Some(said));
    let detail: TicketDetail = call(&admin, &lbdesk.url, "ticket/get", json!({"name": "ready-web"})).await;
    let shown = detail.conditions.iter().find(|c| c.type_ == CONDITION_CIS_READY).expect("shown on the request");
    assert!(shown.status == "False" && shown.message.contains(said), "{shown:?}");

    // Another namespace label than the load balancer's selector: CIS would not read the ConfigMap.
    let mut cis = deployments.get("k8s-bigip-ctlr").await.expect("the simulated CIS");
    if let Some(pod) = cis.spec.template.spec.as_mut() {
        pod.containers[0].args = Some(
            app::domain::cis::args::README_ARGS
                .iter()
                .map(|a| {
                    if a.starts_with("--namespace-label") { "--namespace-label=zone=f5".into() } else { a.to_string() }
                })
                .collect(),
        );
    }
    deployments.replace("k8s-bigip-ctlr", &PostParams::default(), &cis).await.expect("replace");
    until("the selector mismatch", 20, || async {
        cis_ready(&w.lbs).await.is_some_and(|c| c.status == "False" && c.message.contains("does not satisfy"))
    })
    .await;

    // No CIS at all is its own reason; the README's CIS again makes it ready.
    deployments.delete("k8s-bigip-ctlr", &DeleteParams::default()).await.expect("delete");
    until("no CIS found", 20, || async {
        cis_ready(&w.lbs).await.is_some_and(|c| c.status == "False" && c.reason == "CisNotFound")
    })
    .await;
    cis.metadata.resource_version = None;
    cis.metadata.uid = None;
    if let Some(pod) = cis.spec.template.spec.as_mut() {
        pod.containers[0].args = Some(app::domain::cis::args::README_ARGS.iter().map(|a| a.to_string()).collect());
    }
    deployments.create(&PostParams::default(), &cis).await.expect("create");
    until("ready again", 20, || async { cis_ready(&w.lbs).await.is_some_and(|c| c.status == "True") }).await;
}
