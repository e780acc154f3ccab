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

/// What a directory user whose groups grant nothing in lbdesk is told (their password was right).
pub const NO_GROUP: &str = "Your directory account is in no group that gives access to lbdesk; ask the platform team.";

/// Signs in (a local account, or a directory account when one is configured) and starts a
/// fresh session, then sends the browser to `next` (a local path).
#[server(prefix = "/api", endpoint = "login", output = crate::codec::JsonText)]
pub async fn login(username: String, password: String, next: Option<String>) -> Result<(), AppError> {
    use crate::ssr::{self, SESSION_SEEN, SESSION_SINCE, SESSION_USER};
    ssr::reply(
        async {
            // Counted as a failure unless it succeeds; refused (429) while the name or address waits.
            let attempt = ssr::throttle::attempt(&username).await?;
            let Some(account) = check_credentials(username.trim(), password).await? else {
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

/// The account `name` and `password` sign in as, if any. A local account signs in with its
/// password here (unless the directory's configuration switches local accounts off); any other
/// name with the directory's. NB: argon2 runs either way, so that the time taken does not tell
/// a local account from another name.
#[cfg(feature = "ssr")]
async fn check_credentials(name: &str, password: String) -> Result<Option<crate::ssr::accounts::Account>, AppError> {
    use crate::ssr::{self, accounts, directory_users};
    let state = ssr::state()?;
    let (db, directory) = (state.db, state.directory);
    let found = db.account_with_hash(name).await.map_err(|e| ssr::internal("could not load the user", e))?;
    let in_directory = match found {
        Some(_) => db.directory_account(name).await.map_err(|e| ssr::internal("could not load the user", e))?,
        None => None,
    };
    let local = found.filter(|_| !in_directory.is_some_and(|(d, _)| d));
    let local_allowed = directory.as_ref().is_none_or(|d| d.local_accounts());
    let hash = match &local {
        Some((_, hash)) if local_allowed => hash.clone(),
        _ => accounts::decoy_hash().to_string(),
    };
    // NB: argon2 is deliberately slow; keep it off the async workers.
    let typed = password.clone();
    let checked = tokio::task::spawn_blocking(move || accounts::verify_password(&typed, &hash));
    let from_directory = match (&directory, &local) {
        (Some(directory), None) => Some(directory.authenticate(name, &password).await),
        _ => None,
    };
    let matches = checked.await.map_err(|e| ssr::internal("password check failed", e))?;
    match (local, from_directory, directory) {
        (Some((account, _)), _, _) => Ok(Some(account).filter(|_| matches && local_allowed)),
        (None, Some(Ok(Some(person))), Some(directory)) => {
            let admitted = directory_users::admit(&db, &directory, &person, ssr::now_micros())
                .await
                .map_err(|e| ssr::internal("could not record the directory user", e))?;
            match admitted {
                Ok(account) => Ok(Some(account)),
                Err(directory_users::NotAdmitted::NoGroup) => Err(AppError::invalid("password", NO_GROUP)),
                Err(directory_users::NotAdmitted::LocalName) => Ok(None),
            }
        }
        (None, Some(Err(unreachable)), directory) => {
            let local_note = if directory.is_some_and(|d| d.local_accounts()) {
                " Local break-glass accounts can still sign in."
            } else {
                ""
            };
            Err(AppError::Refused(format!(
                "The directory cannot be reached ({unreachable}), so directory accounts cannot sign in now.{local_note}"
            )))
        }
        _ => Ok(None),
    }
}

/// What the sign-in page says about how to sign in.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SignInChoices {
    /// Directory accounts sign in here.
    pub directory: bool,
    /// Local (break-glass) accounts may too; said only where a directory is configured.
    pub local_accounts: bool,
    /// Why the directory could not be reached at the last attempt, if it could not.
    pub directory_down: Option<String>,
}

/// How to sign in here, for the sign-in page (anyone may ask).
#[server(prefix = "/api", endpoint = "sign-in-info", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn sign_in_info() -> Result<SignInChoices, AppError> {
    let Some(directory) = crate::ssr::state()?.directory else { return Ok(SignInChoices::default()) };
    let directory_down = directory.last_failure();
    // NB: tried again meanwhile (not waited for), so that the page stops saying so once it is back.
    if directory_down.is_some() {
        let directory = directory.clone();
        tokio::spawn(async move { directory.probe().await });
    }
    Ok(SignInChoices { directory: true, local_accounts: directory.local_accounts(), directory_down })
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
