//! The shape check a real API server's schema validation makes before anything is stored: each
//! field of an object has the type its kind gives it, so a wrong-typed field is 422 naming it
//! and is never stored (where every reader of the kind would then fail on it).

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace, Secret, Service};
use k8s_openapi::api::events::v1::Event as EventV1;
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::DeserializeOwned;
use serde_json::Value;

use app::domain::crd::{Lbrule, Lbticket, Loadbalancer};

use super::resources::Kind;
use super::status::ApiError;

/// The body must be a JSON object of this endpoint's apiVersion and kind, of that kind's shape.
pub(super) fn check_type(kind: &Kind, body: &Value) -> Result<(), ApiError> {
    if !body.is_object() {
        return Err(ApiError::BadRequest("the request body must be a JSON object".into()));
    }
    let (api_version, k) = (body["apiVersion"].as_str().unwrap_or(""), body["kind"].as_str().unwrap_or(""));
    if api_version != kind.api_version() || k != kind.kind {
        return Err(ApiError::BadRequest(format!(
            "the object is {api_version:?}/{k:?}; this endpoint takes {}/{}",
            kind.api_version(),
            kind.kind
        )));
    }
    if !body["metadata"].is_null() && !body["metadata"].is_object() {
        return Err(ApiError::BadRequest("metadata must be an object".into()));
    }
    check_shape(kind, body)
}

/// Whether `body` has the shape of `kind` (its metadata, for kinds lbdesk has no type of).
fn check_shape(kind: &Kind, body: &Value) -> Result<(), ApiError> {
    let at = |path: &str| if path == "." { String::new() } else { path.to_string() };
    let fits = |result: Result<(), serde_path_to_error::Error<serde_json::Error>>, prefix: &str| {
        result.map_err(|e| ApiError::Invalid {
            kind: kind.kind.into(),
            name: body["metadata"]["name"].as_str().unwrap_or_default().chars().take(253).collect(),
            causes: vec![(format!("{prefix}{}", at(&e.path().to_string())), e.inner().to_string())],
        })
    };
    match (kind.group, kind.kind) {
        ("", "Namespace") => fits(typed::<Namespace>(body), ""),
        ("", "Service") => fits(typed::<Service>(body), ""),
        ("", "ConfigMap") => fits(typed::<ConfigMap>(body), ""),
        ("", "Secret") => fits(typed::<Secret>(body), ""),
        ("", "Event") => fits(typed::<Event>(body), ""),
        ("events.k8s.io", "Event") => fits(typed::<EventV1>(body), ""),
        ("networking.k8s.io", "Ingress") => fits(typed::<Ingress>(body), ""),
        ("coordination.k8s.io", "Lease") => fits(typed::<Lease>(body), ""),
        ("ebcpaas.io", "Loadbalancer") => fits(typed::<Loadbalancer>(body), ""),
        ("ebcpaas.io", "Lbticket") => fits(typed::<Lbticket>(body), ""),
        ("ebcpaas.io", "Lbrule") => fits(typed::<Lbrule>(body), ""),
        _ if body["metadata"].is_null() => Ok(()),
        _ => fits(typed::<ObjectMeta>(&body["metadata"]), "metadata."),
    }
}

fn typed<T: DeserializeOwned>(body: &Value) -> Result<(), serde_path_to_error::Error<serde_json::Error>> {
    serde_path_to_error::deserialize::<_, T>(body).map(|_| ())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::api::resources::find;

    fn refused(plural: &str, group: &str, body: Value) -> Vec<(String, String)> {
        let kind = find(group, "v1", plural, true).expect("served");
        match check_shape(kind, &body) {
            Err(ApiError::Invalid { causes, .. }) => causes,
            other => panic!("{plural}: {other:?}"),
        }
    }

    #[test]
    fn wrong_typed_fields_are_named_and_right_ones_pass() {
        let cm =
            |meta: Value, data: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data});
        let kind = find("", "v1", "configmaps", true).expect("served");
        assert!(check_shape(kind, &cm(json!({"name": "c", "labels": {"a": "b"}}), json!({"k": "v"}))).is_ok());
        assert_eq!(refused("configmaps", "", cm(json!({"name": "c", "labels": 5}), json!({})))[0].0, "metadata.labels");
        assert_eq!(refused("configmaps", "", cm(json!({"name": "c"}), json!({"k": 5})))[0].0, "data.k");
        let lb = json!({"apiVersion": "ebcpaas.io/v1", "kind": "Loadbalancer", "metadata": {"name": "x", "finalizers": "x"}, "spec": {}});
        assert_eq!(refused("loadbalancers", "ebcpaas.io", lb)[0].0, "metadata.finalizers");
    }
}
