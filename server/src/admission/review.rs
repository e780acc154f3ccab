//! A write reviewed: who may write asked first, then the checks of the object's kind; an allowed
//! write recorded in the audit log. The embedded API calls [`Admission::admit`] in-process with
//! the objects; only the HTTPS webhook speaks AdmissionReview ([`Admission::review`]).

use app::domain::access::Principal;
use app::ssr::audit::{Entry, digest};
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview};

use super::{Admission, Caller, Denial, Review, STATUS_IS_LBDESKS, Write, lbrule, lbticket, loadbalancer, quota};

impl Admission {
    /// The webhook's endpoint: an AdmissionReview in, the same with its response out.
    pub async fn review(
        &self,
        review: AdmissionReview<DynamicObject>,
        caller: Caller,
    ) -> AdmissionReview<DynamicObject> {
        let request: AdmissionRequest<DynamicObject> = match review.try_into() {
            Ok(r) => r,
            Err(_) => return AdmissionResponse::invalid("the AdmissionReview has no request").into_review(),
        };
        let response = AdmissionResponse::from(&request);
        let verdict = match written(&request) {
            Ok(write) => self.admit(&write, caller).await.map(|entry| {
                entry.map(|e| Entry { before: write.review.old.clone(), after: write.review.new.clone(), ..e })
            }),
            Err(denial) => Err(denial),
        };
        // NB: the webhook does not see the commit (the store may still refuse the write, the
        // API server may ask again for it): the entry waits for the watch to show it committed
        // (`audit_follow`).
        if let Ok(Some(entry)) = &verdict {
            let digest = entry.after.as_ref().map(digest).unwrap_or_default();
            if let Err(e) = self.db.audit_pending(entry, &digest, time::OffsetDateTime::now_utc()).await {
                tracing::error!(error = %e, kind = %entry.kind, name = %entry.name, "could not write the audit entry");
            }
        }
        let response = match verdict {
            Ok(_) => response,
            Err(denial) => {
                let mut denied = response.deny(denial.message());
                denied.result = denial.status(&request.kind.kind, &request.name);
                denied
            }
        };
        response.into_review()
    }

    /// Reviews `write`: allowed (with the audit entry to record, when it is recorded), or why
    /// not.
    pub async fn admit(&self, write: &Write<'_>, caller: Caller) -> Result<Option<Entry>, Denial> {
        let verdict = self.decide(write, caller).await;
        if let Err(denial) = &verdict {
            let (kind, name, reason) = (write.kind, &write.review.name, denial.message());
            tracing::info!(%kind, %name, %reason, "admission denied");
        }
        verdict
    }

    /// Hands the write to the checks of its kind.
    async fn decide(&self, write: &Write<'_>, caller: Caller) -> Result<Option<Entry>, Denial> {
        let (kind, review) = (write.kind, &write.review);
        // NB: who may write is asked first: the checks below would tell a stranger a phase.
        let principal = self.principal(write.user).await?;
        let others = principal != Principal::System;
        let project = if others { self.authorize(&principal, kind, review).await? } else { None };
        // NB: a status is what lbdesk observed, and the reconciler acts on it (the address a
        // ticket holds, its phase): written by anyone else, it could take another request's
        // address or tell an owner a made-up story.
        if write.status {
            return if others { Err(Denial::forbidden(STATUS_IS_LBDESKS)) } else { Ok(None) };
        }
        match kind {
            "Loadbalancer" => loadbalancer::check(self, review).await,
            "Lbticket" => lbticket::check(self, review).await,
            "Lbrule" => lbrule::check(self, review).await,
            // NB: an address object follows its ticket; written by hand, one could free an
            // address still in use or hold one no ticket has.
            "Lbaddress" if others => Err(Denial::forbidden(
                "Address objects are lbdesk's own record of what its tickets hold; change the address request instead.",
            )),
            "Lbaddress" => Ok(()),
            "Lbquota" => quota::check(review).await,
            other => Err(Denial::invalid(format!("lbdesk does not review {other} objects"))),
        }?;
        // A dry run changes nothing.
        let recorded = others && caller == Caller::Authenticated && !write.dry_run;
        Ok(recorded.then(|| self.entry(write.user, &write.operation, kind, review, project)).flatten())
    }
}

/// The write an AdmissionReview's request carries.
fn written(req: &AdmissionRequest<DynamicObject>) -> Result<Write<'_>, Denial> {
    let value =
        |o: Option<&DynamicObject>| o.map(serde_json::to_value).transpose().map_err(|e| Denial::invalid(e.to_string()));
    let mut review = Review::of(value(req.object.as_ref())?, value(req.old_object.as_ref())?);
    if !req.name.is_empty() {
        review.name = req.name.clone();
    }
    review.dry_run = req.dry_run;
    Ok(Write {
        kind: req.kind.kind.as_str(),
        operation: req.operation.clone(),
        status: req.sub_resource.as_deref() == Some("status"),
        user: req.user_info.username.as_deref().unwrap_or_default(),
        dry_run: req.dry_run,
        review,
    })
}
