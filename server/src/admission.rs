//! The validating admission endpoint (AdmissionReview v1) for Loadbalancer, Lbticket and
//! Lbrule: the embedded API sends every create, update and delete of them here before storing,
//! as a real API server calls it in cluster mode.

use axum::Json;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use app::domain::crd::{Lbrule, Lbticket, Loadbalancer};
use app::domain::policy::{Refusal, validate_lb, validate_rule, validate_ticket};

use crate::api::resources::Kind;
use crate::api::status::ApiError;

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

/// Why a request is denied: the code (400 invalid, 403 refused) and the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    pub code: u16,
    pub message: String,
}

impl Denial {
    fn invalid(message: impl Into<String>) -> Denial {
        Denial { code: 400, message: message.into() }
    }

    fn from_refusal(code: u16, r: Refusal) -> Denial {
        let message = match r.field {
            Some(f) => format!("{f}: {}", r.reason),
            None => r.reason,
        };
        Denial { code, message }
    }
}

/// The admission checks.
#[derive(Default)]
pub struct Admission;

/// Reads an object into its typed form, naming the field that does not fit.
fn typed<T: DeserializeOwned>(object: &Value) -> Result<T, Denial> {
    serde_path_to_error::deserialize(object).map_err(|e| {
        let path = e.path().to_string();
        Denial::invalid(if path == "." { e.inner().to_string() } else { format!("{path}: {}", e.inner()) })
    })
}

impl Admission {
    /// Reviews a request the embedded API is about to store: built as an AdmissionReview v1,
    /// answered by [`Admission::review`], turned back into the API's error on denial.
    pub async fn admit(
        &self,
        user: &str,
        kind: &Kind,
        op: Operation,
        new: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let name = new.or(old).and_then(|o| o["metadata"]["name"].as_str()).unwrap_or_default();
        let uid = uuid::Uuid::new_v4().to_string();
        let review = json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": uid,
                "kind": {"group": kind.group, "version": kind.version, "kind": kind.kind},
                "resource": {"group": kind.group, "version": kind.version, "resource": kind.plural},
                "name": name,
                "operation": op.as_str(),
                "userInfo": {"username": user},
                "object": new,
                "oldObject": old,
                "dryRun": false,
            }
        });
        let review: AdmissionReview<DynamicObject> =
            serde_json::from_value(review).map_err(|e| ApiError::internal("could not build an AdmissionReview", e))?;
        let answer = self.review(review).await;
        match answer.response {
            Some(r) if r.allowed => Ok(()),
            Some(r) => Err(ApiError::Denied {
                code: if r.result.code == 0 { 400 } else { r.result.code },
                message: r.result.message,
            }),
            None => Err(ApiError::Internal("admission gave no answer".into())),
        }
    }

    /// The endpoint: an AdmissionReview in, the same with its response out.
    pub async fn review(&self, review: AdmissionReview<DynamicObject>) -> AdmissionReview<DynamicObject> {
        let request: AdmissionRequest<DynamicObject> = match review.try_into() {
            Ok(r) => r,
            Err(_) => return AdmissionResponse::invalid("the AdmissionReview has no request").into_review(),
        };
        let response = AdmissionResponse::from(&request);
        let response = match self.decide(&request) {
            Ok(()) => response,
            Err(denial) => {
                tracing::info!(kind = %request.kind.kind, name = %request.name, reason = %denial.message, "admission denied");
                let mut denied = response.deny(&denial.message);
                denied.result.code = denial.code;
                denied.result.reason = if denial.code == 403 { "Forbidden".into() } else { "BadRequest".into() };
                denied
            }
        };
        response.into_review()
    }

    fn decide(&self, req: &AdmissionRequest<DynamicObject>) -> Result<(), Denial> {
        let Some(object) = req.object.as_ref() else {
            return Ok(());
        };
        let value = serde_json::to_value(object).map_err(|e| Denial::invalid(e.to_string()))?;
        let name = req.name.as_str();
        let name = if name.is_empty() { value["metadata"]["name"].as_str().unwrap_or_default() } else { name };
        let checked = match req.kind.kind.as_str() {
            "Loadbalancer" => validate_lb(name, &typed::<Loadbalancer>(&value)?.spec),
            "Lbticket" => validate_ticket(name, &typed::<Lbticket>(&value)?.spec),
            "Lbrule" => validate_rule(name, &typed::<Lbrule>(&value)?.spec, None),
            other => return Err(Denial::invalid(format!("lbdesk does not review {other} objects"))),
        };
        checked.map_err(|r| Denial::from_refusal(400, r))
    }
}

/// `POST /admission/validate`: the webhook a real API server calls in cluster mode.
pub async fn endpoint(
    axum::extract::State(admission): axum::extract::State<std::sync::Arc<Admission>>,
    Json(review): Json<AdmissionReview<DynamicObject>>,
) -> Json<AdmissionReview<DynamicObject>> {
    Json(admission.review(review).await)
}
