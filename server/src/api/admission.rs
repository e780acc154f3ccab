//! The embedded API's side of admission: every create, update and delete of a kind lbdesk
//! reviews is handed to admission in-process, with the objects, before it is stored (a real API
//! server sends the same as an AdmissionReview to the webhook), and a denial comes back as the
//! API's error, its field as the Status's cause.

use kube::core::admission::Operation;
use serde_json::Value;

use super::status::ApiError;
use super::{Api, Call, Objects};
use crate::admission::{Caller, Review, Write};

/// Reviews a write the embedded API is about to store (`new` absent for a delete, `old` for a
/// create), status writes included. Kinds lbdesk does not review pass unreviewed; those of its
/// objects in member clusters are audited when someone else writes them.
pub async fn admit(
    api: &Api,
    call: &Call,
    objects: &Objects,
    operation: Operation,
    new: Option<&Value>,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    let kind = objects.kind;
    if !kind.admitted() {
        if call.cluster != api.mgmt && !objects.status {
            api.admission.witness(&call.cluster, &call.user, &operation, kind.kind, new, old).await;
        }
        return Ok(());
    }
    let write = Write {
        kind: kind.kind,
        operation,
        status: objects.status,
        user: &call.user,
        dry_run: false,
        review: Review::of(new.cloned(), old.cloned()),
    };
    api.admission.admit(&write, Caller::Authenticated).await.map_err(|denial| ApiError::Denied {
        code: denial.code,
        message: denial.message(),
        causes: vec![(denial.field.unwrap_or_default(), denial.reason)],
    })
}
