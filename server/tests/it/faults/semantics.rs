//! Kubernetes semantics clients rely on, under contention: a patch without a precondition is
//! tried again on the fresh object until it is stored, as kube-apiserver's GuaranteedUpdate
//! does, and never answers 409.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;

use crate::helpers::Backend;
use crate::on_sqlite;
use crate::shared::Shared;

static LBDESK: Shared = Shared::new();

on_sqlite!(parallel_patches_without_a_precondition_all_land_and_none_answers_409);

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
