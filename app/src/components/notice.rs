//! Whole-page notices: a screen the user's role does not include.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::i18n::t;

/// Shown when a signed-in user opens a screen their role does not include.
#[component]
pub fn NotAllowed() -> impl IntoView {
    view! {
        <Title text=t("common.not_allowed.title") />
        <div class="empty-state">
            <h1>{t("common.not_allowed.title")}</h1>
            <p>{t("common.not_allowed.text")}</p>
        </div>
    }
}
