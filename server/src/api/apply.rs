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

/// How deep `[` and `{` may nest in an apply patch: an object nests far less, and a YAML
/// parser's time grows with the square of it (`{a: ` 40,000 times took 31.8 s of a worker in a
/// debug build before it gave up at its recursion limit).
const MAX_FLOW_DEPTH: usize = 64;

/// The deepest nesting of `[` and `{` in `body`, quoted or not. NB: a bracket inside a quoted
/// string counts too: telling quotes apart takes a parser, and an object holds no 64 brackets
/// open at once.
fn flow_depth(body: &[u8]) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    for b in body {
        match b {
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// An apply patch (YAML, or JSON, which is YAML), its depth bounded first; parsed off the async
/// workers, which serve every other request meanwhile.
async fn parsed(body: &[u8]) -> Result<Value, ApiError> {
    if flow_depth(body) > MAX_FLOW_DEPTH {
        return Err(ApiError::BadRequest(format!("the apply patch nests deeper than {MAX_FLOW_DEPTH} levels")));
    }
    let body = body.to_vec();
    tokio::task::spawn_blocking(move || serde_yaml::from_slice::<Value>(&body))
        .await
        .map_err(|e| ApiError::internal("could not parse the apply patch", e))?
        .map_err(|e| ApiError::BadRequest(format!("the apply patch is not valid YAML or JSON: {e}")))
}

/// PATCH with `application/apply-patch+yaml`: the object as applied (created when absent).
pub async fn handle(api: &Api, call: &Call, objects: &Objects) -> Result<Response, ApiError> {
    let manager = call
        .param("fieldManager")
        .ok_or_else(|| ApiError::BadRequest("fieldManager is required for apply patch".into()))?;
    let force = call.param("force") == Some("true");
    let patch = parsed(&call.body).await?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_patch_nested_deeper_than_an_object_is_refused_before_it_is_parsed() {
        assert_eq!(flow_depth(b"{a: [1, {b: [2]}], c: '[x'}"), 4, "quoted brackets count too");
        let deep = format!("{}{}", "{a: [x, ".repeat(20_000), "]}".repeat(20_000));
        let started = std::time::Instant::now();
        let refused = parsed(deep.as_bytes()).await;
        assert!(matches!(&refused, Err(ApiError::BadRequest(m)) if m.contains("deeper than 64")), "{refused:?}");
        assert!(started.elapsed() < std::time::Duration::from_millis(100), "{:?}", started.elapsed());
        let fine = parsed(b"apiVersion: v1\nkind: Lease\nmetadata: {name: a, labels: {x: '[y'}}\n").await;
        assert_eq!(fine.ok().map(|v| v["metadata"]["labels"]["x"].clone()), Some(Value::from("[y")));
    }
}
