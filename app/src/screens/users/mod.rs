//! The accounts and projects, for platform admins: who can sign in, their role and projects,
//! ending a user's sessions (every browser they are signed in with leads to sign-in at its next
//! request), for a lost laptop or a colleague who left before the directory caught up; and each
//! project's quota (its `Lbquota`). The types both halves share and the server functions are
//! here; their server-side bodies are in `server`, the page beside it.

mod list;
#[cfg(feature = "ssr")]
mod server;

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::AppError;

pub use list::Users;

crate::lazy_screen!(users_screen {
    /// The accounts' route: its code loads in its own browser chunk.
    UsersRoute => Users,
});

/// One account.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserRow {
    pub username: String,
    pub display_name: String,
    /// Whether the account is the directory's (its role and projects follow its groups).
    pub directory: bool,
    /// The role's label.
    pub role: String,
    /// The projects a tenant is a member of (an admin works in every project).
    pub projects: Vec<String>,
    /// When the user's sessions were last ended, RFC 3339 (UTC); empty for never.
    pub sessions_ended: String,
}

/// The accounts and the projects' quotas: what the page shows.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Accounts {
    pub users: Vec<UserRow>,
    pub quotas: Vec<QuotaForm>,
}

/// Every account and every project's quota.
#[server(prefix = "/api", endpoint = "users/list", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn list_users() -> Result<Accounts, AppError> {
    crate::ssr::reply(server::list().await)
}

/// Ends every session of `username` begun until now.
#[server(prefix = "/api", endpoint = "users/end-sessions", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn end_sessions(username: String) -> Result<(), AppError> {
    crate::ssr::reply(server::end_sessions(&username).await)
}

/// One project's quota as the page edits it: each limit as typed, empty for the default.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuotaForm {
    pub project: String,
    /// Address requests per load balancer (default: half of its address pairs).
    pub addresses: String,
    pub listeners: String,
    pub rules: String,
    pub ingresses: String,
    /// KiB of each shared AS3 tenant (default: half of what one holds).
    pub declaration_kib: String,
    /// The generation of the quota's limits when loaded; none when the project has none of its
    /// own (no quota, or one with every limit left to its default).
    pub version: Option<String>,
}

/// Writes a project's quota.
#[server(prefix = "/api", endpoint = "quota/save", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn save_quota(form: QuotaForm) -> Result<(), AppError> {
    crate::ssr::reply(server::save_quota(form).await)
}
