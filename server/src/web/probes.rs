//! `/readyz` on the web port, for a load balancer in front of the replicas (public, as
//! `/healthz` is: it says nothing a tenant could not see); and `/metrics`, for Prometheus, on a
//! listener of its own (`--metrics-listen`, loopback by default): the metrics name load
//! balancers, clusters and their use, which are not for anyone who reaches the UI.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use app::ssr::AppState;
use app::ssr::clusters::Clusters;
use app::ssr::db::Db;
use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::{StatusCode, header};

use crate::metrics::Metrics;
use crate::reconciler::Context;

/// What the probes read.
#[derive(Clone)]
pub struct Probes {
    pub db: Db,
    pub clusters: Clusters,
    /// The reconciler's context, when this process runs one.
    pub reconciler: Option<Arc<Context>>,
    /// What the last answer said, to log a change once (probes come every few seconds).
    pub said: Arc<Said>,
}

/// The last answer of `/readyz`, and whether the process has been ready once.
#[derive(Debug, Default)]
pub struct Said {
    last: std::sync::Mutex<Option<Result<(), String>>>,
    ready: AtomicBool,
}

impl Said {
    /// Logs `now` when it differs from the last answer: a process not ready yet since it
    /// started says why at INFO (starting is no fault); one that was ready and is no more, at
    /// WARN.
    fn change(&self, now: &Result<(), String>) {
        let Ok(mut last) = self.last.lock() else { return };
        if last.as_ref() == Some(now) {
            return;
        }
        let was_ready = self.ready.load(Ordering::Relaxed);
        match now {
            Ok(()) => tracing::info!("ready"),
            Err(why) if was_ready => tracing::warn!(why = %why, "not ready"),
            Err(why) => tracing::info!(why = %why, "not ready yet"),
        }
        if now.is_ok() {
            self.ready.store(true, Ordering::Relaxed);
        }
        *last = Some(now.clone());
    }
}

impl Probes {
    pub(super) fn router(self) -> Router<AppState> {
        Router::new().route("/readyz", get(readyz)).with_state(self)
    }

    /// Why this process is not ready, if it is not.
    async fn not_ready(&self) -> Result<(), String> {
        if let Err(fault) = self.db.writable().await {
            return Err(format!("the store takes no writes: {}", fault.cause()));
        }
        if !self.clusters.is_listed() {
            return Err("the member clusters' Secrets are not read yet".into());
        }
        if self.reconciler.as_ref().is_some_and(|c| !c.ready()) {
            return Err("the reconciler's caches are not synced yet".into());
        }
        Ok(())
    }
}

/// What the metrics listener serves: `/metrics`, nothing else.
pub fn metrics_router(metrics: Arc<Metrics>) -> Router {
    Router::new().route("/metrics", get(self::metrics)).with_state(metrics)
}

/// Ready once the store takes a write (not only a read: a full disk or a lost database answers
/// a read), the member clusters' registrations have been read and, while this process runs the
/// reconciler, its caches have synced. NB: a process that runs no reconciler (or does not lead)
/// serves pages and server functions, which read the API directly: it is ready with its store.
async fn readyz(State(probes): State<Probes>) -> Response {
    let verdict = probes.not_ready().await;
    probes.said.change(&verdict);
    match verdict {
        Ok(()) => "ready".into_response(),
        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, why).into_response(),
    }
}

async fn metrics(State(metrics): State<Arc<Metrics>>) -> Response {
    let content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8";
    ([(header::CONTENT_TYPE, content_type)], metrics.render()).into_response()
}
