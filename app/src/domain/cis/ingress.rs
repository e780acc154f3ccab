//! The AS3 partitions CIS v2.20.2 builds from the Ingresses it manages (the legacy
//! appmanager path, posted only with `--filter-tenants=false`): in the partition the
//! Ingress names, application `Shared`, one `Service_HTTP` per address and port
//! (`ingress_<ip-dashed>_<port>`, shared by every Ingress on it), an `Endpoint_Policy` with a
//! rule per host and path forwarding to the pool `ingress_<ns>_<ingress>_<svc>_<port>`, and
//! pools filled from Endpoints whose addresses name a Ready Node. Line numbers are of the
//! v2.20.2 tag (`pkg/appmanager/ingress.go`, `routing.go`, `pkg/resource/resourceConfig.go`,
//! `pkg/agent/as3/as3Common.go`, `as3Utils.go`).

use std::collections::BTreeMap;

use k8s_openapi::api::networking::v1::Ingress;
use serde_json::{Map, Value, json};

use super::members::ready_nodes;
use super::{World, watched};

/// `as3FormattedString` for Ingresses (as3Utils.go:383–398): `.`, `+` and `-` become `_`.
pub fn formatted(name: &str) -> String {
    name.replace(['.', '+', '-'], "_").replace("client_ssl", "cssl").replace("server_ssl", "sssl")
}

/// `FormatIngressVSName` (resourceConfig.go:250–264).
pub fn virtual_server_name(ip: &str, port: u16) -> String {
    let ip = ip.trim_matches(|c| c == '[' || c == ']').replace(['.', ':', '/'], "-").replace('%', ".");
    format!("ingress_{ip}_{port}")
}

/// `FormatIngressPoolName` (resourceConfig.go:267–269).
fn pool_name(namespace: &str, ingress: &str, service: &str, port: i32) -> String {
    format!("ingress_{namespace}_{ingress}_{service}_{port}")
}

/// Whether CIS manages the Ingress (`checkManageIngressClass`): the class annotation, else
/// `spec.ingressClassName`, must be CIS's `--ingress-class`.
fn managed(ingress: &Ingress, class: &str) -> bool {
    let annotations = ingress.metadata.annotations.clone().unwrap_or_default();
    match annotations.get("kubernetes.io/ingress.class") {
        Some(c) => c == class,
        None => ingress.spec.as_ref().and_then(|s| s.ingress_class_name.as_deref()) == Some(class),
    }
}

/// One virtual server being built: its address, port, rules and pools.
#[derive(Default)]
struct Virtual {
    address: String,
    port: u16,
    https: bool,
    rules: Vec<(String, Value)>,
    pools: BTreeMap<String, Value>,
}

/// The members of an Ingress pool in cluster mode: the ready addresses of the Service's
/// Endpoints on the Service port (by its name), each on a Node CIS keeps, unless the Service is
/// headless (`getEndpointsForCluster`, appManager.go:3161–3197); `Err` when an address names
/// no node (CIS v2.20.2 dereferences it and crashes). Each as `createPoolDecl` writes it
/// (as3Common.go:281–308).
fn members(world: &World<'_>, namespace: &str, service: &str, port: i32) -> Result<Vec<Value>, String> {
    let nodes: Vec<&str> = ready_nodes(world.backends.nodes).filter_map(|n| n.metadata.name.as_deref()).collect();
    let svc =
        world.backends.services.iter().find(|s| {
            s.metadata.namespace.as_deref() == Some(namespace) && s.metadata.name.as_deref() == Some(service)
        });
    let Some(spec) = svc.and_then(|s| s.spec.as_ref()) else { return Ok(Vec::new()) };
    let headless = spec.cluster_ip.as_deref() == Some("None");
    let port_name = spec.ports.iter().flatten().find(|p| p.port == port).map(|p| p.name.clone().unwrap_or_default());
    let Some(port_name) = port_name else { return Ok(Vec::new()) };
    let eps =
        world.backends.endpoints.iter().find(|e| {
            e.metadata.namespace.as_deref() == Some(namespace) && e.metadata.name.as_deref() == Some(service)
        });
    let mut out = Vec::new();
    for subset in eps.and_then(|e| e.subsets.as_ref()).into_iter().flatten() {
        for p in subset.ports.iter().flatten().filter(|p| p.name.clone().unwrap_or_default() == port_name) {
            for address in subset.addresses.iter().flatten() {
                let node = address.node_name.as_deref();
                if node.is_none() && !headless {
                    return Err(format!(
                        "Endpoints {namespace}/{service}: address {} names no node; CIS v2.20.2 crashes on it",
                        address.ip
                    ));
                }
                // NB: a node CIS does not keep (unknown, not Ready) drops the member.
                if headless || node.is_some_and(|n| nodes.contains(&n)) {
                    let mut member =
                        json!({"addressDiscovery": "static", "serverAddresses": [address.ip], "servicePort": p.port});
                    if world.args.share_nodes {
                        member["shareNodes"] = json!(true);
                    }
                    out.push(member);
                }
            }
        }
    }
    Ok(out)
}

/// Path segment conditions of a rule (`createPathSegmentConditions`, routing.go:41–57).
fn path_conditions(path: &str) -> Vec<Value> {
    let trimmed = path.trim_end_matches('/').trim_start_matches('/');
    if trimmed.is_empty() {
        return Vec::new();
    }
    trimmed
        .split('/')
        .enumerate()
        .map(|(i, segment)| {
            json!({"type": "httpUri", "name": (i + 1).to_string(), "index": i + 1, "event": "request",
                   "pathSegment": {"operand": "equals", "values": [segment]}})
        })
        .collect()
}

/// A rule of the policy (`createRule`, routing.go:59–111; `createAS3RuleCondition`/`Action`,
/// as3Common.go:393–513): the host (with `:port`, and bare on 80 and 443), the path
/// segments, forward to the pool.
fn rule(host: Option<&str>, path: &str, pool: &str, port: u16) -> (String, Value) {
    let host_part = host.unwrap_or_default();
    let name = if path.is_empty() {
        format!("ingress_{host_part}_{pool}")
    } else {
        format!("ingress_{host_part}_{}_{pool}", path.trim_start_matches('/').replace('/', "_"))
    };
    let mut conditions = Vec::new();
    if let Some(host) = host.filter(|h| !h.is_empty()) {
        let with_port = format!("{host}:{port}");
        let values = if port == 80 || port == 443 { vec![with_port, host.to_string()] } else { vec![with_port] };
        conditions.push(json!({"type": "httpHeader", "name": "host", "event": "request",
                               "all": {"operand": "equals", "values": values}}));
    }
    conditions.extend(path_conditions(path));
    let actions = json!([{"type": "forward", "event": "request", "select": {"pool": {"use": formatted(pool)}}}]);
    let uri = format!("{host_part}{path}");
    (uri, json!({"name": formatted(&name), "conditions": conditions, "actions": actions}))
}

/// The Ingress partitions CIS posts (unified mode), and the Ingresses it passes over, why.
pub fn partitions(world: &World<'_>) -> (Map<String, Value>, Vec<(String, String)>) {
    let args = world.args;
    let mut ignored = Vec::new();
    let mut virtuals: BTreeMap<(String, String), Virtual> = BTreeMap::new();
    if !args.manage_ingress || args.custom_resource_mode {
        return (Map::new(), ignored);
    }
    for ing in world.ingresses {
        let namespace = ing.metadata.namespace.clone().unwrap_or_default();
        let name = ing.metadata.name.clone().unwrap_or_default();
        let what = format!("Ingress {namespace}/{name}");
        if !watched(world, &namespace) {
            ignored.push((what, format!("CIS does not watch namespace {namespace}")));
            continue;
        }
        if !managed(ing, &args.ingress_class) {
            ignored.push((what, format!("its class is not {}", args.ingress_class)));
            continue;
        }
        let annotations = ing.metadata.annotations.clone().unwrap_or_default();
        let Some(ip) = annotations.get("virtual-server.f5.com/ip").cloned() else {
            ignored.push((what, "it has no virtual-server.f5.com/ip".into()));
            continue;
        };
        let partition =
            annotations.get("virtual-server.f5.com/partition").cloned().unwrap_or_else(|| args.bigip_partition.clone());
        let spec = ing.spec.clone().unwrap_or_default();
        let port_of = |key: &str, default: u16| annotations.get(key).and_then(|p| p.parse().ok()).unwrap_or(default);
        let mut ports = vec![(port_of("virtual-server.f5.com/http-port", 80), false)];
        if spec.tls.as_ref().is_some_and(|t| !t.is_empty()) {
            ports.push((port_of("virtual-server.f5.com/https-port", 443), true));
        }
        let balance = annotations.get("virtual-server.f5.com/balance").cloned().unwrap_or("round-robin".into());
        let mut built: Vec<(String, String, i32, Vec<Value>)> = Vec::new();
        let mut routes = Vec::new();
        let mut failed = None;
        for r in spec.rules.iter().flatten() {
            for p in r.http.iter().flat_map(|h| &h.paths) {
                let Some(backend) = &p.backend.service else { continue };
                let Some(port) = backend.port.as_ref().and_then(|p| p.number) else { continue };
                let pool = pool_name(&namespace, &name, &backend.name, port);
                if !built.iter().any(|(n, ..)| *n == pool) {
                    match members(world, &namespace, &backend.name, port) {
                        Ok(m) => built.push((pool.clone(), backend.name.clone(), port, m)),
                        Err(why) => failed = Some(why),
                    }
                }
                routes.push((r.host.clone(), p.path.clone().unwrap_or_default(), pool));
            }
        }
        if let Some(why) = failed {
            ignored.push((what, why));
            continue;
        }
        for (port, https) in ports {
            let vs = virtuals.entry((partition.clone(), virtual_server_name(&ip, port))).or_default();
            vs.address = ip.clone();
            vs.port = port;
            vs.https |= https;
            for (pool, _, _, m) in &built {
                // NB: `members` is left out when there are none (`omitempty`, as3Types.go:112–117).
                let mut body = json!({"class": "Pool", "loadBalancingMode": balance});
                if !m.is_empty() {
                    body["members"] = json!(m);
                }
                vs.pools.insert(formatted(pool), body);
            }
            for (host, path, pool) in &routes {
                vs.rules.push(rule(host.as_deref(), path, pool, port));
            }
        }
    }
    let mut out = Map::new();
    for ((partition, vs_name), vs) in virtuals {
        let tenant = out.entry(partition.clone()).or_insert_with(|| {
            json!({"class": "Tenant", "defaultRouteDomain": args.default_route_domain,
                   "Shared": {"class": "Application", "template": "shared"}})
        });
        let Some(shared) = tenant.get_mut("Shared").and_then(Value::as_object_mut) else { continue };
        let mut rules = vs.rules;
        // NB: rules sort by their URI, longest first (`sort.Reverse`, routing.go processV1IngressRules).
        rules.sort_by(|a, b| b.0.cmp(&a.0));
        let policy = formatted(&format!("I{}", &vs_name[1..]));
        let mut service = json!({
            "class": if vs.https { "Service_HTTPS" } else { "Service_HTTP" },
            "virtualAddresses": [vs.address], "virtualPort": vs.port,
            "layer4": "tcp", "source": "0.0.0.0/0", "translateServerAddress": true, "translateServerPort": true,
            "snat": "auto",
        });
        if vs.https {
            service["redirect80"] = json!(false);
            service["serverTLS"] = json!({"bigip": "/Common/clientssl"});
        }
        if !rules.is_empty() {
            service["policyEndpoint"] = json!(format!("/{partition}/Shared/{policy}"));
            let rules: Vec<Value> = rules.into_iter().map(|(_, r)| r).collect();
            shared.insert(policy, json!({"class": "Endpoint_Policy", "strategy": "first-match", "rules": rules}));
        }
        shared.extend(vs.pools);
        shared.insert(formatted(&vs_name), service);
    }
    (out, ignored)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtual_server_names_follow_cis() {
        assert_eq!(virtual_server_name("20.9.0.3", 80), "ingress_20-9-0-3_80");
        assert_eq!(virtual_server_name("[2001:db8::1]", 443), "ingress_2001-db8--1_443");
        assert_eq!(virtual_server_name("10.0.0.1%2", 80), "ingress_10-0-0-1.2_80");
        assert_eq!(formatted("ingress_team-a_shop_web-v1_8080"), "ingress_team_a_shop_web_v1_8080");
    }

    #[test]
    fn a_rule_matches_the_host_with_and_without_port_and_each_path_segment() {
        let (uri, r) = rule(Some("a.example.com"), "/api/v1", "ingress_ns_i_svc_80", 80);
        assert_eq!(uri, "a.example.com/api/v1");
        assert_eq!(r["name"], "ingress_a_example_com_api_v1_ingress_ns_i_svc_80");
        assert_eq!(r["conditions"][0]["all"]["values"], json!(["a.example.com:80", "a.example.com"]));
        assert_eq!(r["conditions"][1]["pathSegment"]["values"], json!(["api"]));
        assert_eq!(r["conditions"][2]["index"], 2);
        assert_eq!(r["actions"][0]["select"]["pool"]["use"], "ingress_ns_i_svc_80");
        let (_, r) = rule(None, "/", "p", 8080);
        assert_eq!(r["conditions"], json!([]), "every host, every path");
        let (_, r) = rule(Some("h"), "", "p", 8080);
        assert_eq!(r["conditions"][0]["all"]["values"], json!(["h:8080"]), "other ports: with the port only");
    }
}
