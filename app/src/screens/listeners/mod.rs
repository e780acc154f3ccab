//! Screen 3: listeners, not built yet.

use leptos::prelude::*;

use crate::components::notice::ComingSoon;

/// The screen's page.
#[component]
pub fn Listeners() -> impl IntoView {
    view! { <ComingSoon title="Listeners" what="Virtual servers on the addresses of your project." /> }
}

crate::lazy_page!(
    /// The screen's route: its code loads in its own browser chunk.
    ListenersRoute => Listeners
);
