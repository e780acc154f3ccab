//! How CIS v2.20.2 fills an AS3 pool of a ConfigMap template from the member cluster: the
//! Services carrying the pool's discovery labels, their Endpoints (cluster mode) or the Nodes
//! and NodePorts (nodeport mode), and the template's members copied into one member per
//! endpoint address. Line numbers are of the v2.20.2 tag; `docs/cis.md` lists them.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Endpoints, Node, Service};
use serde_json::{Map, Value};

use super::args::CisArgs;

/// One endpoint CIS found for a pool (`pkg/resource` `Member`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Endpoint {
    /// The address BIG-IP sends to.
    pub address: String,
    /// The port BIG-IP sends to (the endpoint's port, or the NodePort).
    pub port: i32,
    /// The Service port it is matched to the template's `servicePort` by.
    pub service_port: i32,
    /// `cis.f5.com/as3-pool-member-priorityGroup` of its Service, else 0.
    pub priority_group: i64,
    /// `enable` in cluster mode; none in nodeport mode, where CIS writes no `adminState`.
    pub admin_state: Option<&'static str>,
}

/// What CIS reads of a member cluster besides ConfigMaps and Ingresses.
#[derive(Clone, Copy, Debug, Default)]
pub struct Backends<'a> {
    pub services: &'a [Service],
    pub endpoints: &'a [Endpoints],
    pub nodes: &'a [Node],
}

/// CIS's label naming a pool member's priority group.
const PRIORITY_GROUP: &str = "cis.f5.com/as3-pool-member-priorityGroup";

fn labels(service: &Service) -> BTreeMap<String, String> {
    service.metadata.labels.clone().unwrap_or_default()
}

/// The Services backing pool `tenant/app/pool` (appManager.go:3532–3590): those carrying the
/// three discovery labels, in every namespace in hub mode (3465–3488) else in `namespace`
/// (the ConfigMap's); of several, the oldest per priority group (3563–3586).
pub fn services_of<'a>(
    backends: &Backends<'a>,
    args: &CisArgs,
    namespace: &str,
    (tenant, app, pool): (&str, &str, &str),
) -> Vec<&'a Service> {
    let wanted = [("cis.f5.com/as3-tenant", tenant), ("cis.f5.com/as3-app", app), ("cis.f5.com/as3-pool", pool)];
    let mut found: Vec<&Service> = backends
        .services
        .iter()
        .filter(|s| args.hubmode || s.metadata.namespace.as_deref() == Some(namespace))
        .filter(|s| {
            let l = labels(s);
            wanted.iter().all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v))
        })
        .collect();
    if found.len() > 1 {
        found.sort_by(|a, b| a.metadata.creation_timestamp.cmp(&b.metadata.creation_timestamp));
        let mut groups = BTreeSet::new();
        found.retain(|s| groups.insert(labels(s).get(PRIORITY_GROUP).cloned()));
    }
    found
}

fn priority_group(service: &Service) -> i64 {
    labels(service).get(PRIORITY_GROUP).and_then(|g| g.parse().ok()).unwrap_or(0)
}

/// The endpoints of the Services of a pool, sorted by address then port, each once
/// (appManager.go:3655–3698 cluster mode, 3725–3752 nodeport mode, 3758–3764 the sort).
pub fn endpoints_of(backends: &Backends<'_>, args: &CisArgs, services: &[&Service]) -> Vec<Endpoint> {
    let mut out = BTreeSet::new();
    for service in services {
        let group = priority_group(service);
        let spec = service.spec.clone().unwrap_or_default();
        let ports = spec.ports.unwrap_or_default();
        if args.pool_member_type == "nodeport" {
            // NB: only NodePort Services have members in nodeport mode (3727).
            if spec.type_.as_deref() != Some("NodePort") {
                continue;
            }
            for port in &ports {
                for address in node_addresses(backends.nodes) {
                    out.insert(Endpoint {
                        address,
                        port: port.node_port.unwrap_or(0),
                        service_port: port.port,
                        priority_group: group,
                        admin_state: None,
                    });
                }
            }
            continue;
        }
        // targetPort → port (getServicePorts, 3211–3225): a named target port counts as the
        // Service port itself.
        let by_target: BTreeMap<i32, i32> = ports
            .iter()
            .map(|p| {
                let target = match &p.target_port {
                    Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(t)) if *t != 0 => *t,
                    _ => p.port,
                };
                (target, p.port)
            })
            .collect();
        let eps = backends
            .endpoints
            .iter()
            .find(|e| e.metadata.name == service.metadata.name && e.metadata.namespace == service.metadata.namespace);
        for subset in eps.and_then(|e| e.subsets.as_ref()).into_iter().flatten() {
            for port in subset.ports.iter().flatten() {
                for address in subset.addresses.iter().flatten() {
                    out.insert(Endpoint {
                        address: address.ip.clone(),
                        port: port.port,
                        service_port: by_target.get(&port.port).copied().unwrap_or(port.port),
                        priority_group: group,
                        admin_state: Some("enable"),
                    });
                }
            }
        }
    }
    out.into_iter().collect()
}

/// The Nodes CIS keeps in its cache: those whose Ready condition is not other than True
/// (appManager.go:3349–3392).
pub fn ready_nodes(nodes: &[Node]) -> impl Iterator<Item = &Node> {
    nodes.iter().filter(|node| {
        let conditions = node.status.as_ref().and_then(|s| s.conditions.as_ref());
        !conditions.into_iter().flatten().any(|c| c.type_ == "Ready" && c.status != "True")
    })
}

/// The addresses of the Ready Nodes (InternalIP, CIS's default), as nodeport mode uses them.
pub fn node_addresses(nodes: &[Node]) -> Vec<String> {
    let addresses =
        ready_nodes(nodes).flat_map(|n| n.status.as_ref().and_then(|s| s.addresses.clone()).unwrap_or_default());
    addresses.filter(|a| a.type_ == "InternalIP").map(|a| a.address).collect()
}

fn number(v: Option<&Value>) -> Option<i64> {
    v.and_then(Value::as_f64).map(|f| f as i64)
}

/// Whether CIS fills a pool: its first member has `serverAddresses: []` (as3Utils.go:262–290).
pub fn is_discovered(pool: &Map<String, Value>) -> bool {
    let first = pool.get("members").and_then(Value::as_array).and_then(|m| m.first()).and_then(Value::as_object);
    first.and_then(|m| m.get("serverAddresses")).and_then(Value::as_array).is_some_and(Vec::is_empty)
}

/// The members CIS writes into a discovered pool from `endpoints` (as3ConfigMap.go:209–324):
/// each template member whose `servicePort` (and `priorityGroup`) an endpoint matches is
/// copied, field by field, with `serverAddresses` the endpoint's address, `servicePort` its
/// port, `adminState` `enable`, and — NB: the trap of issue #24 — `shareNodes` copied from
/// the template member, JSON `null` when the template has none. With no match at all, the
/// first template member is copied once per address, on the first endpoint's port. With no
/// endpoint, the pool is posted as the template has it.
pub fn fill(pool: &mut Map<String, Value>, endpoints: &[Endpoint]) {
    let Some(template) = pool.get("members").and_then(Value::as_array).cloned() else { return };
    let Some(first) = template.first().and_then(Value::as_object).cloned() else { return };
    if endpoints.is_empty() {
        return;
    }
    let matches = |m: &Map<String, Value>, e: &Endpoint| {
        number(m.get("servicePort")) == Some(e.service_port.into())
            && number(m.get("priorityGroup")).unwrap_or(0) == e.priority_group
    };
    let copy = |m: &Map<String, Value>, e: &Endpoint, port: i32| {
        let mut member = m.clone();
        member.insert("serverAddresses".into(), Value::Array(vec![Value::String(e.address.clone())]));
        member.insert("servicePort".into(), Value::from(port));
        if let Some(state) = e.admin_state {
            member.insert("adminState".into(), Value::from(state));
        }
        member
    };
    let templates: Vec<&Map<String, Value>> = template.iter().filter_map(Value::as_object).collect();
    let matched: Vec<&Map<String, Value>> =
        endpoints.iter().filter_map(|e| templates.iter().copied().find(|m| matches(m, e))).collect();
    let mut members: Vec<Map<String, Value>> = Vec::new();
    if matched.is_empty() {
        // as3ConfigMap.go:247–289.
        let first_port = endpoints.first().map(|e| e.port).unwrap_or(0);
        let mut seen = BTreeSet::new();
        for e in endpoints {
            if seen.insert(e.address.as_str()) {
                members.push(copy(&first, e, first_port));
            }
        }
    } else {
        // as3ConfigMap.go:292–321.
        for e in endpoints {
            if let Some(m) = matched.iter().find(|m| matches(m, e)) {
                let mut member = copy(m, e, e.port);
                member.insert("shareNodes".into(), m.get("shareNodes").cloned().unwrap_or(Value::Null));
                if let Some(first_share) = members.first().and_then(|f| f.get("shareNodes")).cloned() {
                    member.insert("shareNodes".into(), first_share);
                }
                members.push(member);
            }
        }
    }
    pool.insert("members".into(), Value::Array(members.into_iter().map(Value::Object).collect()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ep(address: &str, port: i32, service_port: i32) -> Endpoint {
        Endpoint { address: address.into(), port, service_port, priority_group: 0, admin_state: Some("enable") }
    }

    fn pool(members: Value) -> Map<String, Value> {
        json!({"class": "Pool", "members": members}).as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn pools_are_filled_as_cis_fills_them() {
        let two = [ep("10.1.0.5", 8081, 8080), ep("10.1.0.6", 8081, 8080)];
        for (desc, template, endpoints, want) in [
            (
                "without shareNodes in the template, CIS writes null (invalid under AS3)",
                json!([{"servicePort": 8080, "serverAddresses": []}]),
                &two[..],
                json!([
                    {"servicePort": 8081, "serverAddresses": ["10.1.0.5"], "adminState": "enable", "shareNodes": null},
                    {"servicePort": 8081, "serverAddresses": ["10.1.0.6"], "adminState": "enable", "shareNodes": null},
                ]),
            ),
            (
                "shareNodes and every other field are copied",
                json!([{"servicePort": 8080, "serverAddresses": [], "shareNodes": true, "ratio": 3}]),
                &two[..1],
                json!([{"servicePort": 8081, "serverAddresses": ["10.1.0.5"], "adminState": "enable", "shareNodes": true, "ratio": 3}]),
            ),
            (
                "no endpoint: the template member stays",
                json!([{"servicePort": 8080, "serverAddresses": []}]),
                &[][..],
                json!([{"servicePort": 8080, "serverAddresses": []}]),
            ),
            (
                "no Service port matches: the first member per address, on the first endpoint's port",
                json!([{"servicePort": 9999, "serverAddresses": [], "shareNodes": false}]),
                &[ep("10.1.0.5", 8081, 8080), ep("10.1.0.5", 8443, 8443), ep("10.1.0.7", 8081, 8080)][..],
                json!([
                    {"servicePort": 8081, "serverAddresses": ["10.1.0.5"], "adminState": "enable", "shareNodes": false},
                    {"servicePort": 8081, "serverAddresses": ["10.1.0.7"], "adminState": "enable", "shareNodes": false},
                ]),
            ),
            (
                "endpoints of another Service port are left out",
                json!([{"servicePort": 8443, "serverAddresses": [], "shareNodes": false}]),
                &[ep("10.1.0.5", 8081, 8080), ep("10.1.0.5", 8444, 8443)][..],
                json!([{"servicePort": 8444, "serverAddresses": ["10.1.0.5"], "adminState": "enable", "shareNodes": false}]),
            ),
        ] {
            let mut p = pool(template);
            fill(&mut p, endpoints);
            assert_eq!(p["members"], want, "{desc}");
        }
        let node_port = Endpoint { admin_state: None, ..ep("192.168.0.11", 30080, 8080) };
        let mut p = pool(json!([{"servicePort": 8080, "serverAddresses": [], "shareNodes": true}]));
        fill(&mut p, &[node_port]);
        assert_eq!(
            p["members"],
            json!([{"servicePort": 30080, "serverAddresses": ["192.168.0.11"], "shareNodes": true}]),
            "nodeport mode: the NodePort, no adminState"
        );
    }

    #[test]
    fn only_pools_whose_first_member_has_empty_server_addresses_are_discovered() {
        assert!(is_discovered(&pool(json!([{"servicePort": 80, "serverAddresses": []}]))));
        assert!(!is_discovered(&pool(json!([{"servicePort": 80, "serverAddresses": ["10.0.0.1"]}]))));
        assert!(!is_discovered(&pool(json!([{"servicePort": 80}]))));
        assert!(!is_discovered(&pool(json!([]))));
    }

    fn service(ns: &str, name: &str, age: i64, labels: &[(&str, &str)], ports: Value) -> Service {
        serde_json::from_value(json!({
            "metadata": {
                "name": name, "namespace": ns,
                "creationTimestamp": format!("2026-01-01T00:00:{age:02}Z"),
                "labels": labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>(),
            },
            "spec": {"ports": ports},
        }))
        .expect("a Service")
    }

    #[test]
    fn services_are_found_by_their_labels_in_hub_mode_anywhere() {
        let pool_labels = [("cis.f5.com/as3-tenant", "t"), ("cis.f5.com/as3-app", "a"), ("cis.f5.com/as3-pool", "p")];
        let services = [
            service("team-a", "newer", 2, &pool_labels, json!([])),
            service("team-a", "older", 1, &pool_labels, json!([])),
            service("team-b", "unlabelled", 0, &[], json!([])),
        ];
        let backends = Backends { services: &services, ..Default::default() };
        let hub = CisArgs { hubmode: true, ..Default::default() };
        let names =
            |found: Vec<&Service>| -> Vec<String> { found.iter().filter_map(|s| s.metadata.name.clone()).collect() };
        assert_eq!(names(services_of(&backends, &hub, "kube-system", ("t", "a", "p"))), ["older"], "the oldest");
        let local = CisArgs::default();
        assert!(services_of(&backends, &local, "kube-system", ("t", "a", "p")).is_empty(), "not hub mode");
        assert!(services_of(&backends, &hub, "kube-system", ("t", "a", "other")).is_empty());
    }

    #[test]
    fn endpoints_are_matched_to_service_ports_by_target_port() {
        let services = [service(
            "team-a",
            "web",
            0,
            &[],
            json!([{"name": "http", "port": 8080, "targetPort": 8081}, {"name": "named", "port": 9090, "targetPort": "metrics"}]),
        )];
        let endpoints: Vec<Endpoints> = vec![
            serde_json::from_value(json!({
                "metadata": {"name": "web", "namespace": "team-a"},
                "subsets": [{
                    "addresses": [{"ip": "10.1.0.6", "nodeName": "n1"}, {"ip": "10.1.0.5", "nodeName": "n1"}],
                    "notReadyAddresses": [{"ip": "10.1.0.9"}],
                    "ports": [{"name": "http", "port": 8081}, {"name": "named", "port": 9090}],
                }],
            }))
            .expect("Endpoints"),
        ];
        let backends = Backends { services: &services, endpoints: &endpoints, nodes: &[] };
        let cluster = CisArgs { pool_member_type: "cluster".into(), ..Default::default() };
        let found = endpoints_of(&backends, &cluster, &services.iter().collect::<Vec<_>>());
        assert_eq!(
            found,
            [
                ep("10.1.0.5", 8081, 8080),
                ep("10.1.0.5", 9090, 9090),
                ep("10.1.0.6", 8081, 8080),
                ep("10.1.0.6", 9090, 9090)
            ],
            "sorted, ready addresses only, target port mapped back to the Service port"
        );
        let nodeport = CisArgs::default();
        assert!(
            endpoints_of(&backends, &nodeport, &services.iter().collect::<Vec<_>>()).is_empty(),
            "a ClusterIP Service has no members in nodeport mode"
        );
    }
}
