//! Reading BIG-IP's answers and judging a virtual server, as tables.

use serde_json::json;

use super::*;

/// A tenant as AS3 holds it: app `team-a_http_app` with `vs_shop_80` sending to one pool
/// directly and another through its iRule, and an unrelated pool and virtual server.
fn tenant(weight: u64) -> Value {
    json!({
        "class": "Tenant",
        "team-a_http_app": {
            "class": "Application",
            "vs_shop_80": {"class": "Service_HTTP", "virtualAddresses": ["20.1.0.10"], "virtualPort": 80,
                           "pool": "web_8080_pool", "iRules": ["vs_shop_80_irule"]},
            "vs_shop_80_irule": {"class": "iRule", "iRule": "when HTTP_REQUEST {\n    pool /acp/team-a_http_app/canary_8080_pool\n}"},
            "web_8080_pool": {"class": "Pool", "members": [{"servicePort": 8080, "serverAddresses": ["10.2.0.5"], "ratio": weight}]},
            "canary_8080_pool": {"class": "Pool", "members": [{"servicePort": 8080, "serverAddresses": ["10.2.0.6"]}]},
            "canary_8080_pool2": {"class": "Pool", "members": []},
            "other_9090_pool": {"class": "Pool", "members": []},
            "vs_blog_81": {"class": "Service_HTTP", "virtualAddresses": ["20.1.0.10"], "virtualPort": 81, "pool": "other_9090_pool"}
        }
    })
}

#[test]
fn a_virtual_server_brings_its_irules_and_the_pools_it_or_they_name() {
    let objects = objects_of(&tenant(1), "team-a_http_app", "vs_shop_80");
    let names: Vec<&str> = objects.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "team-a_http_app/canary_8080_pool",
            "team-a_http_app/vs_shop_80",
            "team-a_http_app/vs_shop_80_irule",
            "team-a_http_app/web_8080_pool"
        ],
        "not the pool whose name only starts like one the iRule names, nor another server's"
    );
    assert!(objects_of(&tenant(1), "team-a_http_app", "vs_gone_80").is_empty());
    assert!(objects_of(&json!({"class": "Tenant"}), "team-a_http_app", "vs_shop_80").is_empty());
}

#[test]
fn a_virtual_server_is_live_only_when_bigip_holds_exactly_what_is_expected() {
    let expected = objects_of(&tenant(1), "team-a_http_app", "vs_shop_80");
    let older = objects_of(&tenant(2), "team-a_http_app", "vs_shop_80");
    let none = BTreeMap::new();
    let refused = "declaration is invalid (422): /acp/team-a_http_app/vs_shop_80: bad";
    // (what, on BIG-IP, BIG-IP's last refusal of the tenant, the state)
    type Row<'a> = (&'a str, &'a BTreeMap<String, Value>, Option<&'a str>, State);
    let rows: Vec<Row> = vec![
        ("the same objects", &expected, None, State::Live),
        ("the same objects, an older refusal since superseded", &expected, Some(refused), State::Live),
        (
            "nothing yet, nothing refused: waiting for CIS",
            &none,
            None,
            State::Waiting { differs: expected.keys().map(|k| format!("{k}: not on BIG-IP")).collect() },
        ),
        (
            "an older pool, the tenant's last declaration refused",
            &older,
            Some(refused),
            State::Rejected {
                reason: refused.into(),
                differs: vec!["team-a_http_app/web_8080_pool: BIG-IP holds another version".into()],
            },
        ),
    ];
    for (what, on_bigip, rejected, want) in rows {
        assert_eq!(state(&expected, on_bigip, rejected), want, "{what}");
    }
    let mut extra = expected.clone();
    extra.insert("team-a_http_app/stale_pool".into(), json!({}));
    assert_eq!(differences(&expected, &extra), ["team-a_http_app/stale_pool: on BIG-IP, not expected"]);
}

#[test]
fn a_declaration_answer_gives_the_tenant_or_says_what_is_wrong_with_it() {
    let adc = json!({"class": "ADC", "schemaVersion": "3.52.0", "acp": tenant(1), "Common": {"class": "Tenant"}});
    // (what, the answer, the tenant, the result)
    type Row = (&'static str, Value, Result<Option<Value>, String>);
    let rows: Vec<Row> = vec![
        ("the tenant", adc.clone(), Ok(Some(tenant(1)))),
        ("inside an AS3 request", json!({"class": "AS3", "declaration": adc.clone()}), Ok(Some(tenant(1)))),
        ("no content (204)", Value::Null, Ok(None)),
        ("another tenant only", json!({"class": "ADC", "other": {"class": "Tenant"}}), Ok(None)),
        (
            "not an ADC",
            json!({"items": []}),
            Err("the declaration BIG-IP answered is not an AS3 ADC declaration".into()),
        ),
        (
            "the tenant not a tenant",
            json!({"class": "ADC", "acp": "x"}),
            Err("the declaration BIG-IP answered holds acp as something other than a tenant".into()),
        ),
    ];
    for (what, answer, want) in rows {
        assert_eq!(tenant_of(&answer, "acp"), want, "{what}");
    }
}

#[test]
fn the_last_task_of_a_tenant_says_whether_bigip_refused_it() {
    let task = |tenant: &str, code: u64, errors: &[&str]| json!({"id": "t", "results": [{"tenant": tenant, "code": code, "message": if code < 400 { "success" } else { "declaration is invalid" }, "errors": errors}]});
    let refused = Rejection {
        summary: "declaration is invalid (422)".into(),
        errors: vec!["/acp/a/vs: should have required property 'virtualAddresses'".into()],
    };
    // (what, the tasks oldest first, the result)
    type Row = (&'static str, Value, Result<Option<Rejection>, String>);
    let rows: Vec<Row> = vec![
        ("no task", json!({"items": []}), Ok(None)),
        ("succeeded", json!({"items": [task("acp", 200, &[])]}), Ok(None)),
        (
            "refused, then another tenant's success",
            json!({"items": [task("acp", 422, &["/acp/a/vs: should have required property 'virtualAddresses'"]), task("other", 200, &[])]}),
            Ok(Some(refused)),
        ),
        ("refused, then succeeded", json!({"items": [task("acp", 422, &["x"]), task("acp", 200, &[])]}), Ok(None)),
        ("an HTML page read as JSON", json!("<html>"), Err("the task list BIG-IP answered has no items".into())),
        (
            "a result without a code",
            json!({"items": [{"results": [{"tenant": "acp"}]}]}),
            Err("a task result BIG-IP answered has no code".into()),
        ),
    ];
    for (what, tasks, want) in rows {
        assert_eq!(rejection(&tasks, "acp"), want, "{what}");
    }
}

#[test]
fn pool_members_are_read_with_their_state() {
    let member = |addr: &str, port: u64, available: &str, enabled: &str| {
        json!({"nestedStats": {"entries": {
            "addr": {"description": addr}, "port": {"value": port},
            "status.availabilityState": {"description": available},
            "status.enabledState": {"description": enabled}
        }}})
    };
    let stats = json!({"kind": "tm:ltm:pool:members:memberscollectionstats", "entries": {
        "https://localhost/mgmt/tm/ltm/pool/~acp~a~p/members/~acp~10.2.0.7:8080/stats": member("10.2.0.7", 8080, "offline", "enabled"),
        "https://localhost/mgmt/tm/ltm/pool/~acp~a~p/members/~acp~10.2.0.5:8080/stats": member("10.2.0.5%2", 8080, "available", "enabled"),
        "https://localhost/mgmt/tm/ltm/pool/~acp~a~p/members/~acp~10.2.0.6:8080/stats": member("10.2.0.6", 8080, "available", "disabled-by-parent"),
        "https://localhost/mgmt/tm/ltm/pool/~acp~a~p/members/~acp~10.2.0.8:8080/stats": member("10.2.0.8", 8080, "unknown", "enabled"),
    }});
    let read = members_of(&stats).expect("members");
    let states: Vec<(&str, MemberState)> = read.iter().map(|m| (m.address.as_str(), m.state)).collect();
    assert_eq!(
        states,
        [
            ("10.2.0.5", MemberState::Up),
            ("10.2.0.6", MemberState::Disabled),
            ("10.2.0.7", MemberState::Down),
            ("10.2.0.8", MemberState::Unknown)
        ]
    );
    assert!(read.iter().all(|m| m.port == 8080));
    // Answers of another shape say what is missing.
    for (what, bad, why) in [
        ("no entries", json!({"kind": "x"}), "the pool statistics have no entries"),
        ("a member without stats", json!({"entries": {"m": {}}}), "a pool member's statistics have no entries"),
        (
            "a port out of range",
            json!({"entries": {"m": member("10.0.0.1", 70_000, "available", "enabled")}}),
            "a pool member has no port",
        ),
    ] {
        assert_eq!(members_of(&bad), Err(why.to_string()), "{what}");
    }
    assert_eq!(members_path("acp", "a", "p"), "/mgmt/tm/ltm/pool/~acp~a~p/members/stats");
}

#[test]
fn each_listener_of_a_ticket_is_judged_with_the_pools_to_read() {
    use crate::domain::crd::{Listener, Protocol};
    let listener = |name: &str, port: u16| Listener {
        name: name.into(),
        port,
        protocol: Protocol::Http,
        session: Default::default(),
        services: vec![],
    };
    let spec = LbticketSpec {
        namespace: "team-a".into(),
        listeners: vec![listener("web", 80), listener("new", 82)],
        ..Default::default()
    };
    let judged = judge("shop", &spec, "acp", Some(&tenant(1)), Some(&tenant(1)), None);
    assert_eq!(judged[0].listener, "web");
    assert_eq!(judged[0].state, State::Live);
    let pools: Vec<&str> = judged[0].pools.iter().map(|(_, p)| p.as_str()).collect();
    assert_eq!(pools, ["canary_8080_pool", "web_8080_pool"], "the pools BIG-IP holds of it");
    assert_eq!(
        judged[1].state,
        State::Waiting { differs: vec!["team-a_http_app/vs_shop_82: not posted by CIS yet".into()] },
        "a listener CIS does not post yet"
    );
    let refused = Rejection { summary: "refused (422)".into(), errors: vec![] };
    let nothing = judge("shop", &spec, "acp", Some(&tenant(1)), None, Some(&refused));
    assert!(matches!(&nothing[0].state, State::Rejected { reason, .. } if reason == "refused (422)"));
    assert!(nothing[0].pools.is_empty(), "no member to read of what BIG-IP does not hold");
    assert_eq!(nothing[0].state.recorded().0, OnBigip::Rejected);
}

#[test]
fn a_listener_is_told_only_the_errors_of_its_own_objects() {
    let own = ["a/vs_shop_80".to_string(), "a/web_8080_pool".to_string()];
    let rejection = |errors: &[&str]| Rejection {
        summary: "declaration is invalid (422)".into(),
        errors: errors.iter().map(|e| e.to_string()).collect(),
    };
    // (what, BIG-IP's errors, what the listener is told)
    let rows = [
        ("no errors", rejection(&[]), "declaration is invalid (422)"),
        (
            "its virtual server's, and a schema error inside its pool",
            rejection(&["/acp/a/vs_shop_80: bad", "x (at /declaration/acp/a/web_8080_pool/members/0)"]),
            "declaration is invalid (422): /acp/a/vs_shop_80: bad; x (at /declaration/acp/a/web_8080_pool/members/0)",
        ),
        ("the tenant's own", rejection(&["/acp: too large"]), "declaration is invalid (422): /acp: too large"),
        (
            "another request's, in the shared tenant: counted, not shown",
            rejection(&["/acp/b/vs_bobs_80: secret-name", "/acp/a/vs_shop_800: other"]),
            "declaration is invalid (422) (2 more in other requests sharing the AS3 tenant)",
        ),
        (
            "one naming both: not shown",
            rejection(&["/acp/a/vs_shop_80 clashes with /acp/b/vs_bobs_80"]),
            "declaration is invalid (422) (1 more in other requests sharing the AS3 tenant)",
        ),
    ];
    for (what, refused, told) in rows {
        assert_eq!(refused.told("acp", &own), told, "{what}");
    }
}

#[test]
fn a_list_says_in_short_what_bigip_runs() {
    use crate::domain::crd::ListenerOnBigip;
    let listener = |state: OnBigip| ListenerOnBigip { state, ..Default::default() };
    let status = |states: &[OnBigip], unreachable: &str| BigipStatus {
        listeners: states.iter().map(|s| listener(*s)).collect(),
        unreachable: unreachable.into(),
        ..Default::default()
    };
    let counts = |live, waiting, rejected, unreachable| Rollup { live, waiting, rejected, unreachable };
    // (what, the status, the roll-up)
    let rows = [
        ("nothing", status(&[], ""), counts(0, 0, 0, false)),
        ("all live", status(&[OnBigip::Live, OnBigip::Live], ""), counts(2, 0, 0, false)),
        ("mixed", status(&[OnBigip::Rejected, OnBigip::Live, OnBigip::Waiting], ""), counts(1, 1, 1, false)),
        ("unreachable", status(&[OnBigip::Live], "timed out"), counts(1, 0, 0, true)),
        ("unreachable, never read", status(&[], "timed out"), counts(0, 0, 0, true)),
    ];
    for (what, s, want) in rows {
        assert_eq!(rollup(&s), want, "{what}");
    }
}

#[test]
fn the_condition_says_live_only_when_every_listener_is() {
    use crate::domain::crd::ListenerOnBigip;
    let listener = |name: &str, state: OnBigip| ListenerOnBigip {
        name: name.into(),
        state,
        reason: "invalid (422)".into(),
        ..Default::default()
    };
    let status = |listeners: Vec<ListenerOnBigip>, unreachable: &str| BigipStatus {
        listeners,
        unreachable: unreachable.into(),
        ..Default::default()
    };
    // (what, the status, live, reason)
    let rows = [
        ("all live", status(vec![listener("web", OnBigip::Live)], ""), true, "Live"),
        ("none read back", status(vec![], ""), false, "WaitingForCis"),
        (
            "one waiting",
            status(vec![listener("web", OnBigip::Live), listener("api", OnBigip::Waiting)], ""),
            false,
            "WaitingForCis",
        ),
        (
            "a rejection first",
            status(vec![listener("api", OnBigip::Waiting), listener("web", OnBigip::Rejected)], ""),
            false,
            "Rejected",
        ),
        ("unreachable first", status(vec![listener("web", OnBigip::Rejected)], "timed out"), false, "Unreachable"),
        (
            "F5 Ingresses live",
            BigipStatus { ingresses: vec![listener("shop", OnBigip::Live)], ..Default::default() },
            true,
            "Live",
        ),
        (
            "an F5 Ingress rejected",
            BigipStatus { ingresses: vec![listener("shop", OnBigip::Rejected)], ..Default::default() },
            false,
            "Rejected",
        ),
    ];
    for (what, s, live, reason) in rows {
        let (ok, why, message) = condition(&s);
        assert_eq!((ok, why), (live, reason), "{what}: {message}");
        assert_eq!(message.is_empty(), live, "{what}: a message says why not");
    }
}

#[test]
fn each_f5_ingress_is_judged_by_its_servers_policy_and_own_pools() {
    use crate::domain::crd::{F5Ingress, IngressRule};
    let f5 = |name: &str, service: &str, tls: bool| F5Ingress {
        name: name.into(),
        rules: vec![IngressRule { host: None, path: "/".into(), service: service.into(), port: 8080 }],
        tls_secret: tls.then(|| "tls".to_string()),
    };
    let spec = LbticketSpec {
        namespace: "team-a".into(),
        ingresses: vec![f5("shop", "api", false), f5("shop-api", "web", true)],
        ..Default::default()
    };
    // The Ingress partition as CIS posts it: one server per address and port, its policy, pools.
    let pool = |members: u64| json!({"class": "Pool", "members": [{"servicePort": 8080, "serverAddresses": ["10.2.0.5"], "ratio": members}]});
    let partition = |weight: u64| {
        json!({"class": "Tenant", "Shared": {
            "class": "Application", "template": "shared",
            "ingress_20_9_0_5_80": {"class": "Service_HTTP", "policyEndpoint": "/shared_ingress/Shared/Ingress_20_9_0_5_80"},
            "Ingress_20_9_0_5_80": {"class": "Endpoint_Policy", "rules": []},
            "ingress_20_9_0_5_443": {"class": "Service_HTTPS"},
            "ingress_team_a_shop_api_8080": pool(weight),
            "ingress_team_a_shop_api_web_8080": pool(1),
        }})
    };
    let judged = judge_ingresses(&spec, "20.9.0.5", "shared_ingress", Some(&partition(1)), Some(&partition(1)), None);
    let names: Vec<&str> = judged.iter().map(|j| j.listener.as_str()).collect();
    assert_eq!(names, ["shop", "shop-api"]);
    assert!(judged.iter().all(|j| j.state == State::Live), "{judged:?}");
    // Each F5 Ingress's own pool, even where one's name is the start of another's.
    assert_eq!(judged[0].pools, [("Shared".to_string(), "ingress_team_a_shop_api_8080".to_string())]);
    assert_eq!(judged[1].pools, [("Shared".to_string(), "ingress_team_a_shop_api_web_8080".to_string())]);
    // Another version of shop's pool on BIG-IP: shop waits, shop-api is live.
    let judged = judge_ingresses(&spec, "20.9.0.5", "shared_ingress", Some(&partition(1)), Some(&partition(2)), None);
    assert_eq!(
        judged[0].state,
        State::Waiting { differs: vec!["Shared/ingress_team_a_shop_api_8080: BIG-IP holds another version".into()] }
    );
    assert_eq!(judged[1].state, State::Live);
    // Not posted by CIS at all yet.
    let nothing = judge_ingresses(&spec, "20.9.0.5", "shared_ingress", None, None, None);
    assert!(matches!(&nothing[0].state, State::Waiting { differs } if differs[0].contains("not posted by CIS yet")));
}

#[test]
fn a_read_is_asked_until_a_read_answers_the_annotations_value() {
    use crate::domain::crd::{Lbticket, LbticketStatus, Listener, Phase, Protocol};
    let listener = Listener {
        name: "web".into(),
        port: 80,
        protocol: Protocol::Http,
        session: Default::default(),
        services: vec![],
    };
    let spec = LbticketSpec { namespace: "team-a".into(), listeners: vec![listener], ..Default::default() };
    let status = |phase, answered: &str| LbticketStatus {
        phase,
        veip: Some("20.9.0.5".into()),
        bigip: Some(BigipStatus { answered: answered.into(), ..Default::default() }),
        ..Default::default()
    };
    let ticket = |asked: Option<&str>, status: LbticketStatus| {
        let mut t = Lbticket::new("shop", spec.clone());
        t.metadata.annotations = asked.map(|a| [(ANNOTATION_READ_BIGIP.to_string(), a.to_string())].into());
        t.status = Some(status);
        t
    };
    let cases = [
        ("never asked", ticket(None, status(Phase::Enabled, "")), None),
        ("asked, not answered", ticket(Some("t1"), status(Phase::Enabled, "")), Some("t1")),
        ("asked and answered", ticket(Some("t1"), status(Phase::Enabled, "t1")), None),
        ("asked again", ticket(Some("t2"), status(Phase::Enabled, "t1")), Some("t2")),
    ];
    for (what, t, asked) in &cases {
        assert_eq!(read_asked(t), *asked, "{what}");
        assert!(placed(t), "{what}: an enabled address with a listener is read back");
    }
    let mut idle = ticket(None, status(Phase::Disabled, ""));
    assert!(!placed(&idle), "a disabled address places nothing");
    idle.status = Some(status(Phase::Enabled, ""));
    idle.spec.listeners.clear();
    assert!(!placed(&idle), "an address without listeners places nothing");
}
