//! A signed-in user calling server functions as the pages do, and what the tests of the pages'
//! server functions share: answers read as the pages read them, a request and its phase.

use app::domain::crd::Phase;
use app::error::AppError;
use app::screens::tickets::{TicketDetail, TicketForm};
use reqwest::StatusCode;
use serde::de::DeserializeOwned;

use app::screens::loadbalancers::LbForm;
use serde_json::json;

use crate::helpers::{Lbdesk, lb_form, signed_in, until};

/// A signed-in browser session.
pub struct User {
    pub client: reqwest::Client,
    pub url: String,
}

impl User {
    pub async fn sign_in(lbdesk: &Lbdesk, name: &str) -> User {
        let client = signed_in(lbdesk, name).await;
        User { client, url: lbdesk.url.clone() }
    }

    /// Calls a server function whose arguments are all strings.
    pub async fn form(&self, endpoint: &str, args: &[(&str, &str)]) -> reqwest::Response {
        let body: serde_json::Map<String, serde_json::Value> =
            args.iter().map(|(k, v)| (k.to_string(), serde_json::Value::from(*v))).collect();
        self.json(endpoint, body.into()).await
    }

    /// Calls a JSON server function.
    pub async fn json(&self, endpoint: &str, body: serde_json::Value) -> reqwest::Response {
        self.client.post(format!("{}/api/{endpoint}", self.url)).json(&body).send().await.expect("request")
    }
}

/// The answer of a call that must succeed, read as the page reads it.
pub async fn ok<T: DeserializeOwned>(res: reqwest::Response) -> T {
    let status = res.status();
    let body = res.text().await.expect("body");
    assert!(status.is_success(), "{status}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// The typed error of a call that must be refused with `status`.
pub async fn refused(res: reqwest::Response, status: StatusCode) -> AppError {
    assert_eq!(res.status(), status);
    res.json().await.expect("a typed error")
}

/// A request for an address of the load balancer `demo` in `namespace` of acp-region01.
pub fn ticket_form(name: &str, namespace: &str, veip: &str) -> TicketForm {
    TicketForm {
        name: name.into(),
        cluster: "acp-region01".into(),
        namespace: namespace.into(),
        loadbalancer: "demo".into(),
        veip: veip.into(),
        ..Default::default()
    }
}

/// The request `name` as its page shows it.
pub async fn ticket(user: &User, name: &str) -> TicketDetail {
    ok(user.form("ticket/get", &[("name", name)]).await).await
}

/// Waits until the request `name` reaches `want`, and gives it.
pub async fn wait_phase(user: &User, name: &str, want: Phase) -> TicketDetail {
    until(&format!("{name} to be {want:?}"), 20, || async { ticket(user, name).await.row.phase == want }).await;
    ticket(user, name).await
}

/// Saves a load balancer as the admin's form does.
pub async fn save_lb(admin: &User, form: &LbForm) -> reqwest::Response {
    admin.json("lb/save", json!({ "form": form })).await
}

/// The admin, signed in, registers the load balancer `demo`.
pub async fn register_demo_lb(lbdesk: &Lbdesk) -> User {
    let admin = User::sign_in(lbdesk, "admin").await;
    ok::<String>(save_lb(&admin, &lb_form("demo")).await).await;
    admin
}

/// The tenant `name` of the test's own (password `<name>-demo`, as the demo users'), in the
/// project `project`, made if new; signed in. A test sharing its module's lbdesk ends sessions
/// and sets quotas of its own users and projects: the demo ones are every test's.
pub async fn own_tenant(lbdesk: &Lbdesk, name: &str, project: &str) -> User {
    use app::ssr::accounts::{Account, hash_published_password};
    let account = Account { username: name.into(), display_name: name.into(), role: app::domain::user::Role::Tenant };
    let hash = hash_published_password(&format!("{name}-demo")).expect("a hash");
    lbdesk.db.upsert_user(&account, &hash, app::ssr::now_micros()).await.expect("the account");
    lbdesk.db.upsert_project(project, project).await.expect("the project");
    lbdesk.db.add_member(project, name).await.expect("the membership");
    User::sign_in(lbdesk, name).await
}

/// The namespace `name` of member cluster `cluster`, in `project`, with the demo Services and
/// their Endpoints: a test sharing its module's lbdesk works in namespaces of its own, as a
/// Service serves one listener and a namespace's requests share its CIS applications.
pub async fn own_namespace(lbdesk: &Lbdesk, cluster: &str, project: &str, name: &str) {
    use k8s_openapi::api::core::v1::{Endpoints, Namespace, Service};
    use kube::Api;
    let member = lbdesk.client(cluster).await;
    let create = kube::api::PostParams::default();
    let namespace = serde_json::from_value(json!({"metadata": {"name": name}})).expect("a namespace");
    Api::<Namespace>::all(member.clone()).create(&create, &namespace).await.expect("the namespace");
    for (resource, service, object) in server::embedded::demo_services(name) {
        let made = match resource {
            "services" => {
                let api = Api::<Service>::namespaced(member.clone(), name);
                api.create(&create, &serde_json::from_value(object).expect("a Service")).await.map(drop)
            }
            _ => {
                let api = Api::<Endpoints>::namespaced(member.clone(), name);
                api.create(&create, &serde_json::from_value(object).expect("Endpoints")).await.map(drop)
            }
        };
        made.unwrap_or_else(|e| panic!("{resource} {service} in {name}: {e}"));
    }
    lbdesk.db.assign_namespace(project, cluster, name).await.expect("the namespace joins the project");
}
