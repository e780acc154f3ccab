use axum::extract::FromRef;
use leptos::config::LeptosOptions;

use std::sync::Arc;

use super::caches::Caches;
use super::clusters::Clusters;
use super::db::Db;
use super::directory::Directory;
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
    /// The management cluster's watch caches, which saves read (and admission, the same).
    #[from_ref(skip)]
    pub caches: Arc<Caches>,
    /// Changes to one AS3 tenant, one at a time.
    #[from_ref(skip)]
    pub saves: Saves,
    /// The bank's directory users sign in with (`--directory`), if one is configured.
    #[from_ref(skip)]
    pub directory: Option<Arc<Directory>>,
}
