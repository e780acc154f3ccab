//! A mocked Kubernetes API for the reconciler's apply steps, as kube-rs's controller-rs tests
//! them: a scenario lists the exact calls expected, in order, each with its answer; a call out
//! of turn fails the test at once, a call left unmade fails it at the end, and a scenario that
//! stalls fails within a second.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Method, Request, Response};
use kube::client::Body;
use serde_json::Value;

/// One call the scenario expects: its method, its path (with the query, if any), and the
/// answer's status and body. The request's body is kept for the test to read.
pub struct Call {
    pub method: Method,
    pub path: &'static str,
    pub status: u16,
    pub answer: Value,
}

impl Call {
    pub fn new(method: Method, path: &'static str, status: u16, answer: Value) -> Call {
        Call { method, path, status, answer }
    }
}

/// The calls a scenario still expects, and the bodies of those made.
#[derive(Default)]
struct Ledger {
    expected: VecDeque<Call>,
    bodies: Vec<Value>,
}

/// A client of the mocked API, and what it was asked.
pub struct Scenario {
    ledger: Arc<Mutex<Ledger>>,
}

impl Scenario {
    /// A client that answers `calls`, in order, and nothing else.
    pub fn client(calls: Vec<Call>) -> (kube::Client, Scenario) {
        let ledger = Arc::new(Mutex::new(Ledger { expected: calls.into(), bodies: Vec::new() }));
        let shared = ledger.clone();
        let service = tower::service_fn(move |req: Request<Body>| {
            let ledger = shared.clone();
            async move {
                let (parts, body) = req.into_parts();
                let bytes = body.collect_bytes().await.map_err(|e| e.to_string())?;
                let path = parts.uri.path_and_query().map(|p| p.as_str().to_string()).unwrap_or_default();
                let mut ledger = ledger.lock().map_err(|e| e.to_string())?;
                let Some(call) = ledger.expected.pop_front() else {
                    panic!("an unexpected call: {} {path}", parts.method);
                };
                assert_eq!((&parts.method, path.as_str()), (&call.method, call.path), "the calls, in order");
                ledger.bodies.push(serde_json::from_slice(&bytes).unwrap_or(Value::Null));
                let answer = serde_json::to_vec(&call.answer).map_err(|e| e.to_string())?;
                Response::builder().status(call.status).body(Body::from(answer)).map_err(|e| e.to_string())
            }
        });
        (kube::Client::new(service, "default"), Scenario { ledger })
    }

    /// Runs `step` against the scenario (failing after a second), then checks every expected
    /// call was made; returns what `step` returned and the bodies sent.
    pub async fn run<T>(self, step: impl Future<Output = T>) -> (T, Vec<Value>) {
        self.run_within(Duration::from_secs(1), step).await
    }

    /// The same, failing after `limit`: for a step that waits out a backoff of its own.
    pub async fn run_within<T>(self, limit: Duration, step: impl Future<Output = T>) -> (T, Vec<Value>) {
        let out = tokio::time::timeout(limit, step).await.expect("the scenario stalled");
        let ledger = self.ledger.lock().unwrap_or_else(|p| p.into_inner());
        let left: Vec<String> = ledger.expected.iter().map(|c| format!("{} {}", c.method, c.path)).collect();
        assert!(left.is_empty(), "calls never made: {left:?}");
        (out, ledger.bodies.clone())
    }
}
