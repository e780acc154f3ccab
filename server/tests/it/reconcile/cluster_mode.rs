//! Cluster mode as in production, against the embedded API used as if it were a real cluster:
//! the management cluster from a kubeconfig `lbdesk kubeconfig` prints, each member cluster
//! from a Secret that registers it (picked up, changed and removed without a restart), the
//! admission webhook over HTTPS, and the metrics Prometheus would scrape.

use app::domain::crd::{CONDITION_REACHABLE, Loadbalancer, Phase};
use app::screens::loadbalancers::LbChoices;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use serde_json::{Value, json};

use super::metrics::{sample, scrape};
use super::{CLUSTER, DEMO, deployed, loadbalancer, ticket, wait_phase};
use crate::helpers::{signed_in_at, until};
use crate::processes::{Outside, on_free_ports};
use crate::web_tls::certificate;

/// The Secret registering `CLUSTER` with `kubeconfig`.
fn registration(kubeconfig: &[u8]) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(CLUSTER.into()),
            namespace: Some("lbdesk-system".into()),
            labels: Some([("ebcpaas.io/cluster".to_string(), CLUSTER.to_string())].into()),
            ..Default::default()
        },
        data: Some([("kubeconfig".to_string(), ByteString(kubeconfig.to_vec()))].into()),
        ..Default::default()
    }
}

/// The load balancer's `MemberClusterReachable` condition: its status and message.
async fn reachable(lbs: &Api<Loadbalancer>) -> Option<(String, String)> {
    let lb = lbs.get("demo").await.ok()?;
    let status = lb.status?;
    let c = status.conditions.into_iter().find(|c| c.type_ == CONDITION_REACHABLE)?;
    Some((c.status, c.message))
}

async fn clusters_offered(admin: &reqwest::Client, url: &str) -> Vec<String> {
    let Ok(res) = admin.post(format!("{url}/api/lb/choices")).header("origin", url).json(&json!({})).send().await
    else {
        return Vec::new();
    };
    res.json::<LbChoices>().await.map(|c| c.clusters).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_mode_follows_member_cluster_secrets_and_serves_the_webhook_and_metrics() {
    let temp = tempfile::tempdir().expect("temporary directory");
    let dir = temp.path();
    let outside = Outside::start(dir, None).await;
    let member_kubeconfig = outside.kubeconfig_of(Some(CLUSTER));
    let ca = certificate(dir);
    let args = |[port, hook, metrics]: [u16; 3]| {
        let mut args = outside.cluster_mode("lbdesk", None, (port, metrics));
        args.extend([
            "--demo".to_string(),
            format!("--webhook-listen=127.0.0.1:{hook}"),
            format!("--webhook-cert={}", dir.join("cert.pem").display()),
            format!("--webhook-key={}", dir.join("key.pem").display()),
        ]);
        args
    };
    let (_lbdesk, [port, hook, metrics]) =
        on_free_ports(dir, "lbdesk", 60, args, |[port, ..]| format!("http://127.0.0.1:{port}/readyz")).await;
    let url = format!("http://127.0.0.1:{port}");
    let metrics_url = format!("http://127.0.0.1:{metrics}");
    let admin = signed_in_at(&url, "admin").await;
    assert_eq!(clusters_offered(&admin, &url).await, Vec::<String>::new(), "no member cluster registered yet");

    // A load balancer on a cluster no Secret registers says so.
    let mgmt = outside.mgmt().await;
    let lbs: Api<Loadbalancer> = Api::all(mgmt.clone());
    lbs.create(&PostParams::default(), &loadbalancer("20.1.0.0/24", &[])).await.expect("lb");
    until("the load balancer says its cluster is not registered", 30, || async {
        reachable(&lbs).await.is_some_and(|(s, m)| s == "False" && m.contains("no member cluster acp-region01"))
    })
    .await;

    // The Secret registers it: offered by the form, reached by the syncer, placed in.
    let secrets: Api<Secret> = Api::namespaced(mgmt.clone(), "lbdesk-system");
    secrets.create(&PostParams::default(), &registration(&member_kubeconfig)).await.expect("secret");
    until("the form offers the registered cluster", 30, || async {
        clusters_offered(&admin, &url).await == vec![CLUSTER.to_string()]
    })
    .await;
    let tickets = Api::all(mgmt.clone());
    tickets.create(&PostParams::default(), &ticket("outside-1", None, true)).await.expect("ticket");
    wait_phase(&tickets, "outside-1", Phase::Enabled).await;
    let kc = kube::config::Kubeconfig::from_yaml(std::str::from_utf8(&member_kubeconfig).expect("text")).expect("kc");
    let member =
        kube::Client::try_from(kube::Config::from_custom_kubeconfig(kc, &Default::default()).await.expect("config"))
            .expect("client");
    until("the listener placed in the member cluster", 30, || async {
        deployed(&member, DEMO).await.is_some_and(|d| d.to_string().contains("outside-1"))
    })
    .await;
    until("the load balancer says its cluster is reached", 30, || async {
        reachable(&lbs).await.is_some_and(|(s, _)| s == "True")
    })
    .await;

    // The webhook, over HTTPS, refuses what the pages grey out.
    let old = serde_json::to_value(tickets.get("outside-1").await.expect("ticket")).expect("json");
    let mut moved = old.clone();
    moved["spec"]["veip"] = json!("20.1.0.99");
    let https = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(ca.as_bytes()).expect("pem"))
        .build()
        .expect("client");
    let answer: Value = https
        .post(format!("https://127.0.0.1:{hook}/validate"))
        .json(&super::webhook::review(&old, &moved))
        .send()
        .await
        .expect("the webhook answers")
        .json()
        .await
        .expect("json");
    assert_eq!(answer["response"]["allowed"], false, "{answer}");

    // What Prometheus scrapes counts what happened.
    let text = scrape(&metrics_url).await;
    assert_eq!(sample(&text, "lbdesk_leader"), Some(1.0), "{text}");
    assert!(
        sample(&text, r#"lbdesk_reconciles_total{kind="lbticket",result="ok"}"#).is_some_and(|n| n >= 1.0),
        "{text}"
    );
    assert!(sample(&text, r#"lbdesk_reconciles_total{kind="sync",result="ok"}"#).is_some_and(|n| n >= 1.0), "{text}");
    assert!(
        sample(&text, r#"lbdesk_driver_calls_total{hook="request",status="succ"}"#).is_some_and(|n| n >= 1.0),
        "{text}"
    );
    assert_eq!(sample(&text, &format!(r#"lbdesk_member_cluster_reachable{{cluster="{CLUSTER}"}}"#)), Some(1.0));
    until("the pair counted", 10, || async {
        sample(&scrape(&metrics_url).await, r#"lbdesk_pairs{loadbalancer="demo",state="used"}"#) == Some(1.0)
    })
    .await;

    // A Secret changed to hold no kubeconfig: the load balancer says why, without a restart.
    let mut broken = secrets.get(CLUSTER).await.expect("secret");
    broken.data = Some([("kubeconfig".to_string(), ByteString(b"clusters: [".to_vec()))].into());
    secrets.replace(CLUSTER, &PostParams::default(), &broken).await.expect("changed");
    until("the load balancer says the Secret is unusable", 30, || async {
        reachable(&lbs).await.is_some_and(|(s, m)| s == "False" && m.contains("is not a kubeconfig"))
    })
    .await;
    assert_eq!(clusters_offered(&admin, &url).await, Vec::<String>::new(), "an unusable cluster is not offered");
    // NB: the gauge is set beside the status, not before it: waited for too.
    until("the gauge says unreachable", 10, || async {
        let scraped = scrape(&metrics_url).await;
        sample(&scraped, &format!(r#"lbdesk_member_cluster_reachable{{cluster="{CLUSTER}"}}"#)) == Some(0.0)
    })
    .await;

    // Mended, then removed: followed both ways.
    let mut mended = secrets.get(CLUSTER).await.expect("secret");
    mended.data = registration(&member_kubeconfig).data;
    secrets.replace(CLUSTER, &PostParams::default(), &mended).await.expect("mended");
    until("reached again", 30, || async { reachable(&lbs).await.is_some_and(|(s, _)| s == "True") }).await;
    secrets.delete(CLUSTER, &DeleteParams::default()).await.expect("removed");
    until("the load balancer says its cluster is gone", 30, || async {
        reachable(&lbs).await.is_some_and(|(s, m)| s == "False" && m.contains("no member cluster acp-region01"))
    })
    .await;
    assert_eq!(clusters_offered(&admin, &url).await, Vec::<String>::new(), "a removed cluster is not offered");
    let log = std::fs::read_to_string(dir.join("lbdesk.log")).unwrap_or_default();
    assert!(!log.contains("panicked"), "lbdesk panicked:\n{log}");
}
