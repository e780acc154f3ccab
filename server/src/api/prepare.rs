//! Making an incoming object ready to store: server-owned metadata, a Secret's `stringData`.

use base64::Engine;
use serde_json::{Value, json};

use super::object;
use super::resources::Kind;

/// A random UUID (version 4).
fn uid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Secrets: `stringData` is folded into `data`, base64-encoded, as the API server does.
pub(super) fn fold_string_data(kind: &Kind, obj: &mut Value) {
    if kind.plural != "secrets" || !kind.group.is_empty() {
        return;
    }
    let Some(map) = obj.as_object_mut() else { return };
    if let Some(Value::Object(strings)) = map.remove("stringData") {
        let data = map.entry("data").or_insert_with(|| json!({}));
        if let Some(data) = data.as_object_mut() {
            for (k, v) in strings {
                let text = v.as_str().unwrap_or_default().to_string();
                data.insert(k, Value::String(base64::engine::general_purpose::STANDARD.encode(text)));
            }
        }
    }
}

/// Makes a new object ready to store: server-owned metadata set, status dropped where it is a
/// subresource. Also used to seed embedded mode.
pub fn prepare_new(kind: &Kind, obj: &mut Value, namespace: &str, name: &str) {
    fold_string_data(kind, obj);
    if kind.status
        && let Some(m) = obj.as_object_mut()
    {
        m.remove("status");
    }
    if let Some(meta) = object::metadata(obj) {
        meta.insert("name".into(), json!(name));
        meta.remove("generateName");
        if kind.namespaced {
            meta.insert("namespace".into(), json!(namespace));
        } else {
            meta.remove("namespace");
        }
        meta.insert("uid".into(), json!(uid()));
        meta.insert("creationTimestamp".into(), json!(app::ssr::now()));
        meta.insert("generation".into(), json!(1));
        for server_owned in
            ["resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink"]
        {
            meta.remove(server_owned);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::resources::find;

    #[test]
    fn secrets_fold_string_data() {
        let kind = find("", "v1", "secrets", false).expect("kind");
        let mut s = json!({"stringData": {"token": "abc"}});
        fold_string_data(kind, &mut s);
        assert_eq!(s["data"]["token"], "YWJj");
        assert!(s.get("stringData").is_none());
    }
}
