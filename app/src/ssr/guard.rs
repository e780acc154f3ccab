//! The one guarded path of every server function: the session's user → `authorize` → the
//! grey-out rule → the write (compare-and-swap on `resourceVersion`, retried when it lost a race)
//! → an audit row → the answer. The server functions supply the rule and the write; the order
//! and the audit are here, once.
//!
//! NB: a write to the management cluster says who makes it (`audited`): the embedded API records
//! its entry with the object, in one transaction; the entry written here, once the API answered,
//! names the version the write committed, and is not written again when the store wrote it.

use std::future::Future;

use serde::Serialize;
use serde_json::Value;

use super::audit::{Entry, Version, Via};
use super::audited::{Audited, Said};
use crate::domain::access::{Principal, Target, Verb, Verdict, authorize};
use crate::domain::user::CurrentUser;
use crate::error::AppError;

/// The signed-in user a server function acts for.
pub struct Caller {
    pub user: CurrentUser,
    pub principal: Principal,
}

/// The signed-in caller, or `Unauthorized`.
pub async fn caller() -> Result<Caller, AppError> {
    let user = super::user().await?;
    let principal = user.principal();
    Ok(Caller { user, principal })
}

/// The caller, when they may `verb` the `target` (see [`Caller::may`]).
pub async fn caller_for(verb: Verb, target: Target<'_>, what: &str) -> Result<Caller, AppError> {
    let caller = caller().await?;
    caller.may(verb, target, what)?;
    Ok(caller)
}

impl Caller {
    /// The writes of `K` in the management cluster, made for the caller: `action` of an object of
    /// `project`.
    pub fn api<K>(&self, action: &str, project: Option<&str>) -> Result<Audited<K>, AppError>
    where
        K: kube::Resource<DynamicType = ()> + Serialize + serde::de::DeserializeOwned + Clone + std::fmt::Debug,
    {
        let said = Said {
            user: self.user.username.clone(),
            action: action.into(),
            project: project.map(String::from),
            note: None,
        };
        Ok(Audited::all(super::mgmt()?, said))
    }

    /// Whether the caller may `verb` the `target`. A refusal the caller may not learn about
    /// answers as if `what` (in the reader's words: see [`not_found`]) did not exist, in the same
    /// words as a real absence.
    pub fn may(&self, verb: Verb, target: Target<'_>, what: &str) -> Result<(), AppError> {
        match authorize(&self.principal, verb, target) {
            Verdict::Allow => Ok(()),
            Verdict::Unauthenticated => Err(AppError::Unauthorized),
            Verdict::Forbidden(reason) => Err(AppError::Forbidden(reason.text())),
            Verdict::NotFound => Err(not_found(what)),
        }
    }

    /// Runs the write (rule check and compare-and-swap, both inside `attempt`: six attempts
    /// in all when it lost a race, each against the object as it then is), then audits it.
    pub async fn write<T, F, Fut>(&self, mut attempt: F) -> Result<T, AppError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<Written<T>, AppError>>,
    {
        let written = super::retrying(&mut attempt).await?;
        let entry = Entry {
            user: self.user.username.clone(),
            via: Via::Page,
            action: written.action.into(),
            kind: written.kind.into(),
            name: written.name,
            project: written.project,
            before: written.before,
            after: written.after,
            version: written.version,
        };
        // NB: the change is made; a failed audit write cannot undo it, so it is logged loudly
        // rather than reported as a failed change.
        if let Err(e) = super::state()?.db.audit(&entry).await {
            tracing::error!(error = %e, kind = %entry.kind, name = %entry.name, "could not write the audit entry");
        }
        Ok(written.answer)
    }
}

/// What a write did, for the audit log, and what the server function answers.
pub struct Written<T> {
    pub action: &'static str,
    pub kind: &'static str,
    pub name: String,
    pub project: Option<String>,
    pub before: Option<Value>,
    pub after: Option<Value>,
    /// The version the write committed, when it wrote an object.
    pub version: Option<Version>,
    pub answer: T,
}

impl Written<()> {
    /// A change of `kind` `name` in `project`.
    pub fn change(action: &'static str, kind: &'static str, name: &str, project: Option<&str>) -> Written<()> {
        Written {
            action,
            kind,
            name: name.to_string(),
            project: project.map(String::from),
            before: None,
            after: None,
            version: None,
            answer: (),
        }
    }
}

impl<T> Written<T> {
    /// With the object as it was.
    pub fn before(mut self, object: &impl Serialize) -> Self {
        self.before = serde_json::to_value(object).ok();
        self
    }

    /// With the object as it is now.
    pub fn after(mut self, object: &impl Serialize) -> Self {
        self.after = serde_json::to_value(object).ok();
        self
    }

    /// The write committed `stored` (in the management cluster): one entry of its version.
    pub fn stored(mut self, stored: &impl kube::Resource) -> Self {
        let rv = stored.meta().resource_version.as_deref().and_then(|rv| rv.parse().ok());
        let cluster = super::state().map(|s| s.clusters.mgmt_name().to_string());
        self.version = rv.zip(cluster.ok()).map(|(rv, cluster)| Version { cluster, rv });
        self
    }

    /// Answering `answer`.
    pub fn answer<U>(self, answer: U) -> Written<U> {
        Written {
            action: self.action,
            kind: self.kind,
            name: self.name,
            project: self.project,
            before: self.before,
            after: self.after,
            version: self.version,
            answer,
        }
    }
}

/// The answer for an object that is absent or not the caller's: the same words either way.
/// `what` is in the reader's words, e.g. `t("errors.what.address_request")` ("such address
/// request"): "There is no such address request in your projects."
pub fn not_found(what: &str) -> AppError {
    AppError::NotFound(crate::tf!("errors.not_found", what = what))
}
