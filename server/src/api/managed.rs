//! Field ownership (`metadata.managedFields`, FieldsV1), as far as server-side apply needs it:
//! leaf fields only, lists as leaves. An apply owns the fields it sets, and takes a field
//! another manager owns only with `force` or when the value is the same (then both own it);
//! any other write by a field manager takes the fields it changes; a field removed is owned by
//! no one. Objects never applied carry no managed fields and cost nothing here.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use super::status::ApiError;

/// JSON pointers of the leaf fields `object` sets (metadata: labels and annotations only; the
/// rest of metadata, `apiVersion` and `kind` are the server's or the request's).
fn leaves(object: &Value) -> BTreeSet<String> {
    fn walk(v: &Value, at: String, out: &mut BTreeSet<String>) {
        match v.as_object() {
            Some(map) if !map.is_empty() => {
                for (k, child) in map {
                    walk(child, format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")), out);
                }
            }
            _ => {
                out.insert(at);
            }
        }
    }
    let mut out = BTreeSet::new();
    for (k, v) in object.as_object().into_iter().flatten() {
        match k.as_str() {
            "apiVersion" | "kind" | "status" => {}
            "metadata" => {
                for part in ["labels", "annotations"] {
                    if let Some(inner) = v.get(part) {
                        walk(inner, format!("/metadata/{part}"), &mut out);
                    }
                }
            }
            _ => walk(v, format!("/{k}"), &mut out),
        }
    }
    out
}

/// A set of JSON pointers as FieldsV1 (`{"f:spec": {"f:holderIdentity": {}}}`), and back.
fn to_fields(paths: &BTreeSet<String>) -> Value {
    let mut root = Map::new();
    for path in paths {
        let mut node = &mut root;
        for part in path.split('/').skip(1) {
            let key = format!("f:{}", part.replace("~1", "/").replace("~0", "~"));
            node = match node.entry(key).or_insert_with(|| json!({})) {
                Value::Object(m) => m,
                _ => break,
            };
        }
    }
    Value::Object(root)
}

fn from_fields(fields: &Value) -> BTreeSet<String> {
    fn walk(v: &Value, at: String, out: &mut BTreeSet<String>) {
        let children: Vec<_> = v.as_object().into_iter().flatten().filter(|(k, _)| k.starts_with("f:")).collect();
        if children.is_empty() {
            if !at.is_empty() {
                out.insert(at);
            }
            return;
        }
        for (k, child) in children {
            let part = k.trim_start_matches("f:").replace('~', "~0").replace('/', "~1");
            walk(child, format!("{at}/{part}"), out);
        }
    }
    let mut out = BTreeSet::new();
    walk(fields, String::new(), &mut out);
    out
}

/// Each manager's owned fields, by (manager, operation).
type Owners = BTreeMap<(String, String), BTreeSet<String>>;

fn owners(object: &Value) -> Owners {
    let mut out = Owners::new();
    for entry in object["metadata"]["managedFields"].as_array().into_iter().flatten() {
        let manager = entry["manager"].as_str().unwrap_or_default().to_string();
        let operation = entry["operation"].as_str().unwrap_or("Update").to_string();
        out.entry((manager, operation)).or_default().extend(from_fields(&entry["fieldsV1"]));
    }
    out
}

fn write_owners(object: &mut Value, owners: Owners) {
    let Some(map) = object.as_object_mut() else { return };
    if !map.get("metadata").is_some_and(Value::is_object) {
        map.insert("metadata".into(), json!({}));
    }
    let api_version = object["apiVersion"].clone();
    let now = app::ssr::now();
    let entries: Vec<Value> = owners
        .into_iter()
        .filter(|(_, fields)| !fields.is_empty())
        .map(|((manager, operation), fields)| {
            json!({"manager": manager, "operation": operation, "apiVersion": api_version, "time": now,
                "fieldsType": "FieldsV1", "fieldsV1": to_fields(&fields)})
        })
        .collect();
    if let Some(meta) = object["metadata"].as_object_mut() {
        meta.insert("managedFields".into(), Value::Array(entries));
    }
}

/// `next` with the fields `manager` changed from `current` taken by it (an Update), and the
/// fields no longer set owned by no one. Nothing when `current` was never applied.
pub fn track(current: &Value, next: &mut Value, manager: &str) {
    if current["metadata"]["managedFields"].as_array().is_none_or(Vec::is_empty) {
        return;
    }
    let mut owners = owners(current);
    let (before, after) = (leaves(current), leaves(next));
    let changed: BTreeSet<String> =
        before.union(&after).filter(|p| current.pointer(p) != next.pointer(p)).cloned().collect();
    for fields in owners.values_mut() {
        fields.retain(|p| !changed.contains(p) && after.contains(p));
    }
    owners.entry((manager.to_string(), "Update".into())).or_default().extend(changed.intersection(&after).cloned());
    write_owners(next, owners);
}

/// Refuses an apply of `patch` by `manager` that would change a field another manager owns,
/// unless `force`.
fn check(current: &Value, patch: &Value, manager: &str, force: bool) -> Result<(), ApiError> {
    if !patch.is_object() {
        return Err(ApiError::BadRequest("an apply patch is an object".into()));
    }
    if force {
        return Ok(());
    }
    let changed: BTreeSet<String> =
        leaves(patch).into_iter().filter(|p| current.pointer(p) != patch.pointer(p)).collect();
    let taken: Vec<String> = owners(current)
        .iter()
        .filter(|((m, _), _)| m != manager)
        .flat_map(|((m, _), fields)| fields.intersection(&changed).map(move |p| format!("{m}: {p}")))
        .collect();
    if taken.is_empty() {
        Ok(())
    } else {
        Err(ApiError::Conflict(format!(
            "Apply failed with {} conflict(s): conflict with {}",
            taken.len(),
            taken.join(", ")
        )))
    }
}

/// The owners after `manager` applied `patch` to `current`, giving `next`: it owns what it
/// set; others keep what it did not change, and nobody owns what is gone.
pub(super) fn record(current: &Value, next: &mut Value, patch: &Value, manager: &str) {
    let mut owners = owners(current);
    let set = leaves(patch);
    let after = leaves(next);
    let changed: BTreeSet<&String> = set.iter().filter(|p| current.pointer(p) != patch.pointer(p)).collect();
    for ((m, _), fields) in owners.iter_mut() {
        fields.retain(|p| after.contains(p) && (m == manager || !changed.contains(p)));
    }
    owners.insert((manager.to_string(), "Apply".into()), set.intersection(&after).cloned().collect());
    write_owners(next, owners);
}

/// `current` (`None`: the object does not exist yet) with `patch` applied by `manager`, with
/// its owners: a conflict when a field the patch would change is owned by another manager,
/// unless `force`.
pub fn apply(current: Option<&Value>, patch: &Value, manager: &str, force: bool) -> Result<Value, ApiError> {
    let empty = json!({});
    let current = current.unwrap_or(&empty);
    let mut next = merged(current, patch, manager, force)?;
    record(current, &mut next, patch, manager);
    Ok(next)
}

/// `current` with `patch` merged in, once `check` allows it (the owners are recorded after).
pub(super) fn merged(current: &Value, patch: &Value, manager: &str, force: bool) -> Result<Value, ApiError> {
    check(current, patch, manager, force)?;
    let mut next = current.clone();
    json_patch::merge(&mut next, patch);
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(holder: Option<&str>) -> Value {
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15}})
    }

    #[test]
    fn of_two_managers_applying_to_a_free_lease_the_second_conflicts() {
        let created =
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}, "spec": {}});
        let a = apply(Some(&created), &lease(Some("a")), "m-a", false).expect("a takes it");
        assert_eq!(a["spec"]["holderIdentity"], "a");
        let refused = apply(Some(&a), &lease(Some("b")), "m-b", false).expect_err("b conflicts");
        assert!(matches!(&refused, ApiError::Conflict(m) if m.contains("m-a: /spec/holderIdentity")), "{refused:?}");
        let forced = apply(Some(&a), &lease(Some("b")), "m-b", true).expect("force");
        assert_eq!(forced["spec"]["holderIdentity"], "b");
        assert!(apply(Some(&forced), &lease(Some("a")), "m-a", false).is_err(), "b owns it now");
        // The same value is no conflict: both own it.
        assert!(apply(Some(&a), &lease(Some("a")), "m-b", false).is_ok());
    }

    #[test]
    fn a_field_another_write_removed_is_free_to_apply() {
        let a = apply(None, &lease(Some("a")), "m-a", false).expect("a");
        let mut released = a.clone();
        released["spec"].as_object_mut().expect("spec").remove("holderIdentity");
        track(&a, &mut released, "m-b");
        assert!(!from_fields(&released["metadata"]["managedFields"][0]["fieldsV1"]).contains("/spec/holderIdentity"));
        let b = apply(Some(&released), &lease(Some("b")), "m-b", false).expect("free again");
        assert_eq!(b["spec"]["holderIdentity"], "b");
        // An update that changes a field takes it from its applier.
        let mut renewed = b.clone();
        renewed["spec"]["leaseDurationSeconds"] = json!(30);
        track(&b, &mut renewed, "m-c");
        assert!(apply(Some(&renewed), &json!({"spec": {"leaseDurationSeconds": 15}}), "m-b", false).is_err());
    }

    #[test]
    fn fields_round_trip_through_fieldsv1_with_slashes_in_keys() {
        let object =
            json!({"metadata": {"labels": {"app.kubernetes.io/name": "x"}}, "spec": {"a": {"b": 1}, "c": [1]}});
        let set = leaves(&object);
        assert_eq!(
            set,
            BTreeSet::from(["/metadata/labels/app.kubernetes.io~1name".into(), "/spec/a/b".into(), "/spec/c".into()])
        );
        assert_eq!(from_fields(&to_fields(&set)), set);
        assert_eq!(object.pointer("/metadata/labels/app.kubernetes.io~1name"), Some(&json!("x")));
    }

    #[test]
    fn an_object_never_applied_is_left_alone() {
        let current = json!({"spec": {"a": 1}});
        let mut next = json!({"spec": {"a": 2}});
        track(&current, &mut next, "m");
        assert!(next["metadata"].is_null());
    }
}
