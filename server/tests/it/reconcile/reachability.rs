//! A member cluster that cannot be reached shows on the load balancers that use it (with why,
//! for the admin) and on their requests (without the details, for the tenant), and in the
//! metrics.

use std::sync::Arc;

use app::domain::crd::{CONDITION_REACHABLE, Loadbalancer, Phase};
use app::screens::loadbalancers::LbRow;
use app::screens::tickets::TicketDetail;
use app::ssr::clusters::{Clusters, KEEP_IDLE};
use kube::api::{Api, PostParams};
use server::reconciler;

use super::{config, ticket, wait_phase, world};
use crate::helpers::{Backend, Options, signed_in, spawn_lbdesk_with, until};

fn far_lb() -> Loadbalancer {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "ebcpaas.io/v1", "kind": "Loadbalancer", "metadata": {"name": "far"},
        "spec": {
            "ltm": {"url": "http://100.1.44.1/api", "tokenSecretRef": {"namespace": "lbdesk-system", "name": "far-ltm"}, "cidr": "10.44.0.0/24"},
            "ve": {"addr": "200.1.44.1", "credentialsSecretRef": {"namespace": "lbdesk-system", "name": "far-ve"}, "cidr": "20.44.0.0/24"},
            "cluster": "acp-region02", "partition": "far", "cis": {"namespace": "kube-system"}
        }
    }))
    .expect("lb")
}

/// A server function's answer, called as a signed-in browser would.
pub(super) async fn call<T: serde::de::DeserializeOwned>(
    http: &reqwest::Client,
    url: &str,
    path: &str,
    args: serde_json::Value,
) -> T {
    let res = http.post(format!("{url}/api/{path}")).header("origin", url).json(&args).send().await.expect("request");
    assert!(res.status().is_success(), "{path}: {}", res.status());
    res.json().await.expect("json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_member_cluster_shows_on_its_load_balancers_and_requests() {
    let lbdesk = spawn_lbdesk_with(Backend::Sqlite, Options { reconciler: false, ..Default::default() }).await;
    let w = world(&lbdesk).await;
    // lbdesk's own kubeconfig, with acp-region02 behind a port nothing listens on.
    let mut kubeconfig = lbdesk.kubeconfig.clone();
    let own = lbdesk.db.setting("embedded_lbdesk_token").await.expect("read").expect("a token");
    kubeconfig["users"][0]["user"]["token"] = serde_json::json!(own);
    for cluster in kubeconfig["clusters"].as_array_mut().expect("clusters") {
        if cluster["name"] == "acp-region02" {
            cluster["cluster"]["server"] = serde_json::json!("https://127.0.0.1:1");
        }
    }
    let parsed = app::ssr::clusters::parse_kubeconfig(&kubeconfig).expect("kubeconfig");
    let clusters = Clusters::from_kubeconfig(parsed, "mgmt", KEEP_IDLE).await.expect("clusters");
    let ctx = Arc::new(reconciler::Context::new(clusters, lbdesk.driver.clone(), config(&lbdesk)));
    let run = tokio::spawn(reconciler::controllers::run(ctx.clone(), std::future::pending()));

    w.lbs.create(&PostParams::default(), &far_lb()).await.expect("lb");
    let mut far = ticket("far-1", None, false);
    far.spec.loadbalancer = "far".into();
    w.tickets.create(&PostParams::default(), &far).await.expect("ticket");
    wait_phase(&w.tickets, "far-1", Phase::Enabled).await;
    let lbs: Api<Loadbalancer> = Api::all(w.mgmt.clone());
    until("the load balancer says its cluster is unreachable", 30, || async {
        lbs.get("far").await.ok().is_some_and(|lb| lb.unreachable().is_some())
    })
    .await;
    let why = lbs.get("far").await.expect("lb").unreachable().map(String::from).unwrap_or_default();
    assert!(!why.is_empty(), "the admin is told why");
    let metrics = ctx.metrics.render();
    assert!(metrics.lines().any(|l| l == r#"lbdesk_member_cluster_reachable{cluster="acp-region02"} 0"#), "{metrics}");

    let admin = signed_in(&lbdesk, "admin").await;
    let rows: Vec<LbRow> = call(&admin, &lbdesk.url, "lb/list", serde_json::json!({"search": "far"})).await;
    assert_eq!(rows.iter().find(|r| r.name == "far").and_then(|r| r.unreachable.clone()), Some(why.clone()));
    let detail: TicketDetail = call(&admin, &lbdesk.url, "ticket/get", serde_json::json!({"name": "far-1"})).await;
    let shown = detail.conditions.iter().find(|c| c.type_ == CONDITION_REACHABLE).expect("shown on the request");
    assert_eq!(shown.status, "False");
    assert!(shown.message.contains("acp-region02") && !shown.message.contains("127.0.0.1"), "{}", shown.message);
    run.abort();
}
