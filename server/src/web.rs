//! The HTTP surface: pages, server functions, static files, health, and the guards around them.

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use http::{HeaderValue, Method, StatusCode, header};
use leptos_axum::{LeptosRoutes, generate_route_list};
use tower_sessions::cookie::SameSite;
use tower_sessions::{Expiry, Session, SessionManagerLayer};

use app::error::AppError;
use app::ssr::session_store::SqlSessionStore;
use app::ssr::{AppState, SESSION_USER};
use app::{App, shell};

/// How long a session lives without activity.
pub const SESSION_IDLE: time::Duration = time::Duration::hours(8);

/// The whole web application.
pub fn router(state: AppState, secure_cookies: bool) -> Router {
    let routes = generate_route_list(App);
    let sessions = SessionManagerLayer::new(SqlSessionStore::new(state.db.clone()))
        .with_name("lbdesk_session")
        .with_http_only(true)
        .with_same_site(SameSite::Lax)
        .with_secure(secure_cookies)
        .with_expiry(Expiry::OnInactivity(SESSION_IDLE));
    let options = state.leptos_options.clone();
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .leptos_routes(&state, routes, move || shell(options.clone()))
        .fallback(leptos_axum::file_and_error_handler::<AppState, _>(shell))
        .layer(middleware::from_fn(require_session))
        .layer(middleware::from_fn(same_origin_writes))
        .layer(sessions)
        .with_state(state)
}

async fn readyz(State(state): State<AppState>) -> Response {
    match sqlx::query("SELECT 1").execute(&state.db.pool).await {
        Ok(_) => "ready".into_response(),
        Err(e) => {
            tracing::warn!(error = %e, "not ready: database");
            (StatusCode::SERVICE_UNAVAILABLE, "database unavailable").into_response()
        }
    }
}

/// Paths anyone may reach without a session.
fn is_public(path: &str) -> bool {
    matches!(path, "/login" | "/api/login" | "/healthz" | "/readyz" | "/favicon.svg") || path.starts_with("/pkg/")
}

/// Every page needs a session (else: to the sign-in page), every server function too (else: 401).
/// Signed-in responses are never cached, so the back button cannot show them after sign-out.
async fn require_session(session: Session, req: Request, next: Next) -> Response {
    let path = req.uri().path().to_owned();
    let signed_in = matches!(session.get::<String>(SESSION_USER).await, Ok(Some(_)));
    if path == "/login" && signed_in {
        return Redirect::to("/").into_response();
    }
    if !signed_in && !is_public(&path) {
        if path.starts_with("/api/") {
            return unauthorized();
        }
        let next = req.uri().path_and_query().map(|p| p.as_str()).unwrap_or("/");
        let target = if next == "/" { "/login".to_string() } else { format!("/login?next={}", urlencode(next)) };
        return Redirect::to(&target).into_response();
    }
    let mut res = next.run(req).await;
    if !path.starts_with("/pkg/") {
        res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    res
}

/// The body a server function's caller understands.
fn unauthorized() -> Response {
    let body = serde_json::to_string(&AppError::Unauthorized).unwrap_or_default();
    Response::builder()
        .status(StatusCode::UNAUTHORIZED)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body))
        .unwrap_or_else(|_| StatusCode::UNAUTHORIZED.into_response())
}

/// CSRF guard: a state-changing request must come from a page of this site. Browsers mark
/// cross-site requests with `Sec-Fetch-Site` and `Origin`; either disagreeing refuses it.
async fn same_origin_writes(req: Request, next: Next) -> Response {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return next.run(req).await;
    }
    let headers = req.headers();
    let fetch_site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok());
    let cross_site = matches!(fetch_site, Some("cross-site" | "same-site"));
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    let origin_mismatch =
        headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()).is_some_and(|origin| origin_host(origin) != host);
    if cross_site || origin_mismatch {
        tracing::warn!(path = %req.uri().path(), "refused a cross-site write");
        return (StatusCode::FORBIDDEN, "cross-site request refused").into_response();
    }
    next.run(req).await
}

fn origin_host(origin: &str) -> Option<&str> {
    origin.split_once("://").map(|(_, rest)| rest.trim_end_matches('/'))
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_origin_host_is_what_follows_the_scheme() {
        assert_eq!(origin_host("http://127.0.0.1:3000"), Some("127.0.0.1:3000"));
        assert_eq!(origin_host("https://lbdesk.bank/"), Some("lbdesk.bank"));
        assert_eq!(origin_host("null"), None);
    }

    #[test]
    fn the_next_path_is_percent_encoded() {
        assert_eq!(urlencode("/tickets?x=a b&y"), "/tickets%3Fx%3Da%20b%26y");
    }
}
