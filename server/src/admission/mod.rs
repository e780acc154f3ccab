//! Admission of Loadbalancer, Lbticket and Lbrule writes (and of lbdesk's other kinds): the
//! embedded API hands every create, update and delete of them here in-process, with the objects
//! (`Admission::admit`), before storing; in cluster mode a real API server sends the same as an
//! AdmissionReview v1 to the webhook (`Admission::review`). One file per kind holds its checks, which are
//! the domain's (`app::domain::policy`): the same functions the screens and server functions
//! use, so the three callers refuse with the same words. Before them, a write by anyone but
//! lbdesk itself is authorized by the domain's one rule and, once allowed, audited (`access`);
//! a status is lbdesk's alone to write.

mod access;
mod lbrule;
mod lbticket;
mod loadbalancer;
mod owned;
mod quota;
mod review;
mod usage;

use std::sync::Arc;

use app::domain::crd::Lbticket;
use app::ssr::caches::{Cached, Caches};
use kube::core::admission::Operation;
use serde::de::DeserializeOwned;
use serde_json::Value;

use app::domain::policy::Refusal;
use app::ssr::audit::Via;
use app::ssr::db::Db;

/// What a tenant is told when the object is another project's (or no project's): the same words
/// whether it exists or not, naming nothing.
pub const NOT_YOURS: &str = "You may change only the objects of your projects.";

/// What anyone but lbdesk is told when writing the status of one of lbdesk's objects.
pub const STATUS_IS_LBDESKS: &str =
    "The status is lbdesk's record of what it observed; only lbdesk writes it. Change the object instead.";

/// Why a request is denied: the code (400 invalid, 403 refused, 500 failed), the field at
/// fault when there is one (a path in the object: `spec.veip`), and the reason. The field
/// travels as the `Status`'s cause, for a caller to place the reason beside it; kubectl shows
/// both in the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    pub code: u16,
    pub field: Option<String>,
    pub reason: String,
}

impl Denial {
    fn invalid(reason: impl Into<String>) -> Denial {
        Denial { code: 400, field: None, reason: reason.into() }
    }

    fn forbidden(reason: impl Into<String>) -> Denial {
        Denial { code: 403, field: None, reason: reason.into() }
    }

    /// Admission itself could not decide (the management cluster or the accounts unreadable).
    fn failed(reason: impl Into<String>) -> Denial {
        Denial { code: 500, field: None, reason: reason.into() }
    }

    /// A field check that failed: the object is invalid whatever else exists.
    fn invalid_field(r: Refusal) -> Denial {
        Denial::from_refusal(400, r)
    }

    /// A grey-out rule that refused: the object is fine, the change is not allowed now.
    fn refused(r: Refusal) -> Denial {
        Denial::from_refusal(403, r)
    }

    /// A domain refusal, its field (a path in the spec) made a path in the object.
    fn from_refusal(code: u16, r: Refusal) -> Denial {
        let field = r.field.map(|f| if f.starts_with("metadata.") { f } else { format!("spec.{f}") });
        Denial { code, field, reason: r.reason.to_string() }
    }

    /// What kubectl shows: the field, then the reason.
    pub fn message(&self) -> String {
        match &self.field {
            Some(f) => format!("{f}: {}", self.reason),
            None => self.reason.clone(),
        }
    }

    /// The Status an AdmissionResponse carries: the message, and the one cause (the field, and
    /// the reason alone) that callers read instead of the message.
    fn status(&self, kind: &str, name: &str) -> kube::core::Status {
        use kube::core::response::{StatusCause, StatusDetails};
        let (reason, cause) = match self.code {
            403 => ("Forbidden", "FieldValueForbidden"),
            500 => ("InternalError", "InternalError"),
            _ => ("BadRequest", "FieldValueInvalid"),
        };
        let cause = StatusCause {
            reason: cause.into(),
            message: self.reason.clone(),
            field: self.field.clone().unwrap_or_default(),
        };
        let details = StatusDetails {
            name: name.into(),
            group: String::new(),
            kind: kind.into(),
            uid: String::new(),
            causes: vec![cause],
            retry_after_seconds: 0,
        };
        kube::core::Status::failure(&self.message(), reason).with_code(self.code).with_details(details)
    }
}

/// The admission checks: who may write (DESIGN §9), the schema-level rules, and the grey-out
/// rules of DESIGN §4 (the same functions the screens and server functions use), which read the
/// management cluster; and the audit entry of each allowed write.
pub struct Admission {
    mgmt: std::sync::OnceLock<kube::Client>,
    /// The management cluster's objects, kept current by watches (an informer's cache, as
    /// webhooks keep one): the checks read a namespace's or a load balancer's tickets on every
    /// write, and listing 10,000 tickets each time costs more than the write. The save path
    /// reads the same caches.
    caches: Arc<Caches>,
    /// The accounts (who a writer is) and the audit log.
    db: Db,
    /// The user lbdesk itself writes as: neither authorized nor audited here.
    own_user: String,
    /// How the reviewed writes reach lbdesk: in-process from the embedded API, or as a webhook.
    via: Via,
}

/// Whether the user a review names is the API server's word: in-process (the embedded API),
/// or over a webhook that authenticated its caller as the API server. NB: otherwise anyone
/// reaching the webhook could have a forged user's "change" recorded, so it is not audited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    Authenticated,
    Unauthenticated,
}

/// A write to review, typed: what the embedded API hands admission in-process, and what a
/// webhook's AdmissionReview is read into (`review`).
pub struct Write<'a> {
    /// The kind (`Lbticket`).
    pub kind: &'a str,
    pub operation: Operation,
    /// Whether it writes the status subresource.
    pub status: bool,
    /// Who writes: the API server's word for the user (`userInfo.username`).
    pub user: &'a str,
    /// A dry run is reviewed, not recorded.
    pub dry_run: bool,
    pub review: Review,
}

/// The object a write changes, as each kind's checks read it.
pub struct Review {
    /// The object's name (from the object when the request carries none).
    pub name: String,
    /// The object as it would be stored; none for a delete.
    pub new: Option<Value>,
    /// The object as stored; none for a create.
    pub old: Option<Value>,
    /// A dry run: checked, charged to no quota.
    pub dry_run: bool,
}

impl Review {
    /// The write of `new` over `old`, named by the objects.
    pub fn of(new: Option<Value>, old: Option<Value>) -> Review {
        let name = new.as_ref().or(old.as_ref()).and_then(|o| o["metadata"]["name"].as_str()).unwrap_or_default();
        Review { name: name.to_string(), new, old, dry_run: false }
    }

    /// The object as it would be stored, typed.
    fn after<K: DeserializeOwned>(&self) -> Result<Option<K>, Denial> {
        self.new.as_ref().map(typed).transpose()
    }

    /// The object as stored, typed.
    fn before<K: DeserializeOwned>(&self) -> Result<Option<K>, Denial> {
        self.old.as_ref().map(typed).transpose()
    }
}

/// What the audit log calls a write (a connect is not one).
fn action(operation: &Operation) -> Option<&'static str> {
    match operation {
        Operation::Create => Some("create"),
        Operation::Update => Some("update"),
        Operation::Delete => Some("delete"),
        Operation::Connect => None,
    }
}

/// Reads an object into its typed form, naming the field that does not fit.
fn typed<T: DeserializeOwned>(object: &Value) -> Result<T, Denial> {
    serde_path_to_error::deserialize(object).map_err(|e| {
        let path = e.path().to_string();
        let field = (path != ".").then_some(path);
        Denial { field, ..Denial::invalid(e.inner().to_string()) }
    })
}

impl Admission {
    /// Admission over `db`, for writes arriving `via`, lbdesk's own being `own_user`'s, reading
    /// the management cluster from `caches`.
    pub fn new(db: Db, own_user: impl Into<String>, via: Via, caches: Arc<Caches>) -> Admission {
        Admission { mgmt: Default::default(), caches, db, own_user: own_user.into(), via }
    }

    /// Whether `user` is lbdesk's own (its writes are neither authorized nor audited here).
    pub fn is_own(&self, user: &str) -> bool {
        user == self.own_user
    }

    /// Gives the checks their client of the management cluster (set once it can be reached).
    pub fn connect(&self, mgmt: kube::Client) {
        let _ = self.mgmt.set(mgmt);
    }

    /// The tickets that `keep` keeps, from the watch's cache.
    /// NB: a ticket written a moment ago by someone else may not be in it yet, as with any
    /// webhook reading an informer; two writes racing were never ordered by a list either.
    async fn tickets(&self, keep: impl Fn(&Lbticket) -> bool) -> Result<Vec<Lbticket>, Denial> {
        self.list(keep).await
    }

    /// The objects of a kind in the management cluster that `keep` keeps, from the caches.
    async fn list<K: Cached>(&self, keep: impl Fn(&K) -> bool) -> Result<Vec<K>, Denial> {
        self.caches.list(keep).await.map_err(|_| Denial::failed("admission could not read the management cluster"))
    }
}
