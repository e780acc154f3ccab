//! Embedded mode: the simulated clusters in lbdesk's own database, their demo content, the
//! tokens (the admin's, for kubectl, and lbdesk's own), and the kubeconfig that reaches them
//! over HTTPS like any real cluster.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use anyhow::Context;
use app::ssr::clusters::embedded_kubeconfig;
use app::ssr::db::Db;
use serde_json::{Value, json};

use crate::admission::Admission;
use crate::api::resources::{Kind, find};
use crate::api::store::{Change, Key, Store};
use crate::api::{Api, prepare_new};
use crate::config::KubeconfigArgs;

/// The setting holding the admin token of the embedded API (needed by `lbdesk kubeconfig`).
const ADMIN_TOKEN: &str = "embedded_admin_token";

/// The setting holding lbdesk's own token (its web layer and reconciler): admission tells their
/// writes, which the pages authorize and audit, from a kubectl user's.
const OWN_TOKEN: &str = "embedded_lbdesk_token";

/// Every simulated cluster and its namespaces; member namespaces hold demo Services.
pub const CLUSTERS: [(&str, &[&str]); 3] = [
    ("mgmt", &["default", "lbdesk-system"]),
    ("acp-region01", &["default", "team-a", "team-b", "kube-system"]),
    ("acp-region02", &["default", "team-b", "kube-system"]),
];

/// Demo Services of every member namespace: (name, ports).
const SERVICES: [(&str, &[u16]); 6] = [
    ("web-v1", &[8080, 8443]),
    ("web-v2", &[8080, 8443]),
    ("api", &[8080]),
    ("api-canary", &[8080]),
    ("ssh-gw", &[2222]),
    ("dns", &[8053]),
];

/// The Nodes of every simulated member cluster: (name, InternalIP).
const NODES: [(&str, &str); 2] = [("node-1", "192.168.50.11"), ("node-2", "192.168.50.12")];

/// The CIS Deployment of a simulated member cluster: held, not run, so that lbdesk reads its
/// arguments as it reads a real one's.
fn cis_deployment(ns: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "k8s-bigip-ctlr", "namespace": ns, "labels": {"app": "k8s-bigip-ctlr"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "k8s-bigip-ctlr"}},
            "template": {
                "metadata": {"labels": {"app": "k8s-bigip-ctlr"}},
                "spec": {"containers": [{
                    "name": "k8s-bigip-ctlr",
                    "image": "f5networks/k8s-bigip-ctlr:2.20.2",
                    "command": ["/app/bin/k8s-bigip-ctlr"],
                    "args": app::domain::cis::args::README_ARGS,
                }]},
            },
        },
    })
}

fn demo_node((name, ip): (&str, &str)) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name},
        "status": {
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    })
}

/// Two ready pods per demo Service, one on each node, so that pools have members.
fn demo_endpoints(ns: &str, index: usize, ports: &[u16]) -> Value {
    let ns_octet = ns.bytes().fold(0u8, |a, b| a.wrapping_add(b));
    let addresses: Vec<Value> = NODES
        .iter()
        .enumerate()
        .map(|(i, (node, _))| json!({"ip": format!("10.{ns_octet}.{index}.{}", i + 10), "nodeName": node}))
        .collect();
    let ports: Vec<Value> =
        ports.iter().map(|p| json!({"name": format!("p{p}"), "port": p, "protocol": "TCP"})).collect();
    json!({"apiVersion": "v1", "kind": "Endpoints", "subsets": [{"addresses": addresses, "ports": ports}]})
}

/// The demo Services of a member namespace and their Endpoints, as (resource, name, object):
/// seeded in every member namespace, and made by the tests in namespaces of their own.
pub fn demo_services(ns: &str) -> Vec<(&'static str, &'static str, Value)> {
    let mut objects = Vec::new();
    for (index, (svc, ports)) in SERVICES.iter().enumerate() {
        let mut endpoints = demo_endpoints(ns, index, ports);
        endpoints["metadata"] = json!({"name": svc, "namespace": ns});
        objects.push(("endpoints", *svc, endpoints));
        let ports: Vec<Value> = ports
            .iter()
            .map(|p| json!({"name": format!("p{p}"), "port": p, "protocol": "TCP", "targetPort": p}))
            .collect();
        let service = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": svc, "namespace": ns, "labels": {"app": svc}},
            "spec": {"type": "ClusterIP", "selector": {"app": svc}, "ports": ports},
        });
        objects.push(("services", *svc, service));
    }
    objects
}

/// The embedded API, ready to serve.
pub struct Embedded {
    pub api: Arc<Api>,
    /// The admin's token (user `admin`), which `lbdesk kubeconfig` hands to kubectl users.
    pub token: String,
    /// lbdesk's own token (user `system:lbdesk`).
    pub own_token: String,
    pub clusters: Vec<String>,
}

/// The admin token (created on first start).
pub async fn admin_token(db: &Db) -> anyhow::Result<Option<String>> {
    db.setting(ADMIN_TOKEN).await.context("could not read the admin token")
}

/// The embedded API as seen from this machine: loopback when listening on every address.
pub fn api_url(local: SocketAddr) -> String {
    let ip = if local.ip().is_unspecified() { IpAddr::V4(Ipv4Addr::LOCALHOST) } else { local.ip() };
    format!("https://{}", SocketAddr::new(ip, local.port()))
}

/// `lbdesk kubeconfig`: the kubeconfig of the embedded API served with these settings.
pub async fn print_kubeconfig(args: &KubeconfigArgs) -> anyhow::Result<()> {
    let db = Db::connect(&args.store.database_url()?).await.context("could not open the database")?;
    let not_yet = "nothing to connect to yet: start `lbdesk serve` once with these settings first";
    let setting = if args.as_lbdesk { OWN_TOKEN } else { ADMIN_TOKEN };
    let token = db.setting(setting).await.context("could not read the token")?.context(not_yet)?;
    let ca = crate::tls::ca_pem(&db).await?.context(not_yet)?;
    let clusters: Vec<String> =
        CLUSTERS.iter().map(|(c, _)| if *c == "mgmt" { args.mgmt_cluster.clone() } else { c.to_string() }).collect();
    let (clusters, current) = match &args.cluster {
        None => (clusters, args.mgmt_cluster.as_str()),
        Some(one) if clusters.contains(one) => (vec![one.clone()], one.as_str()),
        Some(one) => anyhow::bail!("--cluster {one}: the embedded clusters are {}", clusters.join(", ")),
    };
    let kubeconfig = embedded_kubeconfig(&api_url(args.api_listen), &ca, &token, &clusters, current);
    print!("{}", serde_yaml::to_string(&kubeconfig).context("could not print the kubeconfig")?);
    Ok(())
}

/// The token kept in `setting`, created on first start, registered for `user`.
async fn ensure_token(db: &Db, store: &Store, setting: &str, user: &str) -> anyhow::Result<String> {
    let token = match db.setting(setting).await.with_context(|| format!("could not read the {user} token"))? {
        Some(t) => t,
        None => {
            let t: String = (0..32).map(|_| format!("{:02x}", rand::random::<u8>())).collect();
            db.set_setting(setting, &t).await?;
            t
        }
    };
    store.add_token(&token, user, time::OffsetDateTime::now_utc().unix_timestamp()).await?;
    Ok(token)
}

/// Opens the store, creates the clusters, the tokens and the demo content (idempotent).
pub async fn start(db: &Db, mgmt: &str, history: i64, admission: Arc<Admission>) -> anyhow::Result<Embedded> {
    let store = Store::new(db.clone(), history);
    let token = ensure_token(db, &store, ADMIN_TOKEN, "admin").await?;
    let own_token = ensure_token(db, &store, OWN_TOKEN, app::domain::access::Principal::System.name()).await?;
    let mut clusters = Vec::new();
    for (name, namespaces) in CLUSTERS {
        let name = if name == "mgmt" { mgmt } else { name };
        store.ensure_cluster(name).await?;
        for ns in namespaces.iter() {
            seed(
                &store,
                name,
                kind("namespaces")?,
                "",
                ns,
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            )
            .await?;
            if name == mgmt {
                continue;
            }
            if *ns == "kube-system" {
                let cis = cis_deployment(ns);
                seed(
                    &store,
                    name,
                    find("apps", "v1", "deployments", true).context("deployments")?,
                    ns,
                    "k8s-bigip-ctlr",
                    cis,
                )
                .await?;
                continue;
            }
            for (resource, svc, body) in demo_services(ns) {
                seed(&store, name, kind(resource)?, ns, svc, body).await?;
            }
        }
        if name != mgmt {
            for node in NODES {
                seed(&store, name, kind("nodes")?, "", node.0, demo_node(node)).await?;
            }
        }
        clusters.push(name.to_string());
    }
    Ok(Embedded { api: Arc::new(Api { store, mgmt: mgmt.to_string(), admission }), token, own_token, clusters })
}

fn kind(plural: &str) -> anyhow::Result<&'static Kind> {
    find("", "v1", plural, true).with_context(|| format!("the embedded API serves no {plural}"))
}

/// Creates an object unless it exists.
async fn seed(store: &Store, cluster: &str, kind: &Kind, ns: &str, name: &str, mut body: Value) -> anyhow::Result<()> {
    let resource = kind.resource();
    let key = Key { cluster, resource: &resource, namespace: ns, name };
    if store.get(&key).await?.is_some() {
        return Ok(());
    }
    prepare_new(kind, &mut body, ns, name);
    store.write(&key, |_| Ok(Change::Put(body))).await?;
    Ok(())
}
