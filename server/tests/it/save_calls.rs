//! What a save costs in calls to the API: the save path reads the management cluster from the
//! watch caches, and the embedded API calls admission in-process with the objects, so a
//! listener save reaches the API once for its write, and once more for the Services of the
//! namespace when it names new ones. Counted from the Kubernetes client's own log lines, each
//! carrying the id of the web request it was made for.

use app::components::address::Carried;
use app::domain::crd::{Phase, ServiceRef, Session};
use app::screens::listeners::{ListenerChoices, ListenerForm};
use serde_json::json;

use crate::helpers::{Backend, until};
use crate::log_capture::Capture;
use crate::shared::Shared;
use crate::user::{User, ok, ticket_form, wait_phase};

/// Shared: each test tells its own calls and lines apart by the request ids it sends.
static LBDESK: Shared = Shared::with_demo_lb();

/// Saves `form` as the page does, under request id `id`.
async fn save(alice: &User, url: &str, id: &str, form: &ListenerForm) -> String {
    let res = alice
        .client
        .post(format!("{url}/api/listener/save"))
        .header("x-request-id", id)
        .json(&json!({ "form": form }))
        .send()
        .await
        .expect("request");
    assert_eq!(res.headers().get("x-request-id").and_then(|v| v.to_str().ok()), Some(id), "the id is answered");
    ok::<String>(res).await
}

/// The calls the Kubernetes client made for request `id`, and how many times the save tried.
/// NB: a status the reconciler writes during a save (it may write one at any moment) makes
/// the write lose its race on `resourceVersion` and go again, by design: the calls are counted
/// per attempt.
fn calls(capture: &Capture, id: &str) -> (Vec<String>, usize) {
    let tag = format!("id={id}");
    let text = capture.text();
    let lines = || text.lines().filter(|l| l.contains(&tag));
    let made = lines().filter(|l| l.ends_with("requesting")).map(String::from).collect();
    (made, 1 + lines().filter(|l| l.contains(app::ssr::LOST_RACE_AGAIN)).count())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_save_calls_the_api_at_most_twice() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let alice = User::sign_in(&lbdesk, "alice").await;
    ok::<String>(alice.json("ticket/save", json!({"form": ticket_form("calls", "default", "")})).await).await;
    wait_phase(&alice, "calls", Phase::Enabled).await;
    let choices = |name: &'static str| {
        let alice = &alice;
        async move {
            let choices: ListenerChoices =
                ok(alice.json("listener/choices", json!({"ticket": "calls", "name": name})).await).await;
            choices
        }
    };
    // NB: each save starts once the reconciler has written what it observed of the ticket, so
    // that most saves go once.
    until("the request carried", 30, || async { choices("").await.address.carried == Carried::Yes }).await;
    let capture = Capture::start();
    let services = vec![ServiceRef { service: "web-v1".into(), port: 8080, weight: 100 }];
    let form = ListenerForm { ticket: "calls".into(), name: "web".into(), port: 80, services, ..Default::default() };

    let id = "save-calls-new-listener";
    save(&alice, &lbdesk.url, id, &form).await;
    let (made, attempts) = calls(&capture, id);
    assert_eq!(made.len(), 2 * attempts, "the namespace's Services and the write, per attempt: {made:#?}");
    assert!(
        made.iter().any(|c| c.contains("/services")) && made.iter().any(|c| c.contains("http.method=PUT")),
        "{made:#?}"
    );

    // An edit on the same Services: the write alone.
    until("the first save carried", 30, || async { choices("web").await.address.carried == Carried::Yes }).await;
    let choices = choices("web").await;
    let edit = ListenerForm { generation: Some(choices.address.generation), session: Session::SourceAddress, ..form };
    let id = "save-calls-edit";
    save(&alice, &lbdesk.url, id, &edit).await;
    let (made, attempts) = calls(&capture, id);
    assert_eq!(made.len(), attempts, "the write, per attempt: {made:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_id_a_client_forges_is_not_written_to_the_log() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let capture = Capture::start();
    let client = reqwest::Client::new();
    let forged = r#"x" id="admin"#;
    let res =
        client.get(format!("{}/healthz", lbdesk.url)).header("x-request-id", forged).send().await.expect("answers");
    assert!(res.status().is_success());
    let plain =
        client.get(format!("{}/healthz", lbdesk.url)).header("x-request-id", "proxy-42").send().await.expect("answers");
    assert_eq!(
        plain.headers().get("x-request-id").and_then(|v| v.to_str().ok()),
        Some("proxy-42"),
        "kept and answered"
    );
    let minted = client.get(format!("{}/healthz", lbdesk.url)).send().await.expect("answers");
    let id = minted.headers().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    assert_eq!(id.len(), 36, "a UUID when the client sends none: {id:?}");
    let log = capture.text();
    assert!(!log.contains(r#"id="admin""#), "the forged id is not written");
    assert!(log.contains("path=/healthz id=unreadable"), "it is said to be unreadable");
    assert!(log.contains("path=/healthz id=proxy-42") && log.contains(&format!("id={id}")), "plain ids are written");
}
