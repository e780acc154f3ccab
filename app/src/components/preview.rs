//! The AS3 preview: the namespace's declaration as a change would make it, and what it changes
//! against what the member cluster holds now. Rendered and validated on the server by the
//! reconciler's own functions (`ssr::preview`).

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
