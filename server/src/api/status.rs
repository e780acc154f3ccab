//! Errors of the embedded API, answered as `metav1.Status` bodies with Kubernetes' codes.

use app::ssr::db::{Fault, fault};
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::{Value, json};

/// What went wrong, in the terms of the Kubernetes API.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("Unauthorized")]
    Unauthorized,
    #[error("{0}")]
    Forbidden(String),
    #[error("{kind} {name:?} not found")]
    NotFound { kind: String, name: String },
    #[error("{kind} {name:?} already exists")]
    AlreadyExists { kind: String, name: String },
    #[error("{0}")]
    Conflict(String),
    /// A watch or list from a resourceVersion older than the event log holds.
    #[error("{0}")]
    Gone(String),
    #[error("{kind} {name:?} is invalid: {}", causes.iter().map(|(f, m)| format!("{f}: {m}")).collect::<Vec<_>>().join(", "))]
    Invalid { kind: String, name: String, causes: Vec<(String, String)> },
    #[error("{0}")]
    TooLarge(String),
    #[error("{0}")]
    UnsupportedMediaType(String),
    #[error("the server does not allow this method on the requested resource")]
    MethodNotAllowed,
    /// An admission webhook refused the request; `code` is the webhook's (400 or 403), the
    /// causes (field, reason) its Status carried, passed on as a real API server does.
    #[error("admission webhook \"validate.lbdesk.ebcpaas.io\" denied the request: {message}")]
    Denied { code: u16, message: String, causes: Vec<(String, String)> },
    /// The store cannot take the write (or answer) now: a full disk (507) or a database that
    /// is out of reach (503). Nothing was stored; the same request may be sent again.
    #[error("lbdesk cannot store this now: {}", .0.cause())]
    Unavailable(Fault),
    #[error("{0}")]
    Internal(String),
}

impl ApiError {
    pub fn code(&self) -> u16 {
        match self {
            ApiError::BadRequest(_) => 400,
            ApiError::Unauthorized => 401,
            ApiError::Forbidden(_) => 403,
            ApiError::NotFound { .. } => 404,
            ApiError::MethodNotAllowed => 405,
            ApiError::AlreadyExists { .. } | ApiError::Conflict(_) => 409,
            ApiError::Gone(_) => 410,
            ApiError::TooLarge(_) => 413,
            ApiError::UnsupportedMediaType(_) => 415,
            ApiError::Invalid { .. } => 422,
            ApiError::Denied { code, .. } => *code,
            ApiError::Unavailable(fault) => fault.status(),
            ApiError::Internal(_) => 500,
        }
    }

    fn reason(&self) -> &'static str {
        match self {
            ApiError::BadRequest(_) => "BadRequest",
            ApiError::Unauthorized => "Unauthorized",
            ApiError::Forbidden(_) => "Forbidden",
            ApiError::NotFound { .. } => "NotFound",
            ApiError::AlreadyExists { .. } => "AlreadyExists",
            ApiError::Conflict(_) => "Conflict",
            ApiError::Gone(_) => "Expired",
            ApiError::Invalid { .. } => "Invalid",
            ApiError::TooLarge(_) => "RequestEntityTooLarge",
            ApiError::UnsupportedMediaType(_) => "UnsupportedMediaType",
            ApiError::MethodNotAllowed => "MethodNotAllowed",
            ApiError::Denied { code: 403, .. } => "Forbidden",
            ApiError::Denied { .. } => "BadRequest",
            ApiError::Unavailable(_) => "ServiceUnavailable",
            ApiError::Internal(_) => "InternalError",
        }
    }

    /// The `metav1.Status` body.
    pub fn status(&self) -> Value {
        let mut body = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.to_string(),
            "reason": self.reason(),
            "code": self.code(),
        });
        match self {
            ApiError::NotFound { kind, name } | ApiError::AlreadyExists { kind, name } => {
                body["details"] = json!({"name": name, "kind": kind});
            }
            ApiError::Invalid { kind, name, causes } => {
                body["details"] = json!({"name": name, "kind": kind, "causes": causes_of("FieldValueInvalid", causes)});
            }
            ApiError::Denied { code, causes, .. } if !causes.is_empty() => {
                let reason = if *code == 403 { "FieldValueForbidden" } else { "FieldValueInvalid" };
                body["details"] = json!({"causes": causes_of(reason, causes)});
            }
            _ => {}
        }
        body
    }

    /// Logs server-side failures; the caller gets the Status either way.
    pub fn internal(context: &str, e: impl std::fmt::Display) -> ApiError {
        tracing::error!(error = %e, "{context}");
        ApiError::Internal(format!("{context}: {e}"))
    }
}

/// `metav1.StatusCause`s, one per (field, message).
fn causes_of(reason: &str, causes: &[(String, String)]) -> Vec<Value> {
    causes.iter().map(|(f, m)| json!({"reason": reason, "message": m, "field": f})).collect()
}

impl From<sqlx::Error> for ApiError {
    fn from(e: sqlx::Error) -> Self {
        match fault(&e) {
            Some(f) => {
                tracing::warn!(error = %e, "the store is unavailable: {}", f.cause());
                ApiError::Unavailable(f)
            }
            None => ApiError::internal("storage failed", e),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response =
            (code, [(http::header::CONTENT_TYPE, "application/json")], self.status().to_string()).into_response();
        // NB: as kube-apiserver does: clients that retry a 503 (kubectl, kube's default client)
        // wait a second between tries instead of their own backoff.
        if let ApiError::Unavailable(_) = self {
            response.headers_mut().insert(http::header::RETRY_AFTER, http::HeaderValue::from_static("1"));
        }
        response
    }
}
