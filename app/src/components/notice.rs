//! Whole-page notices: a screen the user's role does not include.

use leptos::prelude::*;
use leptos_meta::Title;

/// Shown when a signed-in user opens a screen their role does not include.
#[component]
pub fn NotAllowed() -> impl IntoView {
    view! {
        <Title text="Not allowed" />
        <div class="empty-state">
            <h1>"Not allowed"</h1>
            <p>"This screen is for platform admins."</p>
        </div>
    }
}
