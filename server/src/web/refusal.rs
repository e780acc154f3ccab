//! A request refused before it reaches a page or a server function, answered as a server
//! function answers: the error as JSON.

use axum::body::Body;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use http::{StatusCode, header};

use app::error::AppError;

/// Refuses `req` as a server function answers: the error as JSON, once its body is drained.
pub async fn refuse(req: Request, status: StatusCode, error: &AppError) -> Response {
    crate::net::drain(req.into_body()).await;
    error_response(status, error)
}

/// A refusal as a server function answers it: the error as JSON.
fn error_response(status: StatusCode, error: &AppError) -> Response {
    let body = serde_json::to_string(error).unwrap_or_default();
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body))
        .unwrap_or_else(|_| status.into_response())
}
