//! Credentials are write-only: after a full scenario (an admin registers a load balancer and
//! changes its credentials, a tenant's address goes to Enabled, is disabled and deleted) the
//! LTM token and the VE user and password, old and new, raw or base64-encoded, are in no page,
//! no server-function answer, no log line, no AS3 ConfigMap, no Event, no audit entry and no
//! stored object or row other than the Secrets themselves.

use app::domain::crd::{Lbticket, Listener, Phase, Protocol, ServiceRef, Session};
use app::screens::loadbalancers::{LbDetail, LbForm};
use app::screens::tickets::{TicketDetail, TicketForm};
use base64::Engine;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use sqlx::{Column, Row};

use crate::boundary;
use crate::helpers::{self, Backend, Lbdesk, until};
use crate::log_capture::Capture;
use crate::shared::Shared;

/// The module's lbdesk. Its one test registers the load balancer `demo` and judges every row
/// of every table: another test here would have to leave both alone.
static LBDESK: Shared = Shared::new();

/// The load balancer's name: the one the boundary table's arguments name.
const LB: &str = "demo";
const PARTITION: &str = "vault";
const TICKET: &str = "web-s";
/// The boundary table's arguments name another project's request and project; here they
/// become alice's.
const TABLE_TICKET: &str = "b-secret";

/// The server functions that change something: called by the scenario, not by the sweep.
/// (A new one missing here is called by the sweep with the boundary table's arguments.)
const WRITES: [&str; 7] = [
    "/api/login",
    "/api/logout",
    "/api/switch-project",
    "/api/lb/save",
    "/api/lb/delete",
    "/api/ticket/save",
    "/api/ticket/act",
];

/// One set of credentials, random per run so nothing else in the process can contain them.
struct Credentials {
    token: String,
    user: String,
    password: String,
}

impl Credentials {
    fn new() -> Credentials {
        let id = || uuid::Uuid::new_v4();
        Credentials { token: format!("tok-{}", id()), user: format!("veu-{}", id()), password: format!("vep-{}", id()) }
    }

    fn all(&self) -> [&str; 3] {
        [&self.token, &self.user, &self.password]
    }
}

/// The ways `secret` can appear in a text: as is, and base64 (standard and URL-safe) at each of
/// the three alignments, so it is found inside a longer encoded value too (`user:password`).
fn forms(secret: &str) -> Vec<String> {
    let mut out = vec![secret.to_string()];
    for engine in [&base64::engine::general_purpose::STANDARD, &base64::engine::general_purpose::URL_SAFE] {
        for pad in 0..3 {
            let mut bytes = vec![0u8; pad];
            bytes.extend_from_slice(secret.as_bytes());
            let encoded = engine.encode(&bytes);
            // NB: only the groups made of the secret's bytes alone are the same whatever surrounds it.
            let start = pad.div_ceil(3) * 4;
            let end = (pad + secret.len()) / 3 * 4;
            out.push(encoded[start..end].to_string());
        }
    }
    out
}

/// The first secret (in any of its forms) found in `text`.
fn found<'a>(secrets: &[&'a str], text: &str) -> Option<&'a str> {
    secrets.iter().copied().find(|s| forms(s).iter().any(|f| text.contains(f.as_str())))
}

/// A signed-in browser; keeps every server-function answer it got, to search them.
struct User {
    http: reqwest::Client,
    url: String,
    name: &'static str,
    answers: std::sync::Mutex<Vec<(String, String)>>,
}

impl User {
    async fn sign_in(lbdesk: &Lbdesk, name: &'static str) -> User {
        let http = helpers::signed_in(lbdesk, name).await;
        User { http, url: lbdesk.url.clone(), name, answers: Default::default() }
    }

    /// Calls a server function; (status, body), the body kept.
    async fn call(&self, path: &str, args: &Value) -> (reqwest::StatusCode, String) {
        let res = self
            .http
            .post(format!("{}{path}", self.url))
            .header("origin", &self.url)
            .json(args)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{path} as {}: {e}", self.name));
        let status = res.status();
        let body = res.text().await.unwrap_or_else(|e| panic!("{path} as {}: {e}", self.name));
        assert!(!status.is_server_error(), "{path} as {}: {status}: {body}", self.name);
        self.answers.lock().expect("answers").push((format!("{path} as {} ({status})", self.name), body.clone()));
        (status, body)
    }

    async fn ok<T: DeserializeOwned>(&self, path: &str, args: Value) -> T {
        let (status, body) = self.call(path, &args).await;
        assert!(status.is_success(), "{path} as {}: {status}: {body}", self.name);
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
    }

    async fn page(&self, path: &str) -> (reqwest::StatusCode, String) {
        let res = self.http.get(format!("{}{path}", self.url)).send().await;
        let res = res.unwrap_or_else(|e| panic!("page {path} as {}: {e}", self.name));
        (res.status(), res.text().await.unwrap_or_else(|e| panic!("page {path} as {}: {e}", self.name)))
    }

    async fn ticket(&self, name: &str) -> TicketDetail {
        self.ok("/api/ticket/get", json!({ "name": name })).await
    }

    async fn wait_phase(&self, name: &str, want: Phase) {
        until(&format!("{name} to be {want:?}"), 30, || async { self.ticket(name).await.row.phase == want }).await;
    }
}

fn lb_form(credentials: &Credentials) -> LbForm {
    LbForm {
        ltm_token: Some(credentials.token.clone()),
        ve_user: Some(credentials.user.clone()),
        ve_password: Some(credentials.password.clone()),
        partition: PARTITION.into(),
        ..helpers::lb_form(LB)
    }
}

/// Every route of the app, its parameters filled with the scenario's objects.
fn pages() -> Vec<String> {
    // NB: the server's own list: listing again would stall the pages other tests render.
    let mut out: Vec<String> = server::web::routes()
        .iter()
        .map(|route| {
            let path = route.path();
            let object = if path.starts_with("/loadbalancers") { LB } else { TICKET };
            path.split('/')
                .map(|segment| if segment.starts_with([':', '{', '*']) { object } else { segment })
                .collect::<Vec<_>>()
                .join("/")
        })
        .collect();
    out.push("/no-such-page".into());
    out.sort();
    out.dedup();
    out
}

/// Every Object of `resource` (`Api<T>` over all namespaces) in every cluster, as JSON text.
async fn everywhere<T>(lbdesk: &Lbdesk) -> Vec<(String, String)>
where
    T: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope> + Clone + DeserializeOwned + std::fmt::Debug,
    T: serde::Serialize,
    <T as kube::Resource>::DynamicType: Default,
{
    let mut out = Vec::new();
    for cluster in clusters(lbdesk) {
        let api: Api<T> = Api::all(lbdesk.client(&cluster).await);
        for item in api.list(&ListParams::default()).await.expect("list").items {
            let text = serde_json::to_string(&item).expect("json");
            let meta = item.meta();
            let name = format!(
                "{cluster}/{}/{}",
                meta.namespace.clone().unwrap_or_default(),
                meta.name.clone().unwrap_or_default()
            );
            out.push((format!("{} {name}", T::kind(&Default::default())), text));
        }
    }
    out
}

fn clusters(lbdesk: &Lbdesk) -> Vec<String> {
    lbdesk.kubeconfig["clusters"]
        .as_array()
        .expect("clusters")
        .iter()
        .map(|c| c["name"].as_str().expect("name").to_string())
        .collect()
}

/// Every row of every table of the database, each as one text: (table, row).
async fn every_row(lbdesk: &Lbdesk) -> Vec<(String, String)> {
    let pool = &lbdesk.db.pool;
    // NB: sqlx's own migration table holds only the migrations (its dates do not decode via `Any`).
    let tables: Vec<(String,)> =
        sqlx::query_as(r"SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\_sqlx%' ESCAPE '\'")
            .fetch_all(pool)
            .await
            .expect("tables");
    let mut out = Vec::new();
    for (table,) in tables {
        for row in sqlx::query(&format!("SELECT * FROM \"{table}\"")).fetch_all(pool).await.expect("rows") {
            let cells: Vec<String> = (0..row.columns().len())
                .map(|i| {
                    let name = row.columns()[i].name().to_string();
                    let value = row
                        .try_get::<String, _>(i)
                        .or_else(|_| row.try_get::<i64, _>(i).map(|v| v.to_string()))
                        .or_else(|_| row.try_get::<f64, _>(i).map(|v| v.to_string()))
                        .or_else(|_| row.try_get::<Vec<u8>, _>(i).map(|v| String::from_utf8_lossy(&v).into_owned()))
                        .unwrap_or_default();
                    format!("{name}={value}")
                })
                .collect();
            out.push((table.clone(), cells.join(" | ")));
        }
    }
    out
}

/// Whether a row of the embedded API's tables is a Secret (the one place credentials belong).
fn is_secret_row(table: &str, row: &str) -> bool {
    matches!(table, "k8s_objects" | "k8s_events") && row.contains(" | resource=secrets | ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_show_nowhere_but_in_their_secrets() {
    let logs = Capture::start();
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let (first, second) = (Credentials::new(), Credentials::new());
    let secrets: Vec<&str> = first.all().into_iter().chain(second.all()).collect();

    // The admin registers the load balancer, then replaces all three credentials.
    let admin = User::sign_in(&lbdesk, "admin").await;
    let name: String = admin.ok("/api/lb/save", json!({ "form": lb_form(&first) })).await;
    assert_eq!(name, LB);
    let detail: LbDetail = admin.ok("/api/lb/get", json!({ "name": LB })).await;
    let edit = LbForm {
        ltm_token: Some(second.token.clone()),
        ve_user: Some(second.user.clone()),
        ve_password: Some(second.password.clone()),
        ..detail.form
    };
    let _: String = admin.ok("/api/lb/save", json!({ "form": edit })).await;

    // alice's address goes live with a listener, so the AS3 declaration carries it.
    let alice = User::sign_in(&lbdesk, "alice").await;
    let form = TicketForm {
        name: TICKET.into(),
        cluster: "acp-region01".into(),
        namespace: "team-a".into(),
        loadbalancer: LB.into(),
        ..Default::default()
    };
    let _: String = alice.ok("/api/ticket/save", json!({ "form": form })).await;
    alice.wait_phase(TICKET, Phase::Enabled).await;
    let tickets: Api<Lbticket> = Api::all(lbdesk.client("mgmt").await);
    let listener = Listener {
        name: "web".into(),
        port: 80,
        protocol: Protocol::Http,
        session: Session::None,
        services: vec![ServiceRef { service: "web-v1".into(), port: 8080, weight: 100 }],
    };
    let listeners = Patch::Merge(json!({ "spec": { "listeners": [listener] } }));
    tickets.patch(TICKET, &PatchParams::default(), &listeners).await.expect("a listener");
    let veip = alice.ticket(TICKET).await.row.veip;
    let member: Api<ConfigMap> = Api::namespaced(lbdesk.client("acp-region01").await, "kube-system");
    let as3 = format!("lbdesk-as3-{PARTITION}");
    until("the AS3 declaration with the address", 20, || async {
        let cm = member.get_opt(&as3).await.ok().flatten();
        cm.and_then(|cm| cm.data).is_some_and(|d| d.values().any(|v| v.contains(&veip)))
    })
    .await;
    // What the member cluster holds while the address is live.
    let mut places: Vec<(String, String)> = Vec::new();
    places.extend(everywhere::<ConfigMap>(&lbdesk).await.into_iter().map(|(w, t)| (format!("while Enabled: {w}"), t)));

    // Taken down and deleted.
    let none = Patch::Merge(json!({ "spec": { "listeners": null } }));
    tickets.patch(TICKET, &PatchParams::default(), &none).await.expect("no listener");
    // NB: as alice's page would show it: lbdesk reads a write made by someone else when its
    // watch brings it, and until then would refuse to disable an address with a listener.
    until("lbdesk to see the listener gone", 10, || async { alice.ticket(TICKET).await.usage.listeners == 0 }).await;
    let _: () = alice.ok("/api/ticket/act", json!({ "name": TICKET, "action": "Disable" })).await;
    alice.wait_phase(TICKET, Phase::Disabled).await;
    let _: () = alice.ok("/api/ticket/act", json!({ "name": TICKET, "action": "Delete" })).await;
    alice.wait_phase(TICKET, Phase::Deleted).await;

    // Every page, as either user.
    for user in [&admin, &alice] {
        for path in pages() {
            let (status, body) = user.page(&path).await;
            assert!(!status.is_server_error(), "{path} as {}: {status}", user.name);
            places.push((format!("page {path} as {}", user.name), body));
        }
    }
    // Every server function that only reads, as either user, aimed at the scenario's objects.
    for (path, _) in server_fn::axum::server_fn_paths() {
        if WRITES.contains(&path) {
            continue;
        }
        let args = (boundary::case(path).args)().to_string();
        let args: Value =
            serde_json::from_str(&args.replace(TABLE_TICKET, TICKET).replace("project-b", "project-a")).expect("json");
        for user in [&admin, &alice] {
            user.call(path, &args).await;
        }
    }
    for user in [&admin, &alice] {
        places.extend(user.answers.lock().expect("answers").drain(..));
    }
    // The AS3 ConfigMaps and the Events of every cluster, both Event APIs.
    places.extend(everywhere::<ConfigMap>(&lbdesk).await);
    places.extend(everywhere::<k8s_openapi::api::core::v1::Event>(&lbdesk).await);
    places.extend(everywhere::<k8s_openapi::api::events::v1::Event>(&lbdesk).await);
    // The audit log, and every other row of the database (the embedded API's objects and
    // watch history, sessions, settings) but the Secrets'.
    let audit = sqlx::query("SELECT * FROM audit").fetch_all(&lbdesk.db.pool).await.expect("audit");
    assert!(audit.len() >= 2, "the audit log has the two saves");
    let rows = every_row(&lbdesk).await;
    let (secret_rows, rows): (Vec<_>, Vec<_>) = rows.into_iter().partition(|(t, r)| is_secret_row(t, r));
    places.extend(rows.into_iter().map(|(table, row)| (format!("table {table}"), row)));

    // The log, with a control line: a secret logged would be found.
    let canary = format!("canary-{}", uuid::Uuid::new_v4());
    tracing::info!(target: "server::secrets_test", "control line {canary}");
    let log = logs.text();
    assert!(found(&[&canary], &log).is_some(), "the log capture sees lbdesk's lines");
    assert!(log.contains("load balancer saved"), "the capture holds lbdesk's own lines");
    places.push(("the log".into(), log));

    // Controls: the search finds the current credentials where they belong, base64-encoded,
    // and the pages were rendered with the scenario's objects in them.
    let stored: Api<Secret> = Api::namespaced(lbdesk.client("mgmt").await, "lbdesk-system");
    let stored =
        serde_json::to_string(&stored.list(&ListParams::default()).await.expect("secrets").items).expect("json");
    for secret in second.all() {
        assert_eq!(found(&[secret], &stored), Some(secret), "the Secrets hold {secret}");
        assert!(!stored.contains(secret), "a Secret keeps {secret} base64-encoded only");
        assert!(secret_rows.iter().any(|(_, r)| found(&[secret], r).is_some()), "its row holds {secret}");
    }
    assert!(
        found(
            &secrets,
            &format!(
                "x{}y",
                base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", first.user, first.password))
            )
        )
        .is_some()
    );
    let page = |path: &str| places.iter().find(|(w, _)| w == &format!("page {path} as admin")).map(|(_, b)| b.as_str());
    assert!(
        page(&format!("/loadbalancers/{LB}")).is_some_and(|b| b.contains(PARTITION)),
        "the detail page shows the load balancer"
    );
    assert!(page(&format!("/tickets/{TICKET}")).is_some_and(|b| b.contains(&veip)), "the request's page shows it");

    let leaks: Vec<String> =
        places.iter().filter_map(|(place, text)| found(&secrets, text).map(|s| format!("{place}: {s}"))).collect();
    assert!(leaks.is_empty(), "credentials found outside their Secrets:\n{}", leaks.join("\n"));
}
