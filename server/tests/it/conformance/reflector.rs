//! kube-runtime's watcher and reflector against the embedded API: after 1,000 mixed writes and
//! a forced 410 (the watch falls further behind than the event log reaches), the reflector's
//! store equals the listed state.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use serde_json::json;

use crate::helpers::{Backend, Options};
use crate::on_both_databases;
use crate::shared::Shared;

/// The module's lbdesk keeps 50 events per cluster for watches, so that a held watcher falls
/// out of the log.
static LBDESK: Shared = Shared::with(|| Options { watch_history: 50, ..Default::default() }, false);

on_both_databases!(the_reflector_converges_after_a_thousand_writes_and_a_forced_410);

/// Deterministic mixed writes: create when absent, otherwise patch (most often) or delete.
async fn churn(cms: &Api<ConfigMap>, from: u64, count: u64, live: &mut std::collections::BTreeSet<String>) {
    let mut x = from.wrapping_mul(2654435761) | 1;
    for i in from..from + count {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let name = format!("cm-{}", x % 120);
        if !live.contains(&name) {
            let cm = ConfigMap {
                metadata: ObjectMeta { name: Some(name.clone()), ..Default::default() },
                ..Default::default()
            };
            cms.create(&PostParams::default(), &cm).await.expect("create");
            live.insert(name);
        } else if x.is_multiple_of(5) {
            cms.delete(&name, &DeleteParams::default()).await.expect("delete");
            live.remove(&name);
        } else {
            let patch = Patch::Merge(json!({"data": {"i": i.to_string()}}));
            cms.patch(&name, &PatchParams::default(), &patch).await.expect("patch");
        }
    }
}

async fn the_reflector_converges_after_a_thousand_writes_and_a_forced_410(backend: Backend) {
    let lbdesk = LBDESK.get(backend).await;
    let cms: Api<ConfigMap> = Api::namespaced(lbdesk.client("acp-region01").await, "team-a");
    let (reader, writer) = reflector::store::<ConfigMap>();
    // Short watches, so the watcher resumes often and can fall out of the event log. NB: with
    // a backoff, as lbdesk's own watchers: without one, a watcher whose API is gone retries at
    // once, a refused connection answers at once, and the loop never yields (seen: the test's
    // runtime never finished dropping, the run hung).
    let config = watcher::Config::default().timeout(1);
    let stream = reflector(writer, watcher(cms.clone(), config)).default_backoff();
    let inits = Arc::new(AtomicUsize::new(0));
    let counting = inits.clone();
    let (hold, mut held) = tokio::sync::watch::channel(false);
    let driver = tokio::spawn(async move {
        let mut stream = stream.boxed();
        loop {
            tokio::select! {
                // NB: first, so that once held the stream is not polled again: its watch is not
                // read and no new one begins until the hold ends.
                biased;
                gone = async { held.wait_for(|held| *held).await.is_err() } => {
                    if gone || held.wait_for(|held| !*held).await.is_err() {
                        break;
                    }
                }
                event = stream.next() => match event {
                    Some(Ok(watcher::Event::Init)) => {
                        counting.fetch_add(1, Ordering::SeqCst);
                    }
                    Some(_) => {}
                    None => break,
                },
            }
        }
    });
    reader.wait_until_ready().await.expect("the first list");
    let mut live = std::collections::BTreeSet::new();
    churn(&cms, 0, 300, &mut live).await;
    // Hold the watcher until its watch has ended (1 s), then write 700 more: it resumes from a
    // version the event log (50 events) no longer reaches. NB: writing while the watch was still
    // open let it carry every write when they came fast enough, and no 410 came (seen once).
    hold.send_replace(true);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    churn(&cms, 300, 700, &mut live).await;
    hold.send_replace(false);

    let want = |list: &[ConfigMap]| -> Vec<(String, Option<String>)> {
        let mut v: Vec<_> = list
            .iter()
            .map(|c| (c.metadata.name.clone().unwrap_or_default(), c.data.as_ref().and_then(|d| d.get("i").cloned())))
            .collect();
        v.sort();
        v
    };
    let listed = want(&cms.list(&ListParams::default()).await.expect("list").items);
    assert_eq!(listed.len(), live.len(), "the API holds what was written");
    let converged = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let cached: Vec<ConfigMap> = reader.state().iter().map(|c| (**c).clone()).collect();
            if want(&cached) == listed {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    // NB: stopped before lbdesk is: an abort takes effect when the task next yields.
    driver.abort();
    let _ = driver.await;
    assert!(converged.is_ok(), "the reflector's store converges to the listed state");
    assert!(inits.load(Ordering::SeqCst) >= 2, "the 410 made the watcher list again");
}
