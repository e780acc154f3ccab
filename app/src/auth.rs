//! Signing in and out, and choosing the current project: the server functions (who is signed
//! in is `domain::user`).

#[cfg(feature = "ssr")]
use crate::domain::access::{Target, Verb};
#[cfg(feature = "ssr")]
use crate::domain::policy::loggable;
use crate::domain::user::CurrentUser;
use crate::error::AppError;
use leptos::prelude::*;

/// The message for any failed sign-in; the same whether the user exists or not.
pub const WRONG_CREDENTIALS: &str = "Wrong user name or password.";

/// Signs in and starts a fresh session, then sends the browser to `next` (a local path).
#[server(prefix = "/api", endpoint = "login", output = crate::codec::JsonText)]
pub async fn login(username: String, password: String, next: Option<String>) -> Result<(), AppError> {
    use crate::ssr::{self, SESSION_SEEN, SESSION_SINCE, SESSION_USER, accounts};
    ssr::reply(
        async {
            // Counted as a failure unless it succeeds; refused (429) while the name or address waits.
            let attempt = ssr::throttle::attempt(&username).await?;
            let db = ssr::state()?.db;
            let found =
                db.account_with_hash(username.trim()).await.map_err(|e| ssr::internal("could not load the user", e))?;
            let hash = found.as_ref().map(|(_, h)| h.clone()).unwrap_or_else(|| accounts::decoy_hash().to_string());
            // NB: argon2 is deliberately slow; keep it off the async workers.
            let ok = tokio::task::spawn_blocking(move || accounts::verify_password(&password, &hash))
                .await
                .map_err(|e| ssr::internal("password check failed", e))?;
            let Some((account, _)) = found.filter(|_| ok) else {
                tracing::info!(user = %loggable(&username), "sign-in refused");
                return Err(AppError::invalid("password", WRONG_CREDENTIALS));
            };
            attempt.succeeded();
            let session = ssr::session().await?;
            // A new id on sign-in: a session id planted before sign-in is worthless after it.
            session.cycle_id().await.map_err(|e| ssr::internal("could not start the session", e))?;
            let now = ssr::now_micros();
            for (key, value) in [
                (SESSION_USER, serde_json::json!(account.username)),
                (SESSION_SINCE, now.into()),
                (SESSION_SEEN, now.into()),
            ] {
                session.insert(key, value).await.map_err(|e| ssr::internal("could not start the session", e))?;
            }
            tracing::info!(user = %account.username, "signed in");
            leptos_axum::redirect(&local_path(next.as_deref()));
            Ok(())
        }
        .await,
    )
}

/// Only a clean path on this site may follow sign-in (no open redirect). NB: browsers drop tabs
/// and newlines from a URL, so `/\t/evil.example` would lead to another origin, and a newline
/// cannot go into a `Location` header at all: a path with any control character is refused.
pub fn local_path(next: Option<&str>) -> String {
    match next {
        Some(p)
            if p.starts_with('/')
                && !p.starts_with("//")
                && !p.contains('\\')
                && !p.chars().any(char::is_control)
                && !p.starts_with("/login") =>
        {
            p.to_string()
        }
        _ => "/".to_string(),
    }
}

/// Ends the session (deleted from the store, cookie cleared) and returns to the sign-in page.
#[server(prefix = "/api", endpoint = "logout", output = crate::codec::JsonText)]
pub async fn logout() -> Result<(), AppError> {
    use crate::ssr;
    ssr::reply(
        async {
            let session = ssr::session().await?;
            session.flush().await.map_err(|e| ssr::internal("could not end the session", e))?;
            leptos_axum::redirect("/login");
            Ok(())
        }
        .await,
    )
}

/// The signed-in user.
#[server(prefix = "/api", endpoint = "me", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn whoami() -> Result<CurrentUser, AppError> {
    crate::ssr::reply(crate::ssr::guard::caller().await.map(|c| c.user))
}

/// Switches the project the user works in.
#[server(prefix = "/api", endpoint = "switch-project", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn switch_project(project: String) -> Result<(), AppError> {
    use crate::domain::policy::dns_label;
    use crate::ssr::{self, SESSION_PROJECT};
    ssr::reply(
        async {
            dns_label("project", &project).map_err(ssr::refused)?;
            ssr::guard::caller_for(Verb::Write, Target::Project(&project), "project by that name").await?;
            ssr::session()
                .await?
                .insert(SESSION_PROJECT, &project)
                .await
                .map_err(|e| ssr::internal("could not save the session", e))?;
            Ok(())
        }
        .await,
    )
}

#[cfg(test)]
mod tests {
    use super::{local_path, loggable};

    #[test]
    fn only_local_paths_may_follow_sign_in() {
        for (next, want) in [
            (Some("/tickets"), "/tickets"),
            (Some("/tickets/a?x=1"), "/tickets/a?x=1"),
            (Some("//evil.example"), "/"),
            (Some("https://evil.example"), "/"),
            (Some("/\\evil.example"), "/"),
            (Some("/login"), "/"),
            (Some("/\t/evil.example"), "/"),
            (Some("/\n/evil.example"), "/"),
            (Some("/tickets\r\nSet-Cookie: x=1"), "/"),
            (Some("/tickets\u{0}"), "/"),
            (None, "/"),
        ] {
            assert_eq!(local_path(next), want, "next = {next:?}");
        }
    }

    #[test]
    fn a_logged_user_name_is_escaped_and_bounded() {
        assert_eq!(loggable(" alice "), "alice");
        assert_eq!(loggable("eve\nINFO signed in user=admin"), "eve\\nINFO signed in user=admin");
        let long = loggable(&"x".repeat(1_500_000));
        assert_eq!(long, format!("{}…", "x".repeat(64)));
    }
}
