//! Server-only plumbing of the server functions: state, session, the signed-in user.

pub mod accounts;
pub mod address;
pub mod audit;
pub mod audited;
pub mod caches;
pub mod change;
pub mod clusters;
pub mod db;
pub mod directory;
pub mod directory_users;
pub mod guard;
pub mod preview;
pub mod saves;
pub mod session_store;
mod state;
pub mod throttle;

pub use state::AppState;

use leptos::prelude::*;
use tower_sessions::Session;

use crate::domain::user::CurrentUser;
use crate::error::AppError;
use accounts::Account;

/// Session key holding the signed-in user name.
pub const SESSION_USER: &str = "user";
/// The session's key holding when it began (sign-in), unix microseconds: its absolute lifetime
/// counts from there, and a password reset ends the sessions that began before it.
pub const SESSION_SINCE: &str = "since";
/// The session's key holding when it was last seen (unix microseconds), so that a session in
/// use is kept alive without a write on every request.
pub const SESSION_SEEN: &str = "seen";

/// Now, in unix microseconds.
pub fn now_micros() -> i64 {
    (time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1000) as i64
}

/// An instant in unix microseconds as RFC 3339 (UTC); empty when out of range.
pub fn rfc3339_of_micros(micros: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(micros) * 1_000)
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_default()
}
/// Session key holding the project the user works in.
pub const SESSION_PROJECT: &str = "project";

/// The server state, provided to every server function by `leptos_routes`.
pub fn state() -> Result<AppState, AppError> {
    use_context::<AppState>().ok_or_else(|| internal("server state is missing", "no AppState in the context"))
}

/// The request's session.
pub async fn session() -> Result<Session, AppError> {
    leptos_axum::extract::<Session>().await.map_err(|e| internal("session unavailable", e))
}

/// Remembers `locale` in this browser: a cookie the pages are served in (until a signed-in
/// user's saved choice says otherwise), for a year.
pub fn remember_locale(locale: crate::i18n::Locale) {
    let cookie = format!("{}={}; Path=/; Max-Age=31536000; SameSite=Lax; HttpOnly", crate::i18n::COOKIE, locale.tag());
    if let Some(options) = use_context::<leptos_axum::ResponseOptions>()
        && let Ok(value) = http::HeaderValue::from_str(&cookie)
    {
        options.append_header(http::header::SET_COOKIE, value);
    }
}

/// Logs `e` with `context` (in English, for the log) and turns it into an error fit for a
/// browser: no internals leak, and the reader is told, in their words, that the log has them.
pub fn internal(context: &str, e: impl std::fmt::Display) -> AppError {
    tracing::error!(error = %e, "{context}");
    AppError::Internal(crate::i18n::t("errors.internal").into())
}

/// What a page is told of a store that cannot take its write: nothing was saved, and why.
pub fn unavailable(fault: db::Fault) -> AppError {
    tracing::warn!("the store is unavailable: {}", fault.cause());
    let cause = crate::i18n::t(fault.key());
    AppError::Unavailable(crate::tf!("errors.store.unavailable", cause = cause))
}

/// A database error as a page is told it: a storage fault names its cause, anything else is
/// logged with `context` (see [`internal`]).
pub fn db_error(context: &str, e: sqlx::Error) -> AppError {
    match db::fault(&e) {
        Some(fault) => unavailable(fault),
        None => internal(context, e),
    }
}

/// The signed-in account, or `Unauthorized`.
pub async fn account() -> Result<Account, AppError> {
    let session = session().await?;
    let username: Option<String> =
        session.get(SESSION_USER).await.map_err(|e| internal("could not read the session", e))?;
    let username = username.ok_or(AppError::Unauthorized)?;
    state()?
        .db
        .account(&username)
        .await
        .map_err(|e| db_error("could not load the user", e))?
        .ok_or(AppError::Unauthorized)
}

/// The signed-in user with their projects and current project.
pub async fn user() -> Result<CurrentUser, AppError> {
    let account = account().await?;
    let db = state()?.db;
    let projects = db.projects_of(&account).await.map_err(|e| db_error("could not load the projects", e))?;
    let chosen: Option<String> =
        session().await?.get(SESSION_PROJECT).await.map_err(|e| internal("could not read the session", e))?;
    let project = chosen.filter(|p| projects.contains(p)).or_else(|| projects.first().cloned());
    Ok(CurrentUser {
        username: account.username,
        display_name: account.display_name,
        role: account.role,
        projects,
        project,
    })
}

/// Sets the HTTP status of a failed server function from its error, then passes it on.
pub fn reply<T>(result: Result<T, AppError>) -> Result<T, AppError> {
    if let Err(e) = &result {
        e.set_status();
    }
    result
}

/// The management cluster's client.
pub fn mgmt() -> Result<kube::Client, AppError> {
    Ok(state()?.clusters.mgmt().clone())
}

/// A Kubernetes error as the user should see it: conflicts pass through; a refusal (admission's,
/// or the API's own check) is read from its Status's cause, placed beside its field (a path in
/// the spec: `spec.veip` is the form's `veip`) when it names one; the rest is logged.
/// NB: admission's refusals are in English (kubectl's words): the page's own checks, made
/// first, refuse in the reader's.
pub fn kube_error(context: &str, e: kube::Error) -> AppError {
    if let kube::Error::Api(s) = &e
        && let Some(fault) = db::Fault::of_status(s.code, &s.message)
    {
        return unavailable(fault);
    }
    match e {
        kube::Error::Api(s) if s.code == 409 => AppError::Conflict(LOST_RACE.into()),
        kube::Error::Api(s) if s.code == 404 => {
            tracing::info!(context, "not found in the cluster");
            AppError::NotFound(crate::i18n::t("errors.kube_not_found").into())
        }
        kube::Error::Api(s) if matches!(s.code, 400 | 403 | 422) => {
            let cause = s.details.as_ref().and_then(|d| d.causes.first());
            match cause {
                Some(c) if !c.field.is_empty() => {
                    let field = c.field.strip_prefix("spec.").unwrap_or(&c.field);
                    AppError::Invalid { field: field.to_string(), message: c.message.clone() }
                }
                Some(c) if !c.message.is_empty() => AppError::Refused(c.message.clone()),
                _ => AppError::Refused(s.message),
            }
        }
        other => internal(context, other),
    }
}

/// Edits are checked against the spec the form was loaded from (its `generation`): the
/// reconciler's status writes in between are no conflict, someone else's edit of the spec is.
pub fn unchanged_since(loaded: i64, current: &kube::api::ObjectMeta) -> Result<(), AppError> {
    if current.generation == Some(loaded) { Ok(()) } else { Err(AppError::Conflict(STALE.into())) }
}

/// The words of a key, taken in the reader's locale where they are used:
/// `AppError::Conflict(STALE.into())`.
#[derive(Clone, Copy, Debug)]
pub struct Words(&'static str);

impl From<Words> for String {
    fn from(words: Words) -> String {
        crate::i18n::t(words.0).to_string()
    }
}

impl PartialEq<Words> for String {
    fn eq(&self, words: &Words) -> bool {
        self == crate::i18n::t(words.0)
    }
}

/// What a write that lost a race on `resourceVersion` says, when trying again did not help.
pub const LOST_RACE: Words = Words("errors.lost_race");

/// What a form loaded before someone else's edit is told: trying again cannot help.
pub const STALE: Words = Words("errors.stale");

/// What the log says of a write tried again after it lost a race.
pub const LOST_RACE_AGAIN: &str = "the write lost a race on resourceVersion; trying again";

/// Runs `write` again (six attempts in all) when it lost a race on `resourceVersion`
/// ([`LOST_RACE`]; not a [`STALE`] form, which only a reload mends). Each
/// attempt reads and checks afresh, so the rules hold against the object as it is.
// NB: the reconciler writes a request's status a few times in a row as it works; attempts
// spaced by a growing, jittered pause outlast such a burst where immediate ones did not.
pub async fn retrying<T, F, Fut>(mut write: F) -> Result<T, AppError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, AppError>>,
{
    const ATTEMPTS: u32 = 6;
    let mut attempt = 1;
    loop {
        match write().await {
            Err(AppError::Conflict(m)) if m == LOST_RACE && attempt < ATTEMPTS => {
                tracing::debug!(attempt, "{LOST_RACE_AGAIN}");
                let base = 20u64 << attempt;
                let pause = base + rand::random_range(0..base);
                tokio::time::sleep(std::time::Duration::from_millis(pause)).await;
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// A domain refusal (or a domain error that converts into one, such as the allocator's) as a
/// server-function error (the field, when there is one).
pub fn refused(r: impl Into<crate::domain::policy::Refusal>) -> AppError {
    let r = r.into();
    match r.field {
        Some(field) => AppError::Invalid { field, message: r.reason.text() },
        None => AppError::Refused(r.reason.text()),
    }
}

/// The current time, as Kubernetes writes it.
pub fn now() -> String {
    let t = time::OffsetDateTime::now_utc();
    t.replace_nanosecond(0).unwrap_or(t).format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn conflict() -> AppError {
        AppError::Conflict(LOST_RACE.into())
    }

    #[tokio::test]
    async fn a_write_that_loses_a_burst_of_races_gets_through() {
        let tries = Cell::new(0);
        let written = retrying(|| async {
            tries.set(tries.get() + 1);
            if tries.get() < 5 { Err(conflict()) } else { Ok(tries.get()) }
        })
        .await;
        assert_eq!(written, Ok(5));
    }

    #[tokio::test]
    async fn a_write_that_always_loses_gives_up_with_the_conflict() {
        let tries = Cell::new(0);
        let written: Result<(), _> = retrying(|| async {
            tries.set(tries.get() + 1);
            Err(conflict())
        })
        .await;
        assert_eq!((written, tries.get()), (Err(conflict()), 6));
    }

    #[tokio::test]
    async fn a_refusal_or_a_stale_form_is_not_tried_again() {
        for error in [AppError::Refused("no".into()), AppError::Conflict(STALE.into())] {
            let tries = Cell::new(0);
            let written: Result<(), _> = retrying(|| async {
                tries.set(tries.get() + 1);
                Err(error.clone())
            })
            .await;
            assert_eq!((written, tries.get()), (Err(error), 1));
        }
    }

    /// A denial as the API sends it: the message kubectl shows, and its cause.
    fn denied(code: u16, field: &str, reason: &str) -> kube::Error {
        let body = serde_json::json!({
            "status": "Failure", "code": code, "reason": "Forbidden",
            "message": format!("admission webhook \"validate.lbdesk.ebcpaas.io\" denied the request: {field}: {reason}"),
            "details": {"causes": [{"reason": "FieldValueForbidden", "message": reason, "field": field}]},
        });
        kube::Error::Api(serde_json::from_value(body).expect("a Status"))
    }

    #[test]
    fn a_refusal_is_read_from_its_cause_not_its_message() {
        let placed = kube_error("request", denied(403, "spec.listeners[1].port", "Port 80: taken: by l0."));
        assert_eq!(
            placed,
            AppError::Invalid { field: "listeners[1].port".into(), message: "Port 80: taken: by l0.".into() }
        );
        let whole = kube_error("request", denied(403, "", "Disable it first."));
        assert_eq!(whole, AppError::Refused("Disable it first.".into()));
        // Without a cause (another API's refusal), the message is said as it came.
        let bare: kube::Error = kube::Error::Api(
            serde_json::from_value(serde_json::json!({"code": 400, "message": "bad: thing"})).expect("a Status"),
        );
        assert_eq!(kube_error("request", bare), AppError::Refused("bad: thing".into()));
    }
}
