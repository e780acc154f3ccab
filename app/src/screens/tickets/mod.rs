//! Screen 2: address requests (tickets) of the user's projects. The types both halves share and
//! the server functions are here; their server-side bodies are in `server`, the pages beside it.

mod detail;
mod form;
mod list;
#[cfg(feature = "ssr")]
mod server;

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::domain::crd::{Condition, DesiredState, HistoryEntry, LbType, Phase};
use crate::domain::ipam::Side;
use crate::domain::policy::TicketUse;
use crate::error::AppError;

pub use detail::TicketDetailPage;
pub use form::TicketFormPage;
pub use list::Tickets;

crate::lazy_screen!(tickets_screen {
    /// The list's route: the screen's pages load in one browser chunk.
    TicketsRoute => Tickets,
    /// A request's page.
    TicketDetailRoute => TicketDetailPage,
});
crate::lazy_screen!(tickets_form {
    /// The request form, new or edit.
    TicketFormRoute => TicketFormPage,
});

/// A row of the list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TicketRow {
    /// The request's name (cluster-wide).
    pub name: String,
    /// The project it belongs to.
    pub project: String,
    /// The load balancer its addresses come from.
    pub loadbalancer: String,
    /// The member cluster of its namespace.
    pub cluster: String,
    /// The namespace the addresses serve.
    pub namespace: String,
    /// The VE address handed out, empty until then.
    pub veip: String,
    /// The LTM address handed out, empty until then.
    pub ltmip: String,
    /// What the addresses are for.
    pub lbtype: LbType,
    /// Where the reconciler has brought it.
    pub phase: Phase,
    /// What the user asked of it.
    pub state: DesiredState,
    /// RFC 3339 creation time.
    pub created: String,
    /// The last error, if any.
    pub message: String,
    /// What BIG-IP runs of its listeners, in short (empty: nothing read back).
    pub on_bigip: String,
}

impl TicketRow {
    /// Whether the list's search `query` finds this row (name, load balancer, cluster or
    /// namespace; case-insensitive; an empty query finds every row). These are Kubernetes
    /// names, ASCII only, so ASCII case folding is exact (and keeps Unicode tables out of the
    /// browser bundle).
    pub fn matches(&self, query: &str) -> bool {
        let query = query.trim().to_ascii_lowercase();
        [&self.name, &self.loadbalancer, &self.cluster, &self.namespace]
            .iter()
            .any(|f| f.to_ascii_lowercase().contains(&query))
    }
}

/// The detail page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TicketDetail {
    /// What the list shows of it.
    pub row: TicketRow,
    /// Who requested it.
    pub claimer: String,
    /// The VE address asked for; empty for the lowest free one.
    pub requested_veip: String,
    /// The LTM address asked for; empty for the lowest free one.
    pub requested_ltmip: String,
    /// Its listeners, the rules on them and its F5 Ingresses (what the grey-out rules read).
    pub usage: TicketUse,
    /// Its phases so far, oldest first.
    pub history: Vec<HistoryEntry>,
    /// The reconciler's conditions.
    pub conditions: Vec<Condition>,
    /// The spec generation shown, which an edit is checked against.
    pub generation: i64,
}

/// The request form (also the edit form, with `generation` set).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TicketForm {
    /// The request's name.
    pub name: String,
    /// The cluster of `namespace`.
    pub cluster: String,
    /// A namespace of the user's project.
    pub namespace: String,
    /// The load balancer to take the addresses from.
    pub loadbalancer: String,
    /// What the addresses are for.
    pub lbtype: LbType,
    /// The VE address asked for; empty for the lowest free one.
    pub veip: String,
    /// The LTM address asked for; empty for the lowest free one.
    pub ltmip: String,
    /// Set when editing: the spec generation the form was loaded from.
    pub generation: Option<i64>,
}

impl TicketForm {
    /// The address asked for on `side`.
    pub fn address(&self, side: Side) -> &str {
        match side {
            Side::Ve => &self.veip,
            Side::Ltm => &self.ltmip,
        }
    }
}

/// A load balancer the user may choose.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LbChoice {
    /// Its name.
    pub name: String,
    /// The member cluster it serves.
    pub cluster: String,
    /// The range VE addresses come from.
    pub ve_cidr: String,
    /// The range LTM addresses come from.
    pub ltm_cidr: String,
}

/// What the form offers in the current project.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TicketChoices {
    /// The user's current project.
    pub project: String,
    /// (cluster, namespace) pairs of the project.
    pub namespaces: Vec<(String, String)>,
    /// The load balancers offered to the project, in any of its clusters.
    pub loadbalancers: Vec<LbChoice>,
}

/// What a user may do to a ticket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Action {
    /// Take its addresses out of service, keeping them.
    Disable,
    /// Put a disabled request back in service.
    Enable,
    /// Release its addresses for good.
    Delete,
}

/// How a request's type reads on the pages.
fn lbtype_label(lbtype: LbType) -> &'static str {
    match lbtype {
        LbType::Listener => crate::i18n::t("tickets.lbtype.listener"),
        LbType::Ingress => crate::i18n::t("tickets.lbtype.ingress"),
    }
}

/// The address requests the list shows, and what the project holds of its quota.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TicketList {
    pub rows: Vec<TicketRow>,
    /// A line per limit of the current project's quota: what, and how much of it is held (a
    /// tenant's; none for an admin, who sets the quotas).
    pub quota: Vec<(String, String)>,
}

/// The address requests of the current project (an admin: of `project`, or all when empty).
#[server(prefix = "/api", endpoint = "ticket/list", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn list_tickets(project: String) -> Result<TicketList, AppError> {
    crate::ssr::reply(server::list(&project).await)
}

/// One address request with its timeline.
#[server(prefix = "/api", endpoint = "ticket/get", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn get_ticket(name: String) -> Result<TicketDetail, AppError> {
    crate::ssr::reply(server::detail(&name).await)
}

/// Namespaces and load balancers the current project may use.
#[server(prefix = "/api", endpoint = "ticket/choices", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn ticket_form_choices() -> Result<TicketChoices, AppError> {
    crate::ssr::reply(server::choices().await)
}

/// Whether an address can be requested (as the user types).
#[server(prefix = "/api", endpoint = "ticket/check-address", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn check_address(loadbalancer: String, side: Side, address: String, ticket: String) -> Result<(), AppError> {
    crate::ssr::reply(server::check_address(&loadbalancer, side, &address, &ticket).await)
}

/// Requests an address (or edits a Created or Failed request).
#[server(prefix = "/api", endpoint = "ticket/save", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn save_ticket(form: TicketForm) -> Result<String, AppError> {
    crate::ssr::reply(server::save(form).await)
}

/// Disables, enables or deletes a request.
#[server(prefix = "/api", endpoint = "ticket/act", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn act_on_ticket(name: String, action: Action) -> Result<(), AppError> {
    crate::ssr::reply(server::act(&name, action).await)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, loadbalancer: &str, namespace: &str) -> TicketRow {
        TicketRow {
            name: name.into(),
            project: "project-a".into(),
            loadbalancer: loadbalancer.into(),
            cluster: "acp-region01".into(),
            namespace: namespace.into(),
            veip: String::new(),
            ltmip: String::new(),
            lbtype: LbType::Listener,
            phase: Phase::Enabled,
            state: DesiredState::Active,
            created: String::new(),
            message: String::new(),
            on_bigip: String::new(),
        }
    }

    #[test]
    fn the_search_finds_name_load_balancer_cluster_and_namespace() {
        let r = row("shop-web", "region01-dmz", "team-a");
        for query in ["", "  ", "SHOP", "dmz", "region01", "team-a"] {
            assert!(r.matches(query), "{query:?}");
        }
        assert!(!r.matches("intranet"));
    }

    #[test]
    fn a_form_gives_the_address_of_either_side() {
        let form = TicketForm { veip: "20.1.0.7".into(), ltmip: "10.0.0.7".into(), ..Default::default() };
        assert_eq!(form.address(Side::Ve), "20.1.0.7");
        assert_eq!(form.address(Side::Ltm), "10.0.0.7");
    }
}
