//! An AdmissionReview answered: who may write asked first, then the checks of the object's kind;
//! an allowed write recorded in the audit log.

use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview};

use super::{Admission, Caller, Denial, Review, STATUS_IS_LBDESKS, lbrule, lbticket, loadbalancer, quota};

impl Admission {
    /// The endpoint: an AdmissionReview in, the same with its response out.
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
        let response = match self.decide(&request, caller).await {
            Ok(()) => response,
            Err(denial) => {
                let message = denial.message();
                tracing::info!(kind = %request.kind.kind, name = %request.name, reason = %message, "admission denied");
                let mut denied = response.deny(message);
                denied.result = denial.status(&request.kind.kind, &request.name);
                denied
            }
        };
        response.into_review()
    }

    /// Hands the request to the checks of its kind.
    async fn decide(&self, req: &AdmissionRequest<DynamicObject>, caller: Caller) -> Result<(), Denial> {
        let value = |o: Option<&DynamicObject>| {
            o.map(serde_json::to_value).transpose().map_err(|e| Denial::invalid(e.to_string()))
        };
        let (new, old) = (value(req.object.as_ref())?, value(req.old_object.as_ref())?);
        let name = if req.name.is_empty() {
            new.as_ref().and_then(|v| v["metadata"]["name"].as_str()).unwrap_or_default().to_string()
        } else {
            req.name.clone()
        };
        let review = Review { name, new, old };
        let kind = req.kind.kind.as_str();
        let user = req.user_info.username.as_deref().unwrap_or_default();
        // NB: who may write is asked first: the checks below would tell a stranger a phase.
        let principal = self.principal(user).await?;
        let others = principal != app::domain::access::Principal::System;
        let project = if others { self.authorize(&principal, kind, &review).await? } else { None };
        // NB: a status is what lbdesk observed, and the reconciler acts on it (the address a
        // ticket holds, its phase): written by anyone else, it could take another request's
        // address or tell an owner a made-up story.
        if req.sub_resource.as_deref() == Some("status") {
            return if others { Err(Denial::forbidden(STATUS_IS_LBDESKS)) } else { Ok(()) };
        }
        match kind {
            "Loadbalancer" => loadbalancer::check(self, &review).await,
            "Lbticket" => lbticket::check(self, &review).await,
            "Lbrule" => lbrule::check(self, &review).await,
            // NB: an address object follows its ticket; written by hand, one could free an
            // address still in use or hold one no ticket has.
            "Lbaddress" if others => Err(Denial::forbidden(
                "Address objects are lbdesk's own record of what its tickets hold; change the address request instead.",
            )),
            "Lbaddress" => Ok(()),
            "Lbquota" => quota::check(&review).await,
            other => Err(Denial::invalid(format!("lbdesk does not review {other} objects"))),
        }?;
        // A dry run changes nothing.
        if others && caller == Caller::Authenticated && !req.dry_run {
            self.record(user, &req.operation, kind, &review, project).await;
        }
        Ok(())
    }
}
