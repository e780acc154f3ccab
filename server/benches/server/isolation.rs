//! One project cannot hold back another (issue #26), timed: bob's change to his load balancer's
//! tenant, from the page's save until the member cluster's ConfigMap carries it, on a quiet
//! cluster and while alice's tenant on the same cluster is held back (a rule written with the
//! admin token makes it too large for its ConfigMap). Target: the same p50 within 1.5×.
//! Run: `cargo bench -p server --bench server -- isolation`.

use crate::common;

use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use app::domain::as3::placement::{TEMPLATE_KEY, configmap_name};
use app::domain::crd::{
    LABEL_CLUSTER, LABEL_NAMESPACE, LABEL_PROJECT, Lbrule, LbruleSpec, Lbticket, LbticketSpec, Loadbalancer, Phase,
};
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::{Api, PostParams};
use serde_json::json;

/// Rounds per phase: each adds a listener.
const ROUNDS: usize = 20;

#[tokio::main]
pub async fn run() -> anyhow::Result<()> {
    let dir = tempfile::tempdir().context("no temporary directory")?;
    let (url, mgmt, member) = common::embedded(dir.path()).await?;

    // Two load balancers of acp-region01, one tenant each: alice's and bob's.
    for (name, n) in [("alice-lb", 11), ("bob-lb", 12)] {
        let lb: Loadbalancer = serde_json::from_value(json!({
            "apiVersion": "ebcpaas.io/v1", "kind": "Loadbalancer", "metadata": {"name": name},
            "spec": {
                "ltm": {"url": "http://100.1.8.1/api", "tokenSecretRef": {"namespace": "lbdesk-system", "name": "b-ltm"}, "cidr": format!("10.{n}.0.0/24")},
                "ve": {"addr": format!("200.1.8.{n}"), "credentialsSecretRef": {"namespace": "lbdesk-system", "name": "b-ve"}, "cidr": format!("20.{n}.0.0/24")},
                "cluster": "acp-region01", "partition": name.trim_end_matches("-lb"), "nsselector": {"zone": name},
                "cis": {"namespace": "kube-system"}
            }
        }))?;
        Api::<Loadbalancer>::all(mgmt.clone()).create(&PostParams::default(), &lb).await.context("a load balancer")?;
    }
    // A Service per listener bob adds (a Service serves one listener only).
    let services: Api<Service> = Api::namespaced(member.clone(), "team-b");
    for i in 0..2 * ROUNDS {
        let svc: Service = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": format!("svc-{i:03}")},
            "spec": {"ports": [{"port": 8080, "protocol": "TCP"}], "selector": {"app": format!("svc-{i:03}")}}
        }))?;
        services.create(&PostParams::default(), &svc).await.with_context(|| format!("svc-{i:03}"))?;
    }
    let tickets: Api<Lbticket> = Api::all(mgmt.clone());
    for (name, project, lb, namespace) in
        [("a1", "project-a", "alice-lb", "team-a"), ("b1", "project-b", "bob-lb", "team-b")]
    {
        let spec = LbticketSpec {
            claimer: "bench".into(),
            loadbalancer: lb.into(),
            namespace: namespace.into(),
            ..Default::default()
        };
        let mut t = Lbticket::new(name, spec);
        t.metadata.labels = Some(
            [(LABEL_PROJECT, project), (LABEL_CLUSTER, "acp-region01"), (LABEL_NAMESPACE, namespace)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        tickets.create(&PostParams::default(), &t).await.with_context(|| format!("create {name}"))?;
    }
    let phase = |name: &'static str| {
        let tickets = tickets.clone();
        async move { Ok::<_, anyhow::Error>(tickets.get(name).await?.status.map(|s| s.phase)) }
    };
    common::wait("both requests Enabled", 60, || async {
        Ok(phase("a1").await? == Some(Phase::Enabled) && phase("b1").await? == Some(Phase::Enabled))
    })
    .await?;
    let alice = common::signed_in(&url, "alice").await?;
    let bob = common::signed_in(&url, "bob").await?;
    let listener = |ticket: &str, port: u16, service: &str| {
        json!({"form": {"ticket": ticket, "name": format!("l{port}"), "port": port, "protocol": "http",
                         "session": "none", "services": [{"service": service, "port": 8080, "weight": 100}]}})
    };
    common::call(&alice, &url, "listener/save", listener("a1", 80, "web-v1")).await?;

    let configmaps: Api<ConfigMap> = Api::namespaced(member.clone(), "kube-system");
    let carries = |tenant: &'static str, item: String| {
        let configmaps = configmaps.clone();
        async move {
            let cm = configmaps.get_opt(&configmap_name(tenant)).await?;
            let template = cm.and_then(|c| c.data).and_then(|mut d| d.remove(TEMPLATE_KEY)).unwrap_or_default();
            Ok::<_, anyhow::Error>(template.contains(&item))
        }
    };
    // One round: bob adds a listener; timed until his tenant's ConfigMap carries it.
    let mut next = 0;
    let round = |next: usize| {
        let (bob, url) = (bob.clone(), url.clone());
        async move {
            let port = 8000 + u16::try_from(next)?;
            let started = Instant::now();
            common::call(&bob, &url, "listener/save", listener("b1", port, &format!("svc-{next:03}"))).await?;
            common::wait("bob's listener carried", 30, || carries("bob", format!("vs_b1_{port}"))).await?;
            Ok::<_, anyhow::Error>(started.elapsed())
        }
    };
    let mut quiet = Vec::new();
    for _ in 0..ROUNDS {
        quiet.push(round(next).await?);
        next += 1;
    }

    // alice's tenant held back: a rule written past the pages makes it too large to write.
    let value = |i: usize| json!({"operator": "equal", "value": format!("{}{}", "\\".repeat(255), i % 10)});
    let conditions: Vec<serde_json::Value> = (0..16)
        .map(|c| json!({"type": "header", "key": format!("X-H{c}"), "values": (0..32).map(value).collect::<Vec<_>>()}))
        .collect();
    let spec: LbruleSpec = serde_json::from_value(json!({
        "lbticket": "a1", "listener": "l80", "priority": 10, "match": "any",
        "services": [{"service": "web-v1", "port": 8080, "weight": 100}], "rules": conditions
    }))?;
    Api::<Lbrule>::all(mgmt.clone()).create(&PostParams::default(), &Lbrule::new("too-large", spec)).await?;
    common::wait("alice's tenant held back", 30, || async {
        let t = tickets.get("a1").await?;
        let conditions = t.status.map(|s| s.conditions).unwrap_or_default();
        Ok(conditions
            .iter()
            .any(|c| c.type_ == "Rendered" && c.status == "False" && c.message.starts_with("held back")))
    })
    .await?;
    let mut frozen = Vec::new();
    for _ in 0..ROUNDS {
        frozen.push(round(next).await?);
        next += 1;
    }
    ensure!(!carries("alice", "X-H15".into()).await?, "alice's tenant was written");

    let p50 = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (q, f) = (p50(quiet.clone()), p50(frozen.clone()));
    println!("bob adds a listener to his tenant, until acp-region01's ConfigMap carries it ({ROUNDS} rounds each):");
    common::report("on a quiet cluster", quiet, "");
    common::report("while alice's tenant on the cluster is held back", frozen, "target: p50 within 1.5× of quiet");
    println!("  ratio of the p50s: {:.2}", f.as_secs_f64() / q.as_secs_f64());
    Ok(())
}
