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

use crate::admission::{Admission, Caller};
use crate::config::WebhookArgs;

/// How often the certificate files are looked at.
const RELOAD_EVERY: Duration = Duration::from_secs(5);

/// The webhook, bound and with its certificate read, ready to serve.
pub struct Webhook {
    listener: std::net::TcpListener,
    tls: RustlsConfig,
    files: Files,
    admission: Arc<Admission>,
}

/// The certificate, key and client CA files.
#[derive(Clone)]
struct Files {
    cert: PathBuf,
    key: PathBuf,
    client_ca: Option<PathBuf>,
}

impl Files {
    fn config(&self) -> anyhow::Result<Arc<rustls::ServerConfig>> {
        let Some(ca) = &self.client_ca else {
            return crate::tls::from_files(("--webhook-cert", &self.cert), ("--webhook-key", &self.key));
        };
        let read = |flag: &str, path: &Path| {
            std::fs::read(path).with_context(|| format!("{flag} {}: could not read the file", path.display()))
        };
        let certs = crate::tls::certificates(&read("--webhook-cert", &self.cert)?)
            .with_context(|| format!("--webhook-cert {}", self.cert.display()))?;
        let key = crate::tls::private_key(&read("--webhook-key", &self.key)?)
            .with_context(|| format!("--webhook-key {}", self.key.display()))?;
        let cas = crate::tls::certificates(&read("--webhook-client-ca", ca)?)
            .with_context(|| format!("--webhook-client-ca {}", ca.display()))?;
        crate::tls::server_config_with_clients(certs, key, Some(cas))
            .with_context(|| format!("--webhook-cert, --webhook-key and --webhook-client-ca {}", ca.display()))
    }

    fn modified(&self) -> [Option<SystemTime>; 3] {
        [modified(&self.cert), modified(&self.key), self.client_ca.as_deref().and_then(modified)]
    }
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
        let files = Files { cert: cert.clone(), key: key.clone(), client_ca: args.webhook_client_ca.clone() };
        let tls = RustlsConfig::from_config(files.config()?);
        let listener =
            std::net::TcpListener::bind(listen).with_context(|| format!("could not listen on {listen} (webhook)"))?;
        if files.client_ca.is_none() {
            tracing::warn!(
                "the webhook does not authenticate the API server (--webhook-client-ca): it answers reviews but audits none"
            );
        }
        Ok(Some(Webhook { listener, tls, files, admission }))
    }

    /// The address it is bound to.
    pub fn addr(&self) -> anyhow::Result<SocketAddr> {
        Ok(self.listener.local_addr()?)
    }

    /// Serves until `handle` shuts it down, reading the certificate again when it changes.
    pub fn serve(self, idle: Duration, handle: Handle<SocketAddr>) -> anyhow::Result<JoinHandle<std::io::Result<()>>> {
        let files = self.files;
        let reloaded = files.clone();
        let tls = self.tls.clone();
        let reload = tokio::spawn(async move {
            let mut seen = reloaded.modified();
            loop {
                tokio::time::sleep(RELOAD_EVERY).await;
                let now = reloaded.modified();
                if now == seen {
                    continue;
                }
                // NB: a half-written pair fails to load and is tried again at the next look.
                match reloaded.config() {
                    Ok(config) => {
                        tls.reload_from_config(config);
                        seen = now;
                        tracing::info!(cert = %reloaded.cert.display(), "webhook certificate reloaded");
                    }
                    Err(e) => tracing::warn!(error = %format!("{e:#}"), "webhook certificate not reloaded"),
                }
            }
        });
        // NB: with a client CA, rustls admits only callers it signed: the API server.
        let caller = if files.client_ca.is_some() { Caller::Authenticated } else { Caller::Unauthenticated };
        let router = Router::new().route("/validate", post(validate)).with_state((self.admission, caller));
        let served = crate::net::serve(self.listener, router, Some(self.tls), idle, handle)?;
        Ok(tokio::spawn(async move {
            let result = served.await.unwrap_or_else(|e| Err(std::io::Error::other(e)));
            reload.abort();
            result
        }))
    }
}

/// One review: the AdmissionReview as the API server sends it, the same with its response.
async fn validate(State((admission, caller)): State<(Arc<Admission>, Caller)>, body: Bytes) -> Response {
    match serde_json::from_slice::<AdmissionReview<DynamicObject>>(&body) {
        Ok(review) => axum::Json(admission.review(review, caller).await).into_response(),
        Err(e) => (StatusCode::BAD_REQUEST, format!("not an AdmissionReview: {e}")).into_response(),
    }
}
