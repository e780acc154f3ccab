//! Quotas exact under concurrency, across replicas: parallel writers against a project's quota
//! get exactly what it allows, because admission charges each write to the quota's status with a
//! compare-and-swap (as Kubernetes' ResourceQuota admission does), in one process and across
//! webhook replicas alike.

use app::domain::crd::{Lbquota, Lbticket};
use kube::Api;
use kube::api::{ListParams, PostParams};
use serde_json::{Value, json};

use crate::helpers::{Backend, Options, TestDb, spawn_lbdesk_with, until};
use crate::on_both_databases;
use crate::processes::{Outside, on_free_ports};
use crate::web_tls::certificates;

on_both_databases!(parallel_creates_against_a_quota_of_two_admit_exactly_two);

/// Requests written at once.
const WRITERS: usize = 30;

/// Project-a's request `name` for an address of the demo's `shared-lb`.
fn request(name: &str) -> Value {
    json!({
        "apiVersion": "ebcpaas.io/v1", "kind": "Lbticket",
        "metadata": {"name": name, "labels": {"ebcpaas.io/project": "project-a", "ebcpaas.io/cluster": "acp-region01", "ebcpaas.io/namespace": "team-a"}},
        "spec": {"claimer": "alice", "loadbalancer": "shared-lb", "namespace": "team-a"},
    })
}

fn quota_of_two() -> Lbquota {
    serde_json::from_value(json!({
        "apiVersion": "ebcpaas.io/v1", "kind": "Lbquota", "metadata": {"name": "project-a"},
        "spec": {"addressesPerLoadbalancer": 2},
    }))
    .expect("a quota")
}

async fn parallel_creates_against_a_quota_of_two_admit_exactly_two(backend: Backend) {
    let lbdesk = spawn_lbdesk_with(backend, Options { reconciler: false, ..Options::default() }).await;
    let mgmt = lbdesk.client("mgmt").await;
    Api::<Lbquota>::all(mgmt.clone()).create(&PostParams::default(), &quota_of_two()).await.expect("the quota");
    let tickets: Api<Lbticket> = Api::all(mgmt.clone());
    let creates = (0..WRITERS).map(|i| {
        let tickets = tickets.clone();
        async move {
            let t: Lbticket = serde_json::from_value(request(&format!("racer-{i:02}"))).expect("a request");
            tickets.create(&PostParams::default(), &t).await
        }
    });
    let answers = futures::future::join_all(creates).await;
    let admitted = answers.iter().filter(|a| a.is_ok()).count();
    for refused in answers.iter().filter_map(|a| a.as_ref().err()) {
        let said = refused.to_string();
        assert!(said.contains("quota is 2 address requests on load balancer shared-lb"), "{said}");
    }
    assert_eq!(admitted, 2, "{WRITERS} parallel creates against a quota of 2");
    let stored = tickets.list(&ListParams::default()).await.expect("list").items;
    assert_eq!(stored.iter().filter(|t| t.spec.loadbalancer == "shared-lb").count(), 2, "stored: exactly 2");
    let quota = Api::<Lbquota>::all(mgmt).get("project-a").await.expect("the quota");
    let used = quota.status.expect("admission's record").used;
    assert_eq!(used.addresses.get("shared-lb"), Some(&2), "status.used says what was admitted");
}

/// A CREATE of `object` by kubectl's admin, as the API server sends it to the webhook; a dry
/// run when `dry_run`.
fn create_review(uid: usize, object: &Value, dry_run: bool) -> Value {
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": format!("00000000-0000-4000-8000-{uid:012}"),
            "kind": {"group": "ebcpaas.io", "version": "v1", "kind": "Lbticket"},
            "resource": {"group": "ebcpaas.io", "version": "v1", "resource": "lbtickets"},
            "name": object["metadata"]["name"],
            "operation": "CREATE",
            "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters"]},
            "object": object,
            "dryRun": dry_run
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_webhook_replicas_charging_one_quota_admit_exactly_two() {
    let db = TestDb::new(Backend::Postgres).await;
    let dir = db.dir.path();
    let outside = Outside::start(dir, Some(&db.url)).await;
    let mgmt = outside.mgmt().await;
    Api::<Lbquota>::all(mgmt.clone()).create(&PostParams::default(), &quota_of_two()).await.expect("the quota");
    let certs = certificates("quota_replicas");
    let ca = std::fs::read_to_string(certs.join("ca.pem")).expect("the CA");
    let mut replicas = Vec::new();
    for i in 0..2 {
        let name = format!("replica-{i}");
        let args = |[port, metrics, hook]: [u16; 3]| {
            let mut args = outside.cluster_mode(&name, Some(&db.url), (port, metrics));
            args.push("--no-reconciler".into());
            args.push(format!("--webhook-listen=127.0.0.1:{hook}"));
            args.push(format!("--webhook-cert={}", certs.join("cert.pem").display()));
            args.push(format!("--webhook-key={}", certs.join("key.pem").display()));
            args
        };
        let (replica, [_, _, hook]) =
            on_free_ports(dir, &name, 60, args, |[port, ..]| format!("http://127.0.0.1:{port}/readyz")).await;
        replicas.push((replica, format!("https://127.0.0.1:{hook}/validate")));
    }
    let client = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(ca.as_bytes()).expect("pem"))
        .build()
        .expect("client");
    // NB: a dry run is checked, never charged: the replicas' caches are ready before the race.
    for (_, url) in &replicas {
        until("the webhook answers", 30, || async {
            let review = create_review(999, &request("probe"), true);
            let answer = client.post(url).json(&review).send().await;
            answer.is_ok_and(|a| a.status().is_success())
        })
        .await;
    }
    let reviews = (0..WRITERS).map(|i| {
        let (client, url) = (client.clone(), replicas[i % 2].1.clone());
        async move {
            let review = create_review(i, &request(&format!("racer-{i:02}")), false);
            let answer: Value = client.post(&url).json(&review).send().await.expect("sent").json().await.expect("json");
            answer["response"]["allowed"].as_bool().unwrap_or(false)
        }
    });
    let allowed = futures::future::join_all(reviews).await.into_iter().filter(|a| *a).count();
    assert_eq!(allowed, 2, "{WRITERS} creates reviewed at once by two replicas against a quota of 2");
    drop(replicas);
}
