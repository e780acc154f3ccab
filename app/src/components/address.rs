//! What the screens built on an address (listeners, rules, F5 Ingresses) share: the address's
//! summary, whether the member cluster carries it, and the Services a namespace offers.

use serde::{Deserialize, Serialize};

use crate::domain::crd::{LbType, Phase};

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
