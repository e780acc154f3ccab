//! What the simulators (network-policy driver, BIG-IP) share: reading a behaviour file, naming
//! the field a bad one gets wrong, and serving a router on a listener.

use std::net::SocketAddr;
use std::path::Path;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// A fault every request to a simulator gets while set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fault {
    /// HTTP 503 with an HTML page, as a proxy in front of a restarting system answers.
    Unavailable,
    /// A 200 whose body is an HTML page.
    Garbage,
    /// Never answers (the caller's timeout fires).
    Hang,
    /// A 200 of 64 MiB.
    Huge,
}

impl Fault {
    /// The answer the fault gives (after an hour, for `Hang`).
    pub async fn answer(self) -> Response {
        let page = "<html><body><h1>Service Unavailable</h1></body></html>";
        let html = [(header::CONTENT_TYPE, "text/html")];
        match self {
            Fault::Unavailable => (StatusCode::SERVICE_UNAVAILABLE, html, page).into_response(),
            Fault::Garbage => (html, page).into_response(),
            Fault::Hang => {
                tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
                StatusCode::GATEWAY_TIMEOUT.into_response()
            }
            Fault::Huge => ([(header::CONTENT_TYPE, "application/json")], vec![b' '; 64 << 20]).into_response(),
        }
    }
}

/// Reads a behaviour file (YAML or JSON); a bad file is an error naming the file and the field.
pub fn read_behaviour<T: DeserializeOwned>(path: &Path) -> anyhow::Result<T> {
    let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("could not read {}: {e}", path.display()))?;
    serde_path_to_error::deserialize(serde_yaml::Deserializer::from_str(&text))
        .map_err(|e| anyhow::anyhow!("{}: {}: {}", path.display(), e.path(), e.inner()))
}

/// Serves `router` on `listener` until the process ends.
pub async fn serve(listener: tokio::net::TcpListener, router: Router) -> std::io::Result<()> {
    axum::serve(listener.tap_io(crate::net::no_delay), router).await
}

/// `lbdesk <what>-sim`: serves `router` on `listen`, saying where.
pub async fn run(what: &str, listen: SocketAddr, router: Router) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| anyhow::anyhow!("could not listen on {listen}: {e}"))?;
    println!("{what} simulator on http://{}", listener.local_addr()?);
    serve(listener, router).await?;
    Ok(())
}
