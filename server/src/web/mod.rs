//! The HTTP surface: pages, server functions, static files, health, and the guards around them
//! (security headers, the cross-site check, sessions).

mod bundle;
mod csrf;
mod finish;
mod headers;
mod probes;
mod refusal;

pub use csrf::SiteOrigin;
pub use headers::content_security_policy;
pub use probes::{Probes, metrics_router, metrics_token};

use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::{Extension, Router};
use http::{HeaderValue, StatusCode, header};
use leptos_axum::{AxumRouteListing, LeptosRoutes, generate_route_list};
use tower_http::compression::CompressionLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;
use tower_sessions::cookie::SameSite;
use tower_sessions::{Expiry, Session, SessionManagerLayer};

use app::error::AppError;
use app::i18n::Locale;
use app::ssr::session_store::SqlSessionStore;
use app::ssr::throttle::SignInThrottle;
use app::ssr::{AppState, SESSION_SEEN, SESSION_SINCE, SESSION_USER};
use app::{App, shell};
use refusal::refuse;

/// How long sessions last: without a request (`idle`), and from sign-in (`lifetime`).
#[derive(Clone, Copy, Debug)]
pub struct SessionPolicy {
    pub idle: std::time::Duration,
    pub lifetime: std::time::Duration,
}

/// What the session guard reads: the accounts (a reset ends sessions) and the policy.
#[derive(Clone)]
struct Guard {
    db: app::ssr::db::Db,
    policy: SessionPolicy,
    directory: Option<std::sync::Arc<app::ssr::directory::Directory>>,
}

/// The pages' routes, listed once per process.
///
/// NB: listing them renders the app with every resource's loading suppressed process-wide
/// (`leptos_server`'s `SuppressResourceLoad`): a resource first polled meanwhile, by a page
/// another server of the same process renders, would wait forever (leptos-rs/leptos#4773).
/// Listed once, before the first server serves, nothing renders meanwhile.
pub fn routes() -> Vec<AxumRouteListing> {
    static ROUTES: std::sync::OnceLock<Vec<AxumRouteListing>> = std::sync::OnceLock::new();
    ROUTES.get_or_init(|| generate_route_list(App)).clone()
}

/// The whole web application. `secure_cookies` when users reach it over HTTPS; `site` is where
/// its pages come from (the cross-site check); `probes` answer `/readyz`.
pub fn router(
    state: AppState,
    secure_cookies: bool,
    site: SiteOrigin,
    probes: Probes,
    policy: SessionPolicy,
) -> Router {
    let routes = routes();
    let idle = time::Duration::try_from(policy.idle).unwrap_or(time::Duration::hours(8));
    let sessions = SessionManagerLayer::new(SqlSessionStore::new(state.db.clone()))
        .with_name("lbdesk_session")
        .with_http_only(true)
        .with_same_site(SameSite::Lax)
        .with_secure(secure_cookies)
        .with_expiry(Expiry::OnInactivity(idle));
    let guard = Guard { db: state.db.clone(), policy, directory: state.directory.clone() };
    let options = state.leptos_options.clone();
    let root = bundle::root(&options);
    let error_root = root.clone();
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .leptos_routes_with_context(&state, routes, headers::page_context, move || shell(options.clone(), root.clone()))
        .merge(bundle::router(&state.leptos_options))
        .fallback(leptos_axum::file_and_error_handler_with_context::<AppState, _>(headers::page_context, move |o| {
            shell(o, error_root.clone())
        }))
        .layer(middleware::from_fn_with_state(guard, require_session))
        .layer(middleware::from_fn(bundle::no_long_names))
        .layer(middleware::from_fn_with_state(site, csrf::same_origin_writes))
        .layer(sessions)
        .layer(Extension(SignInThrottle::default()))
        // Every request has an id, answered in `x-request-id` and carried by each log line
        // written while it is served (the Kubernetes calls made for it included).
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(TraceLayer::new_for_http().make_span_with(request_span))
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
        // NB: so refusals, redirects and errors of the layers above get them too.
        .layer(middleware::from_fn(headers::security_headers))
        // Pages and server functions' answers, brotli or gzip as the browser asks (the bundle's
        // files are compressed ahead, and sent as they are). NB: a page carries no secret a
        // reflected input could be guessed against (BREACH): no CSRF token, and a new nonce each time.
        .layer(CompressionLayer::new())
        // NB: outermost, so that a request whose browser leaves is served whole, the session's
        // save and the log's lines included.
        .layer(middleware::from_fn(finish::to_the_end))
        // NB: after the layers: `/readyz` says why it is not ready itself, once per change, and
        // is not logged as a failed request (a starting process is not ready, by design).
        .merge(probes.router())
        .with_state(state)
}

/// The span a request is served in: its method, path and id. NB: an id a client sent is kept
/// when it is a plain token (a proxy's id, to follow a request across both logs); anything else
/// is not written to the log.
fn request_span(req: &Request) -> tracing::Span {
    let id = req.headers().get("x-request-id").and_then(|v| v.to_str().ok());
    let id = id.filter(|id| id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
    tracing::info_span!("request", method = %req.method(), path = %req.uri().path(), id = %id.unwrap_or("unreadable"))
}

/// Paths anyone may reach without a session (the bundle's files too, see `require_session`).
/// NB: signing out too: a session ended elsewhere (by an admin, a password reset, its lifetime)
/// must still let its browser's Sign out lead to sign-in, not answer 401 and leave the page as
/// it was.
fn is_public(path: &str) -> bool {
    matches!(path, "/login" | "/api/login" | "/api/logout" | "/api/locale" | "/healthz" | "/readyz" | "/favicon.svg")
}

/// Whether `path` is a file of the browser bundle.
fn is_bundle(path: &str) -> bool {
    path.starts_with("/pkg/") || path.starts_with(bundle::VERSIONED)
}

/// Whether a response is an HTML page (rendered by the app, or an error page).
fn is_page(response: &Response) -> bool {
    let content_type = response.headers().get(header::CONTENT_TYPE);
    content_type.is_some_and(|v| v.as_bytes().starts_with(b"text/html"))
}

/// Every page needs a session (else: to the sign-in page), every server function too (else: 401).
/// Signed-in responses are never cached, so the back button cannot show them after sign-out.
async fn require_session(State(guard): State<Guard>, session: Session, mut req: Request, next: Next) -> Response {
    let path = req.uri().path().to_owned();
    // NB: the bundle's files are public and the same for everyone: served without reading the
    // session and its user from the database, which a page's first load, a dozen files, did for
    // each of them.
    if is_bundle(&path) {
        return next.run(req).await;
    }
    let signed_in = match session.get::<String>(SESSION_USER).await {
        Ok(Some(user)) => current(&guard, &session, &user).await,
        _ => None,
    };
    let locale = reader_locale(&req, signed_in.flatten());
    req.extensions_mut().insert(locale);
    let signed_in = signed_in.is_some();
    if path == "/login" && signed_in {
        return Redirect::to("/").into_response();
    }
    if !signed_in && !is_public(&path) {
        if path.starts_with("/api/") {
            return refuse(req, StatusCode::UNAUTHORIZED, &AppError::Unauthorized).await;
        }
        let next = req.uri().path_and_query().map(|p| p.as_str()).unwrap_or("/");
        let target = if next == "/" { "/login".to_string() } else { format!("/login?next={}", urlencode(next)) };
        return Redirect::to(&target).into_response();
    }
    let mut res = next.run(req).await;
    res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

/// The locale a request is answered in: the signed-in user's saved choice, else this browser's
/// (its cookie), else the first of ours its `Accept-Language` prefers, else English.
fn reader_locale(req: &Request, saved: Option<Locale>) -> Locale {
    let header = |name| req.headers().get_all(name).iter().filter_map(|v| v.to_str().ok());
    let cookie = || {
        header(header::COOKIE)
            .flat_map(|v| v.split(';'))
            .find_map(|c| c.trim().strip_prefix(app::i18n::COOKIE)?.strip_prefix('='))
            .and_then(|tag| Locale::ALL.into_iter().find(|l| l.tag() == tag))
    };
    let accepted = || header(header::ACCEPT_LANGUAGE).find_map(Locale::of_accept_language);
    saved.or_else(cookie).or_else(accepted).unwrap_or_default()
}

/// Whether `user`'s session still signs them in (`Some`, with the language they saved, if any):
/// begun within its lifetime, after the user's last password reset, and (a directory user)
/// still granted something by their groups. One that no longer does is ended. A session in use
/// is seen again (and so kept from its idle timeout) at most every quarter of the timeout, not
/// on every request.
async fn current(guard: &Guard, session: &Session, user: &str) -> Option<Option<Locale>> {
    let now = app::ssr::now_micros();
    let micros = |d: std::time::Duration| i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
    let since = session.get::<i64>(SESSION_SINCE).await.ok().flatten();
    let facts = guard.db.session_facts(user).await;
    let valid = match (since, &facts) {
        (Some(since), Ok(Some(facts))) => {
            since >= facts.sessions_since
                && now.saturating_sub(since) <= micros(guard.policy.lifetime)
                // A directory user's groups are read again once their refresh period has passed.
                && app::ssr::directory_users::still_granted(&guard.db, guard.directory.as_ref(), user, facts, now)
                    .await
        }
        // NB: a session from before sign-in times were kept, or of a user gone: over.
        (_, Ok(_)) | (None, _) => false,
        (Some(_), Err(e)) => {
            tracing::warn!(error = %e, "could not read the user's sessions; the session stands");
            true
        }
    };
    if !valid {
        if let Err(e) = session.flush().await {
            tracing::warn!(error = %e, "could not end a session");
        }
        return None;
    }
    let locale = facts.ok().flatten().and_then(|f| f.locale);
    let seen = session.get::<i64>(SESSION_SEEN).await.ok().flatten().unwrap_or(0);
    if now.saturating_sub(seen) > micros(guard.policy.idle / 4) {
        // NB: a changed session is saved with a new expiry: the idle timeout starts again.
        if let Err(e) = session.insert(SESSION_SEEN, now).await {
            tracing::warn!(error = %e, "could not keep a session alive");
        }
    }
    Some(locale)
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
    fn the_next_path_is_percent_encoded() {
        assert_eq!(urlencode("/tickets?x=a b&y"), "/tickets%3Fx%3Da%20b%26y");
    }
}
