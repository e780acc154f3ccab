//! What server functions answer and several screens show: kept apart from the components that
//! draw it, so that the server side builds it without depending on any view code.

use serde::{Deserialize, Serialize};

use crate::domain::crd::{LbType, Phase};

/// How many addresses a list page reads at a time.
pub const ADDRESS_PAGE: usize = 50;

/// A page of a long list, and the cursor its next page starts from (none on the last).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Page<T> {
    pub rows: Vec<T>,
    pub next: Option<String>,
}

impl<T> Default for Page<T> {
    fn default() -> Self {
        Page { rows: Vec::new(), next: None }
    }
}

/// An address request as the screens on it show it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AddressSummary {
    /// The request's name.
    pub ticket: String,
    /// Its project.
    pub project: String,
    /// The member cluster of its namespace.
    pub cluster: String,
    /// The namespace it serves.
    pub namespace: String,
    /// Its VE address (empty until handed out).
    pub veip: String,
    /// Where the reconciler has brought it.
    pub phase: Phase,
    /// What it is for.
    pub lbtype: LbType,
    /// Its spec generation, which a change is checked against.
    pub generation: i64,
    /// Whether the member cluster carries its current generation (see [`Carried`]).
    pub carried: Carried,
}

/// Whether the member cluster carries what the address asks for now.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum Carried {
    /// Written for the current generation.
    Yes,
    /// Not yet written for the current generation.
    #[default]
    Pending,
    /// Refused by the renderer or the validator: why.
    Refused(String),
    /// The address is not in service (not Enabled, or disabled): nothing is placed.
    Idle,
}

/// A Service of the namespace: its name and its ports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServiceChoice {
    pub name: String,
    pub ports: Vec<u16>,
}

impl ServiceChoice {
    /// What a new row picks: the first Service offered and its first port.
    pub fn first_of(offered: &[ServiceChoice]) -> Option<(String, u16)> {
        offered.first().map(|c| (c.name.clone(), c.ports.first().copied().unwrap_or_default()))
    }
}

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
