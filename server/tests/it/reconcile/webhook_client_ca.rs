//! The admission webhook with a client CA: only the API server (its client certificate) is
//! answered, and the writes it allows are audited once the watch shows them committed: once per
//! committed change, none for one it never stores.

use serde_json::{Value, json};

use super::webhook::{admission_entries, client, hooked, review, webhook};
use crate::helpers::{Backend, Options};
use crate::shared::Shared;
use crate::web_tls::certificates;

const MODULE: &str = "webhook_client_ca";

/// The module's lbdesk serves the webhook with a client CA, whose client certificate and key
/// are `client.pem` beside it.
static LBDESK: Shared = Shared::with(with_client_ca, false);

fn with_client_ca() -> Options {
    let dir = certificates(MODULE);
    let (client_ca, identity) = client_pki();
    std::fs::write(dir.join("client-ca.pem"), client_ca).expect("write");
    std::fs::write(dir.join("client.pem"), identity).expect("write");
    webhook(&dir, true)
}

/// A CA, and a client certificate it signs, as PEM: (CA, client certificate and key).
fn client_pki() -> (String, String) {
    use rcgen::{CertificateParams, DnType, KeyPair};
    let (ca_cert, issuer) = crate::web_tls::authority();
    let key = KeyPair::generate().expect("key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params.distinguished_name.push(DnType::CommonName, "kube-apiserver");
    let cert = params.signed_by(&key, &issuer).expect("certificate");
    (ca_cert.pem(), format!("{}{}", cert.pem(), key.serialize_pem()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_client_ca_the_webhook_answers_only_the_api_server_and_audits_its_reviews() {
    let ca = std::fs::read_to_string(certificates(MODULE).join("ca.pem")).expect("the CA");
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let identity = std::fs::read_to_string(certificates(MODULE).join("client.pem")).expect("the client's");
    let (url, old) = hooked(&lbdesk).await;
    let mut labelled = old.clone();
    labelled["metadata"]["annotations"] = json!({"note": "reviewed"});

    // A caller without the API server's client certificate gets no answer at all.
    let anonymous = client(&ca);
    assert!(anonymous.post(&url).json(&review(&old, &labelled)).send().await.is_err(), "refused in the handshake");
    let before = admission_entries(&lbdesk).await;

    // The API server (its client certificate) is answered, and what it allows is audited.
    let api_server = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(ca.as_bytes()).expect("pem"))
        .identity(reqwest::Identity::from_pem(identity.as_bytes()).expect("identity"))
        .build()
        .expect("client");
    // It may ask twice for one write (its own retry), and about a write it then does not store.
    for asked in [review(&old, &labelled), review(&old, &labelled), review(&old, &never_stored(&old))] {
        let answer: Value =
            api_server.post(&url).json(&asked).send().await.expect("answers").json().await.expect("json");
        assert_eq!(answer["response"]["allowed"], true, "{answer}");
    }
    assert_eq!(admission_entries(&lbdesk).await, before, "nothing is recorded before the write commits");
    // The API server stores the write it allowed: it is recorded once, with its version.
    let own: kube::Api<app::domain::crd::Lbticket> = kube::Api::all(lbdesk.clusters.mgmt().clone());
    let patch = json!({"metadata": {"annotations": {"note": "reviewed"}}});
    let stored = own.patch("hooked", &Default::default(), &kube::api::Patch::Merge(&patch)).await.expect("stored");
    crate::helpers::until("the committed write recorded", 10, || async {
        admission_entries(&lbdesk).await == before + 1
    })
    .await;
    let rv: Option<i64> =
        sqlx::query_scalar("SELECT rv FROM audit WHERE username = 'kubernetes-admin' ORDER BY at DESC LIMIT 1")
            .fetch_one(&lbdesk.db.pool)
            .await
            .expect("the entry");
    assert_eq!(rv.map(|v| v.to_string()), stored.metadata.resource_version, "the version the write committed");
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    assert_eq!(admission_entries(&lbdesk).await, before + 1, "once, and none for the write never stored");
}

/// `old` with an annotation the API server will never store.
fn never_stored(old: &Value) -> Value {
    let mut never = old.clone();
    never["metadata"]["annotations"] = json!({"note": "never stored"});
    never
}
