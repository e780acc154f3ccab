//! The validating admission endpoint (AdmissionReview v1) for Loadbalancer, Lbticket and
//! Lbrule: the embedded API sends every create, update and delete of them here before storing,
//! as a real API server calls it in cluster mode.

use axum::Json;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use app::domain::crd::{LABEL_CLUSTER, LABEL_DO_NOT_DELETE, LABEL_PROJECT, Lbrule, Lbticket, Loadbalancer, Phase};
use app::domain::policy::{
    Refusal, lb_deletable, lb_offered_to, lb_unique, lb_update, ticket_deletable, ticket_update, tickets_using,
    validate_lb, validate_rule, validate_ticket,
};

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

/// The admission checks: the schema-level rules, and the grey-out rules of DESIGN §4 (the same
/// functions the screens and server functions use), which read the management cluster.
#[derive(Default)]
pub struct Admission {
    mgmt: std::sync::OnceLock<kube::Client>,
}

/// Reads an object into its typed form, naming the field that does not fit.
fn typed<T: DeserializeOwned>(object: &Value) -> Result<T, Denial> {
    serde_path_to_error::deserialize(object).map_err(|e| {
        let path = e.path().to_string();
        Denial::invalid(if path == "." { e.inner().to_string() } else { format!("{path}: {}", e.inner()) })
    })
}

impl Admission {
    /// Gives the checks their view of the management cluster (set once it can be reached).
    pub fn connect(&self, mgmt: kube::Client) {
        let _ = self.mgmt.set(mgmt);
    }

    async fn list<K>(&self) -> Result<Vec<K>, Denial>
    where
        K: kube::Resource<DynamicType = (), Scope = kube::core::ClusterResourceScope>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
    {
        let Some(client) = self.mgmt.get() else { return Ok(Vec::new()) };
        kube::Api::<K>::all(client.clone())
            .list(&Default::default())
            .await
            .map(|l| l.items)
            .map_err(|e| Denial::invalid(format!("admission could not read the management cluster: {e}")))
    }

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
        let response = match self.decide(&request).await {
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

    async fn decide(&self, req: &AdmissionRequest<DynamicObject>) -> Result<(), Denial> {
        use kube::core::admission::Operation as Op;
        let value = |o: Option<&DynamicObject>| {
            o.map(serde_json::to_value).transpose().map_err(|e| Denial::invalid(e.to_string()))
        };
        let (new, old) = (value(req.object.as_ref())?, value(req.old_object.as_ref())?);
        let name = if req.name.is_empty() {
            new.as_ref().and_then(|v| v["metadata"]["name"].as_str()).unwrap_or_default().to_string()
        } else {
            req.name.clone()
        };
        let refused = |r: Refusal| Denial::from_refusal(403, r);
        match req.kind.kind.as_str() {
            "Loadbalancer" => {
                let new: Option<Loadbalancer> = new.as_ref().map(typed).transpose()?;
                let old: Option<Loadbalancer> = old.as_ref().map(typed).transpose()?;
                if let Some(lb) = &new {
                    validate_lb(&name, &lb.spec).map_err(|r| Denial::from_refusal(400, r))?;
                }
                let needs_cluster = matches!(req.operation, Op::Delete)
                    || matches!((&new, &old), (Some(_), None))
                    || new.as_ref().zip(old.as_ref()).is_some_and(|(n, o)| n.spec != o.spec);
                if !needs_cluster {
                    return Ok(());
                }
                let tickets: Vec<Lbticket> = self.list().await?;
                let in_use = tickets_using(&name, tickets.iter().map(|t| (&t.spec, t.status.as_ref())));
                match (&new, &old) {
                    (Some(n), maybe_old) => {
                        let others: Vec<Loadbalancer> = self.list().await?;
                        lb_unique(
                            &name,
                            &n.spec,
                            others.iter().map(|o| (o.metadata.name.as_deref().unwrap_or(""), &o.spec)),
                        )
                        .map_err(refused)?;
                        if let Some(o) = maybe_old {
                            lb_update(&o.spec, &n.spec, in_use).map_err(refused)?;
                        }
                        Ok(())
                    }
                    (None, Some(o)) => {
                        let protected = o.metadata.labels.as_ref().is_some_and(|l| l.contains_key(LABEL_DO_NOT_DELETE));
                        lb_deletable(in_use, protected).map_err(refused)
                    }
                    (None, None) => Ok(()),
                }
            }
            "Lbticket" => {
                let new: Option<Lbticket> = new.as_ref().map(typed).transpose()?;
                let old: Option<Lbticket> = old.as_ref().map(typed).transpose()?;
                let phase = |t: &Lbticket| t.status.as_ref().map(|s| s.phase).unwrap_or_default();
                match (&new, &old) {
                    (Some(t), None) => {
                        validate_ticket(&name, &t.spec).map_err(|r| Denial::from_refusal(400, r))?;
                        let lbs: Vec<Loadbalancer> = self.list().await?;
                        let lb = lbs.iter().find(|l| l.metadata.name.as_deref() == Some(t.spec.loadbalancer.as_str()));
                        // NB: a load balancer applied after the ticket is fine; the reconciler waits.
                        let Some(lb) = lb else { return Ok(()) };
                        let labels = t.metadata.labels.clone().unwrap_or_default();
                        if let Some(project) = labels.get(LABEL_PROJECT) {
                            let cluster = labels.get(LABEL_CLUSTER).cloned().unwrap_or_else(|| lb.spec.cluster.clone());
                            lb_offered_to(&lb.spec, &cluster, project).map_err(refused)?;
                        }
                        Ok(())
                    }
                    (Some(t), Some(o)) => {
                        validate_ticket(&name, &t.spec).map_err(|r| Denial::from_refusal(400, r))?;
                        if t.spec == o.spec {
                            return Ok(());
                        }
                        let rules: Vec<Lbrule> = self.list().await?;
                        let rules_on = |listener: &str| {
                            rules.iter().filter(|r| r.spec.lbticket == name && r.spec.listener == listener).count()
                        };
                        ticket_update(&o.spec, &t.spec, phase(o), &rules_on, 0).map_err(refused)
                    }
                    (None, Some(o)) if phase(o) == Phase::Deleted => Ok(()),
                    (None, Some(o)) => ticket_deletable(phase(o)).map_err(refused),
                    (None, None) => Ok(()),
                }
            }
            "Lbrule" => match new {
                Some(v) => {
                    validate_rule(&name, &typed::<Lbrule>(&v)?.spec, None).map_err(|r| Denial::from_refusal(400, r))
                }
                None => Ok(()),
            },
            other => Err(Denial::invalid(format!("lbdesk does not review {other} objects"))),
        }
    }
}

/// `POST /admission/validate`: the webhook a real API server calls in cluster mode.
pub async fn endpoint(
    axum::extract::State(admission): axum::extract::State<std::sync::Arc<Admission>>,
    Json(review): Json<AdmissionReview<DynamicObject>>,
) -> Json<AdmissionReview<DynamicObject>> {
    Json(admission.review(review).await)
}
