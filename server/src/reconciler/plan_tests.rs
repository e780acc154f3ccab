//! A tenant's plan, as a table: the objects and what is deployed in, what to write and what is
//! placed out. No cluster is needed: the plan reads nothing.

use app::domain::crd::{Lbrule, Lbticket, LbticketStatus, Loadbalancer, Phase};

use super::*;

/// The seed's load balancer, ticket and rule (DESIGN's example), the ticket Enabled. `as_written`
/// keeps the seed's TCP listener on svc01/svc02, which back an HTTP pool too: a render fault.
fn seed(as_written: bool) -> (Loadbalancer, Lbticket, Lbrule) {
    let docs: Vec<&str> = include_str!("../../../app/src/domain/testdata/seed-objects.yaml").split("\n---\n").collect();
    let lb: Loadbalancer = serde_yaml::from_str(docs[0]).expect("lb");
    let mut ticket: Lbticket = serde_yaml::from_str(docs[1]).expect("ticket");
    if !as_written {
        ticket.spec.listeners[1].services[0].service = "svc05".into();
        ticket.spec.listeners[1].services[1].service = "svc06".into();
    }
    ticket.status =
        Some(LbticketStatus { phase: Phase::Enabled, veip: Some("20.1.0.10".into()), ..Default::default() });
    let rule: Lbrule = serde_yaml::from_str(docs[2]).expect("rule");
    (lb, ticket, rule)
}

/// Plans the seed's one tenant against `deployed` (`Some("")`: a ConfigMap holding something
/// else), after a last sync that placed `last`.
fn planned(as_written: bool, deployed: Option<&str>, last: Option<&Placed>) -> (Plan, String) {
    let (lb, ticket, rule) = seed(as_written);
    let grouped =
        as3::tenants(&[("demo", &lb.spec)], &[("test", &ticket.spec, ticket.status.as_ref())], &[("r", &rule.spec)]);
    let ((cluster, name), (tickets, rules)) = grouped.into_iter().next().expect("one tenant");
    let tenant =
        Tenant { cluster: &cluster, name: &name, owner: &lb.spec, tickets: &tickets, rules: &rules, watched: None };
    let written = match as3::render(&cluster, &name, &tickets, &rules) {
        Ok(r) => r.template(),
        Err(_) => String::new(),
    };
    let deployed = deployed.map(|d| if d == "written" { written.as_str() } else { d });
    (plan(&tenant, deployed, last, 7), written)
}

#[test]
fn a_tenant_is_written_only_when_its_declaration_changes_and_held_back_when_it_cannot_be() {
    let last = Placed {
        digest: 3,
        namespaces: BTreeMap::from([("old-ns".to_string(), BTreeMap::from([("cis".to_string(), "on".to_string())]))]),
        ..Default::default()
    };
    // (what, the seed as written, what is deployed, a last sync, want a write, want held back)
    type Row<'a> = (&'a str, bool, Option<&'a str>, Option<&'a Placed>, bool, bool);
    let rows: &[Row] = &[
        ("nothing deployed yet: written", false, None, None, true, false),
        ("something else deployed: written over", false, Some("{}"), Some(&last), true, false),
        ("the same declaration deployed: no write", false, Some("written"), Some(&last), false, false),
        ("a render fault: held back, nothing written", true, Some("{}"), Some(&last), false, true),
        ("a render fault on the first sync: held back", true, None, None, false, true),
    ];
    for (what, as_written, deployed, last_sync, wants_write, wants_held) in rows {
        let (plan, written) = planned(*as_written, *deployed, *last_sync);
        assert_eq!(plan.write.is_some(), *wants_write, "{what}");
        if let Some(template) = &plan.write {
            assert_eq!(template, &written, "{what}: the rendered declaration");
        }
        assert_eq!(plan.placed.blocked, *wants_held, "{what}");
        assert_eq!(plan.placed.digest, 7, "{what}: the inputs' digest is remembered");
        if *wants_held {
            assert!(
                plan.placed.faults.get("test").is_some_and(|f| f.contains("svc01")),
                "{what}: {:?}",
                plan.placed.faults
            );
            // The last good ConfigMap stays, so its labels stay for CIS to keep reading it.
            let kept = last_sync.is_some_and(|l| l.namespaces.keys().all(|ns| plan.placed.namespaces.contains_key(ns)));
            assert!(kept || last_sync.is_none(), "{what}: {:?}", plan.placed.namespaces);
            assert!(plan.placed.services.is_empty(), "{what}");
        } else {
            assert!(plan.placed.faults.is_empty(), "{what}");
            assert!(!plan.placed.namespaces.contains_key("old-ns"), "{what}: the last sync's labels go");
            assert!(plan.placed.namespaces.contains_key("default"), "{what}: the listeners' namespace");
            assert_eq!(plan.placed.services.len(), 6, "{what}: one label set per pool's Service");
        }
    }
}

#[test]
fn every_ticket_of_a_tenant_held_back_says_so_and_only_its_own_fault_names_it() {
    let own = |ticket: &str| as3::Fault {
        origin: Some(as3::Origin { ticket: ticket.into(), listener: "web".into(), rule: None }),
        message: format!("{ticket}'s listener clashes"),
    };
    let tenant = as3::Fault { origin: None, message: "the declaration would take 1,025 KiB".into() };
    let tickets = ["alice-1", "bob-1"];
    let cases = [
        (
            "a fault of alice's ticket",
            vec![own("alice-1")],
            "ticket alice-1, listener web: alice-1's listener clashes",
            HELD_BY_ANOTHER.to_string(),
        ),
        (
            "a fault of the tenant",
            vec![tenant.clone()],
            "held back: the declaration would take 1,025 KiB",
            "held back: the declaration would take 1,025 KiB".to_string(),
        ),
        // NB: her own fault is said to alice whatever order the validator found them in.
        (
            "both, the tenant's first",
            vec![tenant.clone(), own("alice-1")],
            "ticket alice-1, listener web: alice-1's listener clashes",
            "held back: the declaration would take 1,025 KiB".to_string(),
        ),
    ];
    for (what, faults, alice, bob) in cases {
        let said = held_back(&faults, &tickets);
        assert_eq!(said.len(), 2, "{what}: every ticket of the tenant");
        assert_eq!(said["alice-1"], alice, "{what}");
        assert_eq!(said["bob-1"], bob, "{what}");
        assert!(!said["bob-1"].contains("alice"), "{what}: bob is told nothing of alice's request");
    }
}
