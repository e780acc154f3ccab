//! The embedded Kubernetes-compatible API: every simulated cluster under
//! `/k8s/clusters/<cluster>/…` on lbdesk's own port, stored in the SQL database, with the
//! semantics kube-rs and kubectl rely on (discovery, server-side tables, selectors, watch with
//! bookmarks and 410, resourceVersion compare-and-swap, merge and JSON patch, finalizers, the
//! status subresource, admission). Everything in lbdesk reaches it through `kube::Client`.

mod admission;
mod apply;
mod continuation;
mod handlers;
mod managed;
pub mod object;
mod prepare;
pub mod resources;
pub mod routes;
pub mod selector;
mod shape;
pub mod status;
pub mod store;
mod table;
mod watch;

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::header;
use serde_json::Value;

use crate::admission::Admission;
pub use prepare::prepare_new;
use resources::Kind;
use status::ApiError;
use store::Store;

/// Largest request body accepted.
pub const MAX_BODY: usize = 1024 * 1024;

/// The embedded API's state.
pub struct Api {
    pub store: Store,
    /// The management cluster's name (it alone serves the lbdesk CRDs).
    pub mgmt: String,
    pub admission: Arc<Admission>,
}

/// A collection or one object of a kind.
#[derive(Debug, Clone)]
pub struct Objects {
    pub kind: &'static Kind,
    /// The namespace of the path (`None`: cluster-scoped, or all namespaces).
    pub namespace: Option<String>,
    pub name: Option<String>,
    /// The `status` subresource.
    pub status: bool,
}

use app::ssr::audited::Said;

/// The request as handlers see it.
pub struct Call {
    pub cluster: String,
    pub user: String,
    pub query: HashMap<String, String>,
    pub table: bool,
    pub content_type: String,
    pub body: Vec<u8>,
    /// The managed fields the server computed for an object an apply creates.
    pub managed_fields: Option<Value>,
    /// Who a page's write is for, and why (`ssr::audited`): taken from lbdesk's own user alone.
    pub said: Option<Said>,
}

impl Call {
    /// A query parameter.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query.get(name).map(String::as_str).filter(|v| !v.is_empty())
    }

    /// The body as a JSON value.
    pub fn json(&self) -> Result<Value, ApiError> {
        serde_json::from_slice(&self.body)
            .map_err(|e| ApiError::BadRequest(format!("the request body is not valid JSON: {e}")))
    }
}

/// A JSON response with a status code.
pub fn respond(code: u16, body: &Value) -> Response {
    respond_json(code, body.to_string())
}

/// A JSON response from text already serialised.
pub fn respond_json(code: u16, json: String) -> Response {
    let code = http::StatusCode::from_u16(code).unwrap_or(http::StatusCode::OK);
    Response::builder()
        .status(code)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(json))
        .unwrap_or_else(|_| code.into_response())
}
