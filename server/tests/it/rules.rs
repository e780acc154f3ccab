//! Screen 4's server functions and the admission of `kubectl` writes of rules: the same domain
//! function (`rule_write`) refuses the same rules on both paths.

use app::domain::crd::{
    Lbrule, LbruleSpec, MatchMode, Operator, Phase, RuleCondition, RuleType, RuleValue, ServiceRef,
};
use app::error::AppError;
use app::screens::listeners::ListenerForm;
use app::screens::rules::{RuleChoices, RuleDetail, RuleForm, RulePreview, RulesOfListener};
use app::ssr::STALE;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{Backend, until};
use crate::on_sqlite;
use crate::shared::{Lease, Shared};
use crate::user::{User, ok, own_namespace, refused, ticket_form, wait_phase};

on_sqlite!(rules_are_added_reordered_and_carried_by_the_member_cluster);

fn svc(service: &str, port: u16, weight: u32) -> ServiceRef {
    ServiceRef { service: service.into(), port, weight }
}

fn cond(type_: RuleType, key: Option<&str>, operator: Operator, value: &str) -> RuleCondition {
    RuleCondition { type_, key: key.map(String::from), values: vec![RuleValue { operator, value: value.into() }] }
}

fn rule(ticket: &str, name: &str, conditions: Vec<RuleCondition>, services: Vec<ServiceRef>) -> RuleForm {
    RuleForm {
        ticket: ticket.into(),
        listener: "web".into(),
        name: name.into(),
        match_: MatchMode::Any,
        conditions,
        services,
        version: None,
    }
}

/// Shared by the tests here, each with an address and a namespace of its own (named alike);
/// one test uses team-b (bob's).
static LBDESK: Shared = Shared::with_demo_lb();

/// The module's lbdesk with alice's Enabled address `ticket`, in her new namespace of the same
/// name, carrying the HTTP listener `web` (web-v1) and the TCP listener `db` (api), alice signed
/// in.
async fn with_listeners(backend: Backend, ticket: &str) -> (Lease, User) {
    let lbdesk = LBDESK.get(backend).await;
    own_namespace(&lbdesk, "acp-region01", "project-a", ticket).await;
    let alice = User::sign_in(&lbdesk, "alice").await;
    ok::<String>(alice.json("ticket/save", json!({"form": ticket_form(ticket, ticket, "")})).await).await;
    wait_phase(&alice, ticket, Phase::Enabled).await;
    for (name, port, protocol, service) in [("web", 80, "http", "web-v1"), ("db", 5432, "tcp", "api")] {
        let form = ListenerForm {
            ticket: ticket.into(),
            name: name.into(),
            port,
            protocol: serde_json::from_value(json!(protocol)).expect("a protocol"),
            services: vec![svc(service, 8080, 100)],
            ..Default::default()
        };
        ok::<String>(alice.json("listener/save", json!({"form": form})).await).await;
    }
    (lbdesk, alice)
}

async fn of_listener(user: &User, ticket: &str, listener: &str) -> RulesOfListener {
    ok(user.form("rule/listener", &[("ticket", ticket), ("listener", listener)]).await).await
}

async fn rules_are_added_reordered_and_carried_by_the_member_cluster(backend: Backend) {
    let (lbdesk, alice) = with_listeners(backend, "shop").await;
    let offered: RuleChoices =
        ok(alice.form("rule/choices", &[("ticket", "shop"), ("listener", "web"), ("name", "")]).await).await;
    assert_eq!((offered.add, offered.editing, offered.rule.name.as_str()), (None, false, "shop-web-1"));
    let names: Vec<&str> = offered.services.iter().map(|s| s.name.as_str()).collect();
    assert!(names.contains(&"web-v1") && names.contains(&"web-v2") && !names.contains(&"api"), "{names:?}");

    let canary = rule(
        "shop",
        "canary",
        vec![cond(RuleType::Header, Some("X-Canary"), Operator::Equal, "1")],
        vec![svc("web-v2", 8080, 100)],
    );
    let preview: RulePreview = ok(alice.json("rule/preview", json!({"form": canary})).await).await;
    assert_eq!(preview.preview.refused, None);
    let irule = preview.irule.expect("the listener's iRule");
    assert!(irule.contains("X-Canary"), "{irule}");
    assert!(of_listener(&alice, "shop", "web").await.rules.is_empty(), "the preview wrote nothing");

    assert_eq!(ok::<String>(alice.json("rule/save", json!({"form": canary})).await).await, "canary");
    let host = rule(
        "shop",
        "host",
        vec![cond(RuleType::Domain, None, Operator::Equal, "a.example.com")],
        vec![svc("web-v2", 8080, 100)],
    );
    assert_eq!(ok::<String>(alice.json("rule/save", json!({"form": host})).await).await, "host");
    let rules = of_listener(&alice, "shop", "web").await.rules;
    let order: Vec<(&str, u32)> = rules.iter().map(|r| (r.name.as_str(), r.spec.priority)).collect();
    assert_eq!(order, [("canary", 10), ("host", 20)], "a new rule goes last");
    assert_eq!(rules[0].summary, "header X-Canary is 1");

    ok::<()>(alice.json("rule/move", json!({"ticket": "shop", "listener": "web", "name": "host", "up": true})).await)
        .await;
    let order: Vec<(String, u32)> =
        of_listener(&alice, "shop", "web").await.rules.into_iter().map(|r| (r.name, r.spec.priority)).collect();
    assert_eq!(order, [("host".to_string(), 10), ("canary".to_string(), 20)]);
    // Moving the first one up changes nothing.
    ok::<()>(alice.json("rule/move", json!({"ticket": "shop", "listener": "web", "name": "host", "up": true})).await)
        .await;

    // The member cluster's iRule tries the host rule first.
    until("the member cluster's iRule to try host before canary", 20, || async {
        let deployed = of_listener(&alice, "shop", "web").await.deployed.unwrap_or_default();
        match (deployed.find("a.example.com"), deployed.find("X-Canary")) {
            (Some(h), Some(c)) => h < c,
            _ => false,
        }
    })
    .await;

    // What CIS will post (issue #24) carries the same iRule, and both listeners with members.
    let member = lbdesk.client("acp-region01").await;
    let cis = crate::cis::readme_args(&[("zone".to_string(), "f5".to_string())].into());
    let posted = crate::cis::posted(&member, &cis).await;
    let irule = posted.tenant("acp-region01").map(|t| t["shop_http_app"]["vs_shop_80_irule"]["iRule"].to_string());
    assert!(irule.is_some_and(|i| i.find("a.example.com") < i.find("X-Canary")), "{posted:?}");
    assert!(crate::cis::carries_listener(
        &posted,
        "acp-region01",
        "shop_http_app",
        "vs_shop_80",
        &["web-v1_8080_pool", "web-v2_8080_pool"]
    ));
    assert!(crate::cis::carries_listener(&posted, "acp-region01", "shop_tcp_app", "vs_shop_5432", &["api_8080_pool"]));

    // A delete answers once the watch shows the rule gone, without waiting out the echo's time.
    let capture = crate::log_capture::Capture::start();
    ok::<()>(alice.form("rule/delete", &[("ticket", "shop"), ("listener", "web"), ("name", "canary")]).await).await;
    let late =
        capture.text().lines().any(|l| l.contains("did not bring lbdesk's own write back") && l.contains("canary"));
    assert!(!late, "the delete waited for an echo that never comes");
    let left: Vec<String> = of_listener(&alice, "shop", "web").await.rules.into_iter().map(|r| r.name).collect();
    assert_eq!(left, ["host"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_rule_refusal_is_said_beside_its_field() {
    let (_lbdesk, alice) = with_listeners(Backend::Sqlite, "refusals").await;
    let save = |form: RuleForm| alice.json("rule/save", json!({"form": form}));
    let header = || vec![cond(RuleType::Header, Some("X-Canary"), Operator::Equal, "1")];
    let to_v2 = || vec![svc("web-v2", 8080, 100)];
    for (what, form, field) in [
        (
            "an invalid regexp",
            rule("refusals", "r", vec![cond(RuleType::Url, None, Operator::Regexp, "(open")], to_v2()),
            "rules[0].values[0].value",
        ),
        (
            "a range that is not lo-hi",
            rule("refusals", "r", vec![cond(RuleType::Cookie, Some("v"), Operator::Range, "9-1")], to_v2()),
            "rules[0].values[0].value",
        ),
        (
            "a header on a TCP listener",
            RuleForm { listener: "db".into(), ..rule("refusals", "r", header(), vec![svc("api", 8080, 100)]) },
            "rules[0].type",
        ),
        ("another listener's Service", rule("refusals", "r", header(), vec![svc("api", 8080, 100)]), "services"),
        (
            "a port the Service does not have",
            rule("refusals", "r", header(), vec![svc("web-v2", 9999, 100)]),
            "services",
        ),
        ("weights adding up to 50", rule("refusals", "r", header(), vec![svc("web-v2", 8080, 50)]), "services"),
        (
            "the listener's Service on another port",
            rule("refusals", "r", header(), vec![svc("web-v1", 8443, 100)]),
            "services",
        ),
        ("an upper-case name", rule("refusals", "Canary", header(), to_v2()), "name"),
    ] {
        let error = refused(save(form).await, StatusCode::BAD_REQUEST).await;
        assert!(error.for_field(field).is_some(), "{what}: {error:?}");
    }
    ok::<String>(save(rule("refusals", "r", header(), to_v2())).await).await;
    let error = refused(save(rule("refusals", "r", header(), to_v2())).await, StatusCode::BAD_REQUEST).await;
    assert!(error.for_field("name").is_some_and(|m| m.contains("not available")), "{error:?}");
    let stale = RuleForm { version: Some("1".into()), ..rule("refusals", "r", header(), to_v2()) };
    assert_eq!(refused(save(stale).await, StatusCode::CONFLICT).await, AppError::Conflict(STALE.into()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_projects_tenant_reaches_no_rule() {
    let (lbdesk, alice) = with_listeners(Backend::Sqlite, "hidden").await;
    let canary = rule(
        "hidden",
        "peek",
        vec![cond(RuleType::Header, Some("X-Canary"), Operator::Equal, "1")],
        vec![svc("web-v2", 8080, 100)],
    );
    ok::<String>(alice.json("rule/save", json!({"form": canary})).await).await;
    let bob = User::sign_in(&lbdesk, "bob").await;
    let hidden = AppError::NotFound("There is no such address request in your projects.".into());
    for res in [
        bob.form("rule/listener", &[("ticket", "hidden"), ("listener", "web")]).await,
        bob.form("rule/get", &[("ticket", "hidden"), ("listener", "web"), ("name", "peek")]).await,
        bob.form("rule/choices", &[("ticket", "hidden"), ("listener", "web"), ("name", "peek")]).await,
        bob.json("rule/preview", json!({"form": canary})).await,
        bob.json("rule/save", json!({"form": RuleForm { name: "bobs".into(), ..canary.clone() }})).await,
        bob.form("rule/delete", &[("ticket", "hidden"), ("listener", "web"), ("name", "peek")]).await,
        bob.json("rule/move", json!({"ticket": "hidden", "listener": "web", "name": "peek", "up": false})).await,
    ] {
        assert_eq!(refused(res, StatusCode::NOT_FOUND).await, hidden);
    }
    assert_eq!(of_listener(&alice, "hidden", "web").await.rules.len(), 1, "still alice's one rule");

    // Names are cluster-wide: a taken one is "not available" in the same words whoever holds
    // it, so bob learns no more than that the name is taken (issue #27).
    let taken = |res| async { refused(res, StatusCode::BAD_REQUEST).await };
    let bobs_ticket = taken(bob.json("ticket/save", json!({"form": ticket_form("hidden", "team-b", "")})).await).await;
    let alices_ticket =
        taken(alice.json("ticket/save", json!({"form": ticket_form("hidden", "hidden", "")})).await).await;
    assert_eq!(bobs_ticket, alices_ticket);
    assert_eq!(bobs_ticket.for_field("name").as_deref(), Some("The name hidden is not available; choose another."));
    ok::<String>(bob.json("ticket/save", json!({"form": ticket_form("bobs", "team-b", "")})).await).await;
    wait_phase(&bob, "bobs", Phase::Enabled).await;
    let listener = ListenerForm {
        ticket: "bobs".into(),
        name: "web".into(),
        port: 80,
        services: vec![svc("web-v1", 8080, 100)],
        ..Default::default()
    };
    ok::<String>(bob.json("listener/save", json!({"form": listener})).await).await;
    let on_bobs = RuleForm { ticket: "bobs".into(), ..canary.clone() };
    let bobs_rule = taken(bob.json("rule/save", json!({"form": on_bobs})).await).await;
    let alices_rule = taken(alice.json("rule/save", json!({"form": canary})).await).await;
    assert_eq!(bobs_rule, alices_rule);
    assert_eq!(bobs_rule.for_field("name").as_deref(), Some("The name peek is not available; choose another."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_writes_of_rules_meet_the_same_rules() {
    let (lbdesk, alice) = with_listeners(Backend::Sqlite, "kubectl").await;
    let rules: Api<Lbrule> = Api::all(lbdesk.client("mgmt").await);
    let spec = |listener: &str, priority: u32, service: &str, c: RuleCondition| LbruleSpec {
        lbticket: "kubectl".into(),
        listener: listener.into(),
        priority,
        services: vec![svc(service, 8080, 100)],
        rules: vec![c],
        ..Default::default()
    };
    let header = || cond(RuleType::Header, Some("X-Canary"), Operator::Equal, "1");
    rules
        .create(&PostParams::default(), &Lbrule::new("first", spec("web", 10, "web-v2", header())))
        .await
        .expect("a valid rule");
    for (what, s, code, says) in [
        (
            "an invalid regexp",
            spec("web", 20, "web-v2", cond(RuleType::Url, None, Operator::Regexp, "(open")),
            400,
            "rules[0].values[0].value",
        ),
        ("a listener the address does not have", spec("nope", 20, "web-v2", header()), 403, "no listener of that name"),
        ("a priority taken on the listener", spec("web", 10, "web-v2", header()), 403, "already has priority 10"),
        ("a header on a TCP listener", spec("db", 20, "api", header()), 403, "only ip conditions apply"),
        ("another listener's Service", spec("web", 20, "api", header()), 403, "already used by listener db of kubectl"),
        (
            "the listener's Service on another port",
            LbruleSpec { services: vec![svc("web-v1", 8443, 100)], ..spec("web", 20, "web-v1", header()) },
            403,
            "already backs a pool on port 8080",
        ),
        (
            "an address that does not exist",
            LbruleSpec { lbticket: "nowhere".into(), ..spec("web", 20, "web-v2", header()) },
            403,
            "no address request",
        ),
    ] {
        match rules.create(&PostParams::default(), &Lbrule::new("second", s)).await {
            Err(kube::Error::Api(e)) => {
                assert_eq!(e.code, code, "{what}: {e:?}");
                assert!(e.message.contains(says), "{what}: {}", e.message);
            }
            other => panic!("{what}: admitted: {other:?}"),
        }
    }
    let mut first = rules.get("first").await.expect("the rule");
    first.spec.listener = "db".into();
    let moved = rules.replace("first", &PostParams::default(), &first).await;
    assert!(
        matches!(&moved, Err(kube::Error::Api(e)) if e.code == 403 && e.message.contains("stays on its listener")),
        "{moved:?}"
    );
    // What kubectl wrote, the page shows; a delete is always allowed.
    until("the page to show the rule kubectl wrote", 10, || async {
        of_listener(&alice, "kubectl", "web").await.rules.iter().map(|r| r.name.as_str()).eq(["first"])
    })
    .await;
    rules.delete("first", &DeleteParams::default()).await.expect("a delete");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shift_moves_weight_step_by_step_and_is_recorded() {
    let (_lbdesk, alice) = with_listeners(Backend::Sqlite, "shift").await;
    let split = rule(
        "shift",
        "split",
        vec![cond(RuleType::Header, Some("X-Beta"), Operator::Equal, "1")],
        vec![svc("web-v1", 8080, 90), svc("web-v2", 8080, 10)],
    );
    ok::<String>(alice.json("rule/save", json!({"form": split})).await).await;
    let get = || async {
        ok::<RuleDetail>(alice.form("rule/get", &[("ticket", "shift"), ("listener", "web"), ("name", "split")]).await)
            .await
    };
    let shift = |version: String, second: u32| {
        alice.json(
            "rule/shift",
            json!({"ticket": "shift", "listener": "web", "name": "split", "version": version, "second": second}),
        )
    };
    let loaded = get().await;
    let version = loaded.form.version.clone().expect("a version");
    ok::<()>(shift(version.clone(), 50).await).await;
    let now = get().await;
    let weights: Vec<u32> = now.form.services.iter().map(|s| s.weight).collect();
    assert_eq!(weights, [50, 50]);
    assert_eq!(now.history.len(), 1, "{:?}", now.history);
    assert_eq!(now.history[0].weights, "web-v1:8080 50%, web-v2:8080 50%");
    assert_eq!(now.history[0].user, "alice");

    // A step from a page loaded before it is refused; so is a weight over 100.
    assert_eq!(refused(shift(version, 100).await, StatusCode::CONFLICT).await, AppError::Conflict(STALE.into()));
    let current = now.form.version.clone().expect("a version");
    let error = refused(shift(current.clone(), 101).await, StatusCode::BAD_REQUEST).await;
    assert!(error.for_field("second").is_some(), "{error:?}");
    ok::<()>(shift(current, 100).await).await;
    let promoted = get().await;
    assert_eq!(promoted.form.services.iter().map(|s| s.weight).collect::<Vec<_>>(), [0, 100]);
    assert_eq!(promoted.history.len(), 2, "newest first: {:?}", promoted.history);
    assert_eq!(promoted.history[0].weights, "web-v1:8080 0%, web-v2:8080 100%");

    // Only a rule with two services shifts.
    let single = rule(
        "shift",
        "one",
        vec![cond(RuleType::Header, Some("X-One"), Operator::Equal, "1")],
        vec![svc("web-v2", 8080, 100)],
    );
    ok::<String>(alice.json("rule/save", json!({"form": single})).await).await;
    let one: RuleDetail =
        ok(alice.form("rule/get", &[("ticket", "shift"), ("listener", "web"), ("name", "one")]).await).await;
    let res = alice
        .json(
            "rule/shift",
            json!({"ticket": "shift", "listener": "web", "name": "one", "version": one.form.version, "second": 50}),
        )
        .await;
    assert_eq!(
        refused(res, StatusCode::CONFLICT).await,
        AppError::Refused("Only a rule with exactly two services shifts traffic.".into())
    );
}
