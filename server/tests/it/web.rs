//! Sign-in, sessions and the guards, through HTTP as a browser would, on both databases.

use app::domain::user::{CurrentUser, Role};
use app::error::AppError;
use reqwest::StatusCode;

use crate::helpers::{Backend, Lbdesk, browser, english};
use crate::on_both_databases;
use crate::shared::Shared;

/// Shared by the tests here; the test ending a user's sessions ends its own user's. A session's
/// lifetime and idle time, and a reset of every demo password, are in `clock::sessions`.
static LBDESK: Shared = Shared::new();

on_both_databases!(
    anonymous_pages_go_to_sign_in_and_server_functions_answer_401,
    a_wrong_password_and_an_unknown_user_get_the_same_answer,
    signing_in_sets_a_safe_cookie_and_signing_out_ends_the_session,
    a_tenant_cannot_switch_to_a_project_they_are_not_in,
    after_sign_in_only_a_clean_local_path_is_followed,
    the_web_port_does_not_answer_admission_reviews,
);

pub(crate) async fn login(client: &reqwest::Client, lbdesk: &Lbdesk, user: &str, password: &str) -> reqwest::Response {
    client
        .post(format!("{}/api/login", lbdesk.url))
        .form(&[("username", user), ("password", password), ("next", "/listeners")])
        .send()
        .await
        .expect("request")
}

pub(crate) async fn me(client: &reqwest::Client, lbdesk: &Lbdesk) -> reqwest::Response {
    client.post(format!("{}/api/me", lbdesk.url)).json(&serde_json::json!({})).send().await.expect("request")
}

async fn anonymous_pages_go_to_sign_in_and_server_functions_answer_401(backend: Backend) {
    let lbdesk = LBDESK.get(backend).await;
    let client = browser();
    for page in ["/", "/tickets", "/loadbalancers", "/rules?x=1"] {
        let res = client.get(format!("{}{page}", lbdesk.url)).send().await.expect("request");
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{page}");
        let location = res.headers()["location"].to_str().expect("ascii");
        assert!(location.starts_with("/login"), "{page} → {location}");
    }
    let res = me(&client, &lbdesk).await;
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(res.json::<AppError>().await.expect("typed error"), AppError::Unauthorized);
    let res = client.get(format!("{}/login", lbdesk.url)).send().await.expect("request");
    assert_eq!(res.status(), StatusCode::OK);
    let res = client.get(format!("{}/healthz", lbdesk.url)).send().await.expect("request");
    assert_eq!(res.status(), StatusCode::OK, "/healthz");
    // The metrics name load balancers, clusters and their use: not on the UI's port (issue #27),
    // but on a listener of their own, loopback by default.
    let res = client.get(format!("{}/metrics", lbdesk.url)).send().await.expect("request");
    assert_eq!(res.status(), StatusCode::SEE_OTHER, "/metrics on the UI port is not served to anyone");
    let res = client.get(format!("{}/metrics", lbdesk.metrics_url)).send().await.expect("request");
    assert_eq!(res.status(), StatusCode::OK, "/metrics on its own listener");
    assert!(res.text().await.expect("text").contains("lbdesk_leader"));
    // Ready once the reconciler's caches have synced.
    crate::helpers::until("/readyz", 10, || async {
        client.get(format!("{}/readyz", lbdesk.url)).send().await.is_ok_and(|r| r.status() == StatusCode::OK)
    })
    .await;
}

async fn a_wrong_password_and_an_unknown_user_get_the_same_answer(backend: Backend) {
    let lbdesk = LBDESK.get(backend).await;
    let client = browser();
    let wrong = login(&client, &lbdesk, "alice", "bob-demo").await;
    let status = wrong.status();
    let wrong: AppError = wrong.json().await.expect("typed error");
    let unknown = login(&client, &lbdesk, "nobody", "bob-demo").await;
    assert_eq!(unknown.status(), status);
    let unknown: AppError = unknown.json().await.expect("typed error");
    assert_eq!(wrong, unknown);
    assert_eq!(wrong.for_field("password").as_deref(), Some(english("common.login.wrong").as_str()));
    assert_eq!(me(&client, &lbdesk).await.status(), StatusCode::UNAUTHORIZED);
}

async fn signing_in_sets_a_safe_cookie_and_signing_out_ends_the_session(backend: Backend) {
    let lbdesk = LBDESK.get(backend).await;
    let client = browser();
    let res = login(&client, &lbdesk, "alice", "alice-demo").await;
    assert!(res.status().is_success() || res.status().is_redirection(), "{}", res.status());
    let cookie = res.headers()["set-cookie"].to_str().expect("ascii").to_string();
    assert!(cookie.starts_with("lbdesk_session="), "{cookie}");
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("SameSite=Lax"), "{cookie}");
    assert!(!cookie.contains("Secure"), "plain HTTP: {cookie}");
    assert!(cookie.contains("Max-Age=28800"), "sessions expire after 8 idle hours: {cookie}");
    let session_cookie = cookie.split(';').next().expect("name=value").to_string();
    let id = session_cookie.trim_start_matches("lbdesk_session=").to_string();
    let stored = || async {
        let count = sqlx::query_as::<_, (i64,)>("SELECT COUNT(*) FROM sessions WHERE id = $1").bind(&id);
        count.fetch_one(&lbdesk.db.pool).await.expect("count").0
    };
    assert_eq!(stored().await, 1, "the store holds the session under the cookie's id");

    let user: CurrentUser = me(&client, &lbdesk).await.json().await.expect("the user");
    assert_eq!(user.username, "alice");
    assert_eq!(user.role, Role::Tenant);
    assert_eq!(user.project.as_deref(), Some("project-a"));
    let page = client.get(format!("{}/tickets", lbdesk.url)).send().await.expect("request");
    assert_eq!(page.status(), StatusCode::OK);
    assert_eq!(page.headers()["cache-control"], "no-store");

    let res = client.post(format!("{}/api/logout", lbdesk.url)).send().await.expect("request");
    assert!(res.status().is_success(), "{}", res.status());
    assert_eq!(stored().await, 0, "the session is gone from the store");
    // The old cookie, replayed by someone who kept it, opens nothing.
    let replay = reqwest::Client::new()
        .post(format!("{}/api/me", lbdesk.url))
        .header("cookie", &session_cookie)
        .header("sec-fetch-site", "same-origin")
        .send()
        .await
        .expect("request");
    assert_eq!(replay.status(), StatusCode::UNAUTHORIZED);
    // Sign out again, the session already gone (ended by an admin while the page was open):
    // still led to sign-in, not refused.
    let again = client.post(format!("{}/api/logout", lbdesk.url)).send().await.expect("request");
    assert!(again.status().is_success(), "{}", again.status());
    assert_eq!(again.headers()["location"], "/login");
}

async fn a_tenant_cannot_switch_to_a_project_they_are_not_in(backend: Backend) {
    let lbdesk = LBDESK.get(backend).await;
    let client = browser();
    login(&client, &lbdesk, "bob", "bob-demo").await;
    let res = client
        .post(format!("{}/api/switch-project", lbdesk.url))
        .json(&serde_json::json!({"project": "project-a"}))
        .send()
        .await
        .expect("request");
    // Another project is "not found", as if it did not exist.
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let user: CurrentUser = me(&client, &lbdesk).await.json().await.expect("the user");
    assert_eq!(user.project.as_deref(), Some("project-b"));
}

async fn after_sign_in_only_a_clean_local_path_is_followed(backend: Backend) {
    let lbdesk = LBDESK.get(backend).await;
    // A tab or newline is dropped by browsers (`/\t/evil.example` is another origin), and a
    // newline cannot go into a header: each answer sends the browser home, and nothing panics.
    for next in ["/\t/evil.example", "/\n/evil.example", "/tickets\r\nSet-Cookie: x=1", "//evil.example", "/listeners"]
    {
        let res = browser()
            .post(format!("{}/api/login", lbdesk.url))
            .header("accept", "text/html")
            .form(&[("username", "alice"), ("password", "alice-demo"), ("next", next)])
            .send()
            .await
            .expect("request");
        assert!(res.status().is_redirection(), "next = {next:?}: {}", res.status());
        let want = if next == "/listeners" { "/listeners" } else { "/" };
        assert_eq!(res.headers()["location"], want, "next = {next:?}");
    }
}

async fn the_web_port_does_not_answer_admission_reviews(backend: Backend) {
    let lbdesk = LBDESK.get(backend).await;
    // An AdmissionReview that asks about a ticket on the demo load balancer: answered, it would
    // name load balancers, partitions and their use to anyone who can reach the UI.
    let review = serde_json::json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "probe", "operation": "CREATE", "name": "probe",
            "kind": {"group": "ebcpaas.io", "version": "v1", "kind": "Lbticket"},
            "resource": {"group": "ebcpaas.io", "version": "v1", "resource": "lbtickets"},
            "userInfo": {"username": "nobody"},
            "object": {"apiVersion": "ebcpaas.io/v1", "kind": "Lbticket", "metadata": {"name": "probe"},
                       "spec": {"loadbalancer": "no-such-lb", "namespace": "default", "lbtype": "listener"}}
        }
    });
    let res = browser().post(format!("{}/admission/validate", lbdesk.url)).json(&review).send().await.expect("request");
    let status = res.status();
    let body = res.text().await.expect("body");
    assert!(!status.is_success(), "{status}: {body}");
    assert!(!body.contains("AdmissionReview") && !body.contains("no-such-lb"), "{body}");
}

/// An admin ends a user's sessions (issue #27): the user's cookie opens nothing afterwards, a
/// new sign-in works, the change is audited; a tenant may neither list the accounts nor end
/// anyone's sessions, and an unknown user is named as such.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_ends_a_users_sessions_and_a_tenant_cannot() {
    use app::screens::users::{Accounts, UserRow};

    use crate::user::{User, ok, own_tenant, refused};
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    // A tenant of the test's own: ending the demo users' sessions would end other tests'.
    let erin = own_tenant(&lbdesk, "erin", "project-a").await;
    assert_eq!(me(&erin.client, &lbdesk).await.status(), StatusCode::OK);
    let forbidden = AppError::Forbidden("This is for platform admins.".into());
    assert_eq!(refused(erin.json("users/list", serde_json::json!({})).await, StatusCode::FORBIDDEN).await, forbidden);
    let ending = |who: &str| serde_json::json!({"username": who});
    assert_eq!(refused(erin.json("users/end-sessions", ending("bob")).await, StatusCode::FORBIDDEN).await, forbidden);

    let admin = User::sign_in(&lbdesk, "admin").await;
    let rows = ok::<Accounts>(admin.json("users/list", serde_json::json!({})).await).await.users;
    let row = |rows: &[UserRow], name: &str| rows.iter().find(|r| r.username == name).cloned().expect(name);
    assert_eq!(row(&rows, "erin").projects, ["project-a"]);
    assert_eq!(row(&rows, "erin").sessions_ended, "", "never ended");
    let unknown = refused(admin.json("users/end-sessions", ending("nobody")).await, StatusCode::BAD_REQUEST).await;
    assert!(matches!(&unknown, AppError::Invalid { field, .. } if field == "username"), "{unknown:?}");

    let () = ok(admin.json("users/end-sessions", ending("erin")).await).await;
    assert_eq!(me(&erin.client, &lbdesk).await.status(), StatusCode::UNAUTHORIZED, "erin's session is over");
    assert_eq!(me(&admin.client, &lbdesk).await.status(), StatusCode::OK, "the admin's is not");
    let rows = ok::<Accounts>(admin.json("users/list", serde_json::json!({})).await).await.users;
    assert!(!row(&rows, "erin").sessions_ended.is_empty());
    let again = User::sign_in(&lbdesk, "erin").await;
    assert_eq!(me(&again.client, &lbdesk).await.status(), StatusCode::OK, "a new sign-in works");
    let filter = app::ssr::audit::Filter { name: Some("erin".into()), kind: Some("User".into()), ..Default::default() };
    let page = lbdesk.db.audit_page(&app::ssr::audit::Projects::All, &filter, None).await.expect("the log");
    let seen: Vec<(&str, &str, &str)> =
        page.records.iter().map(|r| (r.user.as_str(), r.via.as_str(), r.action.as_str())).collect();
    assert_eq!(seen, [("admin", "page", "end sessions")]);
}

/// The bundle's files are served without reading the session: a cookie naming a session the
/// store does not hold is looked up (and logged as such by the session layer) for a page, and
/// not for a bundle file. Each request is told apart in the log by the id it sends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bundle_files_are_served_without_reading_the_session() {
    use crate::log_capture::Capture;

    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let client = browser();
    let cookie = format!("lbdesk_session={}", tower_sessions::session::Id::default());
    let capture = Capture::start();
    let get = |path: &'static str, id: String| {
        let request = client.get(format!("{}{path}", lbdesk.url)).header("cookie", &cookie);
        async move { request.header("x-request-id", id).send().await.expect("request") }
    };
    let run = uuid::Uuid::new_v4().simple().to_string();
    let (bundle, page) = (format!("bundle-{run}"), format!("page-{run}"));
    let file = get("/pkg/lbdesk.wasm", bundle.clone()).await;
    assert_ne!(file.headers().get("cache-control").map(|v| v.as_bytes()), Some(&b"no-store"[..]), "a bundle file");
    let signed_out = get("/tickets", page.clone()).await;
    assert!(signed_out.status().is_redirection(), "an unknown session opens no page: {}", signed_out.status());
    let looked_up = |id: &str| {
        let tag = format!("id={id}");
        capture.text().lines().any(|l| l.contains(&tag) && l.contains("record not found in store"))
    };
    assert!(looked_up(&page), "the page looked the session up:\n{}", capture.text());
    assert!(!looked_up(&bundle), "the bundle file did not");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_path_is_a_client_error_and_writes_no_error_line() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let client = browser();
    assert_eq!(login(&client, &lbdesk, "alice", "alice-demo").await.status(), StatusCode::OK);
    let capture = crate::log_capture::Capture::start();
    let long = "a".repeat(10_000);
    for path in [format!("/{long}"), format!("/pkg/{long}.wasm"), format!("/tickets/{long}")] {
        let res = client.get(format!("{}{path}", lbdesk.url)).send().await.expect("answered");
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{}", &path[..12]);
    }
    let errors: Vec<String> = capture
        .text()
        .lines()
        .filter(|l| l.contains(" ERROR ") && l.contains(&long))
        .map(|l| l.chars().take(200).collect())
        .collect();
    assert!(errors.is_empty(), "a client's path writes no ERROR line: {errors:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_and_answers_go_out_compressed_as_the_browser_asks() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let client = browser();
    assert_eq!(login(&client, &lbdesk, "alice", "alice-demo").await.status(), StatusCode::OK);
    let page = |encoding: Option<&'static str>| {
        let mut req = client.get(format!("{}/listeners", lbdesk.url));
        if let Some(encoding) = encoding {
            req = req.header("accept-encoding", encoding);
        }
        async move {
            let res = req.send().await.expect("the page");
            assert_eq!(res.status(), StatusCode::OK);
            let said = res.headers().get("content-encoding").and_then(|v| v.to_str().ok()).map(String::from);
            (said, res.bytes().await.expect("the body").len())
        }
    };
    let (plain, plain_len) = page(None).await;
    assert_eq!(plain, None, "sent as it is to a client that asks for nothing else");
    for (asked, sent) in [("br", "br"), ("gzip", "gzip"), ("gzip, deflate, br, zstd", "br")] {
        let (said, len) = page(Some(asked)).await;
        assert_eq!(said.as_deref(), Some(sent), "{asked}");
        assert!(len * 3 < plain_len, "{asked}: {len} B of {plain_len} B");
    }
}
