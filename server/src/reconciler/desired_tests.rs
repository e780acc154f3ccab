//! A member cluster's plan, as a table: the objects, what the cluster holds and what the last
//! sync placed in; what to read, what to write, the labels, the Ingresses and what each ticket
//! is told out. No cluster is needed: the plan reads nothing.

use app::domain::crd::{
    DesiredState, F5Ingress, IngressRule, LbType, LbticketSpec, LbticketStatus, LoadbalancerSpec, Phase,
};
use kube::ResourceExt;

use super::*;

/// A member cluster's load balancers, tickets and rules.
type Objects = (Vec<Arc<Loadbalancer>>, Vec<Arc<Lbticket>>, Vec<Arc<Lbrule>>);

/// The seed's load balancer (tenant `acp-region01`), ticket and rule, the ticket Enabled (its
/// TCP listener on Services of its own unless `broken`: then a render fault); and a second load
/// balancer (tenant `edge`) with two ingress tickets wanting one Ingress name in `team-b`.
fn objects(broken: bool) -> Objects {
    let docs: Vec<&str> = include_str!("../../../app/src/domain/testdata/seed-objects.yaml").split("\n---\n").collect();
    let demo: Loadbalancer = serde_yaml::from_str(docs[0]).expect("lb");
    let mut test: Lbticket = serde_yaml::from_str(docs[1]).expect("ticket");
    if !broken {
        test.spec.listeners[1].services[0].service = "svc05".into();
        test.spec.listeners[1].services[1].service = "svc06".into();
    }
    test.status = Some(LbticketStatus { phase: Phase::Enabled, veip: Some("20.1.0.10".into()), ..Default::default() });
    let rule: Lbrule = serde_yaml::from_str(docs[2]).expect("rule");
    let edge = LoadbalancerSpec {
        partition: Some("edge".into()),
        nsselector: BTreeMap::from([("edge".to_string(), "on".to_string())]),
        ..demo.spec.clone()
    };
    let shop = |name: &str, age: i64| {
        let route = IngressRule { host: None, path: "/".into(), service: "web".into(), port: 8080 };
        let spec = LbticketSpec {
            loadbalancer: "edge".into(),
            namespace: "team-b".into(),
            lbtype: LbType::Ingress,
            state: DesiredState::Active,
            ingresses: vec![F5Ingress { name: "shop".into(), rules: vec![route], tls_secret: None }],
            ..Default::default()
        };
        let mut t = Lbticket::new(name, spec);
        let at = k8s_openapi::jiff::Timestamp::from_second(1_700_000_000 + age).expect("a time");
        t.metadata.creation_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(at));
        t.status = Some(LbticketStatus { phase: Phase::Enabled, veip: Some("20.1.0.20".into()), ..Default::default() });
        Arc::new(t)
    };
    (
        vec![Arc::new(demo), Arc::new(Loadbalancer::new("edge", edge))],
        vec![Arc::new(test), shop("shop", 1), shop("shop-later", 2)],
        vec![Arc::new(rule)],
    )
}

/// The plan of `objects(broken)` against `deployed` (per tenant read) after a last sync that
/// placed `previous`; and the tenants it read.
fn planned(
    broken: bool,
    deployed: &HashMap<String, Option<String>>,
    previous: &HashMap<String, Placed>,
    ensure: bool,
) -> (Desired, Vec<String>) {
    let (lbs, tickets, rules) = objects(broken);
    let cluster = Cluster::of("acp-region01", &lbs, &tickets, &rules, "f5");
    let read = cluster.to_read(previous, ensure).into_iter().map(|p| p.tenant).collect();
    (cluster.plan(deployed, previous.clone(), ensure), read)
}

/// What a plan writes, by tenant.
fn written(desired: &Desired) -> BTreeMap<String, String> {
    desired.configmaps.iter().map(|w| (w.place.tenant.clone(), w.template.clone())).collect()
}

#[test]
fn a_cluster_is_planned_whole_and_only_what_changed_is_read_and_written() {
    let (nothing, never) = (HashMap::new(), HashMap::new());
    let (first, read) = planned(false, &nothing, &never, false);
    let both = ["acp-region01", "edge"];
    assert_eq!(read, both, "the first sync reads every tenant's ConfigMap");
    let templates = written(&first);
    assert_eq!(templates.keys().collect::<Vec<_>>(), both, "and writes every one");
    let held: HashMap<String, Option<String>> = templates.iter().map(|(t, d)| (t.clone(), Some(d.clone()))).collect();
    let memo = first.tenants.clone();

    // (what, broken, what the cluster holds, the last sync, ensure, read, written, held back)
    type Row<'a> = (
        &'a str,
        bool,
        &'a HashMap<String, Option<String>>,
        &'a HashMap<String, Placed>,
        bool,
        &'a [&'a str],
        &'a [&'a str],
        &'a [&'a str],
    );
    let rows: &[Row] = &[
        (
            "a first sync, nothing deployed: everything read and written",
            false,
            &nothing,
            &never,
            false,
            &both,
            &both,
            &[],
        ),
        ("converged: nothing read, nothing written", false, &held, &memo, false, &[], &[], &[]),
        (
            "ensure: everything read back, nothing written when it is what the cluster holds",
            false,
            &held,
            &memo,
            true,
            &both,
            &[],
            &[],
        ),
        (
            "a render fault: its tenant held back, not written; the other unchanged",
            true,
            &held,
            &memo,
            false,
            &["acp-region01"],
            &[],
            &["acp-region01"],
        ),
        (
            "a render fault on a first sync: the other tenant still written",
            true,
            &nothing,
            &never,
            false,
            &both,
            &["edge"],
            &["acp-region01"],
        ),
    ];
    for (what, broken, deployed, previous, ensure, want_read, want_written, want_held) in rows {
        let (desired, read) = planned(*broken, deployed, previous, *ensure);
        assert_eq!(read, *want_read, "{what}: read");
        assert_eq!(written(&desired).keys().collect::<Vec<_>>(), *want_written, "{what}: written");
        let mut held: Vec<&str> = desired.tenants.iter().filter(|(_, p)| p.blocked).map(|(t, _)| t.as_str()).collect();
        held.sort();
        assert_eq!(held, *want_held, "{what}: held back");
        assert_eq!(desired.tenants.len(), 2, "{what}: every tenant is remembered");

        let faults = desired.faults();
        assert!(faults["shop-later"].contains("shop in team-b already has that name"), "{what}: {faults:?}");
        assert!(!faults.contains_key("shop"), "{what}: the older ticket keeps the name");
        assert_eq!(faults.get("test").is_some_and(|f| f.contains("svc01")), *broken, "{what}: {faults:?}");
        let ingresses: Vec<_> = desired.ingresses.wanted.keys().cloned().collect();
        assert_eq!(ingresses, [("team-b".to_string(), "shop".to_string())], "{what}");

        let labels = desired.labels();
        // CIS reads the edge tenant's F5 Ingresses in team-b, so team-b carries edge's selector.
        assert_eq!(labels.namespaces["team-b"]["edge"], BTreeSet::from(["on".to_string()]), "{what}");
        assert_eq!(labels.namespaces["kube-system"]["foo"], BTreeSet::from(["bar".to_string()]), "{what}: CIS's home");
        if *broken && previous.is_empty() {
            // Nothing was ever written for it: its listeners' namespace and pools get nothing.
            assert!(!labels.namespaces.contains_key("default"), "{what}");
            assert!(labels.services.is_empty(), "{what}");
        } else {
            // Written now, or its last good ConfigMap stays: CIS keeps reading both.
            assert_eq!(labels.namespaces["default"]["zuu"], BTreeSet::from(["baz".to_string()]), "{what}");
        }
        if !*broken {
            let pools: Vec<&str> = labels.services.keys().map(|(_, svc)| svc.as_str()).collect();
            assert_eq!(pools, ["svc01", "svc02", "svc03", "svc04", "svc05", "svc06"], "{what}");
        }
    }
}

#[test]
fn a_configmap_the_cluster_did_not_take_holds_back_its_tenant_alone() {
    let nothing = HashMap::new();
    let (first, _) = planned(false, &nothing, &HashMap::new(), false);
    let (lbs, tickets, rules) = objects(false);
    let ticket_names: Vec<String> = tickets.iter().map(|t| t.name_any()).collect();
    for (what, retry) in [("refused for good", false), ("not reachable: retried", true)] {
        let mut desired =
            Cluster::of("acp-region01", &lbs, &tickets, &rules, "f5").plan(&nothing, first.tenants.clone(), true);
        let write = desired.configmaps.remove(0);
        assert_eq!(write.place.tenant, "acp-region01");
        desired.unwritten(&write, "413 too large".into(), retry);
        let held = &desired.tenants["acp-region01"];
        assert!(held.blocked, "{what}");
        assert_eq!(held.faults["test"], "held back: 413 too large", "{what}: its ticket says why");
        assert_eq!(held.digest == 0, retry, "{what}: a retry forgets the digest, so the next sync plans it again");
        assert_eq!(held.namespaces, first.tenants["acp-region01"].namespaces, "{what}: its last labels stay");
        assert!(!desired.tenants["edge"].blocked, "{what}: the other tenant is not held back");
        let faults = desired.faults();
        assert!(
            !ticket_names.iter().filter(|t| *t != "test" && *t != "shop-later").any(|t| faults.contains_key(t)),
            "{what}: {faults:?}"
        );
    }
}
