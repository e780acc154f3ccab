//! Screen 4 at size: one listener with 100 rules, brought there through the embedded API (its
//! admission checking each rule) and written into the member cluster by the reconciler.
//! Measures the listener's rules page (its data and the whole server-side rendered page), the
//! AS3 preview of a rule (render, validate, diff), and a rule save until the member cluster's
//! ConfigMap carries it.
//! Run: `cargo bench -p server --bench server -- rules`.

use crate::common;

use std::time::Instant;

use anyhow::{Context, ensure};
use app::domain::as3::placement::{TEMPLATE_KEY, configmap_name};
use app::domain::crd::{LABEL_CLUSTER, LABEL_NAMESPACE, LABEL_PROJECT, Lbrule, Lbticket, LbticketSpec, Phase};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const RULES: usize = 100;
const NAMESPACE: &str = "team-a";

fn rule(i: usize, value: &str) -> Value {
    json!({
        "apiVersion": "ebcpaas.io/v1", "kind": "Lbrule", "metadata": {"name": format!("rule-{i:03}")},
        "spec": {"lbticket": "shop", "listener": "web", "priority": 10 * (i + 1),
                 "services": [{"service": "web-v2", "port": 8080, "weight": 100}],
                 "rules": [{"type": "header", "key": "X-Bucket", "values": [{"operator": "equal", "value": value}]}]}
    })
}

#[tokio::main]
pub async fn run() -> anyhow::Result<()> {
    let dir = tempfile::tempdir().context("no temporary directory")?;
    let (url, mgmt, member) = common::embedded(dir.path()).await?;

    // alice's address `shop` on the demo's load balancer, Enabled, with the HTTP listener `web`.
    let tickets: Api<Lbticket> = Api::all(mgmt.clone());
    let spec = LbticketSpec {
        claimer: "alice".into(),
        loadbalancer: "shared-lb".into(),
        namespace: NAMESPACE.into(),
        ..Default::default()
    };
    let mut t = Lbticket::new("shop", spec);
    t.metadata.labels = Some(
        [(LABEL_PROJECT, "project-a"), (LABEL_CLUSTER, "acp-region01"), (LABEL_NAMESPACE, NAMESPACE)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    tickets.create(&PostParams::default(), &t).await.context("create shop")?;
    common::wait("shop Enabled", 30, || async {
        Ok(tickets.get("shop").await?.status.is_some_and(|s| s.phase == Phase::Enabled))
    })
    .await?;
    let listener = json!({"spec": {"listeners": [{"name": "web", "port": 80, "protocol": "http",
        "services": [{"service": "web-v1", "port": 8080, "weight": 100}]}]}});
    tickets.patch("shop", &PatchParams::default(), &Patch::Merge(&listener)).await.context("the listener")?;

    let rules: Api<Lbrule> = Api::all(mgmt.clone());
    for i in 0..RULES {
        let r: Lbrule = serde_json::from_value(rule(i, &format!("v{i:03}")))?;
        rules.create(&PostParams::default(), &r).await.with_context(|| format!("rule {i}"))?;
    }
    let configmaps: Api<ConfigMap> = Api::namespaced(member.clone(), "kube-system");
    let template = || async {
        let cm = configmaps.get_opt(&configmap_name("shared")).await?;
        Ok::<_, anyhow::Error>(cm.and_then(|c| c.data).and_then(|mut d| d.remove(TEMPLATE_KEY)).unwrap_or_default())
    };
    let last = format!("v{:03}", RULES - 1);
    common::wait("the ConfigMap to carry every rule", 60, || async { Ok(template().await?.contains(&last)) }).await?;

    let alice = common::signed_in(&url, "alice").await?;
    let call = |path: &'static str, args: Value| common::call(&alice, &url, path, args);

    println!("one listener with {RULES} rules, {} rounds each:", common::ROUNDS);
    common::measure("POST /api/rule/listener (the rules page's data)", "bytes", || async {
        let body = call("rule/listener", json!({"ticket": "shop", "listener": "web"})).await?;
        ensure!(body.contains("rule-099"), "the page misses rules");
        Ok(body.len())
    })
    .await?;
    common::measure("GET /rules/shop/web (whole server-side rendered page)", "bytes", || async {
        let page = alice.get(format!("{url}/rules/shop/web")).send().await?.text().await?;
        ensure!(page.contains("rule-099"), "the page misses rules");
        Ok(page.len())
    })
    .await?;
    let form = |value: &str, version: Value| {
        json!({"form": {"ticket": "shop", "listener": "web", "name": "rule-050", "match_": "any",
            "conditions": [{"type": "header", "key": "X-Bucket", "values": [{"operator": "equal", "value": value}]}],
            "services": [{"service": "web-v2", "port": 8080, "weight": 100}], "version": version}})
    };
    let version = || async {
        let detail: Value = serde_json::from_str(
            &call("rule/get", json!({"ticket": "shop", "listener": "web", "name": "rule-050"})).await?,
        )?;
        Ok::<_, anyhow::Error>(detail["form"]["version"].clone())
    };
    let v = version().await?;
    common::measure("POST /api/rule/preview (100 rules: render, validate, diff)", "bytes", || async {
        let body = call("rule/preview", form("changed", v.clone())).await?;
        ensure!(body.contains("changed") && body.contains("\"refused\":null"), "no preview");
        Ok(body.len())
    })
    .await?;

    // Save → the member cluster's ConfigMap carries it: one rule's value, back and forth, each
    // timed from the call until the ConfigMap's declaration changed.
    let mut times = Vec::with_capacity(common::ROUNDS);
    for round in 0..common::ROUNDS + 2 {
        let value = if round % 2 == 0 { "even" } else { "odd" };
        let before = template().await?;
        let loaded = version().await?;
        let started = Instant::now();
        call("rule/save", form(value, loaded)).await?;
        common::wait("the ConfigMap to carry the save", 30, || async { Ok(template().await? != before) }).await?;
        if round >= 2 {
            times.push(started.elapsed());
        }
    }
    common::report("rule save → the member cluster's ConfigMap carries it", times, "target p50 < 300 ms");
    Ok(())
}
