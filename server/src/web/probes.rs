//! `/readyz` on the web port, for a load balancer in front of the replicas (public, as
//! `/healthz` is: it says nothing a tenant could not see); and `/metrics`, for Prometheus, on a
//! listener of its own (`--metrics-listen`, loopback by default): the metrics name load
//! balancers, clusters and their use, which are not for anyone who reaches the UI.

use std::sync::Arc;

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
}

impl Probes {
    pub(super) fn router(self) -> Router<AppState> {
        Router::new().route("/readyz", get(readyz)).with_state(self)
    }
}

/// What the metrics listener serves: `/metrics`, nothing else.
pub fn metrics_router(metrics: Arc<Metrics>) -> Router {
    Router::new().route("/metrics", get(self::metrics)).with_state(metrics)
}

/// Ready once the database answers, the member clusters' registrations have been read and,
/// while this process runs the reconciler, its caches
/// have synced. NB: a process that runs no reconciler (or does not lead) serves pages and
/// server functions, which read the API directly: it is ready with its database.
async fn readyz(State(probes): State<Probes>) -> Response {
    if let Err(e) = sqlx::query("SELECT 1").execute(&probes.db.pool).await {
        tracing::warn!(error = %e, "not ready: database");
        return (StatusCode::SERVICE_UNAVAILABLE, "database unavailable").into_response();
    }
    if !probes.clusters.is_listed() {
        return (StatusCode::SERVICE_UNAVAILABLE, "the member clusters' Secrets are not read yet").into_response();
    }
    if probes.reconciler.as_ref().is_some_and(|c| !c.ready()) {
        return (StatusCode::SERVICE_UNAVAILABLE, "the reconciler's caches are not synced yet").into_response();
    }
    "ready".into_response()
}

async fn metrics(State(metrics): State<Arc<Metrics>>) -> Response {
    let content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8";
    ([(header::CONTENT_TYPE, content_type)], metrics.render()).into_response()
}
