//! Sign-in and sessions as an attacker would try them: guessing passwords (the throttle), planting
//! a session id before the victim signs in (fixation), replaying a cookie after sign-out.

use std::time::{Duration, Instant};

use app::domain::user::CurrentUser;
use app::error::AppError;
use reqwest::StatusCode;

use crate::helpers::{Backend, Lbdesk, browser, browser_from};
use crate::shared::Shared;
use crate::user::own_tenant;

/// Shared by the tests here. The throttle's tests guess at names of their own, from client
/// addresses of their own (`browser_from`): the throttle counts by name and by address, and
/// every other test signs in from 127.0.0.1.
static LBDESK: Shared = Shared::new();

async fn sign_in(client: &reqwest::Client, lbdesk: &Lbdesk, user: &str, password: &str) -> reqwest::Response {
    client
        .post(format!("{}/api/login", lbdesk.url))
        .form(&[("username", user), ("password", password)])
        .send()
        .await
        .expect("request")
}

/// A request carrying only `cookie` (`name=value`), as someone who copied it would send it.
async fn me_with(lbdesk: &Lbdesk, cookie: &str) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{}/api/me", lbdesk.url))
        .header("cookie", cookie)
        .header("sec-fetch-site", "same-origin")
        .json(&serde_json::json!({}))
        .send()
        .await
        .expect("request")
}

/// The session cookie (`name=value`) a response sets.
fn session_cookie(res: &reqwest::Response) -> String {
    let cookie = res.headers().get("set-cookie").expect("a session cookie").to_str().expect("ascii");
    cookie.split(';').next().expect("name=value").to_string()
}

fn signed_in(res: &reqwest::Response) -> bool {
    (res.status().is_success() || res.status().is_redirection()) && res.headers().get("set-cookie").is_some()
}

/// Refused by the throttle: 429, at the password field, saying how long to wait.
async fn throttled(res: reqwest::Response) -> u64 {
    assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
    let error: AppError = res.json().await.expect("a typed error");
    let AppError::TooMany { field, message } = error else { panic!("{error:?}") };
    assert_eq!(field, "password");
    let seconds = message
        .strip_prefix("Too many sign-in attempts; try again in ")
        .and_then(|m| m.strip_suffix(" s."))
        .unwrap_or_else(|| panic!("{message}"));
    seconds.parse().expect("seconds")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guessed_name_waits_after_five_failures_and_its_owner_gets_in_after_the_wait() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    // The guessed name and another, each a tenant of the test's own; every attempt from here on
    // from 127.0.0.2.
    own_tenant(&lbdesk, "guessed", "project-a").await;
    own_tenant(&lbdesk, "unguessed", "project-a").await;
    let from = std::net::Ipv4Addr::new(127, 0, 0, 2);
    let guesser = browser_from(from);
    for i in 0..5 {
        let res = sign_in(&guesser, &lbdesk, "guessed", &format!("guess-{i}")).await;
        assert!(res.status().is_client_error() && res.status() != StatusCode::TOO_MANY_REQUESTS, "{}", res.status());
    }
    let started = Instant::now();
    let wait = throttled(sign_in(&guesser, &lbdesk, "guessed", "guess-5").await).await;
    assert_eq!(wait, 1, "the first wait is short");
    // The name's owner waits too, from another client: the name is what is guessed.
    let owner = browser_from(from);
    let wait = throttled(sign_in(&owner, &lbdesk, "guessed", "guessed-demo").await).await;
    assert!(wait <= 1, "{wait}");
    // Other names are not affected.
    assert!(signed_in(&sign_in(&browser_from(from), &lbdesk, "unguessed", "unguessed-demo").await));
    // After the wait the right password works, and clears the count.
    tokio::time::sleep(Duration::from_secs(1).saturating_sub(started.elapsed()) + Duration::from_millis(100)).await;
    assert!(signed_in(&sign_in(&owner, &lbdesk, "guessed", "guessed-demo").await), "the owner gets in after the wait");
    for i in 0..5 {
        let res = sign_in(&guesser, &lbdesk, "guessed", &format!("again-{i}")).await;
        assert_ne!(res.status(), StatusCode::TOO_MANY_REQUESTS, "a success starts the count afresh ({i})");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_trying_many_names_is_throttled() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    own_tenant(&lbdesk, "spared", "project-a").await;
    let from = std::net::Ipv4Addr::new(127, 0, 0, 3);
    // Twenty failures a minute from one address, one per name so no name is throttled itself.
    for i in 0..20 {
        let res = sign_in(&browser_from(from), &lbdesk, &format!("nobody-{i}"), "guess").await;
        assert_ne!(res.status(), StatusCode::TOO_MANY_REQUESTS, "attempt {i}");
    }
    let wait = throttled(sign_in(&browser_from(from), &lbdesk, "admin", "guess").await).await;
    assert!((1..=60).contains(&wait), "until the minute is over: {wait}");
    // The throttled attempt was not even checked: the right password waits too.
    throttled(sign_in(&browser_from(from), &lbdesk, "bob", "bob-demo").await).await;
    // Another address is not held back.
    assert!(signed_in(&sign_in(&browser(), &lbdesk, "spared", "spared-demo").await), "another address signs in");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_id_planted_before_sign_in_is_worthless_after_it() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    // The attacker's own valid session, and a made-up id, each planted in the victim's browser.
    let planted = session_cookie(&sign_in(&browser(), &lbdesk, "bob", "bob-demo").await);
    for cookie in [planted.clone(), "lbdesk_session=AAAAAAAAAAAAAAAAAAAAAA".to_string()] {
        let res = reqwest::Client::new()
            .post(format!("{}/api/login", lbdesk.url))
            .header("cookie", &cookie)
            .header("sec-fetch-site", "same-origin")
            .form(&[("username", "alice"), ("password", "alice-demo")])
            .send()
            .await
            .expect("request");
        assert!(signed_in(&res), "{}", res.status());
        let after = session_cookie(&res);
        assert_ne!(after, cookie, "sign-in gives a new session id");
        let user: CurrentUser = me_with(&lbdesk, &after).await.json().await.expect("the user");
        assert_eq!(user.username, "alice");
        // The planted id does not open alice's session.
        let res = me_with(&lbdesk, &cookie).await;
        if res.status().is_success() {
            let user: CurrentUser = res.json().await.expect("the user");
            assert_ne!(user.username, "alice", "the planted id is not alice's session");
        } else {
            assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cookie_kept_from_before_sign_out_opens_nothing() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let client = browser();
    let kept = session_cookie(&sign_in(&client, &lbdesk, "admin", "admin-demo").await);
    assert_eq!(me_with(&lbdesk, &kept).await.status(), StatusCode::OK, "the cookie works while signed in");
    let res = client.post(format!("{}/api/logout", lbdesk.url)).send().await.expect("request");
    assert!(res.status().is_success() || res.status().is_redirection(), "{}", res.status());
    assert_eq!(me_with(&lbdesk, &kept).await.status(), StatusCode::UNAUTHORIZED);
    let page = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
        .get(format!("{}/loadbalancers", lbdesk.url))
        .header("cookie", &kept)
        .send()
        .await
        .expect("request");
    assert_eq!(page.status(), StatusCode::SEE_OTHER, "a page sends the replayed cookie to sign-in");
}
