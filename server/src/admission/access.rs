//! Who is writing, whether they may (the domain's one rule, `authorize`), and the audit entry
//! of what they wrote. lbdesk's own writes skip both: its pages asked and audited already.
//!
//! The user is the AdmissionReview's `userInfo.username`: lbdesk's own user is lbdesk; none, or
//! `system:anonymous`, is nobody; a name that is an lbdesk account has that account's role and
//! projects; NB: any other Kubernetes user is taken as an admin, because the API server's RBAC,
//! which let the request through to admission, is what grants them the kind (in embedded mode
//! the only other token is the admin one that `lbdesk kubeconfig` prints).

use app::domain::access::{Principal, Target, Verb, Verdict, authorize};
use app::domain::crd::{LABEL_PROJECT, Lbticket};
use app::ssr::audit::Entry;
use kube::ResourceExt;
use kube::core::admission::Operation;
use serde_json::Value;

use super::{Admission, Denial, NOT_YOURS, Review};

impl Admission {
    /// The writer as the authorization rule sees them.
    pub(super) async fn principal(&self, user: &str) -> Result<Principal, Denial> {
        if user == self.own_user {
            return Ok(Principal::System);
        }
        // NB: a review naming no user, or the anonymous one, is refused whatever RBAC says.
        if user.is_empty() || user == "system:anonymous" {
            return Ok(Principal::Anonymous);
        }
        let unavailable = |e: sqlx::Error| {
            tracing::error!(error = %e, "admission could not read the accounts");
            Denial::failed("admission could not read the accounts")
        };
        let Some(account) = self.db.account(user).await.map_err(unavailable)? else {
            return Ok(Principal::Admin { name: user.to_string() });
        };
        let projects = self.db.projects_of(&account).await.map_err(unavailable)?;
        Ok(match account.role {
            app::domain::user::Role::Admin => Principal::Admin { name: account.username },
            app::domain::user::Role::Tenant => Principal::Tenant { name: account.username, projects },
        })
    }

    /// The project `object` of `kind` belongs to: a ticket's label, a rule's ticket's label (not
    /// the rule's own, which its writer chose); none for a load balancer or an unlabelled ticket.
    async fn project_of(&self, kind: &str, object: &Value) -> Result<Option<String>, Denial> {
        let label = |o: &Value| o["metadata"]["labels"][LABEL_PROJECT].as_str().map(String::from);
        match kind {
            "Lbticket" => Ok(label(object)),
            // NB: a project's quota is its project's: its members see it change in the log.
            "Lbquota" => Ok(object["metadata"]["name"].as_str().map(String::from)),
            "Lbrule" => {
                let (Some(ticket), Some(client)) = (object["spec"]["lbticket"].as_str(), self.mgmt.get()) else {
                    return Ok(None);
                };
                let ticket = kube::Api::<Lbticket>::all(client.clone()).get_opt(ticket).await.map_err(|e| {
                    tracing::error!(error = %e, "admission could not read a rule's ticket");
                    Denial::failed("admission could not read the management cluster")
                })?;
                Ok(ticket.and_then(|t| t.labels().get(LABEL_PROJECT).cloned()))
            }
            _ => Ok(None),
        }
    }

    /// Whether `principal` may make this write: to the object as stored and as it would be (a
    /// tenant can neither take another project's object nor give one away). Returns the
    /// object's project, for the audit entry.
    pub(super) async fn authorize(
        &self,
        principal: &Principal,
        kind: &str,
        review: &Review,
    ) -> Result<Option<String>, Denial> {
        let mut project = None;
        for object in [&review.new, &review.old].into_iter().flatten() {
            let p = self.project_of(kind, object).await?;
            let target = match (kind, &p) {
                ("Loadbalancer", _) => Target::Loadbalancers,
                ("Lbquota", _) => Target::Accounts,
                ("Lbticket" | "Lbrule", Some(p)) => Target::Project(p),
                ("Lbticket" | "Lbrule", None) => Target::Unowned,
                _ => Target::AllProjects,
            };
            match authorize(principal, Verb::Write, target) {
                Verdict::Allow => {}
                Verdict::Forbidden(reason) => return Err(Denial::forbidden(reason.to_string())),
                Verdict::NotFound | Verdict::Unauthenticated => {
                    return Err(Denial::forbidden(NOT_YOURS));
                }
            }
            project = project.or(p);
        }
        Ok(project)
    }

    /// The audit entry of an allowed write (its objects left for the recorder to fill), for the
    /// write to record once it is stored: the embedded API in the transaction that stores it; the
    /// webhook when it answers (it never sees the commit).
    pub(super) fn entry(
        &self,
        user: &str,
        operation: &Operation,
        kind: &str,
        review: &Review,
        project: Option<String>,
    ) -> Option<Entry> {
        Some(Entry {
            user: user.to_string(),
            via: self.via,
            action: super::action(operation)?.into(),
            kind: kind.to_string(),
            name: review.name.clone(),
            project,
            before: None,
            after: None,
            version: None,
        })
    }
}
