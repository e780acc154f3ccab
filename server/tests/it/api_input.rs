//! Bad requests to the embedded API get a `metav1.Status` naming the problem; nothing is stored.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{Backend, Lbdesk};
use crate::shared::Shared;

/// The module's lbdesk; the test writes in a namespace of its own.
static LBDESK: Shared = Shared::new();

fn http(lbdesk: &Lbdesk) -> (reqwest::Client, String, String) {
    use base64::Engine;
    let ca = lbdesk.kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"].as_str().expect("ca");
    let ca = base64::engine::general_purpose::STANDARD.decode(ca).expect("base64");
    let client = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&ca).expect("pem"))
        .build()
        .expect("client");
    let base = lbdesk.kubeconfig["clusters"][0]["cluster"]["server"].as_str().expect("server").to_string();
    let token = lbdesk.kubeconfig["users"][0]["user"]["token"].as_str().expect("token").to_string();
    (client, base, token)
}

async fn status_of(res: reqwest::Response) -> (StatusCode, Value) {
    let code = res.status();
    (code, res.json().await.expect("a Status body"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_bodies_get_a_status_and_store_nothing() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let (client, base, token) = http(&lbdesk);
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "api-input"}});
    let made = client.post(format!("{base}/api/v1/namespaces")).bearer_auth(&token).json(&namespace).send().await;
    assert_eq!(made.expect("request").status(), StatusCode::CREATED, "a namespace of its own");
    let url = format!("{base}/api/v1/namespaces/api-input/configmaps");
    let post = |body: Vec<u8>, content_type: &'static str| {
        client.post(&url).bearer_auth(&token).header("content-type", content_type).body(body).send()
    };
    let cm =
        |name: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}});
    let mut huge = cm("huge");
    huge["data"]["k"] = json!("x".repeat(1024 * 1024 + 1));
    let cases: Vec<(&str, Vec<u8>, StatusCode, &str)> = vec![
        ("malformed JSON", b"{\"apiVersion\": \"v1\",".to_vec(), StatusCode::BAD_REQUEST, "not valid JSON"),
        (
            "wrong kind",
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}}).to_string().into_bytes(),
            StatusCode::BAD_REQUEST,
            "this endpoint takes v1/ConfigMap",
        ),
        (
            "wrong apiVersion",
            json!({"apiVersion": "v2", "kind": "ConfigMap", "metadata": {"name": "x"}}).to_string().into_bytes(),
            StatusCode::BAD_REQUEST,
            "this endpoint takes v1/ConfigMap",
        ),
        ("name not DNS", cm("Not_A_Name").to_string().into_bytes(), StatusCode::UNPROCESSABLE_ENTITY, "metadata.name"),
        (
            "no name",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}).to_string().into_bytes(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "name or generateName is required",
        ),
        ("over 1 MiB", huge.to_string().into_bytes(), StatusCode::PAYLOAD_TOO_LARGE, "larger than"),
    ];
    for (what, body, want, message) in cases {
        let (code, status) = status_of(post(body, "application/json").await.expect("request")).await;
        assert_eq!(code, want, "{what}: {status}");
        assert_eq!(status["kind"], "Status", "{what}");
        assert_eq!(status["code"], want.as_u16(), "{what}");
        assert!(status["message"].as_str().is_some_and(|m| m.contains(message)), "{what}: {status}");
    }
    let (code, status) =
        status_of(post(cm("Not_A_Name").to_string().into_bytes(), "application/json").await.expect("request")).await;
    assert_eq!(
        (code, status["details"]["causes"][0]["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("metadata.name"))
    );
    let listed: Value = client.get(&url).bearer_auth(&token).send().await.expect("list").json().await.expect("json");
    assert_eq!(listed["items"].as_array().map(Vec::len), Some(0), "nothing was stored");

    let missing_ns = client
        .post(format!("{base}/api/v1/namespaces/nowhere/configmaps"))
        .bearer_auth(&token)
        .json(&cm("x"))
        .send()
        .await
        .expect("request");
    assert_eq!(status_of(missing_ns).await.0, StatusCode::NOT_FOUND);
    let created = post(cm("ok").to_string().into_bytes(), "application/json").await.expect("request");
    assert_eq!(created.status(), StatusCode::CREATED);
    let apply = client
        .patch(format!("{url}/ok"))
        .bearer_auth(&token)
        .header("content-type", "application/apply-patch+yaml")
        .body("data: {k: w}")
        .send()
        .await
        .expect("request");
    let (code, status) = status_of(apply).await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "an apply names its field manager: {status}");
    assert!(status.to_string().contains("fieldManager"), "{status}");
    let apply = client
        .patch(format!("{url}/ok?fieldManager=m"))
        .bearer_auth(&token)
        .header("content-type", "application/apply-patch+yaml")
        .body("- not an object")
        .send()
        .await
        .expect("request");
    assert_eq!(status_of(apply).await.0, StatusCode::BAD_REQUEST);
    let renamed = client.put(format!("{url}/ok")).bearer_auth(&token).json(&cm("other")).send().await.expect("request");
    assert_eq!(status_of(renamed).await.0, StatusCode::BAD_REQUEST);
    let anonymous = client.get(&url).send().await.expect("request");
    assert_eq!(status_of(anonymous).await.0, StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deeply_nested_apply_patch_is_refused_at_once_and_stalls_no_one() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let (client, base, token) = http(&lbdesk);
    // NB: the YAML parser gives up at 128 levels, but only after scanning in time that grows
    // with the square of the depth: 31.8 s for this, in a debug build.
    let deep = "{a: ".repeat(40_000);
    let url = format!("{base}/apis/coordination.k8s.io/v1/namespaces/default/leases/deep?fieldManager=probe");
    let apply = || {
        client
            .patch(&url)
            .bearer_auth(&token)
            .header("content-type", "application/apply-patch+yaml")
            .body(deep.clone())
            .send()
    };
    let started = std::time::Instant::now();
    // NB: three at once, as the probe sent them, beside a list any client may be making.
    let (a, b, c, listed) = tokio::join!(
        apply(),
        apply(),
        apply(),
        client.get(format!("{base}/api/v1/namespaces")).bearer_auth(&token).send()
    );
    let elapsed = started.elapsed();
    for res in [a, b, c] {
        let (code, status) = status_of(res.expect("answered")).await;
        assert_eq!(code, StatusCode::BAD_REQUEST, "{status}");
        assert!(status["message"].as_str().unwrap_or_default().contains("deeper than 64 levels"), "{status}");
    }
    assert!(listed.expect("answered").status().is_success());
    assert!(elapsed < std::time::Duration::from_secs(2), "answered in {elapsed:?}");
}
