//! The security boundary of the server functions, taken from the server-function registry
//! itself: a server function without an entry in `TABLE` fails this suite. Each is called as
//! anonymous (401), as a tenant of another project (403, or "not found" in exactly the words a
//! missing object gets), with wrong-typed, missing and oversized arguments (400 naming the
//! field) and from another site (refused).

use std::collections::BTreeSet;

use app::domain::crd::{IngressRule, Operator, RuleCondition, RuleType, RuleValue, ServiceRef};
use app::error::AppError;
use app::screens::ingresses::IngressForm;
use app::screens::listeners::ListenerForm;
use app::screens::rules::RuleForm;
use app::screens::tickets::TicketForm;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{Backend, Lbdesk, browser, lb_form, spawn_lbdesk, until};

/// Who may call a server function.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Access {
    /// Anyone (sign-in).
    Public,
    /// Anyone signed in; answers only with the caller's own things.
    Desk,
    /// Platform admins.
    Admin,
    /// Tenants, on their projects' objects.
    Project,
}

/// The type an argument has, so a test can send it the wrong one.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ty {
    Str,
    /// A name or search term: bounded, so a huge one is refused naming it.
    Bounded,
    Enum,
    Struct,
}

#[derive(Clone, Copy)]
pub(crate) struct Case {
    pub(crate) path: &'static str,
    pub(crate) access: Access,
    /// Arguments aimed at project-b's request `b-secret` (or harmless ones).
    pub(crate) args: fn() -> Value,
    /// Top-level and nested arguments (dotted paths), for the wrong-typed and oversized calls,
    /// with the field a refusal names (a form's fields as the page names them).
    pub(crate) fields: &'static [(&'static str, Ty, &'static str)],
    /// Whether the form encoding is what the function reads (sign-in and sign-out, which work
    /// before the page has hydrated).
    pub(crate) form_encoded: bool,
}

const SECRET_TICKET: &str = "b-secret";
const SECRET_VEIP: &str = "20.1.0.77";

fn ticket_form(name: &str) -> TicketForm {
    TicketForm {
        name: name.into(),
        cluster: "acp-region01".into(),
        namespace: "team-b".into(),
        loadbalancer: "demo".into(),
        veip: SECRET_VEIP.into(),
        ..Default::default()
    }
}

fn listener_form(ticket: &str) -> ListenerForm {
    ListenerForm {
        ticket: ticket.into(),
        name: "web".into(),
        port: 80,
        services: vec![ServiceRef { service: "svc01".into(), port: 8080, weight: 100 }],
        ..Default::default()
    }
}

const LISTENER_FORM_FIELDS: &[(&str, Ty, &str)] = &[
    ("form", Ty::Struct, "form"),
    ("form.ticket", Ty::Bounded, "ticket"),
    ("form.name", Ty::Bounded, "name"),
    ("form.protocol", Ty::Enum, "protocol"),
];

fn ingress_form(ticket: &str) -> IngressForm {
    IngressForm {
        ticket: ticket.into(),
        name: "shop".into(),
        rules: vec![IngressRule { host: None, path: "/".into(), service: "svc01".into(), port: 8080 }],
        ..Default::default()
    }
}

fn rule_form(ticket: &str) -> RuleForm {
    RuleForm {
        ticket: ticket.into(),
        listener: "web".into(),
        name: "canary".into(),
        conditions: vec![RuleCondition {
            type_: RuleType::Header,
            key: Some("X-Canary".into()),
            values: vec![RuleValue { operator: Operator::Equal, value: "1".into() }],
        }],
        services: vec![ServiceRef { service: "svc01".into(), port: 8080, weight: 100 }],
        ..Default::default()
    }
}

const RULE_FORM_FIELDS: &[(&str, Ty, &str)] = &[
    ("form", Ty::Struct, "form"),
    ("form.ticket", Ty::Bounded, "ticket"),
    ("form.listener", Ty::Bounded, "listener"),
    ("form.name", Ty::Bounded, "name"),
    ("form.match_", Ty::Enum, "match_"),
];

const RULE_KEYS: &[(&str, Ty, &str)] =
    &[("ticket", Ty::Bounded, "ticket"), ("listener", Ty::Bounded, "listener"), ("name", Ty::Bounded, "name")];

const INGRESS_FORM_FIELDS: &[(&str, Ty, &str)] =
    &[("form", Ty::Struct, "form"), ("form.ticket", Ty::Bounded, "ticket"), ("form.name", Ty::Bounded, "name")];

pub(crate) const TABLE: &[Case] = &[
    Case {
        path: "/api/login",
        access: Access::Public,
        args: || json!({"username": "alice", "password": "wrong"}),
        fields: &[("username", Ty::Str, "username"), ("password", Ty::Str, "password")],
        form_encoded: true,
    },
    Case { path: "/api/logout", access: Access::Desk, args: || json!({}), fields: &[], form_encoded: true },
    Case { path: "/api/me", access: Access::Desk, args: || json!({}), fields: &[], form_encoded: false },
    Case {
        path: "/api/switch-project",
        access: Access::Project,
        args: || json!({"project": "project-b"}),
        fields: &[("project", Ty::Bounded, "project")],
        form_encoded: false,
    },
    Case {
        path: "/api/lb/list",
        access: Access::Admin,
        args: || json!({"search": ""}),
        fields: &[("search", Ty::Bounded, "search")],
        form_encoded: false,
    },
    Case {
        path: "/api/lb/get",
        access: Access::Admin,
        args: || json!({"name": "demo"}),
        fields: &[("name", Ty::Bounded, "name")],
        form_encoded: false,
    },
    Case {
        path: "/api/lb/save",
        access: Access::Admin,
        args: || json!({"form": lb_form("demo")}),
        fields: &[
            ("form", Ty::Struct, "form"),
            ("form.name", Ty::Bounded, "metadata.name"),
            ("form.ltm_token", Ty::Bounded, "ltm.token"),
        ],
        form_encoded: false,
    },
    Case {
        path: "/api/lb/delete",
        access: Access::Admin,
        args: || json!({"name": "demo"}),
        fields: &[("name", Ty::Bounded, "name")],
        form_encoded: false,
    },
    Case { path: "/api/lb/choices", access: Access::Admin, args: || json!({}), fields: &[], form_encoded: false },
    Case {
        path: "/api/ticket/list",
        access: Access::Desk,
        args: || json!({"project": "project-b"}),
        fields: &[("project", Ty::Bounded, "project")],
        form_encoded: false,
    },
    Case {
        path: "/api/ticket/get",
        access: Access::Project,
        args: || json!({"name": SECRET_TICKET}),
        fields: &[("name", Ty::Bounded, "name")],
        form_encoded: false,
    },
    Case { path: "/api/ticket/choices", access: Access::Desk, args: || json!({}), fields: &[], form_encoded: false },
    Case {
        path: "/api/ticket/check-address",
        access: Access::Project,
        args: || json!({"loadbalancer": "demo", "side": "Ve", "address": SECRET_VEIP, "ticket": SECRET_TICKET}),
        fields: &[
            ("loadbalancer", Ty::Bounded, "loadbalancer"),
            ("side", Ty::Enum, "side"),
            ("address", Ty::Bounded, "veip"),
            ("ticket", Ty::Str, "ticket"),
        ],
        form_encoded: false,
    },
    Case {
        path: "/api/ticket/save",
        access: Access::Project,
        args: || json!({"form": TicketForm { generation: Some(1), ..ticket_form(SECRET_TICKET) }}),
        fields: &[
            ("form", Ty::Struct, "form"),
            ("form.name", Ty::Bounded, "name"),
            ("form.lbtype", Ty::Enum, "lbtype"),
        ],
        form_encoded: false,
    },
    Case {
        path: "/api/ticket/act",
        access: Access::Project,
        args: || json!({"name": SECRET_TICKET, "action": "Disable"}),
        fields: &[("name", Ty::Bounded, "name"), ("action", Ty::Enum, "action")],
        form_encoded: false,
    },
    Case {
        path: "/api/listener/list",
        access: Access::Desk,
        args: || json!({"project": "project-b", "after": ""}),
        fields: &[("project", Ty::Bounded, "project"), ("after", Ty::Bounded, "after")],
        form_encoded: false,
    },
    Case {
        path: "/api/listener/get",
        access: Access::Project,
        args: || json!({"ticket": SECRET_TICKET, "name": "web"}),
        fields: &[("ticket", Ty::Bounded, "ticket"), ("name", Ty::Bounded, "name")],
        form_encoded: false,
    },
    Case {
        path: "/api/listener/choices",
        access: Access::Project,
        args: || json!({"ticket": SECRET_TICKET, "name": ""}),
        fields: &[("ticket", Ty::Bounded, "ticket"), ("name", Ty::Bounded, "name")],
        form_encoded: false,
    },
    Case {
        path: "/api/listener/preview",
        access: Access::Project,
        args: || json!({"form": listener_form(SECRET_TICKET)}),
        fields: LISTENER_FORM_FIELDS,
        form_encoded: false,
    },
    Case {
        path: "/api/listener/save",
        access: Access::Project,
        args: || json!({"form": listener_form(SECRET_TICKET)}),
        fields: LISTENER_FORM_FIELDS,
        form_encoded: false,
    },
    Case {
        path: "/api/listener/delete",
        access: Access::Project,
        args: || json!({"ticket": SECRET_TICKET, "name": "web"}),
        fields: &[("ticket", Ty::Bounded, "ticket"), ("name", Ty::Bounded, "name")],
        form_encoded: false,
    },
    Case {
        path: "/api/rule/listener",
        access: Access::Project,
        args: || json!({"ticket": SECRET_TICKET, "listener": "web"}),
        fields: &[("ticket", Ty::Bounded, "ticket"), ("listener", Ty::Bounded, "listener")],
        form_encoded: false,
    },
    Case {
        path: "/api/rule/get",
        access: Access::Project,
        args: || json!({"ticket": SECRET_TICKET, "listener": "web", "name": "canary"}),
        fields: RULE_KEYS,
        form_encoded: false,
    },
    Case {
        path: "/api/rule/choices",
        access: Access::Project,
        args: || json!({"ticket": SECRET_TICKET, "listener": "web", "name": ""}),
        fields: RULE_KEYS,
        form_encoded: false,
    },
    Case {
        path: "/api/rule/preview",
        access: Access::Project,
        args: || json!({"form": rule_form(SECRET_TICKET)}),
        fields: RULE_FORM_FIELDS,
        form_encoded: false,
    },
    Case {
        path: "/api/rule/save",
        access: Access::Project,
        args: || json!({"form": rule_form(SECRET_TICKET)}),
        fields: RULE_FORM_FIELDS,
        form_encoded: false,
    },
    Case {
        path: "/api/rule/delete",
        access: Access::Project,
        args: || json!({"ticket": SECRET_TICKET, "listener": "web", "name": "canary"}),
        fields: RULE_KEYS,
        form_encoded: false,
    },
    Case {
        path: "/api/rule/shift",
        access: Access::Project,
        args: || json!({"ticket": SECRET_TICKET, "listener": "web", "name": "canary", "version": "1", "second": 25}),
        fields: &[
            ("ticket", Ty::Bounded, "ticket"),
            ("listener", Ty::Bounded, "listener"),
            ("name", Ty::Bounded, "name"),
            ("version", Ty::Str, "version"),
            ("second", Ty::Enum, "second"),
        ],
        form_encoded: false,
    },
    Case {
        path: "/api/rule/move",
        access: Access::Project,
        args: || json!({"ticket": SECRET_TICKET, "listener": "web", "name": "canary", "up": true}),
        fields: &[
            ("ticket", Ty::Bounded, "ticket"),
            ("listener", Ty::Bounded, "listener"),
            ("name", Ty::Bounded, "name"),
            ("up", Ty::Enum, "up"),
        ],
        form_encoded: false,
    },
    Case {
        path: "/api/ingress/list",
        access: Access::Desk,
        args: || json!({"project": "project-b", "after": ""}),
        fields: &[("project", Ty::Bounded, "project"), ("after", Ty::Bounded, "after")],
        form_encoded: false,
    },
    Case {
        path: "/api/ingress/get",
        access: Access::Project,
        args: || json!({"ticket": SECRET_TICKET, "name": "shop"}),
        fields: &[("ticket", Ty::Bounded, "ticket"), ("name", Ty::Bounded, "name")],
        form_encoded: false,
    },
    Case {
        path: "/api/ingress/choices",
        access: Access::Project,
        args: || json!({"ticket": SECRET_TICKET, "name": ""}),
        fields: &[("ticket", Ty::Bounded, "ticket"), ("name", Ty::Bounded, "name")],
        form_encoded: false,
    },
    Case {
        path: "/api/ingress/save",
        access: Access::Project,
        args: || json!({"form": ingress_form(SECRET_TICKET)}),
        fields: INGRESS_FORM_FIELDS,
        form_encoded: false,
    },
    Case {
        path: "/api/ingress/delete",
        access: Access::Project,
        args: || json!({"ticket": SECRET_TICKET, "name": "shop"}),
        fields: &[("ticket", Ty::Bounded, "ticket"), ("name", Ty::Bounded, "name")],
        form_encoded: false,
    },
    Case {
        path: "/api/audit/list",
        access: Access::Desk,
        args: || json!({"query": {"user": "", "object": SECRET_TICKET, "kind": "", "action": "", "from": "", "to": "", "cursor": ""}}),
        fields: &[
            ("query", Ty::Struct, "query"),
            ("query.object", Ty::Bounded, "object"),
            ("query.cursor", Ty::Bounded, "cursor"),
        ],
        form_encoded: false,
    },
];

pub(crate) fn case(path: &str) -> &'static Case {
    TABLE.iter().find(|c| c.path == path).unwrap_or_else(|| {
        panic!("the server function {path} has no entry in the boundary table (server/tests/it/boundary.rs)")
    })
}

/// A client of lbdesk, signed in as `user` (anonymous when `None`).
struct Client {
    http: reqwest::Client,
    url: String,
}

impl Client {
    async fn new(lbdesk: &Lbdesk, user: Option<&str>) -> Client {
        let client = Client { http: browser(), url: lbdesk.url.clone() };
        if let Some(user) = user {
            let args = json!({"username": user, "password": format!("{user}-demo")});
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

/// lbdesk with a load balancer offered to every project and bob's request `b-secret` on it.
async fn with_bobs_secret(backend: Backend) -> Lbdesk {
    let lbdesk = spawn_lbdesk(backend).await;
    let admin = Client::new(&lbdesk, Some("admin")).await;
    let (status, body) =
        answer(admin.post(case("/api/lb/save"), &json!({"form": lb_form("demo")}), &lbdesk.url).await).await;
    assert!(status.is_success(), "{status}: {body}");
    let bob = Client::new(&lbdesk, Some("bob")).await;
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
    lbdesk
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
    let lbdesk = with_bobs_secret(Backend::Sqlite).await;
    let anonymous = Client::new(&lbdesk, None).await;
    let alice = Client::new(&lbdesk, Some("alice")).await;
    let admin = Client::new(&lbdesk, Some("admin")).await;
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
        let signing_out = Client::new(&lbdesk, Some("alice")).await;
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
    let bob = Client::new(&lbdesk, Some("bob")).await;
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
