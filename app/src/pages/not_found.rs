//! The page for an unknown address.

use leptos::prelude::*;
use leptos_meta::Title;

/// Shown for any path lbdesk does not know.
#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let Some(options) = use_context::<leptos_axum::ResponseOptions>() {
        options.set_status(http::StatusCode::NOT_FOUND);
    }
    view! {
        <Title text="Not found" />
        <div class="empty-state">
            <h1>"Page not found"</h1>
            <p><a href="/">"Back to lbdesk"</a></p>
        </div>
    }
}
