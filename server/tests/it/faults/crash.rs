//! kill -9 in the middle of a burst: lbdesk (its embedded API and its reconciler, one process)
//! is killed while 300 address requests are created at once, and started again on the same
//! store, where the clients left without an answer try again. Nothing acknowledged is lost,
//! nothing is invented: every request acknowledged is there, every request converges, no
//! address is held twice, no address object outlives its request, and the audit log holds
//! exactly one "create" for each request stored (none for a try that found it made).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use app::domain::crd::{Lbaddress, Lbquota, Lbticket, Loadbalancer, Phase};
use futures::StreamExt;
use kube::Api;
use kube::api::{ListParams, PostParams};
use serde_json::json;

use crate::helpers::{Backend, TestDb, lb_object, until};
use crate::processes::{Priority, Process, on_free_ports_at};

/// Requests created at once.
const REQUESTS: usize = 300;
/// lbdesk is killed once this many are acknowledged.
const KILL_AFTER: usize = 100;

/// lbdesk in embedded mode on `db`, its driver simulator answering at once.
async fn start(dir: &Path, db: &TestDb, name: &str) -> (Process, kube::Client) {
    let driver = dir.join("driver.yaml");
    std::fs::write(&driver, "runningSeconds: 0\n").expect("the driver's behaviour");
    let store = [format!("--data-dir={}", db.dir.path().display()), format!("--database-url={}", db.url)];
    let args = |[web, api]: [u16; 2]| {
        let mut args = vec![
            "serve".to_string(),
            "--demo".into(),
            format!("--listen=127.0.0.1:{web}"),
            format!("--api-listen=127.0.0.1:{api}"),
            "--metrics-listen=127.0.0.1:0".into(),
            format!("--driver-sim-config={}", driver.display()),
        ];
        args.extend(store.clone());
        args
    };
    // NB: below the rest of the suite: its waits are generous, the others' are not.
    let (process, [_, api]) =
        on_free_ports_at(Priority::Low, dir, name, 120, args, |[web, _]| format!("http://127.0.0.1:{web}/readyz"))
            .await;
    let printed = Command::new(env!("CARGO_BIN_EXE_lbdesk"))
        .args(["kubeconfig".to_string(), format!("--api-listen=127.0.0.1:{api}")])
        .args(&store)
        .output()
        .expect("lbdesk kubeconfig");
    assert!(printed.status.success(), "{}", String::from_utf8_lossy(&printed.stderr));
    let kubeconfig: kube::config::Kubeconfig = serde_yaml::from_slice(&printed.stdout).expect("a kubeconfig");
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.expect("config");
    config.default_retry = false;
    (process, kube::Client::try_from(config).expect("client"))
}

fn request(i: usize) -> Lbticket {
    serde_json::from_value(json!({
        "apiVersion": "ebcpaas.io/v1", "kind": "Lbticket",
        "metadata": {"name": format!("burst-{i:03}"), "labels": {"ebcpaas.io/project": "project-a", "ebcpaas.io/cluster": "acp-region01", "ebcpaas.io/namespace": "team-a"}},
        "spec": {"claimer": "alice", "loadbalancer": "burst", "namespace": "team-a"},
    }))
    .expect("a request")
}

async fn killed_in_a_burst_nothing_is_lost_or_invented(backend: Backend) {
    let db = TestDb::new(backend).await;
    let dir = tempfile::tempdir().expect("a directory for the logs");
    let (mut first, client) = start(dir.path(), &db, "first").await;
    let lb = lb_object("burst", 70);
    Api::<Loadbalancer>::all(client.clone()).create(&PostParams::default(), &lb).await.expect("the load balancer");
    let roomy: Lbquota =
        serde_json::from_value(json!({"metadata": {"name": "project-a"}, "spec": {"addressesPerLoadbalancer": 1000}}))
            .expect("a quota");
    Api::<Lbquota>::all(client.clone()).create(&PostParams::default(), &roomy).await.expect("the quota");

    let tickets: Api<Lbticket> = Api::all(client.clone());
    let mut acknowledged = BTreeSet::new();
    let mut creates = futures::stream::iter(0..REQUESTS)
        .map(|i| {
            let tickets = tickets.clone();
            async move { (i, tickets.create(&PostParams::default(), &request(i)).await) }
        })
        .buffer_unordered(32);
    while let Some((i, answer)) = creates.next().await {
        if answer.is_ok() {
            acknowledged.insert(format!("burst-{i:03}"));
        }
        if acknowledged.len() == KILL_AFTER {
            first.0.kill().expect("kill -9");
            let _ = first.0.wait();
        }
    }
    drop(creates);
    assert!(acknowledged.len() >= KILL_AFTER, "the burst reached lbdesk: {}", acknowledged.len());
    let killed_log = std::fs::read_to_string(dir.path().join("first.log")).unwrap_or_default();
    assert!(!killed_log.contains("panicked"), "{killed_log}");

    let (second, client) = start(dir.path(), &db, "second").await;
    let tickets: Api<Lbticket> = Api::all(client.clone());
    let burst =
        |all: Vec<Lbticket>| -> Vec<Lbticket> { all.into_iter().filter(|t| t.spec.loadbalancer == "burst").collect() };
    let stored = burst(tickets.list(&ListParams::default()).await.expect("list").items);
    let names: BTreeSet<String> = stored.iter().filter_map(|t| t.metadata.name.clone()).collect();
    let lost: Vec<&String> = acknowledged.difference(&names).collect();
    assert!(lost.is_empty(), "acknowledged and lost: {lost:?}");
    // The clients whose creates got no answer try again, as kubectl's user would: those the
    // store committed before the kill are already there (409), the others are made now.
    for i in (0..REQUESTS).filter(|i| !acknowledged.contains(&format!("burst-{i:03}"))) {
        match tickets.create(&PostParams::default(), &request(i)).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 => assert!(names.contains(&format!("burst-{i:03}")), "{e:?}"),
            Err(e) => panic!("burst-{i:03} tried again: {e}"),
        }
    }

    until("every stored request Enabled", 180, || async {
        let all = burst(tickets.list(&ListParams::default()).await.map(|l| l.items).unwrap_or_default());
        all.iter().all(|t| t.status.as_ref().is_some_and(|s| s.phase == Phase::Enabled))
    })
    .await;
    let all = burst(tickets.list(&ListParams::default()).await.expect("list").items);
    let held: BTreeMap<String, (String, String)> = all
        .iter()
        .filter_map(|t| {
            let s = t.status.as_ref()?;
            Some((t.metadata.name.clone()?, (s.veip.clone()?, s.ltmip.clone()?)))
        })
        .collect();
    let ve: BTreeSet<&String> = held.values().map(|p| &p.0).collect();
    let ltm: BTreeSet<&String> = held.values().map(|p| &p.1).collect();
    assert_eq!((ve.len(), ltm.len()), (all.len(), all.len()), "no address held twice");
    let addresses = Api::<Lbaddress>::all(client.clone()).list(&ListParams::default()).await.expect("addresses").items;
    let ours: Vec<&Lbaddress> = addresses.iter().filter(|a| a.spec.loadbalancer == "burst").collect();
    let orphans: Vec<&str> =
        ours.iter().filter(|a| !held.contains_key(&a.spec.ticket)).map(|a| a.spec.ticket.as_str()).collect();
    assert!(orphans.is_empty(), "address objects of no request: {orphans:?}");
    assert_eq!(ours.len(), 2 * all.len(), "one object per address of each pair");

    let audit = db.connect().await;
    let rows: Vec<(String, i64)> = sqlx::query_as(
        "SELECT name, COUNT(*) FROM audit WHERE kind = 'Lbticket' AND action = 'create' AND name LIKE 'burst-%' GROUP BY name",
    )
    .fetch_all(&audit.pool)
    .await
    .expect("the audit log");
    let created: BTreeMap<String, i64> = rows.into_iter().collect();
    let twice: Vec<(&String, &i64)> = created.iter().filter(|(_, n)| **n != 1).collect();
    assert!(twice.is_empty(), "a request created once recorded otherwise: {twice:?}");
    let recorded: BTreeSet<&String> = created.keys().collect();
    let stored: BTreeSet<&String> = held.keys().collect();
    assert_eq!(recorded.len(), REQUESTS, "every request, made before the kill or tried again after it");
    assert_eq!(recorded, stored, "one create recorded per request stored, none for a write that did not commit");
    drop(second);
    for log in ["first", "second"] {
        let text = std::fs::read_to_string(dir.path().join(format!("{log}.log"))).unwrap_or_default();
        assert!(!text.contains("panicked"), "{log} panicked:\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_in_a_burst_nothing_is_lost_or_invented_on_sqlite() {
    killed_in_a_burst_nothing_is_lost_or_invented(Backend::Sqlite).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_in_a_burst_nothing_is_lost_or_invented_on_postgres() {
    killed_in_a_burst_nothing_is_lost_or_invented(Backend::Postgres).await
}
