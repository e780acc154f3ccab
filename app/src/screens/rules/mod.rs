//! Screen 4: canary and content rules, not built yet.

use leptos::prelude::*;

use crate::components::notice::ComingSoon;

/// The screen's page.
#[component]
pub fn Rules() -> impl IntoView {
    view! { <ComingSoon title="Rules" what="Canary and content routing on a listener." /> }
}

crate::lazy_screen!(rules_screen {
    /// The screen's route: its code loads in its own browser chunk.
    RulesRoute => Rules,
});
