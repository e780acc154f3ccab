//! The save path's steps: an edit made in a spec, its errors said of the form, and each
//! refusal of a listener or F5 Ingress save beside its form field, as a table.

use std::collections::BTreeMap;

use super::*;
use crate::domain::crd::{
    IngressRule, LABEL_PROJECT, LbType, LbticketStatus, Loadbalancer, LoadbalancerSpec, Phase, Protocol, ServiceRef,
    Session,
};

fn listener(name: &str, port: u16) -> Listener {
    Listener { name: name.into(), port, protocol: Protocol::Http, session: Session::None, services: vec![] }
}

fn to(service: &str, port: u16, weight: u32) -> ServiceRef {
    ServiceRef { service: service.into(), port, weight }
}

/// Listener `name` on `port`, HTTP, to `services`.
fn on(name: &str, port: u16, services: Vec<ServiceRef>) -> Listener {
    Listener { services, ..listener(name, port) }
}

/// F5 Ingress `name` with one route per `(path, service, port)`.
fn ingress(name: &str, routes: &[(&str, &str, u16)]) -> F5Ingress {
    let route = |(path, service, port): &(&str, &str, u16)| IngressRule {
        host: None,
        path: path.to_string(),
        service: service.to_string(),
        port: *port,
    };
    F5Ingress { name: name.into(), rules: routes.iter().map(route).collect(), tls_secret: None }
}

/// Project a's Enabled request `name` for `lbtype` in namespace `web`, with `listeners` and
/// `ingresses`.
fn request(name: &str, lbtype: LbType, listeners: Vec<Listener>, ingresses: Vec<F5Ingress>) -> Lbticket {
    let spec = LbticketSpec {
        loadbalancer: "lb1".into(),
        namespace: "web".into(),
        lbtype,
        listeners,
        ingresses,
        ..Default::default()
    };
    let mut t = Lbticket::new(name, spec);
    t.metadata.labels = Some(BTreeMap::from([(LABEL_PROJECT.to_string(), "a".to_string())]));
    t.status = Some(LbticketStatus { phase: Phase::Enabled, ..Default::default() });
    t
}

/// What a save of `edit` to request `name` is told, as the form places it: request `shop`
/// has listener `web` on port 80 to Service `web-v1`; requests `gate` and `gate2` are for F5
/// Ingresses, `gate` with F5 Ingress `web` to Service `front`; namespace `web` has Services
/// web-v1, api, api-canary and front on 8080, ssh-gw on 2222 and dns on 8053, and no TLS
/// Secret.
fn saved(name: &str, edit: &Edit) -> Result<(), AppError> {
    let tickets = [
        request("shop", LbType::Listener, vec![on("web", 80, vec![to("web-v1", 8080, 100)])], vec![]),
        request("gate", LbType::Ingress, vec![], vec![ingress("web", &[("/", "front", 8080)])]),
        request("gate2", LbType::Ingress, vec![], vec![]),
    ];
    let mut lb = LoadbalancerSpec { cluster: "c1".into(), scope: vec!["a".into()], ..Default::default() };
    (lb.ve.cidr, lb.ltm.cidr) = ("10.0.0.0/28".into(), "20.0.0.0/28".into());
    let loadbalancers = [Loadbalancer::new("lb1", lb)];
    let view = View { tickets: &tickets, loadbalancers: &loadbalancers, rules: &[], quotas: &[] };
    let offered = |name: &str, port: u16| ServiceChoice { name: name.into(), ports: vec![port] };
    let services = vec![offered("web-v1", 8080), offered("api", 8080), offered("ssh-gw", 2222), offered("dns", 8053)];
    let held = Namespace { services, secrets: vec![] };
    let before = tickets.iter().find(|t| t.metadata.name.as_deref() == Some(name)).expect("a request").clone();
    let mut after = before.clone();
    let index = edit.apply(&mut after.spec)?;
    check(name, &before, &after, &view, &held).map_err(|e| edit.said_of_form(e, index))
}

/// Each row: what it is, the request, the edit, and the form's field the refusal is said of
/// (none: the save is allowed).
type Row<'a> = (&'a str, &'a str, Edit, Option<&'a str>);

fn judge(rows: Vec<Row>) {
    for (what, ticket, edit, field) in rows {
        match (saved(ticket, &edit), field) {
            (Ok(()), None) => {}
            (Err(e), Some(field)) => assert!(e.for_field(field).is_some(), "{what}: {e:?}, not beside {field}"),
            (got, _) => panic!("{what}: {got:?}, want a refusal beside {field:?}"),
        }
    }
}

#[test]
fn every_listener_refusal_is_said_of_its_form_field() {
    let add = |listener: Listener| Edit::PutListener { listener, editing: false };
    let edit = |listener: Listener| Edit::PutListener { listener, editing: true };
    let tcp = |l: Listener, session: Session| Listener { protocol: Protocol::Tcp, session, ..l };
    let rows: Vec<Row> = vec![
        ("a listener on a free Service and port", "shop", add(on("api", 81, vec![to("api", 8080, 100)])), None),
        (
            "weights adding up to 90",
            "shop",
            add(on("api", 81, vec![to("api", 8080, 60), to("api-canary", 8080, 30)])),
            Some("services"),
        ),
        ("a port taken on the address", "shop", add(on("api", 80, vec![to("api", 8080, 100)])), Some("port")),
        (
            "a Service another listener uses",
            "shop",
            add(on("api", 81, vec![to("web-v1", 8080, 100)])),
            Some("services[0].service"),
        ),
        (
            "a port the Service does not have",
            "shop",
            add(on("api", 81, vec![to("api", 9999, 100)])),
            Some("services[0].port"),
        ),
        (
            "a Service the namespace does not have",
            "shop",
            add(on("api", 81, vec![to("nope", 80, 100)])),
            Some("services[0].service"),
        ),
        ("a port changed on edit", "shop", edit(on("web", 8080, vec![to("web-v1", 8080, 100)])), Some("port")),
        (
            "a protocol changed on edit",
            "shop",
            edit(tcp(on("web", 80, vec![to("web-v1", 8080, 100)]), Session::None)),
            Some("protocol"),
        ),
        (
            "cookie persistence on TCP",
            "shop",
            add(tcp(on("ssh", 22, vec![to("ssh-gw", 2222, 100)]), Session::Cookie)),
            Some("session"),
        ),
        (
            "a listener on an address for F5 Ingresses",
            "gate",
            add(on("api", 81, vec![to("api", 8080, 100)])),
            Some("listeners"),
        ),
    ];
    judge(rows);
}

#[test]
fn a_put_adds_or_replaces_by_name_and_a_removal_needs_the_name() {
    let mut spec = LbticketSpec { listeners: vec![listener("a", 80)], ..Default::default() };
    let add = Edit::PutListener { listener: listener("b", 81), editing: false };
    assert_eq!(add.apply(&mut spec), Ok(Some(1)));
    let again = Edit::PutListener { listener: listener("b", 82), editing: false };
    assert_eq!(again.apply(&mut spec), Err(AppError::invalid("name", "Another listener is already named b.")));
    let edit = Edit::PutListener { listener: listener("b", 82), editing: true };
    assert_eq!(edit.apply(&mut spec), Ok(Some(1)));
    assert_eq!(spec.listeners[1].port, 82);
    let missing = Edit::PutListener { listener: listener("c", 83), editing: true };
    let gone = AppError::NotFound("There is no such listener in your projects.".into());
    assert_eq!(missing.apply(&mut spec), Err(gone));
    assert_eq!(Edit::RemoveListener("a".into()).apply(&mut spec), Ok(None));
    assert!(matches!(Edit::RemoveListener("a".into()).apply(&mut spec), Err(AppError::NotFound(_))));
    assert_eq!(spec.listeners, vec![listener("b", 82)]);
}

#[test]
fn every_f5_ingress_refusal_is_said_of_its_form_field() {
    let add = |ingress: F5Ingress| Edit::PutIngress { ingress, editing: false };
    let dns = ("/", "dns", 8053);
    let secret = |i: F5Ingress| F5Ingress { tls_secret: Some("nope".into()), ..i };
    let rows: Vec<Row> = vec![
        ("an F5 Ingress on a free Service", "gate", add(ingress("web2", &[dns])), None),
        ("an F5 Ingress on an address for listeners", "shop", add(ingress("web2", &[dns])), Some("ingresses")),
        ("a Service a listener uses", "gate", add(ingress("web2", &[("/", "web-v1", 8080)])), Some("rules[0].service")),
        ("a name taken on the address", "gate", add(ingress("web", &[dns])), Some("name")),
        ("a name taken in the namespace", "gate2", add(ingress("web", &[dns])), Some("name")),
        (
            "a port the Service does not have",
            "gate",
            add(ingress("web2", &[("/", "dns", 9999)])),
            Some("rules[0].port"),
        ),
        ("a relative path", "gate", add(ingress("web2", &[dns, ("x", "dns", 8053)])), Some("rules[1].path")),
        ("no route", "gate", add(ingress("web2", &[])), Some("rules")),
        ("a TLS Secret the namespace does not have", "gate", add(secret(ingress("web2", &[dns]))), Some("tlsSecret")),
    ];
    judge(rows);
}

#[test]
fn errors_of_the_edited_part_are_said_of_the_form() {
    let edit = Edit::PutListener { listener: listener("web", 80), editing: true };
    let placed = |field: &str| edit.said_of_form(AppError::invalid(field, "no"), Some(2));
    assert_eq!(placed("listeners[2].port"), AppError::invalid("port", "no"));
    assert_eq!(placed("listener web.port"), AppError::invalid("port", "no"));
    assert_eq!(placed("listeners[1].port"), AppError::invalid("listeners[1].port", "no"));
    let ingress = Edit::PutIngress {
        ingress: F5Ingress { name: "shop".into(), rules: vec![], tls_secret: None },
        editing: false,
    };
    let placed = ingress.said_of_form(AppError::invalid("ingresses[0].rules[1].service", "no"), Some(0));
    assert_eq!(placed, AppError::invalid("rules[1].service", "no"));
}

#[test]
fn only_secrets_and_backends_not_named_before_are_checked() {
    let tls = |s: &str| F5Ingress { name: s.into(), rules: vec![], tls_secret: Some(s.into()) };
    let old = LbticketSpec { ingresses: vec![tls("a")], ..Default::default() };
    let new = LbticketSpec { ingresses: vec![tls("a"), tls("b")], ..Default::default() };
    assert_eq!(new_secrets(&old, &new), vec!["b".to_string()]);
    assert!(new_backends(&old, &new).is_empty());
}
