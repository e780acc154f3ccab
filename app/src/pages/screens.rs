//! The screens not built yet, and the "not allowed" page.

use leptos::prelude::*;
use leptos_meta::Title;

#[component]
fn ComingSoon(title: &'static str, what: &'static str) -> impl IntoView {
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

/// Screen 3: listeners.
#[component]
pub fn Listeners() -> impl IntoView {
    view! { <ComingSoon title="Listeners" what="Virtual servers on the addresses of your project." /> }
}

/// Screen 4: canary and content rules.
#[component]
pub fn Rules() -> impl IntoView {
    view! { <ComingSoon title="Rules" what="Canary and content routing on a listener." /> }
}

/// Screen 5: F5 Ingresses.
#[component]
pub fn Ingresses() -> impl IntoView {
    view! { <ComingSoon title="F5 Ingress" what="Ingresses served by the F5 CIS of your cluster." /> }
}
