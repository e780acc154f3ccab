//! What the member cluster's CIS will post, computed by the CIS model (`domain::cis`) from
//! what the cluster holds, and checked as BIG-IP would take it: valid under CIS's own AS3
//! schema, every Enabled listener's virtual server with members, every F5 Ingress there.

use std::collections::BTreeMap;

use app::domain::as3::validate::validate_as_cis;
use app::domain::cis::args::CisArgs;
use app::domain::cis::members::Backends;
use app::domain::cis::post::{Posted, World, post};
use k8s_openapi::api::core::v1::{ConfigMap, Endpoints, Namespace, Node, Service};
use k8s_openapi::api::networking::v1::Ingress;
use kube::Client;
use kube::api::{Api, ListParams};
use serde_json::Value;

/// CIS as README "Running in a cluster" configures it for a load balancer whose namespace
/// selector is `nsselector` (the embedded clusters' CIS runs with these arguments for the demo's).
pub fn readme_args(nsselector: &BTreeMap<String, String>) -> CisArgs {
    let label: Vec<String> = nsselector.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let label = format!("--namespace-label={}", label.join(","));
    let words =
        server::embedded::CIS_ARGS.iter().map(|w| if w.starts_with("--namespace-label=") { label.as_str() } else { w });
    CisArgs::parse(words).expect("the README's arguments parse")
}

async fn all<K>(member: &Client) -> Vec<K>
where
    K: kube::Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned,
{
    Api::<K>::all(member.clone()).list(&ListParams::default()).await.expect("a list").items
}

/// What CIS with `args` posts for the member cluster `member` now; panics naming what CIS's
/// validation refused.
pub async fn posted(member: &Client, args: &CisArgs) -> Posted {
    let namespaces: Vec<Namespace> = all(member).await;
    let configmaps: Vec<ConfigMap> = all(member).await;
    let ingresses: Vec<Ingress> = all(member).await;
    let services: Vec<Service> = all(member).await;
    let endpoints: Vec<Endpoints> = all(member).await;
    let nodes: Vec<Node> = all(member).await;
    let world = World {
        args,
        namespaces: &namespaces,
        configmaps: &configmaps,
        ingresses: &ingresses,
        backends: Backends { services: &services, endpoints: &endpoints, nodes: &nodes },
        schema_version: "3.52.0",
    };
    let posted = post(&world, &validate_as_cis);
    assert!(posted.invalid.is_empty(), "CIS would refuse tenants {:?}: {:?}", posted.invalid, posted.ignored);
    for p in &posted.posts {
        validate_as_cis(&p.body).unwrap_or_else(|e| panic!("CIS would post an invalid declaration: {e}"));
    }
    posted
}

/// The virtual server `vs` of application `app` in tenant `tenant`, as posted.
pub fn virtual_server<'p>(posted: &'p Posted, tenant: &str, app: &str, vs: &str) -> Option<&'p Value> {
    posted.tenant(tenant)?.get(app)?.get(vs)
}

/// The members CIS put in pool `pool` of `tenant`/`app`: their addresses.
pub fn members(posted: &Posted, tenant: &str, app: &str, pool: &str) -> Vec<String> {
    let members =
        posted.tenant(tenant).and_then(|t| t.get(app)).and_then(|a| a.get(pool)).and_then(|p| p.get("members"));
    members
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|m| m["serverAddresses"].as_array().cloned().unwrap_or_default())
        .filter_map(|a| a.as_str().map(String::from))
        .collect()
}

/// Whether what CIS posts carries an Enabled listener: its virtual server, and a member in
/// each of its pools.
pub fn carries_listener(posted: &Posted, tenant: &str, app: &str, vs: &str, pools: &[&str]) -> bool {
    virtual_server(posted, tenant, app, vs).is_some()
        && pools.iter().all(|p| !members(posted, tenant, app, p).is_empty())
}

/// Whether what CIS posts carries an F5 Ingress on `ip` port 80 in `partition`, with members.
pub fn carries_ingress(posted: &Posted, partition: &str, ip: &str) -> bool {
    let vs = app::domain::cis::ingress::virtual_server_name(ip, 80).replace(['.', '-'], "_");
    let Some(shared) = posted.tenant(partition).and_then(|t| t.get("Shared")) else { return false };
    let pools = shared.as_object().into_iter().flatten().filter(|(_, v)| v["class"] == "Pool");
    shared.get(&vs).is_some() && pools.into_iter().all(|(_, p)| p["members"].as_array().is_some_and(|m| !m.is_empty()))
}
