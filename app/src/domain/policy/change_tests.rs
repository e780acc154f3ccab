//! The change of an address request, as a table: each row a situation, the change made, and
//! what the one pipeline answers (who answers is not a row: the server functions and
//! admission both call it).

use std::collections::BTreeMap;

use super::*;
use crate::domain::crd::{
    DesiredState, LABEL_PROJECT, LbquotaSpec, LbruleSpec, LbticketSpec, LbticketStatus, Listener, LoadbalancerSpec,
    Phase, Protocol, ServiceRef, Session,
};

const LB: &str = "lb1";

fn loadbalancer(scope: &[&str]) -> Loadbalancer {
    let mut spec = LoadbalancerSpec { cluster: "c1".into(), ..Default::default() };
    spec.ve.cidr = "10.0.0.0/28".into();
    spec.ltm.cidr = "20.0.0.0/28".into();
    spec.scope = scope.iter().map(|s| s.to_string()).collect();
    Loadbalancer::new(LB, spec)
}

/// Listener `lN` on port 80 + N, to Service `service`.
fn listener(name: &str, service: &str) -> Listener {
    Listener {
        name: name.into(),
        port: 80 + name.trim_start_matches(|c: char| !c.is_ascii_digit()).parse::<u16>().unwrap_or(0),
        protocol: Protocol::Http,
        session: Session::None,
        services: vec![ServiceRef { service: service.into(), port: 8080, weight: 100 }],
    }
}

/// Request `name` of project `project` in namespace `web`, in `phase`, with `listeners`.
fn ticket(name: &str, project: &str, phase: Phase, listeners: Vec<Listener>) -> Lbticket {
    let spec = LbticketSpec { loadbalancer: LB.into(), namespace: "web".into(), listeners, ..Default::default() };
    let mut t = Lbticket::new(name, spec);
    t.metadata.labels = Some(BTreeMap::from([(LABEL_PROJECT.to_string(), project.to_string())]));
    t.status = Some(LbticketStatus { phase, ..Default::default() });
    t
}

fn rule_on(ticket: &str, listener: &str) -> Lbrule {
    let spec = LbruleSpec { lbticket: ticket.into(), listener: listener.into(), ..Default::default() };
    Lbrule::new(&format!("{ticket}-{listener}-r"), spec)
}

fn quota(project: &str, spec: LbquotaSpec) -> Lbquota {
    Lbquota::new(project, spec)
}

/// The world of every row: request `t1` of project `a`, Enabled, with listener `l0` on Service
/// `api` and one rule on it; request `t2` of project `b` in the same namespace, Enabled, on
/// Service `db`; load balancer `lb1` offered to `a` and `b`; project `a` may hold 3 listeners.
struct World {
    tickets: Vec<Lbticket>,
    loadbalancers: Vec<Loadbalancer>,
    rules: Vec<Lbrule>,
    quotas: Vec<Lbquota>,
}

fn world() -> World {
    World {
        tickets: vec![
            ticket("t1", "a", Phase::Enabled, vec![listener("l0", "api")]),
            ticket("t2", "b", Phase::Enabled, vec![listener("l0", "db")]),
        ],
        loadbalancers: vec![loadbalancer(&["a", "b"])],
        rules: vec![rule_on("t1", "l0")],
        quotas: vec![quota("a", LbquotaSpec { listeners: Some(3), ..Default::default() })],
    }
}

impl World {
    fn view(&self) -> View<'_> {
        View { tickets: &self.tickets, loadbalancers: &self.loadbalancers, rules: &self.rules, quotas: &self.quotas }
    }

    fn get(&self, name: &str) -> Lbticket {
        self.tickets.iter().find(|t| t.metadata.name.as_deref() == Some(name)).cloned().expect("a request of the world")
    }
}

/// What a row expects: allowed, or denied as malformed or forbidden, the reason containing a
/// phrase and placed beside a field (or the whole action).
#[derive(Debug)]
enum Want {
    Allowed,
    Malformed(Option<&'static str>, &'static str),
    Forbidden(Option<&'static str>, &'static str),
}

fn judge(desc: &str, got: Result<(), Denied>, want: &Want) {
    let ok = match (&got, want) {
        (Ok(()), Want::Allowed) => true,
        (Err(Denied::Malformed(r)), Want::Malformed(field, phrase))
        | (Err(Denied::Forbidden(r)), Want::Forbidden(field, phrase)) => {
            r.field.as_deref() == *field && r.reason.to_string().contains(phrase)
        }
        _ => false,
    };
    assert!(ok, "{desc}: got {got:?}, want {want:?}");
}

type Edit = fn(&mut Lbticket);

#[test]
fn changes_of_a_request() {
    let rows: &[(&str, &str, Edit, Want)] = &[
        ("no change at all is allowed whatever the phase", "t1", |_| {}, Want::Allowed),
        ("a listener added on a free Service", "t1", |t| t.spec.listeners.push(listener("l1", "web")), Want::Allowed),
        (
            "a listener added on a Service another project's request uses",
            "t1",
            |t| t.spec.listeners.push(listener("l1", "db")),
            Want::Forbidden(Some("listeners[1].services[0].service"), "already used by"),
        ),
        (
            "a listener with a bad name is malformed, whatever else",
            "t1",
            |t| t.spec.listeners.push(listener("Not_A_Name", "db")),
            Want::Malformed(Some("listeners[1].name"), ""),
        ),
        (
            "a listener with a rule on it cannot go",
            "t1",
            |t| t.spec.listeners.clear(),
            Want::Forbidden(Some("listeners"), "has 1 rule; delete it first"),
        ),
        (
            "a new address once Enabled is greyed out",
            "t1",
            |t| t.spec.veip = Some("10.0.0.9".into()),
            Want::Forbidden(None, "Only a request that is Created or Failed can be edited"),
        ),
        (
            "the claimer never changes",
            "t1",
            |t| t.spec.claimer = "someone-else".into(),
            Want::Forbidden(Some("claimer"), "cannot change"),
        ),
        (
            "past the project's listener quota",
            "t1",
            |t| t.spec.listeners.extend(["l1", "l2", "l3"].map(|n| listener(n, &format!("s-{n}")))),
            Want::Forbidden(None, "quota is 3 listeners"),
        ),
        (
            "up to the project's listener quota",
            "t1",
            |t| t.spec.listeners.extend(["l1", "l2"].map(|n| listener(n, &format!("s-{n}")))),
            Want::Allowed,
        ),
        (
            "a project without a quota row has no listener limit",
            "t2",
            |t| t.spec.listeners.extend(["l1", "l2", "l3"].map(|n| listener(n, &format!("s-{n}")))),
            Want::Allowed,
        ),
        (
            "disabling a request that still carries listeners",
            "t2",
            |t| t.spec.state = DesiredState::Disabled,
            Want::Forbidden(None, "listener"),
        ),
    ];
    let w = world();
    for (desc, name, edit, want) in rows {
        let before = w.get(name);
        let mut after = before.clone();
        edit(&mut after);
        judge(desc, check_change(name, Some(&before), &after, &w.view()), want);
    }
}

#[test]
fn creations_of_a_request() {
    let rows: &[(&str, &str, &[&str], Want)] = &[
        ("a request of a project the load balancer is offered to", "a", &["a", "b"], Want::Allowed),
        ("a load balancer offered to every project", "c", &[], Want::Allowed),
        (
            "a load balancer not offered to the project",
            "c",
            &["a", "b"],
            Want::Forbidden(Some("loadbalancer"), "not offered to project c"),
        ),
    ];
    for (desc, project, scope, want) in rows {
        let mut w = world();
        w.loadbalancers = vec![loadbalancer(scope)];
        let new = ticket("t9", project, Phase::Created, Vec::new());
        judge(desc, check_change("t9", None, &new, &w.view()), want);
    }
    // A load balancer applied after the request: the reconciler waits, the request is allowed.
    let w = World { loadbalancers: Vec::new(), ..world() };
    judge(
        "an unknown load balancer",
        check_change("t9", None, &ticket("t9", "c", Phase::Created, vec![]), &w.view()),
        &Want::Allowed,
    );
    // A new request that brings a listener on a used Service, as kubectl could write it.
    let taken = ticket("t9", "a", Phase::Created, vec![listener("l0", "db")]);
    judge(
        "a new request on a used Service",
        check_change("t9", None, &taken, &world().view()),
        &Want::Forbidden(Some("listeners[0].services[0].service"), "already used by"),
    );
}

#[test]
fn address_quota_counts_the_new_request() {
    let mut w = world();
    w.quotas = vec![quota("a", LbquotaSpec { addresses_per_loadbalancer: Some(1), ..Default::default() })];
    judge(
        "a second address for a project allowed one",
        check_change("t9", None, &ticket("t9", "a", Phase::Created, vec![]), &w.view()),
        &Want::Forbidden(None, "quota is 1 address requests"),
    );
    // The request being changed is counted once, as it will be: changing it is no new address.
    let before = w.get("t1");
    let mut after = before.clone();
    after.spec.listeners[0].services[0].port = 8081;
    judge("a listener edited at the limit", check_change("t1", Some(&before), &after, &w.view()), &Want::Allowed);
}

#[test]
fn deletions_follow_the_phase() {
    for (phase, allowed) in [
        (Phase::Disabled, true),
        (Phase::Failed, true),
        (Phase::Deleted, true),
        (Phase::Enabled, false),
        (Phase::Requested, false),
    ] {
        let t = ticket("t", "a", phase, Vec::new());
        assert_eq!(check_delete(&t).is_ok(), allowed, "{phase:?}");
    }
}

#[test]
fn what_a_change_reads_around_it() {
    let elsewhere = |name: &str, project: Option<&str>| {
        let mut t = ticket(name, project.unwrap_or_default(), Phase::Enabled, vec![]);
        t.spec.namespace = "other".into();
        if project.is_none() {
            t.metadata.labels = None;
        }
        t
    };
    let of_a = ticket("t9", "a", Phase::Created, vec![]);
    let mut of_none = of_a.clone();
    of_none.metadata.labels = None;
    for (desc, changed, around, read) in [
        ("its namespace, another project", &of_a, ticket("t1", "b", Phase::Enabled, vec![]), true),
        ("its project, another namespace", &of_a, elsewhere("t2", Some("a")), true),
        ("another project, another namespace", &of_a, elsewhere("t3", Some("b")), false),
        ("no project, another namespace", &of_a, elsewhere("t4", None), false),
        ("of no project: its namespace", &of_none, ticket("t1", "b", Phase::Enabled, vec![]), true),
        ("of no project: another project-less one elsewhere", &of_none, elsewhere("t4", None), false),
    ] {
        assert_eq!(read_around(changed)(&around), read, "{desc}");
    }
}

#[test]
fn a_change_judged_on_what_it_reads_is_judged_as_on_everything() {
    let w = world();
    let mut far = ticket("t8", "b", Phase::Enabled, vec![listener("l1", "api")]);
    far.spec.namespace = "other".into();
    let everything: Vec<Lbticket> = w.tickets.iter().cloned().chain([far]).collect();
    let before = w.get("t1");
    let mut quota_full = before.clone();
    quota_full.spec.listeners.extend([listener("l1", "x"), listener("l2", "y"), listener("l3", "z")]);
    let mut on_used = before.clone();
    on_used.spec.listeners.push(listener("l1", "db"));
    for (desc, after) in
        [("within everything", before.clone()), ("over the quota", quota_full), ("a used Service", on_used)]
    {
        let read: Vec<Lbticket> = everything.iter().filter(|t| read_around(&after)(t)).cloned().collect();
        let full = View { tickets: &everything, ..w.view() };
        let part = View { tickets: &read, ..w.view() };
        assert_eq!(
            check_change("t1", Some(&before), &after, &part),
            check_change("t1", Some(&before), &after, &full),
            "{desc}"
        );
    }
}
