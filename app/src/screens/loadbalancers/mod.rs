//! Screen 1: abstract load balancers, for platform admins only. The types both halves share and
//! the server functions are here; their server-side bodies are in `server`, the pages beside it.
//! Credentials live in Secrets and never come back to a browser.

mod detail;
mod form;
mod list;
#[cfg(feature = "ssr")]
mod server;

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::components::list::Page;
use crate::domain::crd::IpPair;
use crate::error::AppError;

pub use detail::LoadbalancerDetail;
pub use form::LoadbalancerForm;
pub use list::Loadbalancers;

crate::lazy_screen!(loadbalancers_screen {
    /// The list's route: the screen's pages load in one browser chunk.
    LoadbalancersRoute => Loadbalancers,
    /// A load balancer's page.
    LoadbalancerDetailRoute => LoadbalancerDetail,
});
crate::lazy_screen!(loadbalancers_form {
    /// The load balancer form, new or edit.
    LoadbalancerFormRoute => LoadbalancerForm,
});

/// A row of the list.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LbRow {
    /// Its name.
    pub name: String,
    /// The member cluster whose CIS it drives.
    pub cluster: String,
    /// The tier-2 BIG-IP VE's address.
    pub ve_addr: String,
    /// The range VE addresses are handed out from.
    pub ve_cidr: String,
    /// The tier-1 LTM's API URL.
    pub ltm_url: String,
    /// The range LTM addresses are handed out from.
    pub ltm_cidr: String,
    /// Address pairs handed out.
    pub pairs_used: u64,
    /// Address pairs still free.
    pub pairs_free: u64,
    /// Tickets (not Deleted) that use it.
    pub tickets: usize,
    /// The reconciler has taken it in.
    pub ready: bool,
    /// Why its member cluster cannot be reached, when the last sync could not reach it.
    pub unreachable: Option<String>,
    /// Why its CIS would not post what lbdesk writes (`CisReady` False).
    pub cis_not_ready: Option<String>,
    /// Which load balancers' ranges overlap its own on one device (`RangesDisjoint` False).
    pub overlap: Option<String>,
}

/// The create/edit form. Secrets are write-only: `None` keeps what is stored.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LbForm {
    /// Its name; fixed once created.
    pub name: String,
    /// The tier-1 LTM's API URL.
    pub ltm_url: String,
    /// A new LTM API token; `None` keeps the stored one.
    pub ltm_token: Option<String>,
    /// The range LTM addresses are handed out from.
    pub ltm_cidr: String,
    /// The tier-2 BIG-IP VE's address.
    pub ve_addr: String,
    /// A new VE user; `None` keeps the stored one.
    pub ve_user: Option<String>,
    /// A new VE password; `None` keeps the stored one.
    pub ve_password: Option<String>,
    /// The range VE addresses are handed out from.
    pub ve_cidr: String,
    /// Accept any certificate of the VE's management address when reading BIG-IP back.
    pub ve_skip_verify: bool,
    /// The member cluster whose CIS it drives.
    pub cluster: String,
    /// Labels put on namespaces with listeners, as the CIS `--namespace-label` expects.
    pub nsselector: Vec<(String, String)>,
    /// The AS3 tenant; empty for the cluster's name.
    pub partition: String,
    /// Where the CIS reads its AS3 ConfigMap.
    pub cis_namespace: String,
    /// The projects allowed to use it; empty for every project of the cluster.
    pub scope: Vec<String>,
    /// Addresses or CIDRs, separated by commas, spaces or new lines.
    pub reserved: String,
    /// Set when editing: the spec generation the form was loaded from.
    pub generation: Option<i64>,
}

/// A ticket using a load balancer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LbTicket {
    /// The ticket's name.
    pub name: String,
    /// The namespace it serves.
    pub namespace: String,
    /// Its phase, as the list shows it.
    pub phase: String,
}

/// The detail page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LbDetail {
    /// What the list shows of it.
    pub row: LbRow,
    /// Its settings, as the edit form starts with them (no secrets).
    pub form: LbForm,
    /// Whether an LTM token is stored.
    pub token_set: bool,
    /// Whether a VE user and password are stored.
    pub credentials_set: bool,
    /// The AS3 tenant in effect.
    pub partition: String,
    /// The tickets that use it.
    pub tickets: Vec<LbTicket>,
    /// Marked never to be deleted.
    pub do_not_delete: bool,
    /// Its facts as the page lists them: HTML the server rendered (`detail::facts_html`).
    pub facts: String,
}

/// What the form offers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LbChoices {
    /// The member clusters lbdesk knows.
    pub clusters: Vec<String>,
    /// Every project.
    pub projects: Vec<String>,
}

/// Every load balancer, filtered by `search` (name or cluster).
#[server(prefix = "/api", endpoint = "lb/list", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn list_loadbalancers(search: String) -> Result<Vec<LbRow>, AppError> {
    crate::ssr::reply(server::list(&search).await)
}

/// One load balancer, with its tickets (credentials only as "set" or not).
#[server(prefix = "/api", endpoint = "lb/get", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn get_loadbalancer(name: String) -> Result<LbDetail, AppError> {
    crate::ssr::reply(server::detail(&name).await)
}

/// A page of a load balancer's address pairs, by VE address, starting after the VE address
/// `after` (empty: the first); only those whose addresses or request hold `search`.
#[server(prefix = "/api", endpoint = "lb/pairs", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn list_pairs(name: String, search: String, after: String) -> Result<Page<IpPair>, AppError> {
    crate::ssr::reply(server::pairs(&name, &search, &after).await)
}

/// Creates or updates a load balancer (update when `generation` is set).
#[server(prefix = "/api", endpoint = "lb/save", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn save_loadbalancer(form: LbForm) -> Result<String, AppError> {
    crate::ssr::reply(server::save(form).await)
}

/// Deletes a load balancer no ticket uses.
#[server(prefix = "/api", endpoint = "lb/delete", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn delete_loadbalancer(name: String) -> Result<(), AppError> {
    crate::ssr::reply(server::delete(&name).await)
}

/// Member clusters and projects, for the form.
#[server(prefix = "/api", endpoint = "lb/choices", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn loadbalancer_choices() -> Result<LbChoices, AppError> {
    crate::ssr::reply(server::choices().await)
}
