use axum::extract::FromRef;
use leptos::config::LeptosOptions;

use super::clusters::Clusters;
use super::db::Db;
use super::saves::Saves;

/// What every server function and route handler can reach.
#[derive(Clone, FromRef)]
pub struct AppState {
    pub leptos_options: LeptosOptions,
    pub db: Db,
    /// The management and member clusters.
    pub clusters: Clusters,
    /// The ingress class lbdesk's Ingresses carry (`--ingress-class`), shown on the pages.
    #[from_ref(skip)]
    pub ingress_class: String,
    /// Changes to one AS3 tenant, one at a time.
    #[from_ref(skip)]
    pub saves: Saves,
}
