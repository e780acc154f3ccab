//! The admission webhook over HTTPS, as a real API server calls it: a greyed change is refused
//! with the same answer the embedded API gives in-process, an allowed one passes, and a renewed
//! certificate is served without a restart. (With a client CA: `webhook_client_ca`.)

use app::domain::crd::Phase;
use kube::api::PostParams;
use serde_json::{Value, json};
use server::config::WebhookArgs;

use super::{loadbalancer, ticket, wait_phase, world};
use crate::helpers::{Backend, Lbdesk, Options, until};
use crate::shared::Shared;
use crate::web_tls::{certificate, certificates};

/// The module's lbdesk serves the webhook with the certificate of `certificates("webhook")`.
static LBDESK: Shared = Shared::with(|| webhook(&certificates("webhook"), false), false);

/// lbdesk serving the webhook with the certificate of `dir` (and the client CA there, when
/// asked).
pub(super) fn webhook(dir: &std::path::Path, client_ca: bool) -> Options {
    let webhook = WebhookArgs {
        webhook_listen: Some("127.0.0.1:0".parse().expect("address")),
        webhook_cert: Some(dir.join("cert.pem")),
        webhook_key: Some(dir.join("key.pem")),
        webhook_client_ca: client_ca.then(|| dir.join("client-ca.pem")),
    };
    Options { webhook, ..Default::default() }
}

pub(super) fn review(old: &Value, new: &Value) -> Value {
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "0b9c4d1e-2f3a-4b5c-8d6e-7f8091a2b3c4",
            "kind": {"group": "ebcpaas.io", "version": "v1", "kind": "Lbticket"},
            "resource": {"group": "ebcpaas.io", "version": "v1", "resource": "lbtickets"},
            "name": old["metadata"]["name"],
            "operation": "UPDATE",
            "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters"]},
            "object": new,
            "oldObject": old,
            "dryRun": false
        }
    })
}

/// The audit entries of the user the reviews name.
pub(super) async fn admission_entries(lbdesk: &Lbdesk) -> i64 {
    sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM audit WHERE username = 'kubernetes-admin'")
        .fetch_one(&lbdesk.db.pool)
        .await
        .expect("count")
}

pub(super) fn client(ca: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(ca.as_bytes()).expect("pem"))
        .build()
        .expect("client")
}

/// The Enabled request `hooked` on `lbdesk`: the webhook's URL and the request as JSON.
pub(super) async fn hooked(lbdesk: &Lbdesk) -> (String, Value) {
    let w = world(lbdesk).await;
    w.lbs.create(&PostParams::default(), &loadbalancer("20.1.0.0/24", &[])).await.expect("lb");
    w.tickets.create(&PostParams::default(), &ticket("hooked", None, false)).await.expect("ticket");
    wait_phase(&w.tickets, "hooked", Phase::Enabled).await;
    let url = format!("https://{}/validate", lbdesk.webhook_addr.expect("the webhook listens"));
    let old = serde_json::to_value(w.tickets.get("hooked").await.expect("ticket")).expect("json");
    (url, old)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_webhook_refuses_a_greyed_change_over_https_and_follows_a_renewed_certificate() {
    let dir = certificates("webhook");
    let ca = std::fs::read_to_string(dir.join("ca.pem")).expect("the CA");
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let (url, old) = hooked(&lbdesk).await;
    let w = world(&lbdesk).await;
    let https = client(&ca);

    // Asking for another address once Enabled is greyed out on the page; the webhook says no.
    let mut moved = old.clone();
    moved["spec"]["veip"] = json!("20.1.0.99");
    let answer: Value =
        https.post(&url).json(&review(&old, &moved)).send().await.expect("answers").json().await.expect("json");
    let response = &answer["response"];
    assert_eq!(response["uid"], "0b9c4d1e-2f3a-4b5c-8d6e-7f8091a2b3c4", "{answer}");
    assert_eq!(response["allowed"], false, "{answer}");
    assert!(response["status"]["code"].as_u64().is_some_and(|c| (400..500).contains(&c)), "{answer}");
    assert!(
        response["status"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("Only a request that is Created or Failed can be edited")),
        "{answer}"
    );
    // The reason travels apart from the message too, as the Status's cause (a real API server
    // passes it on), for callers to read without parsing the message.
    let cause = &response["status"]["details"]["causes"][0];
    assert!(
        cause["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("Only a request that is Created or Failed can be edited")),
        "{answer}"
    );
    // What the embedded API answers in-process is the same refusal. NB: read again after a
    // conflict, as any client does: the reconciler may write the ticket's status meanwhile.
    let mut attempts = 0;
    let refused = loop {
        let mut ticket = w.tickets.get("hooked").await.expect("ticket");
        ticket.spec.veip = Some("20.1.0.99".into());
        match w.tickets.replace("hooked", &PostParams::default(), &ticket).await {
            Err(kube::Error::Api(e)) if e.code == 409 && attempts < 10 => attempts += 1,
            answer => break answer.expect_err("refused"),
        }
    };
    assert!(
        matches!(&refused, kube::Error::Api(e) if e.code == 403
            && response["status"]["message"].as_str().is_some_and(|m| e.message.ends_with(&format!("denied the request: {m}")))
            && e.details.as_ref().is_some_and(|d| d.causes.first().is_some_and(|c| cause["message"] == c.message.as_str()))),
        "{refused:?} vs {answer}"
    );

    // An allowed change passes; what is no review is a 400.
    let mut labelled = old.clone();
    labelled["metadata"]["annotations"] = json!({"note": "reviewed"});
    let answer: Value =
        https.post(&url).json(&review(&old, &labelled)).send().await.expect("answers").json().await.expect("json");
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    // NB: without --webhook-client-ca anyone reaching the webhook could name any user: an
    // allowed review is answered, and nothing is audited (issue #27).
    assert_eq!(admission_entries(&lbdesk).await, 0, "no audit entry from an unauthenticated review");
    let res = https.post(&url).body("{\"kind\": 1}").send().await.expect("answers");
    assert_eq!(res.status(), reqwest::StatusCode::BAD_REQUEST);

    // A renewed certificate (another CA) is served within seconds, without a restart.
    let renewed_dir = tempfile::tempdir().expect("temporary directory");
    let renewed_ca = certificate(renewed_dir.path());
    for file in ["key.pem", "cert.pem"] {
        std::fs::copy(renewed_dir.path().join(file), dir.join(file)).expect("renew");
    }
    let renewed = client(&renewed_ca);
    until("the renewed certificate", 15, || async {
        renewed.post(&url).json(&review(&old, &labelled)).send().await.is_ok()
    })
    .await;
    // NB: a new client: the old one's kept-alive connection was made before the renewal.
    let old_ca = client(&ca);
    assert!(old_ca.post(&url).json(&review(&old, &labelled)).send().await.is_err(), "the old certificate is gone");
}
