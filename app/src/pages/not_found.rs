//! The page for an unknown address.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::i18n::t;

/// Shown for any path lbdesk does not know.
#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let Some(options) = use_context::<leptos_axum::ResponseOptions>() {
        options.set_status(http::StatusCode::NOT_FOUND);
    }
    view! {
        <Title text=t("common.not_found.title") />
        <div class="empty-state">
            <h1>{t("common.not_found.heading")}</h1>
            <p><a href="/">{t("common.not_found.back")}</a></p>
        </div>
    }
}
