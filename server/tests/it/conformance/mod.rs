//! The embedded API against what kube-rs expects of a Kubernetes API server, written only
//! against `kube::Api`, so the same checks run against a real cluster:
//!
//! ```sh
//! kubectl apply -f deploy/crds/
//! LBDESK_CONFORMANCE_KUBECONFIG=~/.kube/config cargo test -p server --test it conformance -- --ignored
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use app::domain::crd::{Lbticket, LbticketSpec, LbticketStatus, Phase};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::{Client, Error};
use serde_json::json;

use crate::helpers::{Backend, Options, spawn_lbdesk_with};
use crate::on_both_databases;

mod reflector;

/// What the suite runs against.
struct Target {
    client: Client,
    /// The same API with a token it does not accept.
    stranger: Client,
    namespace: String,
    /// A prefix that keeps names apart from other runs.
    prefix: String,
}

fn code(e: &Error) -> Option<u16> {
    match e {
        Error::Api(status) => Some(status.code),
        _ => None,
    }
}

fn configmap(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("k".to_string(), "v".to_string())])),
        ..Default::default()
    }
}

async fn crud_and_conflicts(t: &Target) {
    let cms: Api<ConfigMap> = Api::namespaced(t.client.clone(), &t.namespace);
    let name = format!("{}-crud", t.prefix);
    let created = cms.create(&PostParams::default(), &configmap(&name, &[("app", "a")])).await.expect("create");
    assert!(created.metadata.uid.is_some() && created.metadata.creation_timestamp.is_some());
    let rv = created.metadata.resource_version.clone().expect("resourceVersion");
    assert_eq!(code(&cms.create(&PostParams::default(), &configmap(&name, &[])).await.expect_err("taken")), Some(409));
    let mut generated = configmap("", &[]);
    generated.metadata.name = None;
    generated.metadata.generate_name = Some(format!("{}-gen-", t.prefix));
    let g = cms.create(&PostParams::default(), &generated).await.expect("generateName");
    assert!(
        g.metadata
            .name
            .as_deref()
            .is_some_and(|n| n.starts_with(&format!("{}-gen-", t.prefix)) && n.len() > t.prefix.len() + 5)
    );

    let mut fresh = cms.get(&name).await.expect("get");
    fresh.data = Some(BTreeMap::from([("k".to_string(), "w".to_string())]));
    let replaced = cms.replace(&name, &PostParams::default(), &fresh).await.expect("replace with the current version");
    assert_ne!(replaced.metadata.resource_version.as_deref(), Some(rv.as_str()));
    let mut stale = fresh.clone();
    stale.metadata.resource_version = Some(rv);
    assert_eq!(code(&cms.replace(&name, &PostParams::default(), &stale).await.expect_err("stale")), Some(409));

    let merged = cms
        .patch(&name, &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"tier": "x"}}})))
        .await
        .expect("merge patch");
    assert_eq!(merged.metadata.labels.as_ref().and_then(|l| l.get("tier")).map(String::as_str), Some("x"));
    let ops: json_patch::Patch =
        serde_json::from_value(json!([{"op": "replace", "path": "/data/k", "value": "z"}])).expect("ops");
    let patched = cms.patch(&name, &PatchParams::default(), &Patch::Json::<()>(ops)).await.expect("JSON patch");
    assert_eq!(patched.data.as_ref().and_then(|d| d.get("k")).map(String::as_str), Some("z"));
    assert_eq!(code(&cms.get(&format!("{}-missing", t.prefix)).await.expect_err("absent")), Some(404));
    for n in [name, g.metadata.name.unwrap_or_default()] {
        cms.delete(&n, &DeleteParams::default()).await.expect("delete");
    }
}

async fn lists_select_and_page(t: &Target) {
    let cms: Api<ConfigMap> = Api::namespaced(t.client.clone(), &t.namespace);
    let group = format!("{}-sel", t.prefix);
    for (i, tier) in ["web", "web", "db", "cache", "web"].iter().enumerate() {
        let mut cm = configmap(&format!("{group}-{i}"), &[("group", &group), ("tier", tier)]);
        if i == 4 {
            cm.metadata.labels.as_mut().map(|l| l.insert("legacy".into(), "yes".into()));
        }
        cms.create(&PostParams::default(), &cm).await.expect("create");
    }
    let count = |sel: String| {
        let cms = cms.clone();
        async move { cms.list(&ListParams::default().labels(&sel)).await.expect("list").items.len() }
    };
    assert_eq!(count(format!("group={group}")).await, 5);
    assert_eq!(count(format!("group={group},tier=web")).await, 3);
    assert_eq!(count(format!("group={group},tier!=web")).await, 2);
    assert_eq!(count(format!("group={group},tier in (db,cache)")).await, 2);
    assert_eq!(count(format!("group={group},tier notin (web)")).await, 2);
    assert_eq!(count(format!("group={group},legacy")).await, 1);
    assert_eq!(count(format!("group={group},!legacy")).await, 4);
    let by_name =
        cms.list(&ListParams::default().fields(&format!("metadata.name={group}-2"))).await.expect("field selector");
    assert_eq!(by_name.items.len(), 1);
    let mut pages = 0;
    let mut seen = Vec::new();
    let mut lp = ListParams::default().labels(&format!("group={group}")).limit(2);
    loop {
        let page = cms.list(&lp).await.expect("page");
        assert!(page.metadata.resource_version.is_some(), "a list has a resourceVersion");
        pages += 1;
        seen.extend(page.items.into_iter().filter_map(|c| c.metadata.name));
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(next) => lp = lp.continue_token(&next),
            None => break,
        }
    }
    seen.sort();
    seen.dedup();
    assert_eq!((pages, seen.len()), (3, 5));
    for i in 0..5 {
        cms.delete(&format!("{group}-{i}"), &DeleteParams::default()).await.expect("delete");
    }
}

async fn the_status_subresource_and_generation(t: &Target) {
    let tickets: Api<Lbticket> = Api::all(t.client.clone());
    let name = format!("{}-status", t.prefix);
    let spec = LbticketSpec { loadbalancer: "demo".into(), namespace: "default".into(), ..Default::default() };
    let mut ticket = Lbticket::new(&name, spec);
    ticket.status = Some(LbticketStatus { phase: Phase::Enabled, ..Default::default() });
    let created = tickets.create(&PostParams::default(), &ticket).await.expect("create");
    assert!(created.status.as_ref().is_none_or(|s| s.phase == Phase::Created), "status is not written with the object");
    assert_eq!(created.metadata.generation, Some(1));
    let status = json!({"status": {"phase": "Requested", "message": "waiting"}});
    let after =
        tickets.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status)).await.expect("status patch");
    assert_eq!(after.status.as_ref().map(|s| s.phase), Some(Phase::Requested));
    assert_eq!(after.metadata.generation, Some(1), "a status change is not a new generation");
    let sneaky = json!({"spec": {"namespace": "team-a"}, "status": {"phase": "Failed"}});
    let via_status =
        tickets.patch_status(&name, &PatchParams::default(), &Patch::Merge(&sneaky)).await.expect("status patch");
    assert_eq!(via_status.spec.namespace, "default", "a write to /status ignores the spec");
    let via_main = tickets.patch(&name, &PatchParams::default(), &Patch::Merge(&sneaky)).await.expect("patch");
    assert_eq!(via_main.spec.namespace, "team-a");
    assert_eq!(via_main.status.as_ref().map(|s| s.phase), Some(Phase::Failed), "a write to the object ignores status");
    assert_eq!(via_main.metadata.generation, Some(2), "a spec change is a new generation");
    tickets.delete(&name, &DeleteParams::default()).await.expect("delete");
}

async fn finalizers_hold_deletion(t: &Target) {
    let cms: Api<ConfigMap> = Api::namespaced(t.client.clone(), &t.namespace);
    let name = format!("{}-fin", t.prefix);
    let mut cm = configmap(&name, &[]);
    cm.metadata.finalizers = Some(vec!["ebcpaas.io/test".into()]);
    cms.create(&PostParams::default(), &cm).await.expect("create");
    cms.delete(&name, &DeleteParams::default()).await.expect("delete is accepted");
    let held = cms.get(&name).await.expect("still there while finalizers remain");
    assert!(held.metadata.deletion_timestamp.is_some());
    cms.patch(&name, &PatchParams::default(), &Patch::Merge(json!({"metadata": {"finalizers": null}})))
        .await
        .expect("finalize");
    assert_eq!(code(&cms.get(&name).await.expect_err("gone")), Some(404));
}

async fn watches_resume_from_a_version(t: &Target) {
    let cms: Api<ConfigMap> = Api::namespaced(t.client.clone(), &t.namespace);
    let name = format!("{}-watch", t.prefix);
    let first = cms.create(&PostParams::default(), &configmap(&name, &[("w", &t.prefix)])).await.expect("create");
    let from = first.metadata.resource_version.clone().expect("rv");
    for v in ["1", "2"] {
        cms.patch(&name, &PatchParams::default(), &Patch::Merge(json!({"data": {"k": v}}))).await.expect("patch");
    }
    cms.delete(&name, &DeleteParams::default()).await.expect("delete");
    let wp = WatchParams::default().labels(&format!("w={}", t.prefix)).timeout(10);
    let mut events = cms.watch(&wp, &from).await.expect("watch").boxed();
    let mut seen = Vec::new();
    while seen.len() < 3 {
        match tokio::time::timeout(Duration::from_secs(10), events.try_next()).await {
            Ok(Ok(Some(WatchEvent::Modified(cm)))) => {
                seen.push(format!("M{}", cm.data.and_then(|d| d.get("k").cloned()).unwrap_or_default()))
            }
            Ok(Ok(Some(WatchEvent::Deleted(_)))) => seen.push("D".into()),
            Ok(Ok(Some(WatchEvent::Bookmark(_)))) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(seen, ["M1", "M2", "D"], "the events after the version, in order");
}

async fn bookmarks_arrive_when_allowed(t: &Target) {
    let cms: Api<ConfigMap> = Api::namespaced(t.client.clone(), &t.namespace);
    let list = cms.list(&ListParams::default().limit(1)).await.expect("list");
    let rv = list.metadata.resource_version.expect("rv");
    let mut events = cms.watch(&WatchParams::default().timeout(75), &rv).await.expect("watch").boxed();
    let bookmark = tokio::time::timeout(Duration::from_secs(70), async {
        while let Some(e) = events.try_next().await.expect("event") {
            if let WatchEvent::Bookmark(b) = e {
                return Some(b.metadata.resource_version);
            }
        }
        None
    })
    .await
    .expect("a bookmark in time");
    assert!(bookmark.is_some_and(|v| !v.is_empty()));
}

async fn a_compacted_version_is_gone(t: &Target) {
    let cms: Api<ConfigMap> = Api::namespaced(t.client.clone(), &t.namespace);
    let mut events = cms.watch(&WatchParams::default().timeout(5), "1").await.expect("watch").boxed();
    match tokio::time::timeout(Duration::from_secs(5), events.try_next()).await {
        Ok(Ok(Some(WatchEvent::Error(e)))) => assert_eq!(e.code, 410, "{e:?}"),
        other => panic!("expected 410 Gone, got {other:?}"),
    }
}

/// Server-side apply: a field another manager applied with another value is a conflict unless
/// forced; a field no one holds any more is free (what leader election relies on).
async fn server_side_apply_takes_fields_in_turn(t: &Target) {
    let cms: Api<ConfigMap> = Api::namespaced(t.client.clone(), &t.namespace);
    let name = format!("{}-apply", t.prefix);
    let doc =
        |v: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"holder": v}});
    let apply = |m: &str| PatchParams::apply(m);
    let a = cms.patch(&name, &apply("m-a"), &Patch::Apply(doc("a"))).await.expect("created by apply");
    assert_eq!(a.data.and_then(|d| d.get("holder").cloned()).as_deref(), Some("a"));
    let refused = cms.patch(&name, &apply("m-b"), &Patch::Apply(doc("b"))).await.expect_err("a conflict");
    assert_eq!(code(&refused), Some(409), "{refused:?}");
    assert!(cms.patch(&name, &apply("m-b"), &Patch::Apply(doc("a"))).await.is_ok(), "the same value is shared");
    let released = json!({"data": {"holder": null}});
    cms.patch(
        &name,
        &PatchParams { field_manager: Some("m-c".into()), ..Default::default() },
        &Patch::Merge(&released),
    )
    .await
    .expect("released");
    let b = cms.patch(&name, &apply("m-b"), &Patch::Apply(doc("b"))).await.expect("free again");
    assert_eq!(b.data.and_then(|d| d.get("holder").cloned()).as_deref(), Some("b"));
    let forced = cms.patch(&name, &apply("m-a").force(), &Patch::Apply(doc("a"))).await.expect("forced");
    assert_eq!(forced.data.and_then(|d| d.get("holder").cloned()).as_deref(), Some("a"));
    cms.delete(&name, &DeleteParams::default()).await.expect("delete");
}

async fn strangers_are_unauthorized(t: &Target) {
    let cms: Api<ConfigMap> = Api::namespaced(t.stranger.clone(), &t.namespace);
    assert_eq!(code(&cms.list(&ListParams::default()).await.expect_err("no token")), Some(401));
}

/// What every conformant Kubernetes API server guarantees (and kube-rs and the leader election
/// rely on).
async fn run_guaranteed(t: &Target) {
    crud_and_conflicts(t).await;
    lists_select_and_page(t).await;
    the_status_subresource_and_generation(t).await;
    finalizers_hold_deletion(t).await;
    watches_resume_from_a_version(t).await;
    server_side_apply_takes_fields_in_turn(t).await;
    strangers_are_unauthorized(t).await;
}

/// What only the embedded API promises beyond that. NB: Kubernetes sends bookmarks when it
/// chooses (none within 70 s was seen on v1.28) and keeps as much history as etcd's compaction
/// left (a fresh server still answers version "1"), so neither is checked on a real cluster.
async fn run_embedded_promises(t: &Target) {
    bookmarks_arrive_when_allowed(t).await;
    a_compacted_version_is_gone(t).await;
}

async fn embedded(backend: Backend) -> (crate::helpers::Lbdesk, Target) {
    // A short event log, so that version 1 is compacted away after a few hundred writes. No
    // reconciler: the suite checks what the API does, with no controller writing beside it (as
    // on a real cluster without lbdesk).
    let options = Options { watch_history: 50, reconciler: false, ..Default::default() };
    let lbdesk = spawn_lbdesk_with(backend, options).await;
    // NB: as lbdesk itself: the suite writes statuses, which admission refuses from anyone else.
    let client = lbdesk.clusters.mgmt().clone();
    let stranger = lbdesk.client_with_token("mgmt", "not-a-token").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    cms.create(&PostParams::default(), &configmap("churn", &[])).await.expect("create");
    for i in 0..200 {
        cms.patch("churn", &PatchParams::default(), &Patch::Merge(json!({"data": {"i": i.to_string()}})))
            .await
            .expect("churn");
    }
    (lbdesk, Target { client, stranger, namespace: "default".into(), prefix: "conf".into() })
}

on_both_databases!(the_embedded_api_passes_the_conformance_suite);

async fn the_embedded_api_passes_the_conformance_suite(backend: Backend) {
    let (_lbdesk, target) = embedded(backend).await;
    run_guaranteed(&target).await;
    run_embedded_promises(&target).await;
}

/// The guaranteed part of the suite against a real cluster (opt-in: it needs one, and the CRDs
/// applied).
#[tokio::test]
#[ignore = "needs a real cluster: set LBDESK_CONFORMANCE_KUBECONFIG"]
async fn conformance_against_a_real_cluster() {
    let path =
        std::env::var("LBDESK_CONFORMANCE_KUBECONFIG").expect("LBDESK_CONFORMANCE_KUBECONFIG names a kubeconfig");
    let kubeconfig = kube::config::Kubeconfig::read_from(&path).expect("readable kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig.clone(), &Default::default()).await.expect("config");
    let client = Client::try_from(config.clone()).expect("client");
    let mut bad = config;
    bad.auth_info = kube::config::AuthInfo { token: Some("not-a-token".to_string().into()), ..Default::default() };
    let stranger = Client::try_from(bad).expect("client");
    let prefix = format!("lbdesk-conf-{:x}", rand::random::<u32>());
    run_guaranteed(&Target { client, stranger, namespace: "default".into(), prefix }).await;
}

on_both_databases!(resource_versions_keep_rising_across_a_restart);

/// A new process on the same database continues the sequence (the versions are recovered
/// from the stored events and objects).
async fn resource_versions_keep_rising_across_a_restart(backend: Backend) {
    use server::api::store::{Change, Key, Store};
    let test_db = crate::helpers::TestDb::new(backend).await;
    let db = test_db.connect().await;
    async fn write(store: &Store, name: &str) -> i64 {
        let key = Key { cluster: "c", resource: "configmaps", namespace: "default", name };
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
        let written = store.write(&key, |_| Ok(Change::Put(obj))).await.expect("write");
        let written: serde_json::Value = serde_json::from_str(&written).expect("JSON");
        written["metadata"]["resourceVersion"].as_str().and_then(|v| v.parse::<i64>().ok()).expect("rv")
    }
    let first = Store::new(db.clone(), 10);
    first.ensure_cluster("c").await.expect("cluster");
    let mut last = 0;
    for name in ["a", "b", "c", "d"] {
        last = write(&first, name).await;
    }
    drop(first);
    let again = Store::new(db, 10);
    assert!(write(&again, "e").await > last, "no resourceVersion is handed out twice");
}
