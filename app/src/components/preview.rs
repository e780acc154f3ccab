//! The AS3 preview: the namespace's declaration as a change would make it, and what it changes
//! against what the member cluster holds now. Rendered and validated on the server by the
//! reconciler's own functions (`ssr::preview`); the listener and rule forms show it.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::i18n::t;

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

/// One line of a diff. On the wire a string whose first character says which kind (`+`, `-`,
/// ` `, `…`): an enum's deserializer is code in the browser bundle, a string's is already there.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
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

impl From<DiffLine> for String {
    fn from(line: DiffLine) -> String {
        match line {
            DiffLine::Added(text) => format!("+{text}"),
            DiffLine::Removed(text) => format!("-{text}"),
            DiffLine::Same(text) => format!(" {text}"),
            DiffLine::Gap => "…".into(),
        }
    }
}

impl From<String> for DiffLine {
    fn from(mut line: String) -> DiffLine {
        let kind = line.chars().next();
        if let Some(kind) = kind {
            line.drain(..kind.len_utf8());
        }
        match kind {
            Some('+') => DiffLine::Added(line),
            Some('-') => DiffLine::Removed(line),
            Some('…') => DiffLine::Gap,
            _ => DiffLine::Same(line),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::DiffLine;

    #[test]
    fn a_diff_line_crosses_the_wire_as_it_was() {
        for line in [
            DiffLine::Added("\"a\": 1".into()),
            DiffLine::Removed("-x".into()),
            DiffLine::Same("+ looks added".into()),
            DiffLine::Same(String::new()),
            DiffLine::Gap,
        ] {
            let json = serde_json::to_string(&line).expect("serialises");
            assert_eq!(serde_json::from_str::<DiffLine>(&json).expect("deserialises"), line, "{json}");
        }
    }
}
