//! The embedded API's side of admission: every create, update and delete of a kind lbdesk
//! reviews is handed to admission in-process, with the objects, before it is stored (a real API
//! server sends the same as an AdmissionReview to the webhook), and a denial comes back as the
//! API's error, its field as the Status's cause.

use app::ssr::audit::{Entry, Via};
use kube::core::admission::Operation;
use serde_json::Value;

use super::status::ApiError;
use super::{Api, Call, Objects};
use crate::admission::{Caller, Review, Write};

/// Reviews a write the embedded API is about to store (`new` absent for a delete, `old` for a
/// create), status writes included; the audit entry the store records with the write, if any. Kinds lbdesk does not review pass unreviewed; those of its
/// objects in member clusters are audited when someone else writes them.
pub async fn admit(
    api: &Api,
    call: &Call,
    objects: &Objects,
    operation: Operation,
    new: Option<&Value>,
    old: Option<&Value>,
) -> Result<Option<Entry>, ApiError> {
    let kind = objects.kind;
    // A page's write (lbdesk's own user, its header saying who and why): its entry, as the page
    // says it.
    let name = new.or(old).and_then(|o| o["metadata"]["name"].as_str()).unwrap_or_default();
    let page = call.said.as_ref().filter(|_| !objects.status).map(|said| Entry {
        user: said.user.clone(),
        via: Via::Page,
        action: said.action.clone(),
        kind: kind.kind.into(),
        name: name.into(),
        project: said.project.clone(),
        before: None,
        after: said.note.clone(),
        version: None,
    });
    if !kind.admitted() {
        let witnessed = match call.cluster != api.mgmt && !objects.status {
            true => api.admission.witness(&call.cluster, &call.user, &operation, kind.kind, new, old).await,
            false => None,
        };
        return Ok(page.or(witnessed));
    }
    let write = Write {
        kind: kind.kind,
        operation,
        status: objects.status,
        user: &call.user,
        dry_run: false,
        review: Review::of(new.cloned(), old.cloned()),
    };
    let admitted = api.admission.admit(&write, Caller::Authenticated).await.map_err(|denial| ApiError::Denied {
        code: denial.code,
        message: denial.message(),
        causes: vec![(denial.field.unwrap_or_default(), denial.reason)],
    })?;
    Ok(page.or(admitted))
}
