//! Signing in and out, and choosing the current project: the server functions (who is signed
//! in is `domain::user`).

#[cfg(feature = "ssr")]
use crate::domain::access::{Target, Verb};
#[cfg(feature = "ssr")]
use crate::domain::policy::loggable;
use crate::domain::user::CurrentUser;
use crate::error::AppError;
use leptos::prelude::*;

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
                // NB: the same whether the user exists or not.
                return Err(AppError::invalid("password", crate::i18n::t("common.login.wrong")));
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
            // NB: the language the user chose follows them to this browser.
            if let Ok(Some(facts)) = ssr::state()?.db.session_facts(&account.username).await
                && let Some(locale) = facts.locale
            {
                ssr::remember_locale(locale);
            }
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
        Some(_) => db.session_facts(name).await.map_err(|e| ssr::internal("could not load the user", e))?,
        None => None,
    };
    let local = found.filter(|_| !in_directory.is_some_and(|f| f.directory));
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
                // NB: their password was right; their groups grant nothing in lbdesk.
                Err(directory_users::NotAdmitted::NoGroup) => {
                    Err(AppError::invalid("password", crate::i18n::t("common.login.no_group")))
                }
                Err(directory_users::NotAdmitted::LocalName) => Ok(None),
            }
        }
        // NB: why is logged (`Directory`), not told to whoever opens the sign-in page.
        (None, Some(Err(_)), directory) => {
            Err(AppError::Refused(crate::i18n::t(directory_down(directory.is_some_and(|d| d.local_accounts()))).into()))
        }
        _ => Ok(None),
    }
}

/// The name of the page's `<meta>` carrying [`sign_in_notes`] to the browser.
pub const SIGN_IN_NOTES: &str = "lbdesk-sign-in";

/// What the sign-in page says about signing in, where a directory is configured: with which
/// accounts (the directory's, and local break-glass ones only when they may), then, when the
/// last attempt to reach the directory failed, that it cannot be reached (why is in the log,
/// not on a page anyone may open). The server
/// composes the lines, as dictionary keys (so that the page can say them again in another
/// language), and writes them into every page's `<meta name="lbdesk-sign-in">` (one per line),
/// where the browser reads them: hydration sees the same, with no request more.
pub fn sign_in_notes() -> Vec<String> {
    #[cfg(feature = "ssr")]
    {
        // NB: composed once per page, so that the `<meta>` and the page say the same.
        #[derive(Clone)]
        struct Composed(Vec<String>);
        if let Some(Composed(lines)) = use_context::<Composed>() {
            return lines;
        }
        let lines = compose_sign_in_notes();
        provide_context(Composed(lines.clone()));
        lines
    }
    #[cfg(not(feature = "ssr"))]
    {
        let meta = leptos::prelude::document().query_selector(&format!("meta[name={SIGN_IN_NOTES}]"));
        let content = meta.ok().flatten().and_then(|m| m.get_attribute("content")).unwrap_or_default();
        content.lines().map(String::from).collect()
    }
}

/// The key of what the sign-in page and a refused sign-in say while the directory cannot be
/// reached.
#[cfg(feature = "ssr")]
fn directory_down(local_accounts: bool) -> &'static str {
    if local_accounts { "common.login.directory_down_local" } else { "common.login.directory_down" }
}

/// The lines of [`sign_in_notes`], as the directory's configuration and state say now.
#[cfg(feature = "ssr")]
fn compose_sign_in_notes() -> Vec<String> {
    let Some(directory) = crate::ssr::state().ok().and_then(|s| s.directory) else { return Vec::new() };
    let local = directory.local_accounts();
    let how = if local { "common.login.how_local" } else { "common.login.how" };
    let down = directory.last_failure().map(|_| {
        // NB: tried again meanwhile (not waited for), so that the page stops saying so once it is back.
        directory.probe_soon();
        directory_down(local)
    });
    std::iter::once(how).chain(down).map(String::from).collect()
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
            // NB: a browser whose session was already ended (elsewhere, or by its lifetime) has
            // none to end: it is only led to sign-in.
            if session.id().is_some() {
                session.flush().await.map_err(|e| ssr::internal("could not end the session", e))?;
            }
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
            let what = crate::i18n::t("errors.what.project");
            ssr::guard::caller_for(Verb::Write, Target::Project(&project), what).await?;
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
