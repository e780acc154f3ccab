use super::*;
use crate::domain::crd::{
    Lbrule, Lbticket, Listener, Loadbalancer, MatchMode, Operator, RuleCondition, RuleType, RuleValue,
};
use proptest::prelude::*;

/// The seed's objects, with the one change the product requires: the seed's TCP listener
/// reuses svc01/svc02 on port 2222, but CIS can put a Service in one pool only (and DESIGN §4
/// takes a Service used by a listener out of the picker), so it uses svc05/svc06 here.
fn seed() -> (Loadbalancer, Lbticket, Lbrule) {
    let docs: Vec<&str> = include_str!("../testdata/seed-objects.yaml").split("\n---\n").collect();
    let lb: Loadbalancer = serde_yaml::from_str(docs[0]).expect("lb");
    let mut ticket: Lbticket = serde_yaml::from_str(docs[1]).expect("ticket");
    ticket.spec.listeners[1].services[0].service = "svc05".into();
    ticket.spec.listeners[1].services[1].service = "svc06".into();
    ticket.status =
        Some(LbticketStatus { phase: Phase::Enabled, veip: Some("20.1.0.10".into()), ..Default::default() });
    let rule: Lbrule = serde_yaml::from_str(docs[2]).expect("rule");
    (lb, ticket, rule)
}

fn render_seed(lb: &Loadbalancer, ticket: &Lbticket, rule: &Lbrule) -> Result<Rendered, Fault> {
    let name = |m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| m.name.clone().unwrap_or_default();
    let (lb_name, t_name, r_name) = (name(&lb.metadata), name(&ticket.metadata), name(&rule.metadata));
    let grouped = tenants(
        &[(lb_name.as_str(), &lb.spec)],
        &[(t_name.as_str(), &ticket.spec, ticket.status.as_ref())],
        &[(r_name.as_str(), &rule.spec)],
    );
    let ((cluster, tenant), (tickets, rules)) = grouped.into_iter().next().expect("one tenant");
    render(&cluster, &tenant, &tickets, &rules)
}

#[test]
fn the_seed_renders_as_the_checked_in_declaration() {
    let (lb, ticket, rule) = seed();
    let rendered = render_seed(&lb, &ticket, &rule).expect("renders");
    let got: serde_json::Value = serde_json::from_str(&rendered.adc).expect("JSON");
    let want: serde_json::Value =
        serde_json::from_str(include_str!("../testdata/seed-declaration.json")).expect("expected JSON");
    assert_eq!(got, want, "got:\n{}", serde_json::to_string_pretty(&got).unwrap_or_default());
    assert_eq!(rendered.namespaces.iter().collect::<Vec<_>>(), ["default"]);
    let labels = &rendered.services[&("default".to_string(), "svc03".to_string())];
    assert_eq!(
        (labels.tenant.as_str(), labels.app.as_str(), labels.pool.as_str()),
        ("acp-region01", "default_http_app", "svc03_8080_pool")
    );
    assert_eq!(rendered.services.len(), 6);
    assert!(
        rendered
            .template()
            .starts_with(r#"{"class":"AS3","action":"deploy","persist":true,"declaration":{"class":"ADC""#)
    );
}

#[test]
fn the_seed_as_written_is_refused_because_a_service_backs_two_pools() {
    let (lb, mut ticket, rule) = seed();
    ticket.spec.listeners[1].services[0].service = "svc01".into();
    let fault = render_seed(&lb, &ticket, &rule).expect_err("svc01 in two pools");
    assert_eq!(fault.origin.as_ref().map(|o| o.listener.as_str()), Some("lsnr2"));
    assert!(fault.message.contains("Service svc01 of namespace default would back pool"), "{fault}");
}

#[test]
fn the_output_is_byte_stable_whatever_the_input_order() {
    let (lb, ticket, rule) = seed();
    let mut second = ticket.clone();
    second.metadata.name = Some("a-second".into());
    second.status.as_mut().expect("status").veip = Some("20.1.0.11".into());
    for l in &mut second.spec.listeners {
        for s in &mut l.services {
            s.service = format!("{}b", s.service);
        }
    }
    let lbs = [("demo", &lb.spec)];
    let forward = tenants(
        &lbs,
        &[("test", &ticket.spec, ticket.status.as_ref()), ("a-second", &second.spec, second.status.as_ref())],
        &[("smpl", &rule.spec)],
    );
    let backward = tenants(
        &lbs,
        &[("a-second", &second.spec, second.status.as_ref()), ("test", &ticket.spec, ticket.status.as_ref())],
        &[("smpl", &rule.spec)],
    );
    let out = |t: &Tenants| {
        let ((c, n), (ts, rs)) = t.iter().next().expect("tenant");
        render(c, n, ts, rs).expect("renders").adc
    };
    assert_eq!(out(&forward), out(&backward));
    assert_eq!(out(&forward), out(&forward));
}

#[test]
fn the_digest_follows_every_input_but_not_their_order() {
    let (lb, ticket, rule) = seed();
    let digest_of = |lb: &Loadbalancer, tickets: &[(&str, &Lbticket)], rules: &[(&str, &Lbrule)]| {
        let t: Vec<_> = tickets.iter().map(|(n, t)| (*n, &t.spec, t.status.as_ref())).collect();
        let r: Vec<_> = rules.iter().map(|(n, r)| (*n, &r.spec)).collect();
        let grouped = tenants(&[("demo", &lb.spec)], &t, &r);
        let ((cluster, tenant), (ts, rs)) = grouped.iter().next().expect("one tenant");
        digest(cluster, tenant, &lb.spec, ts, rs)
    };
    let mut other = ticket.clone();
    other.status.as_mut().expect("status").veip = Some("20.1.0.11".into());
    let base = digest_of(&lb, &[("test", &ticket), ("b", &other)], &[("smpl", &rule)]);
    assert_eq!(base, digest_of(&lb, &[("b", &other), ("test", &ticket)], &[("smpl", &rule)]), "order");

    let mut moved = other.clone();
    moved.status.as_mut().expect("status").veip = Some("20.1.0.12".into());
    let mut edited = ticket.clone();
    edited.spec.listeners[0].port += 1;
    let mut reruled = rule.clone();
    reruled.spec.priority += 1;
    let mut relabelled = lb.clone();
    relabelled.spec.nsselector.insert("zone".into(), "b".into());
    let mut disabled = other.clone();
    disabled.spec.state = DesiredState::Disabled;
    for (what, changed) in [
        ("a ticket's address", digest_of(&lb, &[("test", &ticket), ("b", &moved)], &[("smpl", &rule)])),
        ("a ticket's spec", digest_of(&lb, &[("test", &edited), ("b", &other)], &[("smpl", &rule)])),
        ("a rule", digest_of(&lb, &[("test", &ticket), ("b", &other)], &[("smpl", &reruled)])),
        ("the load balancer", digest_of(&relabelled, &[("test", &ticket), ("b", &other)], &[("smpl", &rule)])),
        ("a ticket withdrawn", digest_of(&lb, &[("test", &ticket), ("b", &disabled)], &[("smpl", &rule)])),
        ("a ticket renamed", digest_of(&lb, &[("test", &ticket), ("c", &other)], &[("smpl", &rule)])),
    ] {
        assert_ne!(base, changed, "{what} changes the digest");
    }
}

#[test]
fn only_live_tickets_are_rendered_and_an_idle_tenant_is_empty() {
    let (lb, mut ticket, rule) = seed();
    for phase in [Phase::Created, Phase::Requested, Phase::Failed, Phase::Disabled, Phase::Deleted] {
        ticket.status.as_mut().expect("status").phase = phase;
        let rendered = render_seed(&lb, &ticket, &rule).expect("renders");
        let doc: serde_json::Value = serde_json::from_str(&rendered.adc).expect("JSON");
        assert_eq!(doc["acp-region01"], serde_json::json!({"class": "Tenant"}), "{phase:?}");
        assert!(rendered.services.is_empty());
    }
    ticket.status.as_mut().expect("status").phase = Phase::Enabled;
    ticket.spec.state = DesiredState::Disabled;
    let rendered = render_seed(&lb, &ticket, &rule).expect("renders");
    assert!(rendered.namespaces.is_empty(), "a Disabled ticket is withdrawn");
}

#[test]
fn a_rule_without_its_listener_is_skipped_and_reported() {
    let (lb, ticket, mut rule) = seed();
    rule.spec.listener = "gone".into();
    let rendered = render_seed(&lb, &ticket, &rule).expect("renders");
    assert_eq!(rendered.skipped.len(), 1);
    assert_eq!(rendered.skipped[0].0, "smpl");
}

#[test]
fn a_tenant_named_like_an_adc_key_is_refused() {
    let fault = render("c", "class", &[], &[]).expect_err("reserved");
    assert!(fault.message.contains("cannot be an AS3 tenant name"));
}

#[cfg(feature = "ssr")]
mod validation {
    use super::*;
    use crate::domain::as3::validate::{validate, validate_adc, validate_posted, validate_tenant};
    use crate::domain::crd::MAX_DECLARATION_BYTES;

    #[test]
    fn the_seed_declaration_validates() {
        let (lb, ticket, rule) = seed();
        validate(&render_seed(&lb, &ticket, &rule).expect("renders")).expect("valid");
    }

    #[test]
    fn what_cis_posts_is_valid_for_a_listener_of_every_protocol() {
        // NB: AS3 3.52, which CIS validates against, has no built-in monitor named `udp`.
        for protocol in [Protocol::Http, Protocol::Https, Protocol::Tcp, Protocol::Udp] {
            let (lb, mut ticket, rule) = seed();
            ticket.spec.listeners[1].protocol = protocol;
            let rendered = render_seed(&lb, &ticket, &rule).expect("renders");
            validate(&rendered).unwrap_or_else(|f| panic!("{protocol:?}: {f:?}"));
            validate_posted(&rendered).unwrap_or_else(|f| panic!("{protocol:?}: {f:?}"));
        }
    }

    #[test]
    fn a_tenant_that_passed_is_remembered_and_one_that_failed_is_checked_each_time() {
        let (lb, ticket, rule) = seed();
        let rendered = render_seed(&lb, &ticket, &rule).expect("renders");
        let without = Rendered { adc: rendered.adc.replace(r#","shareNodes":true"#, ""), ..rendered.clone() };
        for _ in 0..2 {
            validate_tenant(&rendered).expect("the seed passes, first checked, then remembered");
            let faults = validate_tenant(&without).expect_err("never remembered as passed");
            assert!(faults[0].message.contains("shareNodes"), "{faults:?}");
        }
        // The tenant is part of what is remembered: the same bytes under another name are checked.
        let renamed = Rendered { tenant: format!("{}x", rendered.tenant), ..rendered.clone() };
        assert!(validate_tenant(&renamed).is_err(), "checked again: the declaration holds no tenant of that name");
    }

    #[test]
    fn what_cis_posts_of_the_seed_is_valid_under_its_schema_and_would_not_be_without_share_nodes() {
        let (lb, ticket, rule) = seed();
        let rendered = render_seed(&lb, &ticket, &rule).expect("renders");
        validate_posted(&rendered).expect("CIS's post is valid");
        // The defect CIS met in the field: without shareNodes, CIS writes `"shareNodes": null`.
        let without = Rendered { adc: rendered.adc.replace(r#","shareNodes":true"#, ""), ..rendered.clone() };
        assert_ne!(without.adc, rendered.adc);
        validate(&without).expect("the template alone passes");
        let faults = validate_posted(&without).expect_err("what CIS posts does not");
        assert!(faults[0].message.contains("shareNodes"), "{faults:?}");
    }

    #[test]
    fn two_virtual_servers_on_one_address_and_port_are_refused() {
        let (lb, ticket, rule) = seed();
        let mut twin = ticket.clone();
        twin.metadata.name = Some("twin".into());
        twin.spec.listeners.truncate(1);
        twin.spec.listeners[0].services = vec![ServiceRef { service: "other".into(), port: 8080, weight: 100 }];
        let lbs = [("demo", &lb.spec)];
        let grouped = tenants(
            &lbs,
            &[("test", &ticket.spec, ticket.status.as_ref()), ("twin", &twin.spec, twin.status.as_ref())],
            &[("smpl", &rule.spec)],
        );
        let ((c, n), (ts, rs)) = grouped.iter().next().expect("tenant");
        let faults = validate(&render(c, n, ts, rs).expect("renders")).expect_err("clash");
        let clash =
            faults.iter().find(|f| f.message.contains("already listens on 20.1.0.10 port 80")).expect("the clash");
        assert_eq!(clash.origin.as_ref().map(|o| o.ticket.as_str()), Some("twin"));
    }

    #[test]
    fn dangling_pointers_bad_addresses_and_size_are_refused() {
        let (lb, ticket, rule) = seed();
        let rendered = render_seed(&lb, &ticket, &rule).expect("renders");
        let cases = [
            (
                rendered.adc.replace(r#""pool":"svc01_8080_pool""#, r#""pool":"nowhere_pool""#),
                "points at pool nowhere_pool",
            ),
            (
                rendered.adc.replace(
                    "pool /acp-region01/default_http_app/svc04_8080_pool",
                    "pool /acp-region01/default_http_app/ghost_pool",
                ),
                "selects pool /acp-region01/default_http_app/ghost_pool",
            ),
            (rendered.adc.replace(r#""monitors":["tcp"]"#, r#""monitors":["mystery"]"#), "uses monitor mystery"),
            (rendered.adc.replace("20.1.0.10", "20.1.0.300"), "AS3 schema"),
        ];
        for (adc, want) in cases {
            assert_ne!(adc, rendered.adc, "the case changed something");
            let faults = validate_adc(&adc, &rendered.origins).expect_err(want);
            let hit = faults.iter().find(|f| f.message.contains(want)).unwrap_or_else(|| panic!("{want}: {faults:?}"));
            assert!(hit.origin.is_some(), "{want}: names the ticket: {hit}");
        }
        let huge = format!(
            "{{\"class\":\"ADC\",\"schemaVersion\":\"3.50.0\",\"remark\":\"{}\"}}",
            "x".repeat(MAX_DECLARATION_BYTES)
        );
        assert!(
            validate_adc(&huge, &rendered.origins).expect_err("size")[0].message.contains("over the 900 KiB limit")
        );
    }

    #[test]
    fn the_size_is_measured_as_the_configmap_write_carries_it() {
        use crate::domain::as3::validate::{fits, sent_bytes};
        let remark = |s: &str| format!("{{\"class\":\"ADC\",\"remark\":\"{s}\"}}");
        // What serde writes for the ConfigMap's data is the measure.
        for adc in [remark("plain"), remark(r#"quotes \" and \\ backslashes"#), remark("租户")] {
            let sent = serde_json::to_string(&crate::domain::as3::template_of(&adc)).expect("JSON");
            assert_eq!(sent_bytes(&adc), sent.len(), "{adc}");
        }
        // Backslashes weigh twice: a declaration under the limit by its length is over it as sent.
        let backslashes = remark(&"\\\\".repeat(MAX_DECLARATION_BYTES / 3));
        assert!(backslashes.len() < MAX_DECLARATION_BYTES && sent_bytes(&backslashes) > MAX_DECLARATION_BYTES);
        let fault = fits(&backslashes).expect_err("over the limit as sent");
        assert!(fault.message.contains("KiB in its ConfigMap, over the 900 KiB limit"), "{fault}");
        assert_eq!(fits(&remark(&"x".repeat(MAX_DECLARATION_BYTES / 2))), Ok(()));
    }

    fn arb_listener() -> impl Strategy<Value = Listener> {
        (
            1u16..,
            prop_oneof![Just(Protocol::Http), Just(Protocol::Https), Just(Protocol::Tcp), Just(Protocol::Udp)],
            1u32..100,
        )
            .prop_map(|(port, protocol, w)| Listener {
                name: format!("l{port}"),
                port,
                protocol,
                session: if protocol.is_http() { Session::Cookie } else { Session::SourceAddress },
                services: vec![
                    ServiceRef { service: format!("a{port}"), port: 8080, weight: w },
                    ServiceRef { service: format!("b{port}"), port: 8443, weight: 100 - w },
                ],
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        /// Generated tenants (several namespaces, protocols, rules) always pass the official schema.
        #[test]
        fn generated_tenants_validate(
            listeners in proptest::collection::btree_map(1u16.., arb_listener(), 1..6),
            namespaces in proptest::collection::vec("[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?", 1..3),
            value in "[ -~]{1,40}",
        ) {
            let specs: Vec<(String, LbticketSpec, String)> = namespaces.iter().enumerate().map(|(i, ns)| {
                let listeners: Vec<Listener> = listeners.values().map(|l| {
                    let mut l = l.clone();
                    for s in &mut l.services { s.service = format!("{}n{i}", s.service); }
                    l
                }).collect();
                (format!("t{i}.x"), LbticketSpec { namespace: ns.clone(), listeners, ..Default::default() }, format!("fd00::{i}"))
            }).collect();
            let value = &value;
            let rules: Vec<(String, LbruleSpec)> = specs.iter().flat_map(|(t, spec, _)| spec.listeners.iter().map(move |l| {
                let http = l.protocol.is_http();
                (format!("r-{t}-{}", l.port), LbruleSpec {
                    lbticket: t.clone(),
                    listener: l.name.clone(),
                    priority: 1,
                    match_: MatchMode::All,
                    services: vec![l.services[0].clone()].into_iter().map(|mut s| { s.weight = 100; s }).collect(),
                    rules: vec![RuleCondition {
                        type_: if http { RuleType::Header } else { RuleType::Ip },
                        key: http.then(|| "X-Test".to_string()),
                        values: vec![RuleValue { operator: Operator::Equal, value: if http { value.clone() } else { "10.0.0.0/8".into() } }],
                    }],
                })
            })).collect();
            let tickets: Vec<TicketInput> = specs.iter().filter(|(_, s, _)| {
                // Namespaces may repeat: keep one ticket per namespace so Services stay distinct.
                specs.iter().find(|(_, o, _)| o.namespace == s.namespace).map(|(_, o, _)| std::ptr::eq(o, s)).unwrap_or(false)
            }).map(|(n, s, v)| TicketInput { name: n, spec: s, veip: v }).collect();
            let rule_inputs: Vec<RuleInput> = rules.iter().map(|(n, s)| RuleInput { name: n, spec: s }).collect();
            let rendered = render("acp-region01", "acp-region01", &tickets, &rule_inputs).expect("renders");
            prop_assert!(validate(&rendered).is_ok(), "{:?}", validate(&rendered));
        }
    }
}
