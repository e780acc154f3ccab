//! The AS3 preview: the namespace's declaration as a change would make it, and what it changes
//! against what the member cluster holds now. Rendered and validated on the server by the
//! reconciler's own functions (`ssr::preview`); the listener and rule forms show it.

use leptos::prelude::*;

use crate::i18n::t;
pub use crate::wire::{DiffLine, Preview};

/// The preview of a change: the refusal, the diff, the declaration.
#[component]
pub fn PreviewPanel(preview: Preview) -> impl IntoView {
    let unchanged = preview.diff.is_empty();
    // NB: one line shape for every kind of line, and `hidden` rather than two views: each
    // alternative view is code in the browser bundle.
    let lines = preview.diff.into_iter().map(|line| {
        let (class, text) = match line {
            DiffLine::Added(text) => ("diff-add", format!("+ {text}\n")),
            DiffLine::Removed(text) => ("diff-del", format!("- {text}\n")),
            DiffLine::Same(text) => ("", format!("  {text}\n")),
            DiffLine::Gap => ("diff-gap", "  …\n".to_string()),
        };
        view! { <span class=class>{text}</span> }
    });
    view! {
        <section class="preview" aria-label=t("common.preview.label") data-testid="preview">
            {preview.refused.map(|why| view! {
                <div class="callout callout-bad" role="alert" data-testid="preview-refused">
                    <strong>{t("common.preview.refused")}</strong><span lang="en">{why}</span>
                </div>
            })}
            <h3>{t("common.preview.changes")}</h3>
            <p class="muted" hidden=!unchanged>{t("common.preview.unchanged")}</p>
            <pre class="diff" data-testid="diff" hidden=unchanged>{lines.collect_view()}</pre>
            <details>
                <summary>{t("common.preview.after")}</summary>
                <pre class="json">{preview.declaration}</pre>
            </details>
        </section>
    }
}
