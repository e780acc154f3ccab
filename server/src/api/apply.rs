//! Server-side apply, as far as lbdesk's own clients need it: the leader election
//! (kube-lease-manager) applies a Lease to take it when it is free, and counts on the API server
//! refusing that apply (409 Conflict) when another field manager holds a field it sets with
//! another value: two replicas racing for a free Lease, one of them wins. Who owns which field
//! is `managed`'s.

use axum::response::Response;
use serde_json::{Value, json};

use super::managed::{apply, merged, record};
use super::status::ApiError;
use super::{Api, Call, Objects, handlers};

/// PATCH with `application/apply-patch+yaml`: the object as applied (created when absent).
pub async fn handle(api: &Api, call: &Call, objects: &Objects) -> Result<Response, ApiError> {
    let manager = call
        .param("fieldManager")
        .ok_or_else(|| ApiError::BadRequest("fieldManager is required for apply patch".into()))?;
    let force = call.param("force") == Some("true");
    let patch: Value = serde_yaml::from_slice(&call.body)
        .map_err(|e| ApiError::BadRequest(format!("the apply patch is not valid YAML or JSON: {e}")))?;
    let next = |current: &Value| Ok((merged(current, &patch, manager, force)?, None));
    let owned = |current: &Value, next: &mut Value| record(current, next, &patch, manager);
    match handlers::update(api, call, objects, next, owned).await {
        Err(ApiError::NotFound { .. }) => {
            let mut object = apply(None, &patch, manager, force)?;
            // NB: `apply` made `metadata` an object.
            if let (Some(meta), Some(name)) = (object["metadata"].as_object_mut(), &objects.name) {
                meta.insert("name".into(), json!(name));
            }
            let managed_fields = object["metadata"]["managedFields"].clone();
            let body = serde_json::to_vec(&object).map_err(|e| ApiError::internal("could not write the object", e))?;
            let create = Call {
                cluster: call.cluster.clone(),
                user: call.user.clone(),
                query: call.query.clone(),
                table: false,
                content_type: "application/json".into(),
                body,
                managed_fields: Some(managed_fields),
                said: call.said.clone(),
            };
            handlers::create(api, &create, objects).await
        }
        other => other,
    }
}
