//! The reconciler at size: 10,000 Enabled tickets over 200 namespaces and 5 tenants (500 of
//! them with a listener), the simulator answering at once. Prints: a full resync with nothing
//! changed (time, writes), ticket create → its ConfigMap written (p50, p99 over 200), and the
//! resident memory. Run: `cargo bench -p server --bench server -- reconciler`.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use app::domain::crd::{
    BondState, DriverState, HistoryEntry, IpPair, Lbticket, LbticketSpec, LbticketStatus, Listener, Loadbalancer,
    LoadbalancerStatus, Phase, PolicyStatus, Protocol, ServiceRef, Session,
};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::Client;
use kube::api::{Api, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use serde_json::json;
use server::reconciler::{self, Config, Context};

const TICKETS: usize = 10_000;
const TENANTS: usize = 5;
const NAMESPACES: usize = 200;
const WITH_LISTENER: usize = 100;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn addresses(lb: usize, k: usize) -> (String, String) {
    (format!("20.{lb}.{}.{}", k / 250, k % 250 + 1), format!("10.{lb}.{}.{}", k / 250, k % 250 + 1))
}

fn listener(name: &str) -> Vec<Listener> {
    vec![Listener {
        name: "web".into(),
        port: 80,
        protocol: Protocol::Http,
        session: Session::Cookie,
        services: vec![ServiceRef { service: format!("svc-{name}"), port: 8080, weight: 100 }],
    }]
}

async fn versions(mgmt: &Client, member: &Client) -> (String, String) {
    let v = |c: Client| async move {
        Api::<Namespace>::all(c)
            .list(&ListParams::default().limit(1))
            .await
            .expect("list")
            .metadata
            .resource_version
            .unwrap_or_default()
    };
    (v(mgmt.clone()).await, v(member.clone()).await)
}

fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .unwrap_or(0.0)
        / 1024.0
}

/// The cluster syncs `ctx` has timed so far: how many, and their seconds in all (from its
/// metrics, as Prometheus would read them).
fn syncs_timed(ctx: &reconciler::Context) -> (f64, f64) {
    let text = ctx.metrics.render();
    let value = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix("{kind=\"sync\"} "))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (value("lbdesk_reconcile_duration_seconds_count"), value("lbdesk_reconcile_duration_seconds_sum"))
}

/// Waits until the reconciler has handled at least `n` tickets and then gone quiet.
async fn settle(ctx: &reconciler::Context, n: u64) {
    loop {
        let before = (ctx.counters.reconciles.load(Ordering::Relaxed), ctx.counters.syncs.load(Ordering::Relaxed));
        tokio::time::sleep(Duration::from_millis(500)).await;
        let after = (ctx.counters.reconciles.load(Ordering::Relaxed), ctx.counters.syncs.load(Ordering::Relaxed));
        if after.0 >= n && after.1 >= 1 && before == after {
            return;
        }
    }
}

#[tokio::main]
pub async fn run() -> anyhow::Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let args = common::args(dir.path())?;
    let common::Started { kubeconfig, clusters, driver, .. } = common::start(args).await?;
    let mgmt = common::client(&kubeconfig, "mgmt").await?;
    let member = common::client(&kubeconfig, "acp-region01").await?;

    // The state: namespaces, 5 Loadbalancers (one tenant each), 10,000 Enabled tickets.
    let started = Instant::now();
    let namespaces: Api<Namespace> = Api::all(member.clone());
    for n in 0..NAMESPACES {
        let ns = Namespace {
            metadata: ObjectMeta { name: Some(format!("ns-{n:03}")), ..Default::default() },
            ..Default::default()
        };
        namespaces.create(&PostParams::default(), &ns).await.expect("namespace");
    }
    let lbs: Api<Loadbalancer> = Api::all(mgmt.clone());
    for t in 1..=TENANTS {
        let lb: Loadbalancer = serde_json::from_value(json!({
            "apiVersion": "ebcpaas.io/v1", "kind": "Loadbalancer", "metadata": {"name": format!("lb-{t}")},
            "spec": {
                "ltm": {"url": "http://100.1.1.1/api", "tokenSecretRef": {"namespace": "lbdesk-system", "name": "ltm"}, "cidr": format!("10.{t}.0.0/16")},
                "ve": {"addr": format!("200.1.1.{t}"), "credentialsSecretRef": {"namespace": "lbdesk-system", "name": "ve"}, "cidr": format!("20.{t}.0.0/16")},
                "cluster": "acp-region01", "partition": format!("t{t}"), "nsselector": {"zone": format!("z{t}")}, "cis": {"namespace": "kube-system"}
            }
        }))
        .expect("lb");
        lbs.create(&PostParams::default(), &lb).await.expect("create lb");
    }
    // NB: statuses are lbdesk's alone to write: the tickets' and load balancers' are written as
    // lbdesk.
    let tickets: Api<Lbticket> = Api::all(clusters.mgmt().clone());
    let writer = tickets.clone();
    common::spread(8, 0..TICKETS, move |i| {
        let api = writer.clone();
        async move {
            let (lb, k) = (i % TENANTS + 1, i / TENANTS);
            let name = format!("t-{i:05}");
            let (veip, ltmip) = addresses(lb, k);
            let spec = LbticketSpec {
                claimer: "alice".into(),
                loadbalancer: format!("lb-{lb}"),
                namespace: format!("ns-{:03}", i % NAMESPACES),
                listeners: if k < WITH_LISTENER { listener(&name) } else { vec![] },
                ..Default::default()
            };
            api.create(&PostParams::default(), &Lbticket::new(&name, spec)).await.context("ticket")?;
            let status = LbticketStatus {
                phase: Phase::Enabled,
                veip: Some(veip),
                ltmip: Some(ltmip),
                policy: Some(PolicyStatus { state: Some(DriverState::Succ), ..PolicyStatus::new(format!("{name}-1")) }),
                observed_generation: Some(1),
                history: vec![HistoryEntry {
                    phase: Phase::Enabled,
                    at: "2026-01-01T00:00:00Z".into(),
                    message: String::new(),
                    by: "lbdesk".into(),
                }],
                ..Default::default()
            };
            api.patch_status(&name, &PatchParams::default(), &Patch::Merge(json!({"status": status})))
                .await
                .context("status")?;
            Ok(())
        }
    })
    .await?;
    for t in 1..=TENANTS {
        let mut lb = lbs.get(&format!("lb-{t}")).await.expect("lb");
        let ips: Vec<IpPair> = (0..TICKETS / TENANTS)
            .map(|k| {
                let (veip, ltmip) = addresses(t, k);
                IpPair { veip, ltmip, ticket: format!("t-{:05}", k * TENANTS + t - 1), status: BondState::Bond }
            })
            .collect();
        lb.status = Some(LoadbalancerStatus { ips, ..Default::default() });
        Api::<Loadbalancer>::all(clusters.mgmt().clone())
            .replace_status(&format!("lb-{t}"), &PostParams::default(), &lb)
            .await
            .expect("lb status");
    }
    println!(
        "setup: {NAMESPACES} namespaces, {TENANTS} tenants, {TICKETS} Enabled tickets ({} with a listener) in {:.1} s",
        WITH_LISTENER * TENANTS,
        started.elapsed().as_secs_f64()
    );

    // First pass: finalizers, ConfigMaps and labels get written.
    let config = Config {
        ensure_every: Duration::from_secs(3600),
        ingress_class: app::domain::cis_ingress::DEFAULT_CLASS.into(),
        retry_ceiling: Duration::from_secs(60),
        // NB: BIG-IP read-back is measured in its own benchmark; here it finds none, at once.
        bigip_every: Duration::from_secs(3600),
        bigip_url: Some("http://127.0.0.1:9".into()),
    };
    let started = Instant::now();
    let first = Arc::new(Context::new(clusters.clone(), driver.clone(), config.clone()));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let first_run = tokio::spawn(reconciler::controllers::run(first.clone(), async move {
        let _ = stopped.await;
    }));
    settle(&first, TICKETS as u64).await;
    println!("first pass (writes everything): {:.1} s", started.elapsed().as_secs_f64());
    drop(stop);
    first_run.await.expect("the first reconciler stops");

    // A full resync with nothing changed: a new reconciler goes through every object.
    let before = versions(&mgmt, &member).await;
    let started = Instant::now();
    let second = Arc::new(Context::new(clusters.clone(), driver.clone(), config));
    let second_run = tokio::spawn(reconciler::controllers::run(second.clone(), std::future::pending()));
    settle(&second, TICKETS as u64).await;
    let resync = started.elapsed() - Duration::from_millis(500);
    let after = versions(&mgmt, &member).await;
    let writes = after.0.parse::<i64>().unwrap_or(0) - before.0.parse::<i64>().unwrap_or(0)
        + after.1.parse::<i64>().unwrap_or(0)
        - before.1.parse::<i64>().unwrap_or(0);
    println!(
        "full resync with nothing changed: {:.2} s for {} ticket reconciles and {} cluster syncs; {writes} writes",
        resync.as_secs_f64(),
        second.counters.reconciles.load(Ordering::Relaxed),
        second.counters.syncs.load(Ordering::Relaxed)
    );

    // Ticket create → its virtual server in the tenant's ConfigMap, 200 times.
    let cms: Api<ConfigMap> = Api::namespaced(member.clone(), "kube-system");
    let mut latencies = Vec::new();
    let syncs_before = syncs_timed(&second);
    for n in 0..200 {
        let t = n % TENANTS + 1;
        let name = format!("new-{n:03}");
        let rv = cms
            .list(&ListParams::default().limit(1))
            .await
            .expect("list")
            .metadata
            .resource_version
            .unwrap_or_default();
        let mut watch = cms
            .watch(&kube::api::WatchParams::default().fields(&format!("metadata.name=lbdesk-as3-t{t}")), &rv)
            .await
            .expect("watch")
            .boxed();
        let spec = LbticketSpec {
            claimer: "alice".into(),
            loadbalancer: format!("lb-{t}"),
            namespace: format!("ns-{:03}", n % NAMESPACES),
            listeners: listener(&name),
            ..Default::default()
        };
        let begun = Instant::now();
        tickets.create(&PostParams::default(), &Lbticket::new(&name, spec)).await.expect("ticket");
        let needle = format!("vs_{name}_80");
        if n < 3 {
            let mut seen = Vec::new();
            while seen.len() < 3 {
                let p = tickets.get(&name).await.ok().and_then(|t| t.status).map(|s| s.phase);
                if seen.last().map(|(q, _)| q) != Some(&p) {
                    seen.push((p, begun.elapsed()));
                }
                if p == Some(Phase::Enabled) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            eprintln!("{name}: {seen:?}");
        }
        loop {
            match tokio::time::timeout(Duration::from_secs(30), watch.next()).await {
                Ok(Some(Ok(kube::api::WatchEvent::Modified(cm)))) => {
                    if cm.data.and_then(|d| d.get("template").cloned()).is_some_and(|t| t.contains(&needle)) {
                        break;
                    }
                }
                Ok(Some(Ok(_))) => continue,
                other => panic!("no ConfigMap for {name}: {other:?}"),
            }
        }
        latencies.push(begun.elapsed());
    }
    latencies.sort();
    println!(
        "ticket create → its ConfigMap written (200 creations): p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        ms(latencies[99]),
        ms(latencies[197]),
        ms(latencies[199])
    );
    let syncs_after = syncs_timed(&second);
    let (syncs, seconds) = (syncs_after.0 - syncs_before.0, syncs_after.1 - syncs_before.1);
    println!(
        "cluster syncs meanwhile: {syncs:.0} ({:.2} per creation), {:.1} ms each on average",
        syncs / 200.0,
        seconds * 1000.0 / syncs.max(1.0)
    );
    println!(
        "resident memory of the process (lbdesk serve, reconciler and this benchmark's clients): {:.0} MiB",
        rss_mib()
    );
    second_run.abort();
    Ok(())
}
