//! The validating admission webhook, served over HTTPS for a real API server (cluster mode):
//! `POST /validate` takes an AdmissionReview v1 and answers it with the very checks the
//! embedded API calls in-process. The certificate and key are files (cert-manager's Secret, or
//! the script in `deploy/`), read again when either changes, so a renewed certificate is served
//! without a restart.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum_server::Handle;
use axum_server::tls_rustls::RustlsConfig;
use http::StatusCode;
use kube::core::DynamicObject;
use kube::core::admission::AdmissionReview;
use tokio::task::JoinHandle;

use crate::admission::Admission;

/// How often the certificate files are looked at.
const RELOAD_EVERY: Duration = Duration::from_secs(5);

/// Where and with what the webhook is served.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct WebhookArgs {
    /// Serve the validating admission webhook over HTTPS on this address (cluster mode; with
    /// `--webhook-cert` and `--webhook-key`).
    #[arg(long, env = "LBDESK_WEBHOOK_LISTEN", requires_all = ["webhook_cert", "webhook_key"])]
    pub webhook_listen: Option<SocketAddr>,
    /// The webhook's certificate chain (PEM), read again when it changes.
    #[arg(long, env = "LBDESK_WEBHOOK_CERT")]
    pub webhook_cert: Option<PathBuf>,
    /// The private key of `--webhook-cert` (PEM), read again when it changes.
    #[arg(long, env = "LBDESK_WEBHOOK_KEY")]
    pub webhook_key: Option<PathBuf>,
}

/// The webhook, bound and with its certificate read, ready to serve.
pub struct Webhook {
    listener: std::net::TcpListener,
    tls: RustlsConfig,
    files: (PathBuf, PathBuf),
    admission: Arc<Admission>,
}

fn config(cert: &Path, key: &Path) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    crate::tls::from_files(("--webhook-cert", cert), ("--webhook-key", key))
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

impl Webhook {
    /// Binds the webhook's address and reads its certificate; `None` when none is asked for.
    pub fn bind(args: &WebhookArgs, admission: Arc<Admission>) -> anyhow::Result<Option<Webhook>> {
        let Some(listen) = args.webhook_listen else { return Ok(None) };
        let (Some(cert), Some(key)) = (&args.webhook_cert, &args.webhook_key) else {
            anyhow::bail!("--webhook-listen needs --webhook-cert and --webhook-key");
        };
        let tls = RustlsConfig::from_config(config(cert, key)?);
        let listener =
            std::net::TcpListener::bind(listen).with_context(|| format!("could not listen on {listen} (webhook)"))?;
        Ok(Some(Webhook { listener, tls, files: (cert.clone(), key.clone()), admission }))
    }

    /// The address it is bound to.
    pub fn addr(&self) -> anyhow::Result<SocketAddr> {
        Ok(self.listener.local_addr()?)
    }

    /// Serves until `handle` shuts it down, reading the certificate again when it changes.
    pub fn serve(self, idle: Duration, handle: Handle<SocketAddr>) -> anyhow::Result<JoinHandle<std::io::Result<()>>> {
        let (cert, key) = self.files;
        let tls = self.tls.clone();
        let reload = tokio::spawn(async move {
            let mut seen = (modified(&cert), modified(&key));
            loop {
                tokio::time::sleep(RELOAD_EVERY).await;
                let now = (modified(&cert), modified(&key));
                if now == seen {
                    continue;
                }
                // NB: a half-written pair fails to load and is tried again at the next look.
                match config(&cert, &key) {
                    Ok(config) => {
                        tls.reload_from_config(config);
                        seen = now;
                        tracing::info!(cert = %cert.display(), "webhook certificate reloaded");
                    }
                    Err(e) => tracing::warn!(error = %format!("{e:#}"), "webhook certificate not reloaded"),
                }
            }
        });
        let router = Router::new().route("/validate", post(validate)).with_state(self.admission);
        let served = crate::net::serve(self.listener, router, Some(self.tls), idle, handle)?;
        Ok(tokio::spawn(async move {
            let result = served.await.unwrap_or_else(|e| Err(std::io::Error::other(e)));
            reload.abort();
            result
        }))
    }
}

/// One review: the AdmissionReview as the API server sends it, the same with its response.
async fn validate(State(admission): State<Arc<Admission>>, body: Bytes) -> Response {
    match serde_json::from_slice::<AdmissionReview<DynamicObject>>(&body) {
        Ok(review) => axum::Json(admission.review(review).await).into_response(),
        Err(e) => (StatusCode::BAD_REQUEST, format!("not an AdmissionReview: {e}")).into_response(),
    }
}
