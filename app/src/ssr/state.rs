use axum::extract::FromRef;
use leptos::config::LeptosOptions;

use super::db::Db;

/// What every server function and route handler can reach.
#[derive(Clone, Debug, FromRef)]
pub struct AppState {
    pub leptos_options: LeptosOptions,
    pub db: Db,
}
