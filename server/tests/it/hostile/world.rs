//! The world the hostile calls land in: lbdesk with its signed-in users and a client of its
//! embedded API, how a call is sent, and the checks of what is stored at the end.

use std::collections::BTreeSet;
use std::sync::Mutex;

use app::domain::crd::{LABEL_LOADBALANCER, Lbticket, Loadbalancer};
use app::domain::policy::{validate_lb, validate_ticket};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::ListParams;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::{ACT_TICKET, API_KINDS, ApiKind, Call, Tracked, ticket_form};
use crate::boundary::{self, Access};
use crate::directory::{Style, shared_options};
use crate::helpers::{self, Backend, browser};
use crate::shared::{Lease, Shared};

/// The module's lbdesk, for its one test alone (which checks that exactly the objects its calls
/// created exist), signing dora in with the shared directory (where every hostile name typed at
/// sign-in reaches).
static LBDESK: Shared = Shared::with(|| shared_options("hostile", Style::ActiveDirectory, |text| text), false);

/// What the accepted calls created (and deleted), to compare with what exists at the end.
#[derive(Default)]
pub(super) struct Made {
    /// Load balancers saved through the pages: they must have their credential Secrets.
    pub(super) lbs_by_pages: BTreeSet<String>,
    /// Load balancers created through the embedded API (credentials are the creator's business).
    pub(super) lbs_by_api: BTreeSet<String>,
    pub(super) tickets: BTreeSet<String>,
}

/// lbdesk, its signed-in users, and the API's address and credentials.
pub(super) struct World {
    pub(super) lbdesk: Lease,
    pub(super) admin: reqwest::Client,
    pub(super) alice: reqwest::Client,
    /// A tenant of project-a signed in from the directory, for the calls of any signed-in user.
    pub(super) dora: reqwest::Client,
    /// A session for the sign-out calls.
    pub(super) bob: reqwest::Client,
    pub(super) anonymous: reqwest::Client,
    pub(super) api: reqwest::Client,
    /// The management cluster's API base URL.
    pub(super) api_base: String,
    pub(super) token: String,
    pub(super) made: Mutex<Made>,
}

impl World {
    pub(super) async fn start() -> World {
        use base64::Engine;
        let lbdesk = LBDESK.get(Backend::Sqlite).await;
        let kubeconfig = &lbdesk.kubeconfig;
        let ca = kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"].as_str().expect("ca");
        let ca = base64::engine::general_purpose::STANDARD.decode(ca).expect("base64");
        let api = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(&ca).expect("pem"))
            // NB: as `helpers::browser`'s, dropped before lbdesk closes it for idleness.
            .pool_idle_timeout(std::time::Duration::from_secs(10))
            .build()
            .expect("client");
        let mgmt = kubeconfig["clusters"].as_array().expect("clusters").iter().find(|c| c["name"] == "mgmt");
        let api_base = mgmt.expect("the mgmt cluster")["cluster"]["server"].as_str().expect("server").to_string();
        let token = kubeconfig["users"][0]["user"]["token"].as_str().expect("token").to_string();
        let world = World {
            admin: helpers::signed_in(&lbdesk, "admin").await,
            alice: helpers::signed_in(&lbdesk, "alice").await,
            dora: {
                let (dora, status, body) = crate::directory::sign_in(&lbdesk, "dora", "dora-directory").await;
                assert!(status.is_success() || status.is_redirection(), "dora signs in: {status} {body}");
                dora
            },
            bob: helpers::signed_in(&lbdesk, "bob").await,
            anonymous: browser(),
            lbdesk,
            api,
            api_base,
            token,
            made: Default::default(),
        };
        // What the demo seeded, and the objects the calls aim at.
        let lbs = world.objects::<Loadbalancer>().await;
        world.made.lock().expect("made").lbs_by_pages.extend(lbs.into_iter().map(|(name, _)| name));
        let res = world.post(&world.alice, "/api/ticket/save", &json!({ "form": ticket_form(ACT_TICKET) })).await;
        assert!(res.0.is_success(), "{ACT_TICKET}: {res:?}");
        world.made.lock().expect("made").tickets.insert(ACT_TICKET.into());
        for kind in &API_KINDS {
            let (status, body) = world
                .api_send(&Call {
                    method: reqwest::Method::POST,
                    path: kind.collection.into(),
                    content_type: Some("application/json"),
                    body: (kind.object)(kind.target).to_string().into_bytes(),
                })
                .await
                .expect("answer");
            assert!(status.is_success(), "{}: {status}: {body}", kind.target);
            world.note_api(kind, &body);
        }
        world
    }

    pub(super) async fn post(
        &self,
        client: &reqwest::Client,
        path: &str,
        args: &Value,
    ) -> (reqwest::StatusCode, String) {
        let res = client
            .post(format!("{}{path}", self.lbdesk.url))
            .header("origin", &self.lbdesk.url)
            .json(args)
            .send()
            .await
            .expect("request");
        (res.status(), res.text().await.expect("body"))
    }

    /// Who calls a server function: its audience (sign-out gets a session of its own).
    pub(super) fn caller(&self, path: &str) -> &reqwest::Client {
        match (path, boundary::case(path).access) {
            ("/api/logout", _) => &self.bob,
            (_, Access::Public) => &self.anonymous,
            (_, Access::Admin) => &self.admin,
            (_, Access::Desk) => &self.dora,
            (_, Access::Project) => &self.alice,
        }
    }

    /// Sends `call` to `base`: with the bearer `token` to the API, else as a page of the site would
    /// (its `Origin`).
    pub(super) async fn send(
        &self,
        client: &reqwest::Client,
        base: &str,
        call: &Call,
        token: Option<&str>,
    ) -> Result<(reqwest::StatusCode, String), String> {
        let mut req = client.request(call.method.clone(), format!("{base}{}", call.path)).body(call.body.clone());
        if let Some(ct) = call.content_type {
            req = req.header("content-type", ct);
        }
        if let Some(token) = token {
            req = req.bearer_auth(token);
        } else {
            req = req.header("origin", &self.lbdesk.url);
        }
        let res = req.send().await.map_err(|e| format!("no answer: {}", chain(&e)))?;
        let status = res.status();
        let bytes = res.bytes().await.map_err(|e| format!("answer cut: {}", chain(&e)))?;
        Ok((status, String::from_utf8_lossy(&bytes).into_owned()))
    }

    pub(super) async fn api_send(&self, call: &Call) -> Result<(reqwest::StatusCode, String), String> {
        self.send(&self.api, &self.api_base, call, Some(&self.token)).await
    }

    /// Records what an accepted API write left (its answer is the object).
    pub(super) fn note_api(&self, kind: &ApiKind, answer: &str) {
        let name =
            serde_json::from_str::<Value>(answer).ok().and_then(|v| v["metadata"]["name"].as_str().map(String::from));
        let (Some(name), Some(made)) = (name, kind.made) else { return };
        let mut all = self.made.lock().expect("made");
        match made {
            Tracked::Lb => all.lbs_by_api.insert(name),
            Tracked::Ticket => all.tickets.insert(name),
        };
    }

    /// Every object of `K` in the management cluster, each as it deserializes (or why not).
    /// NB: read as raw JSON, item by item: one bad object makes a typed list fail as a whole.
    pub(super) async fn objects<K>(&self) -> Vec<(String, Result<K, String>)>
    where
        K: kube::Resource<DynamicType = ()> + DeserializeOwned,
    {
        let get =
            Call { method: reqwest::Method::GET, path: K::url_path(&(), None), content_type: None, body: Vec::new() };
        let (status, body) = self.api_send(&get).await.expect("answer");
        assert!(status.is_success(), "{} lists: {status}: {body}", get.path);
        let list: Value = serde_json::from_str(&body).expect("a list");
        let items = list["items"].as_array().cloned().unwrap_or_default();
        items
            .into_iter()
            .map(|item| {
                let name = item["metadata"]["name"].as_str().unwrap_or_default().to_string();
                (name, serde_json::from_value::<K>(item).map_err(|e| e.to_string()))
            })
            .collect()
    }

    /// The checks of the end: what is stored is whole, valid, and what the accepted calls made.
    /// Returns what is wrong.
    pub(super) async fn check_stored(&self) -> Vec<String> {
        let mut wrong = Vec::new();
        let (lbs_by_pages, lbs_by_api, tickets) = {
            let made = self.made.lock().expect("made");
            (made.lbs_by_pages.clone(), made.lbs_by_api.clone(), made.tickets.clone())
        };
        let want_lbs: BTreeSet<String> = lbs_by_pages.union(&lbs_by_api).cloned().collect();
        // NB: a deleted load balancer goes once the reconciler has removed its finalizer, and
        // its credentials after it.
        let lb_names =
            || async { self.objects::<Loadbalancer>().await.into_iter().map(|(n, _)| n).collect::<BTreeSet<_>>() };
        if !eventually(|| async { lb_names().await == want_lbs }).await {
            wrong.push(format!("load balancers: {:?} exist, the accepted calls made {want_lbs:?}", lb_names().await));
        }
        let secrets: Api<Secret> = Api::namespaced(self.lbdesk.client("mgmt").await, "lbdesk-system");
        let orphans = || async {
            let stored = secrets.list(&ListParams::default()).await.expect("secrets").items;
            stored
                .into_iter()
                .filter(|s| {
                    s.metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get(LABEL_LOADBALANCER))
                        .is_some_and(|lb| !want_lbs.contains(lb))
                })
                .filter_map(|s| s.metadata.name)
                .collect::<Vec<_>>()
        };
        if !eventually(|| async { orphans().await.is_empty() }).await {
            wrong.push(format!("credentials without their load balancer: {:?}", orphans().await));
        }
        let stored: Vec<Secret> = secrets.list(&ListParams::default()).await.expect("secrets").items;
        let has = |name: &str, keys: &[&str]| {
            stored.iter().any(|s| {
                s.metadata.name.as_deref() == Some(name)
                    && keys.iter().all(|k| s.data.as_ref().is_some_and(|d| d.get(*k).is_some_and(|v| !v.0.is_empty())))
            })
        };
        for (name, lb) in self.objects::<Loadbalancer>().await {
            let lb = match lb {
                Ok(lb) => lb,
                Err(e) => {
                    wrong.push(format!("load balancer {name} does not read back: {e}"));
                    continue;
                }
            };
            if let Err(refusal) = validate_lb(&name, &lb.spec) {
                wrong.push(format!("load balancer {name} is stored invalid: {refusal:?}"));
            }
            if lbs_by_pages.contains(&name) {
                if !has(&lb.spec.ltm.token_secret_ref.name, &["token"]) {
                    wrong.push(format!("load balancer {name} has no LTM token"));
                }
                if !has(&lb.spec.ve.credentials_secret_ref.name, &["user", "password"]) {
                    wrong.push(format!("load balancer {name} has no VE credentials"));
                }
            }
        }
        let stored_tickets = self.objects::<Lbticket>().await;
        for (name, ticket) in &stored_tickets {
            match ticket {
                Ok(ticket) => {
                    if let Err(refusal) = validate_ticket(name, &ticket.spec) {
                        wrong.push(format!("request {name} is stored invalid: {refusal:?}"));
                    }
                }
                Err(e) => wrong.push(format!("request {name} does not read back: {e}")),
            }
        }
        // Kinds the API stores without admission are still Kubernetes objects: a client reads them.
        for (name, configmap) in self.objects::<ConfigMap>().await {
            if let Err(e) = configmap {
                wrong.push(format!("ConfigMap {name} is stored but does not read back: {e}"));
            }
        }
        let names: BTreeSet<String> = stored_tickets.into_iter().map(|(n, _)| n).collect();
        if names != tickets {
            wrong.push(format!("requests: {names:?} exist, the accepted calls made {tickets:?}"));
        }
        wrong
    }
}

/// Whether `check` holds within 20 s (polling).
async fn eventually<F, Fut>(mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..200 {
        if check().await {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    false
}

/// An error with its causes (reqwest's own message names none of them).
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}
