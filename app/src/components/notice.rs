//! Whole-page notices: a screen not built yet, a screen the user's role does not include.

use leptos::prelude::*;
use leptos_meta::Title;

/// A screen that is announced in the navigation but not built yet.
#[component]
pub fn ComingSoon(title: &'static str, what: &'static str) -> impl IntoView {
    view! {
        <Title text=title />
        <h1>{title}</h1>
        <div class="empty-state">
            <p>{what}</p>
            <p class="muted">"Coming soon."</p>
        </div>
    }
}

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
