//! A directory that is down or hangs keeps no one waiting, and local break-glass accounts still
//! sign in. Each test stops or freezes a directory of its own, and so has an lbdesk of its own.

use std::time::{Duration, Instant};

use app::error::AppError;
use reqwest::StatusCode;

use super::{Slapd, Style, config, notes, projects, sign_in, signed_in};
use crate::helpers::{Backend, Lbdesk, Options, spawn_lbdesk_with, until};
use crate::log_capture::Capture;

/// lbdesk (demo data, on SQLite) reading `slapd` as Active Directory, its configuration rewritten
/// by `edit`.
async fn lbdesk_of(slapd: &Slapd, edit: impl FnOnce(String) -> String) -> Lbdesk {
    let file = config(slapd, Style::ActiveDirectory, &slapd.dir, edit);
    spawn_lbdesk_with(Backend::Sqlite, Options { directory: Some(file), ..Default::default() }).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_that_is_down_or_hangs_keeps_no_one_waiting_and_break_glass_still_works() {
    let slapd = Slapd::start();
    let capture = Capture::start();
    let lbdesk = lbdesk_of(&slapd, |text| text).await;
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
    let hung = lbdesk_of(&slapd, |text| text.replace(&answering, &silent)).await;
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
    let lbdesk = lbdesk_of(&slapd, |text| format!("{text}refreshSeconds: 2\n")).await;
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
