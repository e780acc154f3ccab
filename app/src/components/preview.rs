//! The AS3 preview: the namespace's declaration as a change would make it, and what it changes
//! against what the member cluster holds now. Rendered and validated on the server by the
//! reconciler's own functions (`ssr::preview`); the listener and rule forms show it.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

/// A change previewed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Preview {
    /// The namespace's AS3 applications as they would be, pretty-printed JSON.
    pub declaration: String,
    /// The lines that change in the tenant's declaration, with some context, against what the
    /// member cluster's ConfigMap holds now.
    pub diff: Vec<DiffLine>,
    /// Why the change cannot be saved: the renderer's or the validator's message.
    pub refused: Option<String>,
}

/// One line of a diff.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum DiffLine {
    Added(String),
    Removed(String),
    Same(String),
    /// Unchanged lines left out.
    Gap,
}

/// The preview of a change: the refusal, the diff, the declaration.
#[component]
pub fn PreviewPanel(preview: Preview) -> impl IntoView {
    let unchanged = preview.diff.is_empty();
    view! {
        <section class="preview" aria-label="AS3 preview" data-testid="preview">
            {preview.refused.map(|why| view! {
                <div class="callout callout-bad" role="alert" data-testid="preview-refused">
                    <strong>"This change cannot be saved: "</strong>{why}
                </div>
            })}
            <h3>"Changes to the deployed declaration"</h3>
            {if unchanged {
                view! { <p class="muted">"No change to what the member cluster holds."</p> }.into_any()
            } else {
                view! {
                    <pre class="diff" data-testid="diff">
                        {preview.diff.into_iter().map(|line| match line {
                            DiffLine::Added(text) => view! { <span class="diff-add">{format!("+ {text}\n")}</span> }.into_any(),
                            DiffLine::Removed(text) => view! { <span class="diff-del">{format!("- {text}\n")}</span> }.into_any(),
                            DiffLine::Same(text) => view! { <span>{format!("  {text}\n")}</span> }.into_any(),
                            DiffLine::Gap => view! { <span class="diff-gap">"  …\n"</span> }.into_any(),
                        }).collect_view()}
                    </pre>
                }.into_any()
            }}
            <details>
                <summary>"The namespace's AS3 applications after the change"</summary>
                <pre class="json">{preview.declaration}</pre>
            </details>
        </section>
    }
}
