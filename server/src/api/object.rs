//! Reading and writing the metadata of a JSON object, as the API server does.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// `metadata.labels` as a map (non-string values are ignored).
pub fn labels(object: &Value) -> BTreeMap<String, String> {
    object["metadata"]["labels"]
        .as_object()
        .map(|m| m.iter().filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string()))).collect())
        .unwrap_or_default()
}

/// A string field of `metadata`.
pub fn meta_str<'a>(object: &'a Value, field: &str) -> Option<&'a str> {
    object["metadata"][field].as_str()
}

/// `metadata.resourceVersion` as a number.
pub fn resource_version(object: &Value) -> Option<i64> {
    meta_str(object, "resourceVersion").and_then(|v| v.parse().ok())
}

/// The metadata object, created when missing; `None` when `object` is not a JSON object.
pub fn metadata(object: &mut Value) -> Option<&mut Map<String, Value>> {
    let root = object.as_object_mut()?;
    let meta = root.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    meta.as_object_mut()
}

/// Sets `metadata.resourceVersion`.
pub fn set_resource_version(object: &mut Value, rv: i64) {
    if let Some(m) = metadata(object) {
        m.insert("resourceVersion".into(), Value::String(rv.to_string()));
    }
}

/// `metadata.finalizers`.
pub fn finalizers(object: &Value) -> Vec<String> {
    object["metadata"]["finalizers"]
        .as_array()
        .map(|f| f.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

/// Whether two objects are equal but for their resourceVersion (compared in place: objects
/// can be large).
pub fn same_but_version(a: &Value, b: &Value) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else { return a == b };
    a.len() == b.len()
        && a.iter().all(|(k, v)| match b.get(k) {
            Some(w) if k == "metadata" => same_but_key(v, w, "resourceVersion"),
            Some(w) => v == w,
            None => false,
        })
}

/// Whether two objects are equal but for one key.
fn same_but_key(a: &Value, b: &Value, key: &str) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else { return a == b };
    let rest = |m: &'_ serde_json::Map<String, Value>| m.len() - usize::from(m.contains_key(key));
    rest(a) == rest(b) && a.iter().filter(|(k, _)| *k != key).all(|(k, v)| b.get(k) == Some(v))
}

/// The object without `metadata` and `status`: what a spec change is measured on.
pub fn without_meta_and_status(object: &Value) -> Value {
    let mut v = object.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("metadata");
        m.remove("status");
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn metadata_helpers_read_and_write() {
        let mut o = json!({"metadata": {"name": "a", "labels": {"x": "1", "n": 2}, "finalizers": ["f"]}, "spec": {}});
        assert_eq!(labels(&o).len(), 1);
        assert_eq!(finalizers(&o), ["f"]);
        set_resource_version(&mut o, 7);
        assert_eq!(resource_version(&o), Some(7));
        let mut p = o.clone();
        set_resource_version(&mut p, 8);
        assert!(same_but_version(&o, &p));
        p["spec"]["x"] = json!(1);
        assert!(!same_but_version(&o, &p));
        let mut bare = json!({});
        set_resource_version(&mut bare, 1);
        assert_eq!(meta_str(&bare, "resourceVersion"), Some("1"));
    }

    #[test]
    fn only_the_resource_version_is_left_out_of_the_comparison() {
        let o = json!({"metadata": {"name": "a", "resourceVersion": "3"}, "status": {"ips": [1, 2]}});
        let same = |p: Value| same_but_version(&o, &p);
        assert!(same(json!({"metadata": {"name": "a"}, "status": {"ips": [1, 2]}})), "version absent");
        assert!(same(json!({"metadata": {"resourceVersion": "9", "name": "a"}, "status": {"ips": [1, 2]}})));
        assert!(!same(json!({"metadata": {"name": "b", "resourceVersion": "3"}, "status": {"ips": [1, 2]}})));
        assert!(!same(json!({"metadata": {"name": "a", "uid": "u"}, "status": {"ips": [1, 2]}})), "metadata added");
        assert!(!same(json!({"metadata": {"name": "a"}, "status": {"ips": [2, 1]}})));
        assert!(!same(json!({"metadata": {"name": "a"}})), "status gone");
        assert!(!same(json!({"metadata": {"name": "a"}, "status": {"ips": [1, 2]}, "spec": {}})), "spec added");
        assert!(!same(json!({"metadata": {"name": "a"}, "status": {"ips": [1, 2]}, "resourceVersion": "3"})));
    }
}
