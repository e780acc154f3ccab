//! The BIG-IP simulator: the part of a BIG-IP's iControl REST that CIS posts to and lbdesk
//! reads back. AS3 declare POSTs are validated against CIS's AS3 schema (formats registered)
//! and answered 422 in AS3's error shape when invalid; tenants' declarations are kept; pools'
//! members are reported with a health the behaviour sets. `lbdesk bigip-sim --listen ADDR
//! [--config FILE]`.
//!
//! `GET`/`PUT /_behaviour` read and replace the behaviour (tests use it to inject faults).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use app::domain::as3::validate::validate_as_cis;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

pub use crate::sims::Fault;

/// What the simulator does (the file `--config` reads, YAML or JSON).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Behaviour {
    /// The user and password every request must carry (basic auth); none: any is let in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// Pool member addresses reported offline (monitor down).
    #[serde(default)]
    pub members_down: Vec<String>,
    /// Pool member addresses reported disabled.
    #[serde(default)]
    pub members_disabled: Vec<String>,
    /// Tenants whose declarations are refused (422) though schema-valid, as a semantic error
    /// on BIG-IP would be.
    #[serde(default)]
    pub reject_tenants: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
    /// The tenants the fault is limited to, as when one BIG-IP of several fails: a request
    /// naming none of them (or none at all) is served. Empty: every request gets the fault.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fault_tenants: Vec<String>,
}

impl Behaviour {
    /// Reads a behaviour file; a bad file is an error naming the field.
    pub fn read(path: &std::path::Path) -> anyhow::Result<Behaviour> {
        crate::sims::read_behaviour(path)
    }
}

/// The most tasks kept (oldest dropped first), as AS3 keeps a bounded task history.
const TASKS_KEPT: usize = 100;

#[derive(Default)]
struct Inner {
    behaviour: Behaviour,
    /// Per tenant, the tenant object BIG-IP runs.
    tenants: BTreeMap<String, Value>,
    /// The results of declarations, oldest first.
    tasks: Vec<Value>,
}

/// The simulator's state.
#[derive(Clone, Default)]
pub struct Simulator(Arc<Mutex<Inner>>);

/// The errors a refused tenant gets: one per virtual server, naming it as BIG-IP's
/// configuration errors do, or one of the tenant's when it has none.
fn refusals(name: &str, tenant: &Value) -> Vec<String> {
    const WHY: &str = "01070734:3: Configuration error: rejected by the simulator";
    let apps = tenant.as_object().into_iter().flatten().filter_map(|(a, v)| Some((a, v.as_object()?)));
    let servers: Vec<String> = apps
        .flat_map(|(app, items)| {
            items
                .iter()
                .filter(|(_, v)| v.get("class").and_then(Value::as_str).is_some_and(|c| c.starts_with("Service_")))
                .map(move |(vs, _)| format!("/{name}/{app}/{vs}: {WHY}"))
        })
        .collect();
    if servers.is_empty() { vec![format!("/{name}: {WHY}")] } else { servers }
}

/// The tenants an AS3 request declares.
fn tenants_of(request: &Value) -> impl Iterator<Item = (&String, &Value)> {
    let adc = request.get("declaration").unwrap_or(request);
    let items = adc.as_object().into_iter().flatten();
    items.filter(|(_, v)| v.get("class").and_then(Value::as_str) == Some("Tenant"))
}

/// AS3's answer to an invalid declaration.
fn invalid(errors: Vec<String>) -> Response {
    let body = json!({"code": 422, "message": "declaration is invalid", "errors": errors});
    (StatusCode::UNPROCESSABLE_ENTITY, Json(body)).into_response()
}

impl Simulator {
    pub fn new(behaviour: Behaviour) -> Simulator {
        Simulator(Arc::new(Mutex::new(Inner { behaviour, ..Default::default() })))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Replaces the behaviour.
    pub fn set_behaviour(&self, behaviour: Behaviour) {
        self.lock().behaviour = behaviour;
    }

    /// Changes the behaviour in place: of several callers each changing its own part (a member
    /// or a tenant of its own), none undoes another's.
    pub fn change_behaviour(&self, change: impl FnOnce(&mut Behaviour)) {
        change(&mut self.lock().behaviour);
    }

    /// The fault or refusal a request about `tenants` (none: about BIG-IP as a whole) gets
    /// before it is served, if any.
    async fn gate(&self, headers: &HeaderMap, tenants: &[&str]) -> Option<Response> {
        let behaviour = self.lock().behaviour.clone();
        if let (Some(user), Some(password)) = (&behaviour.username, &behaviour.password) {
            let expected =
                format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}")));
            if headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) != Some(expected.as_str()) {
                let body = json!({"code": 401, "message": "Authentication failed.", "referer": "lbdesk", "restOperationId": 1});
                return Some((StatusCode::UNAUTHORIZED, Json(body)).into_response());
            }
        }
        let limited = &behaviour.fault_tenants;
        if !limited.is_empty() && !tenants.iter().any(|t| limited.iter().any(|l| l == t)) {
            return None;
        }
        Some(behaviour.fault?.answer().await)
    }

    /// An AS3 declare POST, `valid` or not by CIS's schema: each tenant it holds kept (or deleted,
    /// when posted empty); one task per tenant.
    fn declare(&self, request: &Value, valid: Result<(), String>) -> Response {
        let adc = request.get("declaration").unwrap_or(request);
        let tenants: Map<String, Value> = tenants_of(request).map(|(k, v)| (k.clone(), v.clone())).collect();
        let mut inner = self.lock();
        let refused: Option<Vec<String>> = match valid {
            Err(errors) => Some(vec![errors]),
            Ok(()) => {
                let rejected: Vec<String> = tenants
                    .iter()
                    .filter(|(t, _)| inner.behaviour.reject_tenants.contains(t))
                    .flat_map(|(t, tenant)| refusals(t, tenant))
                    .collect();
                (!rejected.is_empty()).then_some(rejected)
            }
        };
        let code = if refused.is_some() { 422 } else { 200 };
        let results: Vec<Value> = tenants
            .keys()
            .map(|t| match &refused {
                Some(errors) => {
                    json!({"tenant": t, "code": code, "message": "declaration is invalid", "errors": errors})
                }
                None => json!({"tenant": t, "code": code, "message": "success"}),
            })
            .collect();
        let id = format!("task-{}", inner.tasks.len() + 1);
        inner.tasks.push(json!({"id": id, "results": results, "declaration": {}}));
        let excess = inner.tasks.len().saturating_sub(TASKS_KEPT);
        inner.tasks.drain(..excess);
        if let Some(errors) = refused {
            return invalid(errors);
        }
        for (name, tenant) in tenants {
            // NB: a tenant posted with nothing but its class is deleted, as AS3 does.
            if tenant.as_object().is_some_and(|o| o.len() == 1) {
                inner.tenants.remove(&name);
            } else {
                inner.tenants.insert(name, tenant);
            }
        }
        (StatusCode::OK, Json(json!({"results": results, "declaration": adc}))).into_response()
    }

    /// `GET /declare/<tenant>`: the tenant in an ADC, or 204.
    fn declaration(&self, tenant: &str) -> Response {
        match self.lock().tenants.get(tenant) {
            Some(t) => Json(json!({"class": "ADC", "schemaVersion": "3.52.0", "id": "lbdesk-bigip-sim", tenant: t}))
                .into_response(),
            None => StatusCode::NO_CONTENT.into_response(),
        }
    }

    /// `GET /mgmt/tm/ltm/pool/~T~A~P/members/stats`: one entry per member address.
    fn members(&self, path: &str) -> Response {
        let inner = self.lock();
        let parts: Vec<&str> = path.trim_start_matches('~').split('~').collect();
        let pool = match parts.as_slice() {
            [tenant, app, pool] => inner.tenants.get(*tenant).and_then(|t| t.get(*app)).and_then(|a| a.get(*pool)),
            _ => None,
        };
        let Some(pool) = pool.filter(|p| p.get("class").and_then(Value::as_str) == Some("Pool")) else {
            let message = format!("01020036:3: The requested Pool ({}) was not found.", path.replace('~', "/"));
            return (StatusCode::NOT_FOUND, Json(json!({"code": 404, "message": message, "errorStack": []})))
                .into_response();
        };
        let behaviour = &inner.behaviour;
        let mut entries = Map::new();
        for member in pool.get("members").and_then(Value::as_array).into_iter().flatten() {
            let port = member.get("servicePort").and_then(Value::as_u64).unwrap_or_default();
            for address in
                member.get("serverAddresses").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str)
            {
                let available =
                    if behaviour.members_down.iter().any(|a| a == address) { "offline" } else { "available" };
                let enabled =
                    if behaviour.members_disabled.iter().any(|a| a == address) { "disabled" } else { "enabled" };
                let key =
                    format!("https://localhost/mgmt/tm/ltm/pool/{path}/members/~{}~{address}:{port}/stats", parts[0]);
                entries.insert(
                    key,
                    json!({"nestedStats": {"entries": {
                        "addr": {"description": address},
                        "port": {"value": port},
                        "status.availabilityState": {"description": available},
                        "status.enabledState": {"description": enabled},
                    }}}),
                );
            }
        }
        Json(json!({"kind": "tm:ltm:pool:members:memberscollectionstats", "entries": entries})).into_response()
    }

    /// The routes of iControl REST it serves, and of the test controls.
    pub fn router(&self) -> Router {
        async fn gated(
            s: &Simulator,
            headers: &HeaderMap,
            about: &[&str],
            serve: impl FnOnce() -> Response,
        ) -> Response {
            match s.gate(headers, about).await {
                Some(refusal) => refusal,
                None => serve(),
            }
        }
        let declare = |State(s): State<Simulator>, headers: HeaderMap, body: axum::body::Bytes| async move {
            // NB: validated off the async workers (a 1,000-listener declaration takes tens of
            // milliseconds of CPU), and before the lock, which every other call waits on.
            let checked = tokio::task::spawn_blocking(move || {
                serde_json::from_slice::<Value>(&body).map(|request| {
                    let valid = validate_as_cis(&request);
                    (request, valid)
                })
            })
            .await;
            let request = match checked {
                Ok(request) => request,
                Err(e) => return invalid(vec![format!("the declaration could not be validated: {e}")]),
            };
            let about: Vec<&str> = request.iter().flat_map(|(r, _)| tenants_of(r)).map(|(t, _)| t.as_str()).collect();
            gated(&s, &headers, &about, || match &request {
                Ok((request, valid)) => s.declare(request, valid.clone()),
                Err(e) => invalid(vec![format!("the body is not JSON: {e}")]),
            })
            .await
        };
        Router::new()
            .route(
                "/mgmt/shared/appsvcs/info",
                get(|State(s): State<Simulator>, headers: HeaderMap| async move {
                    gated(&s, &headers, &[], || {
                        Json(json!({"version": "3.52.0", "release": "5", "schemaCurrent": "3.52.0"})).into_response()
                    })
                    .await
                }),
            )
            .route("/mgmt/shared/appsvcs/declare", axum::routing::post(declare))
            .route(
                "/mgmt/shared/appsvcs/declare/{tenant}",
                get(|State(s): State<Simulator>, headers: HeaderMap, Path(tenant): Path<String>| async move {
                    gated(&s, &headers, &[&tenant], || s.declaration(&tenant)).await
                })
                .post(declare),
            )
            .route(
                "/mgmt/shared/appsvcs/task",
                get(|State(s): State<Simulator>, headers: HeaderMap| async move {
                    let tasks = || Json(json!({"items": s.lock().tasks.clone()})).into_response();
                    gated(&s, &headers, &[], tasks).await
                }),
            )
            .route(
                "/mgmt/tm/ltm/pool/{path}/members/stats",
                get(|State(s): State<Simulator>, headers: HeaderMap, Path(path): Path<String>| async move {
                    let tenant = path.trim_start_matches('~').split('~').next().unwrap_or_default();
                    gated(&s, &headers, &[tenant], || s.members(&path)).await
                }),
            )
            .route(
                "/_behaviour",
                get(|State(s): State<Simulator>| async move { Json(s.lock().behaviour.clone()) }).put(
                    |State(s): State<Simulator>, Json(b): Json<Behaviour>| async move {
                        s.set_behaviour(b);
                        StatusCode::NO_CONTENT
                    },
                ),
            )
            .with_state(self.clone())
    }

    /// Serves on `listener` until the process ends.
    pub async fn serve(self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        crate::sims::serve(listener, self.router()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_behaviour_file_names_the_field() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sim.yaml");
        std::fs::write(&path, "membersDown: [10.2.0.5]\nfault: garbage\n").expect("write");
        let read = Behaviour::read(&path).expect("valid");
        assert_eq!((read.members_down, read.fault), (vec!["10.2.0.5".to_string()], Some(Fault::Garbage)));
        std::fs::write(&path, "membersDwn: [10.2.0.5]\n").expect("write");
        assert!(Behaviour::read(&path).expect_err("typo").to_string().contains("membersDwn"));
        std::fs::write(&path, "fault: melted\n").expect("write");
        assert!(Behaviour::read(&path).expect_err("unknown").to_string().contains("fault"));
    }
}
