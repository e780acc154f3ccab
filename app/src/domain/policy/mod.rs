//! The grey-out rules (DESIGN §4) and the field checks of every object, one function each.
//!
//! Each rule takes plain data and returns [`Verdict`]: allowed, or a [`Refusal`] whose reason a
//! user can read and whose field says where to show it. The page renders the control disabled
//! with that reason, the server function refuses with it, and admission denies with it: three
//! callers, one implementation.

// NB: the server's (save path and admission); the browser only shows its verdicts.
#[cfg(feature = "ssr")]
mod change;
#[cfg(feature = "ssr")]
mod charges;
mod ingress;
mod ipam_refusals;
mod listener;
mod loadbalancer;
mod names;
mod quota;
mod rule;
mod rule_write;
mod services;
#[cfg(feature = "ssr")]
mod share;
mod ticket;
mod ticket_use;

#[cfg(feature = "ssr")]
pub use change::*;
#[cfg(feature = "ssr")]
pub use charges::*;
pub use ingress::*;
pub use listener::*;
pub use loadbalancer::*;
pub use names::*;
pub use quota::*;
pub use rule::*;
pub use rule_write::*;
pub use services::*;
#[cfg(feature = "ssr")]
pub use share::*;
pub use ticket::*;
pub use ticket_use::*;

use serde::{Deserialize, Serialize};

use crate::domain::crd::{LbType, Phase};
use crate::i18n::Msg;

/// Why an action is not allowed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{reason}")]
pub struct Refusal {
    /// The form field (dotted path in the object's spec) the reason belongs beside, if any.
    pub field: Option<String>,
    /// What the user reads (in their locale: [`Msg::text`]).
    pub reason: Msg,
}

impl Refusal {
    /// A refusal about one field.
    pub fn field(field: impl Into<String>, reason: impl Into<Msg>) -> Refusal {
        Refusal { field: Some(field.into()), reason: reason.into() }
    }

    /// A refusal of the whole action.
    pub fn action(reason: impl Into<Msg>) -> Refusal {
        Refusal { field: None, reason: reason.into() }
    }

    /// The same refusal, its field placed under `prefix` (e.g. `listeners[0]`).
    pub fn under(self, prefix: &str) -> Refusal {
        Refusal {
            field: Some(match self.field {
                Some(f) => format!("{prefix}.{f}"),
                None => prefix.to_string(),
            }),
            reason: self.reason,
        }
    }
}

/// Allowed, or refused with a reason.
pub type Verdict = Result<(), Refusal>;

/// The reason text of a verdict in the reader's locale, for a tooltip (`None` when allowed).
pub fn reason(verdict: &Verdict) -> Option<String> {
    verdict.as_ref().err().map(|r| r.reason.text())
}

/// Whether what an address of type `wanted` carries (listeners, F5 Ingresses) may be put on one
/// of type `lbtype` in `phase`: only on an Enabled address of that type.
fn carries(phase: Phase, lbtype: LbType, wanted: LbType) -> Verdict {
    if lbtype != wanted {
        return Err(Refusal::action(match wanted {
            LbType::Listener => crate::msg!("refusals.address.for_ingress"),
            LbType::Ingress => crate::msg!("refusals.address.for_listeners"),
        }));
    }
    if phase != Phase::Enabled {
        let waits = match wanted {
            LbType::Listener => crate::msg!("refusals.address.listeners_once_enabled"),
            LbType::Ingress => crate::msg!("refusals.address.ingresses_once_enabled"),
        };
        return Err(Refusal::action(waits.with("phase", crate::i18n::Msg::new(phase.word_key()))));
    }
    Ok(())
}
