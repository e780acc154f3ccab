//! A session's lifetime and idle time, and a reset of the demo passwords ending the sessions
//! begun before it, on an lbdesk of short sessions: 12 s from sign-in at most, 3 s unused.
//!
//! The reset gives every demo account a password no test knows, so the tests here sign in as
//! tenants of their own; the reset's own test signs in as alice.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use server::config::HttpArgs;

use crate::helpers::{Backend, Options, browser};
use crate::on_both_databases;
use crate::shared::Shared;
use crate::user::own_tenant;
use crate::web::{login, me};

const LIFETIME: Duration = Duration::from_secs(12);
const IDLE: Duration = Duration::from_secs(3);

fn short_sessions() -> Options {
    let http = HttpArgs { session_lifetime: LIFETIME.as_secs(), session_idle: IDLE.as_secs(), ..Default::default() };
    Options { http, ..Default::default() }
}

static LBDESK: Shared = Shared::with(short_sessions, false);

on_both_databases!(a_password_reset_ends_the_sessions_begun_before_it);

async fn a_password_reset_ends_the_sessions_begun_before_it(backend: Backend) {
    let lbdesk = LBDESK.get(backend).await;
    let client = browser();
    let res = login(&client, &lbdesk, "alice", "alice-demo").await;
    assert!(res.status().is_success() || res.status().is_redirection(), "{}", res.status());
    assert_eq!(me(&client, &lbdesk).await.status(), StatusCode::OK);
    let used = Instant::now();
    server::demo::reset_passwords(&lbdesk.store()).await.expect("reset");
    let res = me(&client, &lbdesk).await;
    // NB: within the idle time, the session could have ended only by the reset.
    assert!(used.elapsed() < IDLE, "the reset took {:?}, longer than the idle time", used.elapsed());
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "the cookie from before the reset signs no one in");
    let page = client.get(format!("{}/listeners", lbdesk.url)).send().await.expect("request");
    assert!(page.status().is_redirection(), "pages go to sign-in");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_ends_at_its_lifetime_even_in_use() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let user = own_tenant(&lbdesk, "lifelong", "lifelong-p").await;
    let signed_in = Instant::now();
    // Used every 300 ms, well within the idle time, until a second before its lifetime ends.
    while signed_in.elapsed() < LIFETIME - Duration::from_secs(1) {
        assert_eq!(me(&user.client, &lbdesk).await.status(), StatusCode::OK, "within its lifetime");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(me(&user.client, &lbdesk).await.status(), StatusCode::UNAUTHORIZED, "past its lifetime");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_ends_after_its_idle_time_unused_and_use_keeps_it() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let user = own_tenant(&lbdesk, "idler", "idler-p").await;
    let signed_in = Instant::now();
    while signed_in.elapsed() < IDLE + Duration::from_secs(2) {
        assert_eq!(me(&user.client, &lbdesk).await.status(), StatusCode::OK, "kept alive by use");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    tokio::time::sleep(IDLE + Duration::from_millis(1500)).await;
    // NB: well within its lifetime, the session could have ended only by idling.
    assert!(signed_in.elapsed() < LIFETIME - Duration::from_secs(1), "{:?}", signed_in.elapsed());
    assert_eq!(me(&user.client, &lbdesk).await.status(), StatusCode::UNAUTHORIZED, "idle past its timeout");
}
