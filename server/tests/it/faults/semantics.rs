//! Kubernetes semantics clients rely on, under contention: a patch without a precondition is
//! tried again on the fresh object until it is stored, as kube-apiserver's GuaranteedUpdate
//! does, and never answers 409; and each committed change is audited once, never per try.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;

use crate::helpers::Backend;
use crate::shared::Shared;
use crate::{on_both_databases, on_sqlite};

static LBDESK: Shared = Shared::new();

on_sqlite!(parallel_patches_without_a_precondition_all_land_and_none_answers_409);
on_both_databases!(parallel_patches_are_audited_once_per_committed_change);

/// Writers at once on one object.
const WRITERS: usize = 60;

async fn parallel_patches_without_a_precondition_all_land_and_none_answers_409(backend: Backend) {
    let lbdesk = LBDESK.get(backend).await;
    let api: Api<ConfigMap> = Api::namespaced(lbdesk.client("acp-region01").await, "default");
    let object: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "contended"}})).expect("a ConfigMap");
    api.create(&PostParams::default(), &object).await.expect("created");
    let patches = (0..WRITERS).map(|i| {
        let api = api.clone();
        async move {
            let patch = json!({"data": {format!("writer-{i}"): "x".repeat(2_000)}});
            api.patch("contended", &PatchParams::default(), &Patch::Merge(&patch)).await
        }
    });
    let answers = futures::future::join_all(patches).await;
    let refused: Vec<String> = answers.iter().filter_map(|a| a.as_ref().err().map(|e| e.to_string())).collect();
    assert!(refused.is_empty(), "{} of {WRITERS} patches refused, the first: {:?}", refused.len(), refused.first());
    let stored = api.get("contended").await.expect("the object");
    let keys: BTreeSet<String> = stored.data.unwrap_or_default().into_keys().collect();
    assert_eq!(keys.len(), WRITERS, "every patch is in the object: {keys:?}");
}

async fn parallel_patches_are_audited_once_per_committed_change(backend: Backend) {
    use app::domain::crd::Lbticket;
    let lbdesk = LBDESK.get(backend).await;
    let tickets: Api<Lbticket> = Api::all(lbdesk.client("mgmt").await);
    let name = "audited-once";
    let ticket: Lbticket = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"ebcpaas.io/project": "project-a"}},
        "spec": {"claimer": "alice", "loadbalancer": "shared-lb", "namespace": "team-a"},
    }))
    .expect("a request");
    tickets.create(&PostParams::default(), &ticket).await.expect("created");
    let patches = (0..WRITERS).map(|i| {
        let tickets = tickets.clone();
        async move {
            let patch = json!({"metadata": {"annotations": {format!("team.example.com/note-{i}"): "x"}}});
            tickets.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await
        }
    });
    let answers = futures::future::join_all(patches).await;
    let versions: BTreeSet<i64> = answers
        .iter()
        .map(|a| a.as_ref().expect("every patch lands").metadata.resource_version.as_deref().unwrap_or_default())
        .map(|rv| rv.parse().expect("a version"))
        .collect();
    assert_eq!(versions.len(), WRITERS, "each patch committed a version of its own");
    let rows: Vec<(String, Option<i64>)> =
        sqlx::query_as("SELECT action, rv FROM audit WHERE kind = 'Lbticket' AND name = $1 AND username = 'admin'")
            .bind(name)
            .fetch_all(&lbdesk.db.pool)
            .await
            .expect("the audit log");
    let updates: BTreeSet<i64> = rows.iter().filter(|(a, _)| a == "update").filter_map(|(_, rv)| *rv).collect();
    let counted = rows.iter().filter(|(a, _)| a == "update").count();
    assert_eq!(counted, WRITERS, "one entry per committed patch, none per try");
    assert_eq!(updates, versions, "each entry names the version its patch committed");
    assert_eq!(rows.iter().filter(|(a, _)| a == "create").count(), 1);
}
