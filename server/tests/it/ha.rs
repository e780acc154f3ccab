//! High availability, for real: one lbdesk process serves the embedded API on PostgreSQL
//! (without a reconciler), two more run in cluster mode against it with the kubeconfig it
//! prints, electing a leader; the leader is killed with SIGKILL in the middle of 200 ticket
//! creations. Every request converges, no address is handed out twice, the driver sees no
//! second request for a ticket (retries of the same recordID only), and the other replica took
//! over within 15 s.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use app::domain::crd::{Lbaddress, Lbticket, LbticketSpec, Loadbalancer, Phase};
use kube::api::{Api, ListParams, PostParams};
use server::driver::sim::Call;

use crate::helpers::{Backend, TestDb, lb_object, until};
use crate::processes::{Outside, Process, on_free_ports};

const TICKETS: usize = 200;

/// Whether the replica with its metrics at `port` says it leads.
async fn leads(port: u16) -> bool {
    let Ok(res) = reqwest::get(format!("http://127.0.0.1:{port}/metrics")).await else { return false };
    res.text().await.is_ok_and(|t| t.lines().any(|l| l == "lbdesk_leader 1"))
}

fn ticket(i: usize) -> Lbticket {
    Lbticket::new(
        &format!("ha-{i:03}"),
        LbticketSpec {
            claimer: "alice".into(),
            loadbalancer: "ha".into(),
            namespace: "team-a".into(),
            ..Default::default()
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_leader_is_replaced_and_every_request_converges_once() {
    let db = TestDb::new(Backend::Postgres).await;
    let dir = db.dir.path();
    let outside = Outside::start(dir, Some(&db.url)).await;
    let mut replicas: Vec<Option<Process>> = Vec::new();
    let mut ports = Vec::new();
    for i in 0..2 {
        let name = format!("replica-{i}");
        let args = |[port, metrics]: [u16; 2]| {
            let mut args = outside.cluster_mode(&name, Some(&db.url), (port, metrics));
            args.push("--leader-elect".into());
            args
        };
        let (replica, [port, metrics]) =
            on_free_ports(dir, &name, 60, args, |[port, _]| format!("http://127.0.0.1:{port}/healthz")).await;
        replicas.push(Some(replica));
        ports.push((port, metrics));
    }
    until("a leader", 60, || async { leads(ports[0].1).await || leads(ports[1].1).await }).await;

    let mgmt = outside.mgmt().await;
    let lb = lb_object("ha", 66);
    Api::<Loadbalancer>::all(mgmt.clone()).create(&PostParams::default(), &lb).await.expect("lb");
    let tickets: Api<Lbticket> = Api::all(mgmt.clone());
    let mut killed_at = None;
    for i in 0..TICKETS {
        tickets.create(&PostParams::default(), &ticket(i)).await.expect("create");
        if i == TICKETS / 2 {
            let leader = if leads(ports[0].1).await { 0 } else { 1 };
            if let Some(mut p) = replicas[leader].take() {
                p.0.kill().expect("SIGKILL");
                let _ = p.0.wait();
            }
            killed_at = Some((Instant::now(), 1 - leader));
        }
    }
    let (killed, survivor) = killed_at.expect("the leader was killed");
    until("the other replica leads", 30, || leads(ports[survivor].1)).await;
    let takeover = killed.elapsed();

    until("every request Enabled", 180, || async {
        let all = tickets.list(&ListParams::default()).await.map(|l| l.items).unwrap_or_default();
        let ha = all.iter().filter(|t| t.spec.loadbalancer == "ha");
        ha.filter(|t| t.status.as_ref().is_some_and(|s| s.phase == Phase::Enabled)).count() == TICKETS
    })
    .await;
    assert!(takeover < Duration::from_secs(15), "the survivor took over in {takeover:?}");

    let all: Vec<Lbticket> = tickets.list(&ListParams::default()).await.expect("list").items;
    let held: Vec<(String, String)> = all
        .iter()
        .filter(|t| t.spec.loadbalancer == "ha")
        .filter_map(|t| t.status.as_ref().and_then(|s| Some((s.veip.clone()?, s.ltmip.clone()?))))
        .collect();
    let ve: BTreeSet<&String> = held.iter().map(|p| &p.0).collect();
    let ltm: BTreeSet<&String> = held.iter().map(|p| &p.1).collect();
    if (held.len(), ve.len(), ltm.len()) != (TICKETS, TICKETS, TICKETS) {
        let mut by: BTreeMap<&String, Vec<String>> = BTreeMap::new();
        for t in all.iter().filter(|t| t.spec.loadbalancer == "ha") {
            if let Some(v) = t.status.as_ref().and_then(|s| s.veip.as_ref()) {
                by.entry(v).or_default().push(t.metadata.name.clone().unwrap_or_default());
            }
        }
        let twice: Vec<_> = by.iter().filter(|(_, ts)| ts.len() > 1).collect();
        panic!("an address handed out twice: {twice:?}");
    }
    let addresses = Api::<Lbaddress>::all(mgmt.clone())
        .list(&ListParams::default().labels("ebcpaas.io/loadbalancer=ha"))
        .await
        .expect("addresses");
    assert_eq!(addresses.items.len(), 2 * TICKETS, "one object per address, none left over");

    let calls: Vec<Call> = reqwest::get(format!("http://127.0.0.1:{}/_calls", outside.sim))
        .await
        .expect("calls")
        .json()
        .await
        .expect("json");
    let mut records: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for c in calls.iter().filter(|c| c.ticket.starts_with("ha-")) {
        records.entry(c.ticket.as_str()).or_default().insert(c.record_id.as_str());
    }
    assert_eq!(records.len(), TICKETS, "every request reached the driver");
    let twice: Vec<_> = records.iter().filter(|(_, r)| r.len() > 1).collect();
    assert!(twice.is_empty(), "a request sent twice under different recordIDs: {twice:?}");

    drop(replicas);
    let mut started = 0;
    for log in ["embedded", "replica-0", "replica-1", "driver"] {
        let text = std::fs::read_to_string(dir.join(format!("{log}.log"))).unwrap_or_default();
        assert!(!text.contains("panicked"), "{log} panicked:\n{text}");
        assert!(!text.contains("the Lease is not confirmed"), "{log}: two leaders, one fenced off:\n{text}");
        started += text.matches("leading: the reconciler starts").count();
    }
    assert_eq!(started, 2, "one leader, then the other: never two at once");
    println!("takeover after SIGKILL of the leader: {:.1} s", takeover.as_secs_f64());
}
