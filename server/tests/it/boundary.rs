//! The security boundary of the server functions, taken from the server-function registry
//! itself: a server function without an entry in `TABLE` fails this suite. Each is called as
//! anonymous (401), as a tenant of another project (403, or "not found" in exactly the words a
//! missing object gets), with wrong-typed, missing and oversized arguments (400 naming the
//! field) and from another site (refused).

use std::collections::BTreeSet;

use app::error::AppError;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{Backend, Lbdesk, browser, lb_form, until};
use crate::shared::Shared;

mod directory;
mod table;

pub(crate) use table::{Access, Case, SECRET_TICKET, SECRET_VEIP, TABLE, Ty, case, ticket_form};

/// A client of lbdesk, signed in as `user` (anonymous when `None`).
struct Client {
    http: reqwest::Client,
    url: String,
}

/// Who signs in: a name and a password.
type Login<'a> = (&'a str, &'a str);

/// A demo user (their documented password).
fn demo(user: &str) -> Login<'_> {
    (
        user,
        match user {
            "admin" => "admin-demo",
            "alice" => "alice-demo",
            _ => "bob-demo",
        },
    )
}

impl Client {
    async fn new(lbdesk: &Lbdesk, login: Option<Login<'_>>) -> Client {
        let client = Client { http: browser(), url: lbdesk.url.clone() };
        if let Some((user, password)) = login {
            let args = json!({"username": user, "password": password});
            let res = client.post(case("/api/login"), &args, &lbdesk.url).await;
            assert!(res.status().is_success() || res.status().is_redirection(), "{user} signs in: {}", res.status());
        }
        client
    }

    /// Calls `case` with `args` in its encoding, as a page of `origin` would.
    async fn post(&self, case: &Case, args: &Value, origin: &str) -> reqwest::Response {
        let req = self.http.post(format!("{}{}", self.url, case.path)).header("origin", origin);
        let req = if case.form_encoded {
            let pairs: Vec<(String, String)> = args
                .as_object()
                .map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())).collect())
                .unwrap_or_default();
            req.form(&pairs)
        } else {
            req.json(args)
        };
        req.send().await.expect("request")
    }
}

async fn answer(res: reqwest::Response) -> (StatusCode, String) {
    let status = res.status();
    (status, res.text().await.expect("body"))
}

fn error_of(body: &str) -> AppError {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: not a typed error: {body}"))
}

/// The module's lbdesk, of the test as a local user. Its one test calls every server function
/// and registers the load balancer `demo`; the directory user's test has one of its own
/// (`directory`).
static LBDESK: Shared = Shared::new();

/// A load balancer offered to every project on `lbdesk`, and bob's request `b-secret` on it.
async fn with_bobs_secret(lbdesk: &Lbdesk) {
    let admin = Client::new(lbdesk, Some(demo("admin"))).await;
    let (status, body) =
        answer(admin.post(case("/api/lb/save"), &json!({"form": lb_form("demo")}), &lbdesk.url).await).await;
    assert!(status.is_success(), "{status}: {body}");
    let bob = Client::new(lbdesk, Some(demo("bob"))).await;
    let (status, body) =
        answer(bob.post(case("/api/ticket/save"), &json!({"form": ticket_form(SECRET_TICKET)}), &lbdesk.url).await)
            .await;
    assert!(status.is_success(), "{status}: {body}");
    // NB: held, its address is taken: until then a check of it would rightly find it free.
    until("bob's request to hold its address", 20, || async {
        let (_, body) =
            answer(bob.post(case("/api/ticket/get"), &json!({"name": SECRET_TICKET}), &lbdesk.url).await).await;
        serde_json::from_str::<Value>(&body).is_ok_and(|t| t["row"]["phase"] == "Enabled")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_server_function_is_in_the_table() {
    let registered: BTreeSet<&str> = server_fn::axum::server_fn_paths().map(|(path, _)| path).collect();
    for path in &registered {
        case(path);
    }
    let stale: Vec<&str> = TABLE.iter().map(|c| c.path).filter(|p| !registered.contains(p)).collect();
    assert!(stale.is_empty(), "entries for server functions that no longer exist: {stale:?}");
    assert!(registered.len() >= 15, "the registry lists the server functions: {registered:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_boundary_holds_for_every_server_function() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    with_bobs_secret(&lbdesk).await;
    boundary_holds(&lbdesk, demo("alice")).await;
}

/// Every server function, as anonymous, as `tenant` (of project-a: bob's request is not theirs),
/// with bad arguments, and from another site.
async fn boundary_holds(lbdesk: &Lbdesk, tenant: Login<'_>) {
    let anonymous = Client::new(lbdesk, None).await;
    let alice = Client::new(lbdesk, Some(tenant)).await;
    let admin = Client::new(lbdesk, Some(demo("admin"))).await;
    let site = lbdesk.url.as_str();
    // What project-b's request would give away, unless the caller sent it themselves (the
    // answer to a request naming it is compared with the answer for a missing one instead).
    let leaks = |body: &str, sent: &Value| {
        let sent = sent.to_string();
        [SECRET_TICKET, SECRET_VEIP, "project-b"].into_iter().find(|s| body.contains(s) && !sent.contains(s))
    };

    for (path, _) in server_fn::axum::server_fn_paths() {
        let case = case(path);
        let args = (case.args)();

        // Anonymous: 401, unless the function is the sign-in itself.
        if case.access != Access::Public {
            let (status, body) = answer(anonymous.post(case, &args, site).await).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{path} as anonymous: {body}");
            assert_eq!(leaks(&body, &args), None, "{path} as anonymous leaks: {body}");
        }

        // A tenant of another project: refused, or answered only with their own things. (Sign-out
        // gets a session of its own: the rest of the calls need alice signed in.)
        let signing_out = Client::new(lbdesk, Some(tenant)).await;
        let alice = if path == "/api/logout" { &signing_out } else { &alice };
        let (status, body) = answer(alice.post(case, &args, site).await).await;
        assert_eq!(leaks(&body, &args), None, "{path} as alice leaks: {body}");
        match case.access {
            Access::Admin => assert_eq!(status, StatusCode::FORBIDDEN, "{path} as alice: {body}"),
            Access::Project => {
                // Exactly the answer for an object that does not exist.
                let missing: Value = serde_json::from_str(
                    &args.to_string().replace(SECRET_TICKET, "no-such-request").replace("project-b", "project-zz"),
                )
                .expect("json");
                let (status_missing, body_missing) = answer(alice.post(case, &missing, site).await).await;
                assert!(!status.is_success(), "{path} as alice is refused: {body}");
                assert_eq!(
                    (status, body.replace(SECRET_TICKET, "no-such-request")),
                    (status_missing, body_missing),
                    "{path}: another project's object is answered as a missing one"
                );
            }
            Access::Desk | Access::Public => {}
        }

        // Wrong-typed, missing and oversized arguments: 400 naming the field.
        let caller = if case.access == Access::Admin { &admin } else { alice };
        for (path_in_args, ty, field) in case.fields {
            let wrong = match ty {
                Ty::Str | Ty::Bounded => json!(12),
                Ty::Enum => json!({"Explode": 1}),
                Ty::Struct => json!("a string"),
            };
            // A value of the wrong type is named as sent (a struct's fields without its name); the
            // checks of a well-typed value name the field the page shows the message beside.
            let typed_field = path_in_args.split_once('.').map_or(*path_in_args, |(_, inner)| inner);
            if !case.form_encoded {
                let (status, body) = answer(caller.post(case, &with(&args, path_in_args, wrong), site).await).await;
                assert_eq!(status, StatusCode::BAD_REQUEST, "{path} with {field} wrong-typed: {body}");
                assert!(error_of(&body).for_field(typed_field).is_some(), "{path}: names {typed_field}: {body}");
                assert!(body.len() < 600, "{path}: echoes little: {body}");
            }
            if matches!(ty, Ty::Bounded) {
                let huge = "x".repeat(100_000);
                let (status, body) =
                    answer(caller.post(case, &with(&args, path_in_args, json!(huge)), site).await).await;
                assert_eq!(
                    status,
                    StatusCode::BAD_REQUEST,
                    "{path} with a huge {field}: {}",
                    &body[..body.len().min(300)]
                );
                assert!(error_of(&body).for_field(field).is_some(), "{path}: names {field}: {body}");
                assert!(body.len() < 600, "{path}: echoes little of a huge {field}");
            }
        }
        if let Some((first, _, _)) = case.fields.iter().find(|(f, _, _)| !f.contains('.')) {
            let (status, body) = answer(caller.post(case, &json!({}), site).await).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{path} with no arguments: {body}");
            assert!(error_of(&body).for_field(first).is_some(), "{path}: names the missing {first}: {body}");
        }

        // From another site, in either encoding: refused before anything runs.
        for form in [false, true] {
            let cross = Case { form_encoded: form, ..*case };
            let (status, body) = answer(admin.post(&cross, &args, "https://evil.example").await).await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{path} from another site (form: {form}): {body}");
        }
    }
    // Nothing anyone tried changed bob's request.
    let bob = Client::new(lbdesk, Some(demo("bob"))).await;
    let (status, body) = answer(bob.post(case("/api/ticket/get"), &json!({"name": SECRET_TICKET}), site).await).await;
    assert!(status.is_success() && body.contains(SECRET_VEIP), "{status}: {body}");
    assert!(body.contains("\"state\":\"Active\""), "bob's request is still active: {body}");
}

/// `args` with the value at the dotted `path` replaced.
fn with(args: &Value, path: &str, value: Value) -> Value {
    let mut out = args.clone();
    let mut at = &mut out;
    let parts: Vec<&str> = path.split('.').collect();
    for part in &parts[..parts.len() - 1] {
        at = &mut at[*part];
    }
    at[parts[parts.len() - 1]] = value;
    out
}
