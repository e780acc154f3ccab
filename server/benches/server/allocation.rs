//! One load balancer at bank scale: a /16 VE range and a /16 LTM range, 20,000 address
//! requests created at once, the driver simulator answering at once. Prints how long they take
//! to be Enabled (allocations a second), that none Failed and none holds an address twice, the
//! largest object written (the Loadbalancer and an address object), and ticket create → Enabled
//! with 1,000 pairs held and with 20,000. Run: `cargo bench -p server --bench server -- allocation`.

use crate::common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use app::domain::crd::{
    LABEL_CLUSTER, LABEL_NAMESPACE, LABEL_PROJECT, Lbaddress, Lbticket, LbticketSpec, Loadbalancer, Phase,
};
use kube::Client;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;

/// Requests created at once.
const BURST: usize = 20_000;
/// Pairs held when the first latency is measured.
const FEW: usize = 1_000;
/// Creations timed one after the other, at each size.
const TIMED: usize = 50;
/// The label of this benchmark's requests (the demo's own are not counted).
const BENCH: (&str, &str) = ("bench", "allocation");
/// Clients creating the burst.
const WRITERS: usize = 16;

fn ticket(name: &str) -> Lbticket {
    let mut t = Lbticket::new(
        name,
        LbticketSpec {
            claimer: "alice".into(),
            loadbalancer: "big".into(),
            namespace: "team-a".into(),
            ..Default::default()
        },
    );
    t.metadata.labels = Some(
        [
            (LABEL_PROJECT, "project-a"),
            (LABEL_CLUSTER, "acp-region01"),
            (LABEL_NAMESPACE, "team-a"),
            (BENCH.0, BENCH.1),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
    );
    t
}

/// Creates `from..to` with `WRITERS` clients at once.
async fn create_all(tickets: &Api<Lbticket>, from: usize, to: usize) -> anyhow::Result<()> {
    let tickets = tickets.clone();
    common::spread(WRITERS, from..to, move |i| {
        let api = tickets.clone();
        async move {
            api.create(&PostParams::default(), &ticket(&format!("r-{i:05}"))).await.context("create")?;
            Ok(())
        }
    })
    .await
}

/// How many requests are Enabled and how many Failed (with the first failure's message).
async fn phases(tickets: &Api<Lbticket>) -> anyhow::Result<(usize, usize, Option<String>)> {
    let all = tickets.list(&ListParams::default().labels(&format!("{}={}", BENCH.0, BENCH.1))).await?.items;
    let status = |p: Phase| all.iter().filter(move |t| t.status.as_ref().is_some_and(|s| s.phase == p));
    let failure = status(Phase::Failed).next().and_then(|t| t.status.as_ref()).map(|s| s.message.clone());
    Ok((status(Phase::Enabled).count(), status(Phase::Failed).count(), failure))
}

/// Waits until `n` requests of the burst are Enabled; fails at the first Failed one.
async fn all_enabled(tickets: &Api<Lbticket>, n: usize, seconds: u64) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    loop {
        let (enabled, failed, why) = phases(tickets).await?;
        ensure!(failed == 0, "{failed} requests Failed, the first with: {why:?}");
        if enabled >= n {
            return Ok(());
        }
        ensure!(Instant::now() < deadline, "only {enabled} of {n} Enabled after {seconds} s");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Ticket create → Enabled, `TIMED` times one after the other, named `prefix-n`.
async fn create_to_enabled(tickets: &Api<Lbticket>, prefix: &str) -> anyhow::Result<Vec<Duration>> {
    let mut times = Vec::with_capacity(TIMED);
    for n in 0..TIMED {
        let name = format!("{prefix}-{n:03}");
        let started = Instant::now();
        tickets.create(&PostParams::default(), &ticket(&name)).await?;
        common::wait(&format!("{name} Enabled"), 30, || async {
            Ok(tickets.get(&name).await?.status.is_some_and(|s| s.phase == Phase::Enabled))
        })
        .await?;
        times.push(started.elapsed());
    }
    Ok(times)
}

fn p50(times: &[Duration]) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    sorted[sorted.len() / 2]
}

/// The largest object of each kind, as JSON bytes.
async fn largest(mgmt: &Client) -> anyhow::Result<(usize, usize)> {
    let lb = Api::<Loadbalancer>::all(mgmt.clone()).get("big").await?;
    let addresses =
        Api::<Lbaddress>::all(mgmt.clone()).list(&ListParams::default().labels("ebcpaas.io/loadbalancer=big")).await?;
    let mut address = 0;
    for a in &addresses.items {
        address = address.max(serde_json::to_vec(a)?.len());
    }
    Ok((serde_json::to_vec(&lb)?.len(), address))
}

#[tokio::main]
pub async fn run() -> anyhow::Result<()> {
    let dir = tempfile::tempdir().context("no temporary directory")?;
    let (_, mgmt, _) = common::embedded(dir.path()).await?;
    let lb: Loadbalancer = serde_json::from_value(json!({
        "apiVersion": "ebcpaas.io/v1", "kind": "Loadbalancer", "metadata": {"name": "big"},
        "spec": {
            "ltm": {"url": "http://100.1.7.1/api", "tokenSecretRef": {"namespace": "lbdesk-system", "name": "big-ltm"}, "cidr": "10.70.0.0/16"},
            "ve": {"addr": "200.1.7.1", "credentialsSecretRef": {"namespace": "lbdesk-system", "name": "big-ve"}, "cidr": "20.70.0.0/16"},
            "cluster": "acp-region01", "partition": "big", "cis": {"namespace": "kube-system"}
        }
    }))?;
    Api::<Loadbalancer>::all(mgmt.clone()).create(&PostParams::default(), &lb).await.context("big")?;
    let tickets: Api<Lbticket> = Api::all(mgmt.clone());

    println!("one load balancer, /16 VE and /16 LTM ranges, the simulator answering at once");
    let started = Instant::now();
    create_all(&tickets, 0, FEW).await?;
    all_enabled(&tickets, FEW, 600).await?;
    println!("  {FEW} requests created at once → all Enabled in {:.1} s", started.elapsed().as_secs_f64());
    let few = create_to_enabled(&tickets, "few").await?;
    common::report(&format!("ticket create → Enabled, {} pairs held", FEW + TIMED / 2), few.clone(), "one at a time");

    let started = Instant::now();
    create_all(&tickets, FEW, BURST).await?;
    let created = started.elapsed();
    all_enabled(&tickets, BURST + TIMED, 3600).await?;
    let elapsed = started.elapsed();
    println!(
        "  {} more requests created at once (in {:.1} s) → all {} Enabled in {:.1} s: {:.0} allocations a second (target ≥ 100)",
        BURST - FEW,
        created.as_secs_f64(),
        BURST + TIMED,
        elapsed.as_secs_f64(),
        (BURST - FEW) as f64 / elapsed.as_secs_f64()
    );
    let all = tickets.list(&ListParams::default().labels(&format!("{}={}", BENCH.0, BENCH.1))).await?.items;
    let held: Vec<(String, String)> =
        all.iter().filter_map(|t| t.status.as_ref().and_then(|s| Some((s.veip.clone()?, s.ltmip.clone()?)))).collect();
    let (ve, ltm): (BTreeSet<_>, BTreeSet<_>) =
        (held.iter().map(|p| &p.0).collect(), held.iter().map(|p| &p.1).collect());
    ensure!(ve.len() == held.len() && ltm.len() == held.len(), "an address is held twice");
    println!("  none Failed; {} pairs held, no address twice", held.len());
    let (lb_bytes, address_bytes) = largest(&mgmt).await?;
    println!("  largest objects: the Loadbalancer {lb_bytes} B, an address object {address_bytes} B (limit 65,536 B)");
    ensure!(lb_bytes < 65_536 && address_bytes < 65_536, "an object is over 64 KB");

    let many = create_to_enabled(&tickets, "many").await?;
    common::report(
        &format!("ticket create → Enabled, {} pairs held", BURST + TIMED + TIMED / 2),
        many.clone(),
        "one at a time",
    );
    let ratio = p50(&many).as_secs_f64() / p50(&few).as_secs_f64();
    println!("  p50 at {} pairs / p50 at {FEW}: {ratio:.2} (target ≤ 1.5)", BURST + TIMED);
    Ok(())
}
