//! A directory user's groups are read again while they stay signed in; the mapping is read again
//! when it changes; a directory that is down or hangs keeps no one waiting, and local
//! break-glass accounts still sign in (unless switched off).

use std::time::{Duration, Instant};

use app::error::AppError;
use reqwest::StatusCode;

use super::{Slapd, Style, lbdesk_edited, lbdesk_with, me, sign_in};
use crate::helpers::{Backend, english, until};
use crate::log_capture::Capture;

/// Signs `name` in (they must be let in) and returns the browser.
async fn signed_in(lbdesk: &crate::helpers::Lbdesk, name: &str, password: &str) -> reqwest::Client {
    let (client, status, body) = sign_in(lbdesk, name, password).await;
    assert!(status.is_success() || status.is_redirection(), "{name} signs in: {status} {body}");
    client
}

/// What the sign-in page says about signing in: how, and whether the directory is down.
async fn notes(lbdesk: &crate::helpers::Lbdesk) -> Notes {
    let page = reqwest::get(format!("{}/login", lbdesk.url)).await.expect("request").text().await.expect("page");
    let said = |id: &str| {
        let after = &page[page.find(&format!("data-testid=\"{id}\""))?..];
        let text = &after[after.find('>')? + 1..];
        text.split('<').next().map(String::from)
    };
    Notes { how: said("sign-in-how"), down: said("directory-down") }
}

struct Notes {
    how: Option<String>,
    down: Option<String>,
}

async fn projects(lbdesk: &crate::helpers::Lbdesk, client: &reqwest::Client) -> Result<Vec<String>, StatusCode> {
    me(lbdesk, client).await.map(|u| u.projects)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_taken_out_of_a_group_loses_its_project_within_the_refresh_period() {
    let slapd = Slapd::start();
    let lbdesk = lbdesk_with(Backend::Sqlite, &slapd, Style::ActiveDirectory, "refreshSeconds: 1").await;
    let erik = signed_in(&lbdesk, "erik", "erik-directory").await;
    let both = vec!["project-a".to_string(), "project-b".to_string()];
    assert_eq!(projects(&lbdesk, &erik).await, Ok(both));

    slapd.remove_member("team-b-ops", "uid=erik");
    let taken = Instant::now();
    until("erik loses project-b", 10, || async { projects(&lbdesk, &erik).await == Ok(vec!["project-a".into()]) })
        .await;
    assert!(taken.elapsed() < Duration::from_secs(4), "within the period: {:?}", taken.elapsed());

    // Out of every mapped group: the open session ends, and signing in again is refused.
    slapd.remove_member("team-a-dev", "uid=erik");
    until("erik's session ends", 10, || async { projects(&lbdesk, &erik).await == Err(StatusCode::UNAUTHORIZED) })
        .await;
    let (_, status, _) = sign_in(&lbdesk, "erik", "erik-directory").await;
    assert!(!status.is_success(), "erik is let in nowhere now");
}

/// Requests a page makes at once, past the refresh period: each reads the groups again, and
/// every one of them passes.
async fn requests_at_once_past_the_refresh_period_all_pass(backend: Backend) {
    let slapd = Slapd::start();
    let lbdesk = lbdesk_with(backend, &slapd, Style::ActiveDirectory, "refreshSeconds: 1").await;
    let erik = signed_in(&lbdesk, "erik", "erik-directory").await;
    let both = vec!["project-a".to_string(), "project-b".to_string()];
    let capture = Capture::start();
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(1_100)).await;
        let answers = futures::future::join_all((0..12).map(|_| projects(&lbdesk, &erik))).await;
        assert!(answers.iter().all(|a| *a == Ok(both.clone())), "{answers:?}");
    }
    // Nor did any of them fail to record what it read (a session stands when that fails).
    let log = capture.text();
    assert!(!log.contains("could not record the directory user"), "{log}");
}

crate::on_both_databases!(requests_at_once_past_the_refresh_period_all_pass);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mapping_is_read_again_when_it_changes() {
    let slapd = Slapd::start();
    let lbdesk = lbdesk_with(Backend::Sqlite, &slapd, Style::ActiveDirectory, "refreshSeconds: 1").await;
    let dora = signed_in(&lbdesk, "dora", "dora-directory").await;
    assert_eq!(projects(&lbdesk, &dora).await, Ok(vec!["project-a".to_string()]));
    let mapping = slapd.dir.path().join("mapping.yaml");
    // A broken mapping is refused and the last good one kept.
    std::fs::write(&mapping, "projects: {Not A Name: [team-a-dev]}\n").expect("write");
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    assert_eq!(projects(&lbdesk, &dora).await, Ok(vec!["project-a".to_string()]));
    std::fs::write(&mapping, "projects:\n  project-b: [team-a-dev]\n").expect("write");
    until("dora's group now means project-b", 10, || async {
        projects(&lbdesk, &dora).await == Ok(vec!["project-b".to_string()])
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_that_is_down_or_hangs_keeps_no_one_waiting_and_break_glass_still_works() {
    let slapd = Slapd::start();
    let capture = Capture::start();
    let lbdesk = lbdesk_with(Backend::Sqlite, &slapd, Style::ActiveDirectory, "").await;
    until("the directory is found up", 10, || async { notes(&lbdesk).await.down.is_none() }).await;
    let up = notes(&lbdesk).await.how.unwrap_or_default();
    assert!(up.contains("directory account") && up.contains("break-glass"), "{up}");
    signed_in(&lbdesk, "dora", "dora-directory").await;

    slapd.stop();
    let started = Instant::now();
    let (_, status, body) = sign_in(&lbdesk, "erik", "erik-directory").await;
    let error: AppError = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let AppError::Refused(message) = error else { panic!("{body}") };
    assert_eq!(
        message,
        "The directory cannot be reached just now: directory accounts cannot sign in. \
         Local break-glass accounts still can."
    );
    assert!(started.elapsed() < Duration::from_secs(4), "said at once: {:?}", started.elapsed());
    let down = notes(&lbdesk).await.down.unwrap_or_default();
    assert_eq!(down, message, "the sign-in page says so too");
    crate::helpers::signed_in(&lbdesk, "admin").await;

    // A directory that takes connections and never answers: refused within the timeout (2 s).
    // NB: kept to the end of the test, so that the port stays open.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let silent = format!("127.0.0.1:{}", listener.local_addr().expect("address").port());
    let answering = format!("127.0.0.1:{}", slapd.ldaps);
    let hung =
        lbdesk_edited(Backend::Sqlite, &slapd, Style::ActiveDirectory, |text| text.replace(&answering, &silent)).await;
    let started = Instant::now();
    let (_, status, body) = sign_in(&hung, "dora", "dora-directory").await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(started.elapsed() < Duration::from_secs(5), "within the timeout: {:?}", started.elapsed());
    crate::helpers::signed_in(&hung, "admin").await;

    // Neither the service account's password nor a user's ever reaches the log.
    let log = capture.text();
    for secret in ["lbdesk-bind-secret", "dora-directory", "erik-directory"] {
        assert!(!log.contains(secret), "{secret} is in the log");
    }
    assert!(log.contains("the directory cannot be reached"), "the failure is logged");
    assert!(log.contains("Connection refused"), "with why: {log}");
    assert!(log.contains("timeout: deadline has elapsed"), "the silent one timed out: {log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_the_directory_hangs_its_users_keep_what_they_had_for_three_periods_without_waiting() {
    let slapd = Slapd::start();
    let lbdesk = lbdesk_with(Backend::Sqlite, &slapd, Style::ActiveDirectory, "refreshSeconds: 2").await;
    // NB: her groups are read during the sign-in, between these two instants: the grace ends
    // three periods after that read, no earlier than `signing_in` + 6 s.
    let signing_in = Instant::now();
    let dora = signed_in(&lbdesk, "dora", "dora-directory").await;
    let signed_in_at = Instant::now();
    slapd.hang();
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    // The first request past the period waits for the directory at most its timeout (2 s)...
    let first = Instant::now();
    assert_eq!(projects(&lbdesk, &dora).await, Ok(vec!["project-a".to_string()]));
    assert!(first.elapsed() < Duration::from_millis(2_900), "{:?}", first.elapsed());
    // ...and, the directory known to be down, the next ones not at all.
    let next = Instant::now();
    for _ in 0..5 {
        assert_eq!(projects(&lbdesk, &dora).await, Ok(vec!["project-a".to_string()]));
    }
    assert!(next.elapsed() < Duration::from_secs(1), "{:?}", next.elapsed());
    assert!(signed_in_at.elapsed() < Duration::from_secs(6), "the test checked within the grace");
    // Three periods after the groups were last read, the session no longer signs her in.
    until("dora's grace to end", 10, || async { projects(&lbdesk, &dora).await == Err(StatusCode::UNAUTHORIZED) })
        .await;
    assert!(signing_in.elapsed() >= Duration::from_secs(6), "not before: {:?}", signing_in.elapsed());
    // Back, the directory signs her in again.
    slapd.resume();
    until("dora signs in again", 10, || async {
        let (_, status, _) = sign_in(&lbdesk, "dora", "dora-directory").await;
        status.is_success() || status.is_redirection()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_accounts_switched_off_sign_no_one_in_and_the_page_does_not_offer_them() {
    let slapd = Slapd::start();
    let lbdesk = lbdesk_with(Backend::Sqlite, &slapd, Style::OpenLdap, "localAccounts: false").await;
    let (client, status, body) = sign_in(&lbdesk, "admin", "admin-demo").await;
    assert!(!status.is_success(), "{body}");
    assert_eq!(
        serde_json::from_str::<AppError>(&body).ok(),
        Some(AppError::invalid("password", english("common.login.wrong")))
    );
    assert_eq!(me(&lbdesk, &client).await, Err(StatusCode::UNAUTHORIZED));
    let how = notes(&lbdesk).await.how;
    assert_eq!(how.as_deref(), Some("Sign in with your directory account."), "local accounts are not offered");
    signed_in(&lbdesk, "gina", "gina-directory").await;
}
