//! Screen 5: f5 ingresses, not built yet.

use leptos::prelude::*;

use crate::components::notice::ComingSoon;

/// The screen's page.
#[component]
pub fn Ingresses() -> impl IntoView {
    view! { <ComingSoon title="F5 Ingress" what="Ingresses served by the F5 CIS of your cluster." /> }
}

crate::lazy_page!(
    /// The screen's route: its code loads in its own browser chunk.
    IngressesRoute => Ingresses
);
