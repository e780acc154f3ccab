//! The embedded API's cost, against the same operations done directly through sqlx on the same
//! SQLite file. Run: `cargo bench -p server --bench server -- embedded_api` (prints the figures).

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use app::domain::crd::{Lbticket, LbticketSpec};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;

const TICKETS: usize = 10_000;
const WRITERS: usize = 8;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn ticket(i: usize) -> Lbticket {
    let mut t = Lbticket::new(
        &format!("bench-{i:05}"),
        LbticketSpec {
            claimer: "alice".into(),
            loadbalancer: "demo".into(),
            namespace: "team-a".into(),
            ..Default::default()
        },
    );
    let project = if i.is_multiple_of(2) { "project-a" } else { "project-b" };
    t.metadata.labels = Some([("ebcpaas.io/project".to_string(), project.to_string())].into());
    t
}

#[tokio::main]
pub async fn run() -> anyhow::Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let args = common::args(dir.path())?;
    let common::Started { kubeconfig, db, .. } = common::start(args).await?;
    let pool = db.pool;
    let mgmt = common::client(&kubeconfig, "mgmt").await?;
    let tickets: Api<Lbticket> = Api::all(mgmt.clone());
    println!("embedded API on SQLite, {} cores", std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));

    // 1. Create 10,000 Lbtickets, 8 writers.
    let started = Instant::now();
    let api = tickets.clone();
    common::spread(WRITERS, 0..TICKETS, move |i| {
        let api = api.clone();
        async move {
            api.create(&PostParams::default(), &ticket(i)).await.expect("create");
            Ok(())
        }
    })
    .await?;
    let api_create = started.elapsed();
    sqlx::query("CREATE TABLE bench_direct (name TEXT PRIMARY KEY, labels TEXT NOT NULL, body TEXT NOT NULL)")
        .execute(&pool)
        .await
        .expect("table");
    let started = Instant::now();
    let writer_pool = pool.clone();
    common::spread(WRITERS, 0..TICKETS, move |i| {
        let pool = writer_pool.clone();
        async move {
            let t = ticket(i);
            let labels = serde_json::to_string(&t.metadata.labels).expect("labels");
            let body = serde_json::to_string(&t).expect("body");
            sqlx::query("INSERT INTO bench_direct (name, labels, body) VALUES ($1, $2, $3)")
                .bind(format!("bench-{i:05}"))
                .bind(labels)
                .bind(body)
                .execute(&pool)
                .await
                .expect("insert");
            Ok(())
        }
    })
    .await?;
    let direct_create = started.elapsed();
    // The same storage work as an API server's create, directly: one writer at a time, a
    // transaction that checks the name, stores the object and logs the event.
    sqlx::query("CREATE TABLE bench_objects (name TEXT PRIMARY KEY, rv BIGINT NOT NULL, labels TEXT NOT NULL, body TEXT NOT NULL)")
        .execute(&pool)
        .await
        .expect("table");
    sqlx::query("CREATE TABLE bench_events (rv BIGINT PRIMARY KEY, name TEXT NOT NULL, body TEXT NOT NULL)")
        .execute(&pool)
        .await
        .expect("table");
    let sequence = Arc::new(tokio::sync::Mutex::new(0i64));
    let started = Instant::now();
    let writer_pool = pool.clone();
    common::spread(WRITERS, 0..TICKETS, move |i| {
        let (pool, sequence) = (writer_pool.clone(), sequence.clone());
        async move {
            let t = ticket(i);
            let (name, labels, body) = (
                format!("bench-{i:05}"),
                serde_json::to_string(&t.metadata.labels).expect("labels"),
                serde_json::to_string(&t).expect("body"),
            );
            let mut last = sequence.lock().await;
            let exists: Option<(String,)> = sqlx::query_as("SELECT body FROM bench_objects WHERE name = $1")
                .bind(&name)
                .fetch_optional(&pool)
                .await
                .expect("get");
            assert!(exists.is_none());
            let rv = *last + 1;
            let mut tx = pool.begin().await.expect("begin");
            sqlx::query("INSERT INTO bench_objects (name, rv, labels, body) VALUES ($1, $2, $3, $4)")
                .bind(&name)
                .bind(rv)
                .bind(&labels)
                .bind(&body)
                .execute(&mut *tx)
                .await
                .expect("insert");
            sqlx::query("INSERT INTO bench_events (rv, name, body) VALUES ($1, $2, $3)")
                .bind(rv)
                .bind(&name)
                .bind(&body)
                .execute(&mut *tx)
                .await
                .expect("event");
            tx.commit().await.expect("commit");
            *last = rv;
            Ok(())
        }
    })
    .await?;
    let direct_store = started.elapsed();
    println!(
        "create {TICKETS} Lbtickets ({WRITERS} writers): API {:.2} s ({:.0}/s, {:.3} ms each); sqlx bare INSERT {:.2} s (ratio {:.2}); sqlx with the API server's storage work (name check, object, event, one writer) {:.2} s (ratio {:.2})",
        api_create.as_secs_f64(),
        TICKETS as f64 / api_create.as_secs_f64(),
        ms(api_create) / TICKETS as f64,
        direct_create.as_secs_f64(),
        api_create.as_secs_f64() / direct_create.as_secs_f64(),
        direct_store.as_secs_f64(),
        api_create.as_secs_f64() / direct_store.as_secs_f64()
    );

    // 2. List all with a label selector (half match), raw response, median of 15.
    let mut api_lists = Vec::new();
    let mut direct_lists = Vec::new();
    let mut matched = 0;
    for _ in 0..15 {
        let request =
            http::Request::get("/apis/ebcpaas.io/v1/lbtickets?labelSelector=ebcpaas.io%2Fproject%3Dproject-a")
                .body(Vec::new())
                .expect("request");
        let t = Instant::now();
        let text = mgmt.request_text(request).await.expect("list");
        api_lists.push(t.elapsed());
        matched = text.matches("\"kind\":\"Lbticket\"").count();
        let t = Instant::now();
        let rows: Vec<(String, String)> = sqlx::query_as("SELECT labels, body FROM bench_direct ORDER BY name")
            .fetch_all(&pool)
            .await
            .expect("select");
        let hits = rows
            .iter()
            .filter(|(labels, _)| {
                serde_json::from_str::<std::collections::BTreeMap<String, String>>(labels)
                    .is_ok_and(|l| l.get("ebcpaas.io/project").map(String::as_str) == Some("project-a"))
            })
            .count();
        direct_lists.push(t.elapsed());
        assert_eq!(hits, TICKETS / 2);
    }
    api_lists.sort();
    direct_lists.sort();
    assert_eq!(matched, TICKETS / 2, "the selector matched half");
    println!(
        "list {TICKETS} with labelSelector ({} match): API median {:.1} ms; sqlx SELECT + filter median {:.1} ms; ratio {:.2}",
        TICKETS / 2,
        ms(percentile(&api_lists, 0.5)),
        ms(percentile(&direct_lists, 0.5)),
        percentile(&api_lists, 0.5).as_secs_f64() / percentile(&direct_lists, 0.5).as_secs_f64()
    );

    // 3. Watch latency: from the start of a write to the event at a subscriber, 1,000 writes.
    let cms: Api<ConfigMap> = Api::namespaced(common::client(&kubeconfig, "acp-region01").await?, "team-a");
    let cm =
        ConfigMap { metadata: ObjectMeta { name: Some("watched".into()), ..Default::default() }, ..Default::default() };
    let rv = cms.create(&PostParams::default(), &cm).await.expect("create").metadata.resource_version.expect("rv");
    let mut events =
        cms.watch(&WatchParams::default().fields("metadata.name=watched"), &rv).await.expect("watch").boxed();
    let mut latencies = Vec::new();
    let mut write_only = Vec::new();
    for i in 0..1000 {
        let t = Instant::now();
        cms.patch("watched", &PatchParams::default(), &Patch::Merge(json!({"data": {"i": i.to_string()}})))
            .await
            .expect("patch");
        write_only.push(t.elapsed());
        loop {
            match events.try_next().await.expect("event") {
                Some(WatchEvent::Modified(_)) => break,
                Some(_) => continue,
                None => panic!("the watch ended"),
            }
        }
        latencies.push(t.elapsed());
    }
    latencies.sort();
    write_only.sort();
    let mut direct_writes = Vec::new();
    for i in 0..1000 {
        let t = Instant::now();
        sqlx::query("UPDATE bench_direct SET body = $1 WHERE name = 'bench-00000'")
            .bind(i.to_string())
            .execute(&pool)
            .await
            .expect("update");
        direct_writes.push(t.elapsed());
    }
    direct_writes.sort();
    println!(
        "watch: write start → event at the subscriber p50 {:.2} ms, p99 {:.2} ms (the write alone: p50 {:.2} ms, p99 {:.2} ms); sqlx UPDATE p50 {:.3} ms, p99 {:.3} ms; ratio p99 {:.2}",
        ms(percentile(&latencies, 0.5)),
        ms(percentile(&latencies, 0.99)),
        ms(percentile(&write_only, 0.5)),
        ms(percentile(&write_only, 0.99)),
        ms(percentile(&direct_writes, 0.5)),
        ms(percentile(&direct_writes, 0.99)),
        percentile(&latencies, 0.99).as_secs_f64() / percentile(&direct_writes, 0.99).as_secs_f64()
    );

    // 4. 50 clients, 20 increments each, replace with conflict retry on one object.
    let counter = ConfigMap {
        metadata: ObjectMeta { name: Some("counter".into()), ..Default::default() },
        data: Some([("n".to_string(), "0".to_string())].into()),
        ..Default::default()
    };
    cms.create(&PostParams::default(), &counter).await.expect("create");
    let conflicts = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut clients = Vec::new();
    for _ in 0..50 {
        let (cms, conflicts) = (cms.clone(), conflicts.clone());
        clients.push(tokio::spawn(async move {
            for _ in 0..20 {
                loop {
                    let mut cm = cms.get("counter").await.expect("get");
                    let n: u64 = cm.data.as_ref().and_then(|d| d.get("n")).and_then(|n| n.parse().ok()).unwrap_or(0);
                    cm.data = Some([("n".to_string(), (n + 1).to_string())].into());
                    match cms.replace("counter", &PostParams::default(), &cm).await {
                        Ok(_) => break,
                        Err(kube::Error::Api(e)) if e.code == 409 => {
                            conflicts.fetch_add(1, Ordering::SeqCst);
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
            }
        }));
    }
    for c in clients {
        c.await.expect("client");
    }
    let api_cas = started.elapsed();
    let final_n = cms.get("counter").await.expect("get").data.and_then(|d| d.get("n").cloned()).unwrap_or_default();
    sqlx::query("CREATE TABLE bench_counter (id INTEGER PRIMARY KEY, n BIGINT NOT NULL, rv BIGINT NOT NULL)")
        .execute(&pool)
        .await
        .expect("t");
    sqlx::query("INSERT INTO bench_counter (id, n, rv) VALUES (1, 0, 0)").execute(&pool).await.expect("row");
    let direct_conflicts = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut clients = Vec::new();
    for _ in 0..50 {
        let (pool, conflicts) = (pool.clone(), direct_conflicts.clone());
        clients.push(tokio::spawn(async move {
            for _ in 0..20 {
                loop {
                    let (n, rv): (i64, i64) = sqlx::query_as("SELECT n, rv FROM bench_counter WHERE id = 1")
                        .fetch_one(&pool)
                        .await
                        .expect("get");
                    let done = sqlx::query("UPDATE bench_counter SET n = $1, rv = $2 WHERE id = 1 AND rv = $3")
                        .bind(n + 1)
                        .bind(rv + 1)
                        .bind(rv)
                        .execute(&pool)
                        .await
                        .expect("update");
                    if done.rows_affected() == 1 {
                        break;
                    }
                    conflicts.fetch_add(1, Ordering::SeqCst);
                }
            }
        }));
    }
    for c in clients {
        c.await.expect("client");
    }
    let direct_cas = started.elapsed();
    let (direct_n,): (i64,) =
        sqlx::query_as("SELECT n FROM bench_counter WHERE id = 1").fetch_one(&pool).await.expect("n");
    assert_eq!(final_n, "1000", "no update lost through the API");
    assert_eq!(direct_n, 1000);
    println!(
        "50 clients × 20 replace-with-retry on one object: API {:.2} s, final count {final_n} (no update lost), {} conflicts retried; sqlx compare-and-swap {:.2} s, {} conflicts; ratio {:.2}",
        api_cas.as_secs_f64(),
        conflicts.load(Ordering::SeqCst),
        direct_cas.as_secs_f64(),
        direct_conflicts.load(Ordering::SeqCst),
        api_cas.as_secs_f64() / direct_cas.as_secs_f64()
    );
    Ok(())
}
