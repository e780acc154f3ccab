//! The audit log: who changed which object how, through which path (page, embedded API,
//! admission), with the object before and after (secrets redacted when written). Admins see
//! every entry, tenants their projects'. The types both halves share and the server function
//! are here; its server-side body is in `server`, the page beside it.

mod list;
#[cfg(feature = "ssr")]
mod server;

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::AppError;

pub use list::AuditLog;

crate::lazy_screen!(audit_screen {
    /// The audit log's route: its code loads in its own browser chunk.
    AuditRoute => AuditLog,
});

/// The actions the filter offers (what the log records).
pub const ACTIONS: [&str; 6] = ["create", "update", "delete", "enable", "disable", "end sessions"];

/// The kinds the filter offers: lbdesk's own, and what it writes in member clusters (audited
/// when someone else changes them).
pub const KINDS: [&str; 6] = ["Loadbalancer", "Lbticket", "Lbrule", "ConfigMap", "Ingress", "User"];

/// What the list is asked for: the filters, as the page's URL carries them, and where the page
/// starts. An empty field does not filter.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AuditQuery {
    /// Who made the change (exact user name).
    pub user: String,
    /// The object's name (exact).
    pub object: String,
    /// The object's kind.
    pub kind: String,
    /// One of [`ACTIONS`].
    pub action: String,
    /// The first day shown, `YYYY-MM-DD` (UTC).
    pub from: String,
    /// The last day shown, `YYYY-MM-DD` (UTC), inclusive.
    pub to: String,
    /// Where the page starts: the previous page's `next`; empty for the newest entries.
    pub cursor: String,
}

impl AuditQuery {
    /// Whether any filter is set (the cursor is not one).
    pub fn filtered(&self) -> bool {
        [&self.user, &self.object, &self.kind, &self.action, &self.from, &self.to].iter().any(|v| !v.is_empty())
    }
}

/// One entry of the log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRow {
    /// When, RFC 3339 (UTC; the page shows it in the user's locale).
    pub at: String,
    /// Who.
    pub user: String,
    /// The path: page, api or admission.
    pub via: String,
    pub action: String,
    pub kind: String,
    pub name: String,
    /// Empty when the object belongs to no project.
    pub project: String,
    /// The object before, pretty JSON; empty for a create.
    pub before: String,
    /// The object after, pretty JSON; empty for a delete.
    pub after: String,
}

/// A page of the log, newest first.
pub type AuditPage = crate::components::list::Page<AuditRow>;

/// A page of the audit entries the caller may see that match `query`.
#[server(prefix = "/api", endpoint = "audit/list", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn list_audit(query: AuditQuery) -> Result<AuditPage, AppError> {
    crate::ssr::reply(server::list(query).await)
}
