//! The embedded API's side of admission: every create, update and delete of a kind lbdesk
//! reviews goes to the validating webhook as an AdmissionReview v1 before it is stored, as a
//! real API server would send it, and a denial comes back as the API's error.

use kube::core::DynamicObject;
use kube::core::admission::AdmissionReview;
use serde_json::{Value, json};

use super::status::ApiError;
use super::{Api, Call, Objects};

/// The operation under review.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

/// Reviews a write the embedded API is about to store (`new` absent for a delete, `old` for a
/// create), status writes included. Kinds lbdesk does not review pass unreviewed; those of its
/// objects in member clusters are audited when someone else writes them.
pub async fn admit(
    api: &Api,
    call: &Call,
    objects: &Objects,
    op: Operation,
    new: Option<&Value>,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    let kind = objects.kind;
    if !kind.admitted() {
        if call.cluster != api.mgmt && !objects.status {
            let action = op.as_str().to_ascii_lowercase();
            api.admission.witness(&call.cluster, &call.user, &action, kind.kind, new, old).await;
        }
        return Ok(());
    }
    let name = new.or(old).and_then(|o| o["metadata"]["name"].as_str()).unwrap_or_default();
    let review = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uuid::Uuid::new_v4().to_string(),
            "kind": {"group": kind.group, "version": kind.version, "kind": kind.kind},
            "resource": {"group": kind.group, "version": kind.version, "resource": kind.plural},
            "name": name,
            "operation": op.as_str(),
            "subResource": objects.status.then_some("status"),
            "userInfo": {"username": call.user},
            "object": new,
            "oldObject": old,
            "dryRun": false,
        }
    });
    let review: AdmissionReview<DynamicObject> =
        serde_json::from_value(review).map_err(|e| ApiError::internal("could not build an AdmissionReview", e))?;
    match api.admission.review(review, crate::admission::Caller::Authenticated).await.response {
        Some(r) if r.allowed => Ok(()),
        Some(r) => Err(ApiError::Denied {
            code: if r.result.code == 0 { 400 } else { r.result.code },
            causes: r
                .result
                .details
                .iter()
                .flat_map(|d| &d.causes)
                .map(|c| (c.field.clone(), c.message.clone()))
                .collect(),
            message: r.result.message,
        }),
        None => Err(ApiError::Internal("admission gave no answer".into())),
    }
}
