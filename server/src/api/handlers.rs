//! get, list, create, replace, patch and delete, with Kubernetes' semantics.

use axum::response::Response;
use serde_json::{Value, json};

use super::admission::admit;
use super::continuation;
use super::prepare::{fold_string_data, prepare_new};
use super::resources::Kind;
use super::selector::{FieldSelector, LabelSelector};
use super::shape::check_type;
use super::status::ApiError;
use super::store::{Change, Key, Row, parse_labels};
use super::{Api, Call, Objects, object, respond, respond_json, table};
use kube::core::admission::Operation;

fn key<'a>(call: &'a Call, resource: &'a str, namespace: &'a str, name: &'a str) -> Key<'a> {
    Key { cluster: &call.cluster, resource, namespace, name }
}

fn conflict(kind: &Kind, name: &str) -> ApiError {
    ApiError::Conflict(format!(
        "Operation cannot be fulfilled on {} {name:?}: the object has been modified; please apply your changes to the latest version and try again",
        kind.resource()
    ))
}

fn not_found(kind: &Kind, name: &str) -> ApiError {
    ApiError::NotFound { kind: kind.resource(), name: name.into() }
}

/// `metadata.name` must be a DNS subdomain (a DNS label for namespaces and Services).
fn check_name(kind: &Kind, name: &str) -> Result<(), ApiError> {
    let verdict = if matches!(kind.plural, "namespaces" | "services") {
        app::domain::policy::dns_label("metadata.name", name)
    } else {
        app::domain::policy::object_name("metadata.name", name)
    };
    verdict.map_err(|r| ApiError::Invalid {
        kind: kind.kind.into(),
        name: name.into(),
        causes: vec![("metadata.name".into(), r.reason.to_string())],
    })
}

/// The namespace of a namespaced request: the path's, which the body may repeat but not contradict.
fn namespace_of(objects: &Objects, body: &Value) -> Result<String, ApiError> {
    if !objects.kind.namespaced {
        return Ok(String::new());
    }
    let path_ns = objects.namespace.clone().ok_or_else(|| ApiError::BadRequest("a namespace is required".into()))?;
    match object::meta_str(body, "namespace") {
        Some(ns) if !ns.is_empty() && ns != path_ns => Err(ApiError::BadRequest(format!(
            "the namespace of the object ({ns}) does not match the namespace of the request ({path_ns})"
        ))),
        _ => Ok(path_ns),
    }
}

/// GET of one object (a one-row Table when asked).
pub async fn get(api: &Api, call: &Call, objects: &Objects) -> Result<Response, ApiError> {
    let name = objects.name.as_deref().unwrap_or_default();
    let ns = objects.namespace.clone().unwrap_or_default();
    let resource = objects.kind.resource();
    let key = key(call, &resource, &ns, name);
    if call.table {
        let obj = api.store.get(&key).await?.ok_or_else(|| not_found(objects.kind, name))?;
        let rv = object::meta_str(&obj, "resourceVersion").unwrap_or("").to_string();
        return Ok(respond(200, &table::table(objects.kind, &[obj], &rv)));
    }
    // NB: sent as stored, not parsed and written again.
    let body = api.store.body(&key).await?.ok_or_else(|| not_found(objects.kind, name))?;
    Ok(respond_json(200, body))
}

/// LIST with label and field selectors, `limit` and `continue`.
pub async fn list(api: &Api, call: &Call, objects: &Objects) -> Result<Response, ApiError> {
    let kind = objects.kind;
    let labels = LabelSelector::parse(call.param("labelSelector").unwrap_or("")).map_err(ApiError::BadRequest)?;
    let fields = FieldSelector::parse(call.param("fieldSelector").unwrap_or("")).map_err(ApiError::BadRequest)?;
    let limit: usize = match call.param("limit") {
        Some(l) => l.parse().map_err(|_| ApiError::BadRequest(format!("invalid limit {l:?}")))?,
        None => 0,
    };
    let after = call.param("continue").map(continuation::decode).transpose()?;
    let namespace = if kind.namespaced { objects.namespace.as_deref() } else { Some("") };
    let resource = kind.resource();
    let (rv, rows) = api
        .store
        .list(&call.cluster, &resource, namespace, after.as_ref().map(|(n, m)| (n.as_str(), m.as_str())))
        .await?;
    let mut items: Vec<Row> = Vec::new();
    let mut more = false;
    for row in rows {
        if !fields.matches(&row.namespace, &row.name) || !labels.matches(&parse_labels(&row.labels)) {
            continue;
        }
        if limit > 0 && items.len() == limit {
            more = true;
            break;
        }
        items.push(row);
    }
    let next = if more { items.last().map(continuation::encode) } else { None };
    if call.table {
        let parsed: Result<Vec<Value>, _> = items.iter().map(|r| serde_json::from_str(&r.body)).collect();
        let parsed = parsed.map_err(|e| ApiError::internal("a stored object is not JSON", e))?;
        let mut t = table::table(kind, &parsed, &rv.to_string());
        if let Some(next) = next {
            t["metadata"]["continue"] = json!(next);
        }
        return Ok(respond(200, &t));
    }
    // NB: the stored bodies are spliced in as they are: no parse, no re-serialisation.
    let mut body = String::with_capacity(128 + items.iter().map(|r| r.body.len() + 1).sum::<usize>());
    body.push_str(&format!(
        r#"{{"apiVersion":"{}","kind":"{}List","metadata":{{"resourceVersion":"{rv}""#,
        kind.api_version(),
        kind.kind
    ));
    if let Some(next) = next {
        body.push_str(&format!(r#","continue":"{next}""#));
    }
    body.push_str(r#"},"items":["#);
    for (i, row) in items.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        body.push_str(&row.body);
    }
    body.push_str("]}");
    Ok(Response::builder()
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(axum::body::Body::from(body))
        .unwrap_or_default())
}

/// POST: create, with `generateName`, admission, and 409 when the name is taken.
pub async fn create(api: &Api, call: &Call, objects: &Objects) -> Result<Response, ApiError> {
    refuse_dry_run(call)?;
    let kind = objects.kind;
    let obj = call.json()?;
    check_type(kind, &obj)?;
    let namespace = namespace_of(objects, &obj)?;
    if kind.namespaced {
        let ns_key = Key { cluster: &call.cluster, resource: "namespaces", namespace: "", name: &namespace };
        if api.store.get(&ns_key).await?.is_none() {
            return Err(ApiError::NotFound { kind: "namespaces".into(), name: namespace });
        }
    }
    let named = object::meta_str(&obj, "name").filter(|n| !n.is_empty()).map(str::to_string);
    let prefix = object::meta_str(&obj, "generateName").filter(|n| !n.is_empty()).map(str::to_string);
    let resource = kind.resource();
    for _attempt in 0..8 {
        let name = match (&named, &prefix) {
            (Some(n), _) => n.clone(),
            (None, Some(p)) => format!("{p}{}", random_suffix()),
            (None, None) => {
                return Err(ApiError::Invalid {
                    kind: kind.kind.into(),
                    name: String::new(),
                    causes: vec![("metadata.name".into(), "name or generateName is required".into())],
                });
            }
        };
        check_name(kind, &name)?;
        let mut new = obj.clone();
        prepare_new(kind, &mut new, &namespace, &name);
        if let (Some(fields), Some(meta)) = (&call.managed_fields, object::metadata(&mut new)) {
            meta.insert("managedFields".into(), fields.clone());
        }
        let audit = admit(api, call, objects, Operation::Create, Some(&new), None).await?;
        let written = api
            .store
            .write_audited(&key(call, &resource, &namespace, &name), None, audit, |current| match current {
                Some(_) => Err(ApiError::AlreadyExists { kind: resource.clone(), name: name.clone() }),
                None => Ok(Change::Put(new)),
            })
            .await;
        match written {
            Err(ApiError::AlreadyExists { .. }) if named.is_none() => continue,
            Err(e) => return Err(e),
            Ok(body) => return Ok(respond_json(201, body.to_string())),
        }
    }
    Err(ApiError::AlreadyExists { kind: resource, name: "(generated names collided)".into() })
}

fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5).map(|_| char::from(ALPHABET[rand::random_range(0..ALPHABET.len())])).collect()
}

fn refuse_dry_run(call: &Call) -> Result<(), ApiError> {
    if call.param("dryRun").is_some() {
        return Err(ApiError::BadRequest("dryRun is not supported by the embedded API".into()));
    }
    Ok(())
}

/// The object an update leads to, from the current one and what the client sent.
fn updated(kind: &Kind, status_only: bool, current: &Value, incoming: Value) -> Value {
    if status_only {
        // NB: the current status is left out of the copy (it is replaced, and can be large).
        let mut next: serde_json::Map<String, Value> = current
            .as_object()
            .map(|m| m.iter().filter(|(k, _)| *k != "status").map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        if let Value::Object(mut sent) = incoming
            && let Some(status) = sent.remove("status")
        {
            next.insert("status".into(), status);
        }
        return Value::Object(next);
    }
    let mut next = incoming;
    fold_string_data(kind, &mut next);
    if kind.status {
        next["status"] = current["status"].clone();
        if next["status"].is_null()
            && let Some(m) = next.as_object_mut()
        {
            m.remove("status");
        }
    }
    let spec_changed = object::without_meta_and_status(&next) != object::without_meta_and_status(current);
    let generation = current["metadata"]["generation"].as_i64().unwrap_or(1) + i64::from(spec_changed);
    if let Some(meta) = object::metadata(&mut next) {
        for kept in [
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "managedFields",
        ] {
            match current["metadata"].get(kept) {
                Some(v) => meta.insert(kept.into(), v.clone()),
                None => meta.remove(kept),
            };
        }
        meta.insert("generation".into(), json!(generation));
    }
    next
}

/// How long a write without a precondition is tried again on the fresh object while others
/// keep winning: kube-apiserver's GuaranteedUpdate tries until it wins; this bounds a request
/// that others starve (they all commit meanwhile: the store serialises writes).
const GUARANTEED_FOR: std::time::Duration = std::time::Duration::from_secs(30);

/// Whether a write that lost a race may be tried again.
fn again(started: tokio::time::Instant) -> bool {
    started.elapsed() < GUARANTEED_FOR
}

/// Shared by PUT and PATCH: compute, admit, and compare-and-swap on the resourceVersion seen.
/// `precondition` is the resourceVersion the client asked for, if any (a mismatch is a 409);
/// without one, a concurrent write is retried on the fresh object, as kube-apiserver's
/// GuaranteedUpdate does: it never answers 409.
pub(super) async fn update(
    api: &Api,
    call: &Call,
    objects: &Objects,
    mut next_of: impl FnMut(&Value) -> Result<(Value, Option<i64>), ApiError>,
    own: impl Fn(&Value, &mut Value),
) -> Result<Response, ApiError> {
    refuse_dry_run(call)?;
    let kind = objects.kind;
    let name = objects.name.clone().unwrap_or_default();
    let ns = objects.namespace.clone().unwrap_or_default();
    let resource = kind.resource();
    let key = key(call, &resource, &ns, &name);
    let _turn = api.store.hold(&key).await;
    let started = tokio::time::Instant::now();
    loop {
        let current = api.store.get(&key).await?.ok_or_else(|| not_found(kind, &name))?;
        let seen = object::resource_version(&current);
        let (incoming, precondition) = next_of(&current)?;
        check_type(kind, &incoming)?;
        for (field, want) in [("name", name.as_str()), ("namespace", ns.as_str())] {
            if let Some(got) = object::meta_str(&incoming, field)
                && !got.is_empty()
                && got != want
            {
                return Err(ApiError::BadRequest(format!(
                    "metadata.{field} {got:?} does not match the request ({want:?})"
                )));
            }
        }
        if precondition.is_some_and(|p| Some(p) != seen) {
            return Err(conflict(kind, &name));
        }
        let mut next = updated(kind, objects.status, &current, incoming);
        own(&current, &mut next);
        let audit = admit(api, call, objects, Operation::Update, Some(&next), Some(&current)).await?;
        let gone = object::meta_str(&next, "deletionTimestamp").is_some() && object::finalizers(&next).is_empty();
        let result = api
            .store
            .write_audited(&key, Some(current), audit, |now| {
                let now = now.ok_or_else(|| not_found(kind, &name))?;
                if object::resource_version(now) != seen {
                    return Err(conflict(kind, &name));
                }
                Ok(if gone { Change::Delete } else { Change::Put(next) })
            })
            .await;
        match result {
            Err(ApiError::Conflict(_)) if precondition.is_none() && again(started) => continue,
            Err(e) => return Err(e),
            Ok(body) => return Ok(respond_json(200, body.to_string())),
        }
    }
}

/// PUT: replace (or replace the status), compare-and-swap on `metadata.resourceVersion`.
pub async fn replace(api: &Api, call: &Call, objects: &Objects) -> Result<Response, ApiError> {
    let incoming = call.json()?;
    check_type(objects.kind, &incoming)?;
    let precondition = object::meta_str(&incoming, "resourceVersion")
        .filter(|v| !v.is_empty())
        .map(|v| v.parse::<i64>().map_err(|_| ApiError::BadRequest(format!("invalid resourceVersion {v:?}"))))
        .transpose()?;
    // NB: taken, not copied (a Loadbalancer's status can be 150 KB); a retry reads it again.
    let mut sent = Some(incoming);
    update(
        api,
        call,
        objects,
        |_| Ok((sent.take().map_or_else(|| call.json(), Ok)?, precondition)),
        |current, next| super::managed::track(current, next, call.param("fieldManager").unwrap_or("unknown")),
    )
    .await
}

/// PATCH: JSON merge patch (strategic merge is read as merge) and JSON patch (server-side apply
/// is `apply`'s).
pub async fn patch(api: &Api, call: &Call, objects: &Objects) -> Result<Response, ApiError> {
    let media = call.content_type.split(';').next().unwrap_or("").trim();
    let json_patch = match media {
        "application/merge-patch+json" | "application/strategic-merge-patch+json" => false,
        "application/json-patch+json" => true,
        other => return Err(ApiError::UnsupportedMediaType(format!("unsupported patch type {other:?}"))),
    };
    let patch: Value = call.json()?;
    let ops: Option<json_patch::Patch> = if json_patch {
        Some(
            serde_json::from_value(patch.clone())
                .map_err(|e| ApiError::BadRequest(format!("not a JSON patch: {e}")))?,
        )
    } else {
        None
    };
    // NB: a merge patch that carries a resourceVersion makes it a precondition, as in Kubernetes.
    let precondition = patch.get("metadata").and_then(|m| m.get("resourceVersion")).and_then(Value::as_str);
    let precondition: Option<i64> = precondition.and_then(|v| v.parse().ok());
    update(
        api,
        call,
        objects,
        |current| {
            let mut doc = current.clone();
            match &ops {
                Some(ops) => {
                    json_patch::patch(&mut doc, &absent_tests_pass(current, ops)).map_err(|e| ApiError::Invalid {
                        kind: objects.kind.kind.into(),
                        name: objects.name.clone().unwrap_or_default(),
                        causes: vec![("patch".into(), e.to_string())],
                    })?
                }
                None => json_patch::merge(&mut doc, &patch),
            }
            Ok((doc, precondition))
        },
        |current, next| super::managed::track(current, next, call.param("fieldManager").unwrap_or("unknown")),
    )
    .await
}

/// As in Kubernetes, a `test` of `null` passes on a missing path (kube-rs adds its first
/// finalizer so); the patch crate alone would refuse it.
fn absent_tests_pass(doc: &Value, ops: &json_patch::Patch) -> json_patch::Patch {
    json_patch::Patch(
        ops.0
            .iter()
            .filter(|op| !matches!(op, json_patch::PatchOperation::Test(t) if t.value.is_null() && doc.pointer(t.path.as_str()).is_none()))
            .cloned()
            .collect(),
    )
}

/// DELETE: immediate, or marked with `deletionTimestamp` while finalizers remain.
pub async fn delete(api: &Api, call: &Call, objects: &Objects) -> Result<Response, ApiError> {
    refuse_dry_run(call)?;
    let kind = objects.kind;
    let name = objects.name.clone().unwrap_or_default();
    let ns = objects.namespace.clone().unwrap_or_default();
    let options: Value = if call.body.is_empty() { json!({}) } else { call.json()? };
    let want_rv = options["preconditions"]["resourceVersion"].as_str().and_then(|v| v.parse::<i64>().ok());
    let want_uid = options["preconditions"]["uid"].as_str().map(str::to_string);
    let resource = kind.resource();
    let key = key(call, &resource, &ns, &name);
    if kind.plural == "namespaces"
        && kind.group.is_empty()
        && api.store.namespace_has_objects(&call.cluster, &name).await?
    {
        return Err(ApiError::Conflict(format!("namespace {name} is not empty; delete its objects first")));
    }
    let _turn = api.store.hold(&key).await;
    let started = tokio::time::Instant::now();
    loop {
        let current = api.store.get(&key).await?.ok_or_else(|| not_found(kind, &name))?;
        let seen = object::resource_version(&current);
        if want_rv.is_some_and(|rv| Some(rv) != seen)
            || want_uid.as_deref().is_some_and(|u| Some(u) != object::meta_str(&current, "uid"))
        {
            return Err(ApiError::Conflict(format!("Precondition failed for {resource} {name:?}")));
        }
        let audit = admit(api, call, objects, Operation::Delete, None, Some(&current)).await?;
        let result = api
            .store
            .write_audited(&key, None, audit, |now| {
                let mut now = now.ok_or_else(|| not_found(kind, &name))?.clone();
                if object::resource_version(&now) != seen {
                    return Err(conflict(kind, &name));
                }
                if object::finalizers(&now).is_empty() {
                    return Ok(Change::Delete);
                }
                if let Some(meta) = object::metadata(&mut now)
                    && !meta.contains_key("deletionTimestamp")
                {
                    meta.insert("deletionTimestamp".into(), json!(app::ssr::now()));
                    meta.insert("deletionGracePeriodSeconds".into(), json!(0));
                }
                Ok(Change::Put(now))
            })
            .await;
        match result {
            Err(ApiError::Conflict(_)) if again(started) => continue,
            Err(e) => return Err(e),
            Ok(body) => return Ok(respond_json(200, body.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::resources::find;

    #[test]
    fn updates_keep_server_fields_and_count_spec_changes() {
        let kind = find("ebcpaas.io", "v1", "lbtickets", true).expect("kind");
        let current = json!({"apiVersion": "ebcpaas.io/v1", "kind": "Lbticket",
            "metadata": {"name": "t", "uid": "u1", "creationTimestamp": "2026-01-01T00:00:00Z", "generation": 2, "resourceVersion": "5"},
            "spec": {"namespace": "a"}, "status": {"phase": "Enabled"}});
        let mut incoming = current.clone();
        incoming["metadata"]["uid"] = json!("forged");
        incoming["status"] = json!({"phase": "Deleted"});
        let same = updated(kind, false, &current, incoming.clone());
        assert_eq!(same["metadata"]["uid"], "u1");
        assert_eq!(same["status"]["phase"], "Enabled", "a write to the object ignores status");
        assert_eq!(same["metadata"]["generation"], 2, "no spec change, same generation");
        incoming["spec"]["namespace"] = json!("b");
        assert_eq!(updated(kind, false, &current, incoming.clone())["metadata"]["generation"], 3);
        let status = updated(kind, true, &current, incoming);
        assert_eq!(status["status"]["phase"], "Deleted");
        assert_eq!(status["spec"]["namespace"], "a", "a write to /status ignores the spec");
    }
}
