//! A project's share of an AS3 tenant exact under concurrency: parallel `kubectl` writes of
//! rules against a project's `declarationBytes` get what its share has room for, and the
//! declaration the member cluster receives holds the project to it. Admission renders the
//! tenant with each write and charges the bytes it adds to the quota's status with a
//! compare-and-swap, as for the counts (`quotas`).

use std::collections::BTreeSet;

use app::domain::as3::placement::{Placement, TEMPLATE_KEY};
use app::domain::as3::validate::share_bytes;
use app::domain::crd::{
    Lbquota, Lbrule, LbruleSpec, Loadbalancer, Operator, Phase, RuleCondition, RuleType, RuleValue, ServiceRef,
};
use app::screens::listeners::ListenerForm;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

use crate::helpers::{Backend, Options, spawn_lbdesk_with, until};
use crate::on_both_databases;
use crate::user::{User, ok, own_namespace, register_demo_lb, ticket_form, wait_phase};

on_both_databases!(parallel_rules_against_a_declaration_share_get_exactly_its_room);

/// Rules written at once.
const WRITERS: u32 = 30;

/// Rule `name` (of one length for every writer) on listener `web` of request `shares`, at
/// `priority` (two digits for every writer): every such rule adds the same bytes.
fn rule(name: &str, priority: u32) -> Lbrule {
    let header = RuleCondition {
        type_: RuleType::Header,
        key: Some("X-Canary".into()),
        values: vec![RuleValue { operator: Operator::Equal, value: "1".into() }],
    };
    let spec = LbruleSpec {
        lbticket: "shares".into(),
        listener: "web".into(),
        priority,
        services: vec![ServiceRef { service: "web-v2".into(), port: 8080, weight: 100 }],
        rules: vec![header],
        ..Default::default()
    };
    Lbrule::new(name, spec)
}

/// The AS3 template the demo load balancer's ConfigMap holds in the member cluster.
async fn deployed(lbdesk: &crate::helpers::Lbdesk, lb: &Loadbalancer) -> String {
    let place = Placement::of(&lb.spec);
    let configmaps: Api<ConfigMap> = Api::namespaced(lbdesk.client("acp-region01").await, &place.namespace);
    let cm = configmaps.get_opt(&place.configmap).await.expect("read the ConfigMap");
    cm.and_then(|c| c.data).and_then(|mut d| d.remove(TEMPLATE_KEY)).unwrap_or_default()
}

/// The bytes the applications of namespace `shares` take of `template`'s tenant.
fn share_of(template: &str, lb: &Loadbalancer) -> u64 {
    let adc = serde_json::from_str::<Value>(template).map(|mut t| t["declaration"].take());
    let tenant = Placement::of(&lb.spec).tenant;
    share_bytes(&adc.expect("the template"), &tenant, &BTreeSet::from(["shares"])) as u64
}

async fn parallel_rules_against_a_declaration_share_get_exactly_its_room(backend: Backend) {
    let lbdesk = spawn_lbdesk_with(backend, Options::default()).await;
    register_demo_lb(&lbdesk).await;
    own_namespace(&lbdesk, "acp-region01", "project-a", "shares").await;
    let alice = User::sign_in(&lbdesk, "alice").await;
    ok::<String>(alice.json("ticket/save", json!({"form": ticket_form("shares", "shares", "")})).await).await;
    wait_phase(&alice, "shares", Phase::Enabled).await;
    let services = vec![ServiceRef { service: "web-v1".into(), port: 8080, weight: 100 }];
    let form = ListenerForm { ticket: "shares".into(), name: "web".into(), port: 80, services, ..Default::default() };
    ok::<String>(alice.json("listener/save", json!({"form": form})).await).await;

    let mgmt = lbdesk.client("mgmt").await;
    let rules: Api<Lbrule> = Api::all(mgmt.clone());
    let quotas: Api<Lbquota> = Api::all(mgmt.clone());
    let lb = Api::<Loadbalancer>::all(mgmt).get("demo").await.expect("the load balancer");
    // The second rule tells what one more adds (the first also brings web-v2's pool), as the
    // member cluster receives it.
    let mut shares = Vec::new();
    for (name, priority) in [("racer-one", 10), ("racer-two", 11)] {
        rules.create(&Default::default(), &rule(name, priority)).await.expect("a rule");
        until("the tenant to carry it", 30, || async { deployed(&lbdesk, &lb).await.contains(name) }).await;
        shares.push(share_of(&deployed(&lbdesk, &lb).await, &lb));
    }
    let (share, added) = (shares[1], shares[1] - shares[0]);
    assert!(added > 0 && share > added, "a rule adds bytes to the share: {added} of {share}");
    // Room for two more, not three.
    let limit = share + 2 * added + added / 2;
    let quota = json!({"spec": {"declarationBytes": limit}});
    if quotas.get_opt("project-a").await.expect("read the quota").is_some() {
        quotas.patch("project-a", &PatchParams::default(), &Patch::Merge(&quota)).await.expect("the limit");
    } else {
        let made = Lbquota::new("project-a", serde_json::from_value(quota["spec"].clone()).expect("a spec"));
        quotas.create(&Default::default(), &made).await.expect("the limit");
    }
    // NB: admission need not see the limit first: a charge swaps on the quota's version, which
    // the limit's write moved, and a writer that loses reads the quota, limit and all, again.

    let creates = (0..WRITERS).map(|i| {
        let rules = rules.clone();
        async move { rules.create(&Default::default(), &rule(&format!("racer-{i:04}"), 20 + i)).await }
    });
    let answers = futures::future::join_all(creates).await;
    let admitted: Vec<String> = answers.iter().filter_map(|a| a.as_ref().ok()?.metadata.name.clone()).collect();
    for refused in answers.iter().filter_map(|a| a.as_ref().err()) {
        let said = refused.to_string();
        assert!(said.contains("of the AS3 declaration on load balancer demo"), "{said}");
    }
    assert_eq!(admitted.len(), 2, "{WRITERS} parallel rules against room for 2: {admitted:?}");
    let used = quotas.get("project-a").await.expect("the quota").status.expect("admission's record").used;
    assert!(used.declaration_bytes.get("demo").is_some_and(|u| *u <= limit), "status.used: {used:?}");

    // What the member cluster receives holds the project to its share.
    until("the tenant to carry the rules admitted", 30, || async {
        let template = deployed(&lbdesk, &lb).await;
        admitted.iter().all(|name| template.contains(name.as_str()))
    })
    .await;
    let deployed = share_of(&deployed(&lbdesk, &lb).await, &lb);
    assert!(deployed <= limit, "the deployed share {deployed} B is within the limit of {limit} B");
}
