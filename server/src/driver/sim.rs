//! The driver simulator: the contract over HTTP, idempotent per `recordID`, with configurable
//! behaviour (a `Running` period, refusals by CIDR or ticket name) and injectable faults.
//! `lbdesk driver-sim --listen ADDR [--config FILE]`; embedded mode runs one in-process.
//!
//! `GET /_calls` lists every call received; `PUT /_behaviour` replaces the behaviour (tests use
//! both to inject faults and count calls).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use app::domain::crd::DriverState;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use http::StatusCode;
use ipnet::IpNet;
use serde::{Deserialize, Serialize};

use super::{DriverAnswer, DriverRequest, Hook};
pub use crate::sims::Fault;

/// A refusal rule: calls of its hook matching it answer `Fail` with `message`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Deny {
    /// The hook it refuses: `requestNetworkPolicy` when absent. A refused revoke is decided
    /// again at every call (lbdesk retries it with the same recordID until it succeeds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook: Option<Hook>,
    /// Refuse when the VE or LTM address lies in this CIDR.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cidr: Option<String>,
    /// Refuse when the ticket name matches this regular expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ticket_pattern: Option<String>,
    pub message: String,
}

/// What the simulator does (the file `--config` reads, YAML or JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Behaviour {
    /// Seconds a request answers `Running` after its first call, before `Succ`.
    #[serde(default)]
    pub running_seconds: u64,
    /// The `minRetryDelayInSeconds` sent with `Running`.
    #[serde(default = "one")]
    pub min_retry_delay_seconds: u64,
    #[serde(default)]
    pub deny: Vec<Deny>,
    /// Added to every answer.
    #[serde(default)]
    pub delay_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
    /// The requests (by ticket name) the fault is limited to; empty: every request gets it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fault_tickets: Vec<String>,
}

fn one() -> u64 {
    1
}

impl Default for Behaviour {
    fn default() -> Self {
        Behaviour {
            running_seconds: 0,
            min_retry_delay_seconds: 1,
            deny: Vec::new(),
            delay_ms: 0,
            fault: None,
            fault_tickets: Vec::new(),
        }
    }
}

impl Behaviour {
    /// What embedded mode does without a file: a short `Running` period, so the screens show
    /// Requested, and one refused range, so a refusal can be seen.
    pub fn demo() -> Behaviour {
        Behaviour {
            running_seconds: 2,
            deny: vec![Deny {
                cidr: Some("20.1.250.0/24".into()),
                message: "Network policy denied: 20.1.250.0/24 is reserved for the payment zone".into(),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    /// Reads a behaviour file; a bad file is an error naming the field.
    pub fn read(path: &std::path::Path) -> anyhow::Result<Behaviour> {
        let behaviour: Behaviour = crate::sims::read_behaviour(path)?;
        behaviour.check()?;
        Ok(behaviour)
    }

    fn check(&self) -> anyhow::Result<()> {
        for (i, rule) in self.deny.iter().enumerate() {
            if let Some(cidr) = &rule.cidr {
                cidr.parse::<IpNet>().map_err(|_| anyhow::anyhow!("deny[{i}].cidr: {cidr:?} is not a CIDR"))?;
            }
            if let Some(p) = &rule.ticket_pattern {
                regex_lite::Regex::new(p).map_err(|e| anyhow::anyhow!("deny[{i}].ticketPattern: {e}"))?;
            }
        }
        Ok(())
    }

    fn refusal(&self, hook: Hook, req: &DriverRequest) -> Option<String> {
        let of_hook = self.deny.iter().filter(|rule| rule.hook.unwrap_or(Hook::RequestNetworkPolicy) == hook);
        of_hook.into_iter().find_map(|rule| {
            let by_cidr = rule.cidr.as_deref().and_then(|c| c.parse::<IpNet>().ok()).is_some_and(|net| {
                [&req.veip, &req.ltmip].iter().any(|a| a.parse::<IpAddr>().is_ok_and(|ip| net.contains(&ip)))
            });
            let by_name = rule
                .ticket_pattern
                .as_deref()
                .and_then(|p| regex_lite::Regex::new(p).ok())
                .is_some_and(|re| re.is_match(&req.ticket));
            (by_cidr || by_name).then(|| rule.message.clone())
        })
    }
}

/// One call received.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Call {
    pub hook: Hook,
    #[serde(rename = "recordID")]
    pub record_id: String,
    #[serde(rename = "retryID")]
    pub retry_id: String,
    pub ticket: String,
    /// When it came, in milliseconds since the Unix epoch.
    #[serde(default)]
    pub at: u64,
}

#[derive(Default)]
struct Inner {
    behaviour: Behaviour,
    /// recordID → when first seen, and the final answer once given.
    records: HashMap<String, (Instant, Option<DriverAnswer>)>,
    calls: Vec<Call>,
}

/// The simulator's state.
#[derive(Clone, Default)]
pub struct Simulator(Arc<Mutex<Inner>>);

impl Simulator {
    pub fn new(behaviour: Behaviour) -> Simulator {
        Simulator(Arc::new(Mutex::new(Inner { behaviour, ..Default::default() })))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The answer to a call, idempotent per recordID.
    fn answer(&self, hook: Hook, req: &DriverRequest) -> DriverAnswer {
        let mut inner = self.lock();
        let behaviour = inner.behaviour.clone();
        let (first_seen, decided) =
            inner.records.entry(req.record_id.clone()).or_insert((Instant::now(), None)).clone();
        if let Some(answer) = decided {
            return answer;
        }
        let answer = match hook {
            Hook::RevokeNetworkPolicy => match behaviour.refusal(hook, req) {
                // NB: not recorded: asked again, a revoke is decided again.
                Some(message) => {
                    return DriverAnswer { status: DriverState::Fail, msg: message, min_retry_delay: 0 };
                }
                // Revoking what does not exist succeeds, as does repeating a succeeded revoke.
                None => DriverAnswer { status: DriverState::Succ, msg: String::new(), min_retry_delay: 0 },
            },
            Hook::RequestNetworkPolicy => match behaviour.refusal(hook, req) {
                Some(message) => DriverAnswer { status: DriverState::Fail, msg: message, min_retry_delay: 0 },
                None if first_seen.elapsed() < Duration::from_secs(behaviour.running_seconds) => DriverAnswer {
                    status: DriverState::Running,
                    msg: "the policy request is being processed".into(),
                    min_retry_delay: behaviour.min_retry_delay_seconds,
                },
                None => DriverAnswer { status: DriverState::Succ, msg: String::new(), min_retry_delay: 0 },
            },
        };
        if answer.status != DriverState::Running
            && let Some(record) = inner.records.get_mut(&req.record_id)
        {
            record.1 = Some(answer.clone());
        }
        answer
    }

    async fn hook(&self, hook: Hook, req: DriverRequest) -> Response {
        let (delay, fault) = {
            let mut inner = self.lock();
            inner.calls.push(Call {
                hook,
                record_id: req.record_id.clone(),
                retry_id: req.retry_id.clone(),
                ticket: req.ticket.clone(),
                at: std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as u64),
            });
            let limited = &inner.behaviour.fault_tickets;
            let faulty = limited.is_empty() || limited.contains(&req.ticket);
            (inner.behaviour.delay_ms, inner.behaviour.fault.filter(|_| faulty))
        };
        tokio::time::sleep(Duration::from_millis(delay)).await;
        match fault {
            Some(fault) => fault.answer().await,
            None => Json(self.answer(hook, &req)).into_response(),
        }
    }

    /// Every call received so far.
    pub fn calls(&self) -> Vec<Call> {
        self.lock().calls.clone()
    }

    /// Replaces the behaviour.
    pub fn set_behaviour(&self, behaviour: Behaviour) {
        self.lock().behaviour = behaviour;
    }

    /// Changes the behaviour in place: of several callers each changing its own part (a fault
    /// limited to requests of its own), none undoes another's.
    pub fn change_behaviour(&self, change: impl FnOnce(&mut Behaviour)) {
        change(&mut self.lock().behaviour);
    }

    /// The routes of the contract and of the test controls.
    pub fn router(&self) -> Router {
        Router::new()
            .route(
                "/requestNetworkPolicy",
                post(|State(s): State<Simulator>, Json(r): Json<DriverRequest>| async move {
                    s.hook(Hook::RequestNetworkPolicy, r).await
                }),
            )
            .route(
                "/revokeNetworkPolicy",
                post(|State(s): State<Simulator>, Json(r): Json<DriverRequest>| async move {
                    s.hook(Hook::RevokeNetworkPolicy, r).await
                }),
            )
            .route("/_calls", get(|State(s): State<Simulator>| async move { Json(s.calls()) }))
            .route(
                "/_behaviour",
                get(|State(s): State<Simulator>| async move { Json(s.lock().behaviour.clone()) }).put(
                    |State(s): State<Simulator>, Json(b): Json<Behaviour>| async move {
                        match b.check() {
                            Ok(()) => {
                                s.set_behaviour(b);
                                StatusCode::NO_CONTENT.into_response()
                            }
                            Err(e) => (StatusCode::UNPROCESSABLE_ENTITY, e.to_string()).into_response(),
                        }
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

    fn req(record: &str, ticket: &str, veip: &str) -> DriverRequest {
        DriverRequest {
            record_id: record.into(),
            retry_id: "r".into(),
            ticket: ticket.into(),
            loadbalancer: "lb".into(),
            cluster: "c".into(),
            namespace: "ns".into(),
            veip: veip.into(),
            ltmip: "10.0.0.1".into(),
        }
    }

    #[tokio::test]
    async fn a_fault_limited_to_requests_leaves_the_others_answered() {
        let limited =
            Behaviour { fault: Some(Fault::Unavailable), fault_tickets: vec!["broken".into()], ..Default::default() };
        let sim = Simulator::new(limited);
        let status = |ticket: &'static str| sim.hook(Hook::RequestNetworkPolicy, req(ticket, ticket, "20.1.0.10"));
        assert_eq!(status("broken").await.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(status("fine").await.status(), StatusCode::OK);
        sim.change_behaviour(|b| b.fault_tickets.clear());
        assert_eq!(status("fine").await.status(), StatusCode::SERVICE_UNAVAILABLE, "unlimited, every request");
    }

    #[test]
    fn answers_are_idempotent_and_follow_the_rules() {
        let sim = Simulator::new(Behaviour {
            deny: vec![
                Deny { cidr: Some("20.1.0.128/25".into()), message: "CIDR denied".into(), ..Default::default() },
                Deny { ticket_pattern: Some("^deny-".into()), message: "name denied".into(), ..Default::default() },
                Deny {
                    hook: Some(Hook::RevokeNetworkPolicy),
                    ticket_pattern: Some("^kept-".into()),
                    message: "revoke denied".into(),
                    ..Default::default()
                },
            ],
            ..Default::default()
        });
        let ok = sim.answer(Hook::RequestNetworkPolicy, &req("a", "t", "20.1.0.10"));
        assert_eq!(ok.status, DriverState::Succ);
        assert_eq!(sim.answer(Hook::RequestNetworkPolicy, &req("b", "t", "20.1.0.200")).msg, "CIDR denied");
        assert_eq!(sim.answer(Hook::RequestNetworkPolicy, &req("c", "deny-me", "20.1.0.10")).msg, "name denied");
        assert_eq!(sim.answer(Hook::RevokeNetworkPolicy, &req("r", "kept-1", "20.1.0.10")).msg, "revoke denied");
        assert_eq!(sim.answer(Hook::RequestNetworkPolicy, &req("k", "kept-1", "20.1.0.10")).status, DriverState::Succ);
        sim.set_behaviour(Behaviour { running_seconds: 60, ..Default::default() });
        assert_eq!(
            sim.answer(Hook::RequestNetworkPolicy, &req("a", "t", "20.1.0.10")).status,
            DriverState::Succ,
            "decided stays decided"
        );
        assert_eq!(sim.answer(Hook::RequestNetworkPolicy, &req("d", "t", "20.1.0.10")).status, DriverState::Running);
        assert_eq!(
            sim.answer(Hook::RevokeNetworkPolicy, &req("r", "kept-1", "20.1.0.10")).status,
            DriverState::Succ,
            "a refused revoke is decided again when asked again"
        );
        assert_eq!(
            sim.answer(Hook::RevokeNetworkPolicy, &req("never-seen", "t", "20.1.0.10")).status,
            DriverState::Succ
        );
    }

    #[test]
    fn a_bad_behaviour_file_names_the_field() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sim.yaml");
        std::fs::write(&path, "runningSeconds: 2\ndeny:\n- {cidr: 20.1.0.0/33, message: x}\n").expect("write");
        assert!(Behaviour::read(&path).expect_err("bad CIDR").to_string().contains("deny[0].cidr"));
        std::fs::write(&path, "runingSeconds: 2\n").expect("write");
        assert!(Behaviour::read(&path).expect_err("typo").to_string().contains("runingSeconds"));
        std::fs::write(&path, "runningSeconds: 2\nfault: garbage\n").expect("write");
        assert_eq!(Behaviour::read(&path).expect("valid").fault, Some(Fault::Garbage));
    }
}
