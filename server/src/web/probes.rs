//! `/readyz` on the web port, for a load balancer in front of the replicas (public, as
//! `/healthz` is: it says nothing a tenant could not see); and `/metrics`, for Prometheus, on a
//! listener of its own (`--metrics-listen`, loopback by default): the metrics name load
//! balancers, clusters and their use, which are not for anyone who reaches the UI.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use app::ssr::AppState;
use app::ssr::clusters::Clusters;
use app::ssr::db::Db;
use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::{HeaderMap, StatusCode, header};
use subtle::ConstantTimeEq;

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

/// What the metrics listener serves: `/metrics`, nothing else; with `token_file`, only to a
/// scraper sending that file's token (`Authorization: Bearer …`, as Prometheus'
/// `authorization.credentials_file` sends it).
pub fn metrics_router(metrics: Arc<Metrics>, token_file: Option<PathBuf>) -> Router {
    Router::new()
        .route("/metrics", get(self::metrics))
        .with_state(Scrape { metrics, token_file: token_file.map(Arc::new) })
}

/// What a scrape reads.
#[derive(Clone)]
struct Scrape {
    metrics: Arc<Metrics>,
    token_file: Option<Arc<PathBuf>>,
}

/// The token in `file`, trimmed: what `--metrics-token-file` names, read at start (to refuse a
/// bad one) and at every scrape (a rotated Secret takes effect without a restart).
pub fn metrics_token(file: &Path) -> Result<String, String> {
    let token = std::fs::read_to_string(file).map_err(|e| format!("--metrics-token-file {}: {e}", file.display()))?;
    let token = token.trim();
    if token.is_empty() {
        return Err(format!("--metrics-token-file {}: the file holds no token", file.display()));
    }
    Ok(token.to_string())
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

async fn metrics(State(scrape): State<Scrape>, headers: HeaderMap) -> Response {
    if let Some(file) = &scrape.token_file {
        let file = Arc::clone(file);
        let expected = match tokio::task::spawn_blocking(move || metrics_token(&file)).await {
            Ok(Ok(token)) => token,
            Ok(Err(why)) => {
                tracing::warn!(%why, "/metrics is not served: its token cannot be read");
                return (StatusCode::SERVICE_UNAVAILABLE, "the metrics token cannot be read").into_response();
            }
            Err(_) => return StatusCode::SERVICE_UNAVAILABLE.into_response(),
        };
        let sent =
            headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
        // NB: compared in constant time: how long a wrong token takes says nothing of the right one.
        if !sent.is_some_and(|sent| bool::from(sent.as_bytes().ct_eq(expected.as_bytes()))) {
            let challenge = [(header::WWW_AUTHENTICATE, "Bearer")];
            return (StatusCode::UNAUTHORIZED, challenge, "/metrics asks for its bearer token").into_response();
        }
    }
    let content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8";
    ([(header::CONTENT_TYPE, content_type)], scrape.metrics.render()).into_response()
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use http::Request;
    use tower::ServiceExt;

    use super::*;

    async fn scrape(router: &Router, authorization: Option<&str>) -> StatusCode {
        let mut req = Request::get("/metrics");
        if let Some(value) = authorization {
            req = req.header(header::AUTHORIZATION, value);
        }
        let res = router.clone().oneshot(req.body(Body::empty()).expect("a request")).await;
        res.map(|r| r.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    #[tokio::test]
    async fn with_a_token_file_metrics_go_only_to_a_scraper_sending_it() {
        let dir = tempfile::tempdir().expect("a folder");
        let file = dir.path().join("token");
        std::fs::write(&file, "s3cret\n").expect("the token");
        let router = metrics_router(Arc::default(), Some(file.clone()));
        assert_eq!(scrape(&router, None).await, StatusCode::UNAUTHORIZED, "no token");
        assert_eq!(scrape(&router, Some("Bearer wrong")).await, StatusCode::UNAUTHORIZED, "a wrong token");
        assert_eq!(scrape(&router, Some("Basic s3cret")).await, StatusCode::UNAUTHORIZED, "not a bearer token");
        assert_eq!(scrape(&router, Some("Bearer s3cret")).await, StatusCode::OK, "the file's token, trimmed");
        // A rotated Secret takes effect at the next scrape.
        std::fs::write(&file, "rotated").expect("the new token");
        assert_eq!(scrape(&router, Some("Bearer s3cret")).await, StatusCode::UNAUTHORIZED);
        assert_eq!(scrape(&router, Some("Bearer rotated")).await, StatusCode::OK);
        std::fs::remove_file(&file).expect("removed");
        assert_eq!(scrape(&router, Some("Bearer rotated")).await, StatusCode::SERVICE_UNAVAILABLE, "unreadable");
        // Without a token file, as before: the listener's address and the network policy guard it.
        assert_eq!(scrape(&metrics_router(Arc::default(), None), None).await, StatusCode::OK);
        // A file without a token is refused at start, naming the flag.
        std::fs::write(&file, " \n").expect("an empty token");
        assert!(metrics_token(&file).is_err_and(|e| e.contains("--metrics-token-file") && e.contains("no token")));
    }
}
