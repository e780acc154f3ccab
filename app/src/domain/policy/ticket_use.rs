//! What uses a ticket: the one adapter from a ticket and the Lbrules to the counts its grey-out
//! rules read (disable, edit, listener deletion).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::domain::crd::{Lbrule, Lbticket};

/// What uses a ticket, counted once by [`TicketUse::of`]: the server function and admission
/// compute it before deciding, and the page gets it with the ticket, so all three callers
/// of a rule see the same numbers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TicketUse {
    /// How many listeners the ticket carries.
    pub listeners: usize,
    /// Listener name → how many Lbrules are on it.
    pub rules: BTreeMap<String, usize>,
    /// How many F5 Ingresses the ticket carries (`spec.ingresses`).
    pub ingresses: usize,
}

impl TicketUse {
    /// The use of `ticket`, given the Lbrules (any; those of other tickets are skipped).
    /// NB: pass the ticket as it is or would be written (the new object of an update): its
    /// listeners and F5 Ingresses are counted from its spec.
    pub fn of<'a>(ticket: &Lbticket, rules: impl IntoIterator<Item = &'a Lbrule>) -> TicketUse {
        let name = ticket.metadata.name.as_deref().unwrap_or_default();
        let mut on: BTreeMap<String, usize> = BTreeMap::new();
        for rule in rules.into_iter().filter(|r| r.spec.lbticket == name) {
            *on.entry(rule.spec.listener.clone()).or_default() += 1;
        }
        TicketUse { listeners: ticket.spec.listeners.len(), rules: on, ingresses: ticket.spec.ingresses.len() }
    }

    /// How many Lbrules are on `listener`.
    pub fn rules_on(&self, listener: &str) -> usize {
        self.rules.get(listener).copied().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::crd::{F5Ingress, LbruleSpec, LbticketSpec, Listener, Protocol, Session};

    fn ticket(name: &str, listeners: &[&str], ingresses: &[&str]) -> Lbticket {
        let listener = |n: &&str| Listener {
            name: n.to_string(),
            port: 80,
            protocol: Protocol::Http,
            session: Session::None,
            services: vec![],
        };
        let ingress = |n: &&str| F5Ingress { name: n.to_string(), rules: vec![], tls_secret: None };
        Lbticket::new(
            name,
            LbticketSpec {
                listeners: listeners.iter().map(listener).collect(),
                ingresses: ingresses.iter().map(ingress).collect(),
                ..Default::default()
            },
        )
    }

    fn rule(ticket: &str, listener: &str) -> Lbrule {
        Lbrule::new("r", LbruleSpec { lbticket: ticket.into(), listener: listener.into(), ..Default::default() })
    }

    #[test]
    fn a_ticket_is_used_by_its_listeners_their_rules_and_its_ingresses() {
        let rules = [rule("t", "web"), rule("t", "web"), rule("t", "api"), rule("other", "web")];
        for (what, ticket, listeners, web, api, ingresses) in [
            ("rules count by the listener they name", ticket("t", &[], &[]), 0, 2, 1, 0),
            ("two listeners with rules", ticket("t", &["web", "api"], &[]), 2, 2, 1, 0),
            ("an F5 Ingress", ticket("t", &[], &["ing"]), 0, 2, 1, 1),
            ("rules of another ticket do not count", ticket("u", &["web"], &[]), 1, 0, 0, 0),
        ] {
            let usage = TicketUse::of(&ticket, &rules);
            assert_eq!(
                (usage.listeners, usage.rules_on("web"), usage.rules_on("api"), usage.ingresses),
                (listeners, web, api, ingresses),
                "{what}"
            );
            assert_eq!(usage.rules_on("absent"), 0, "{what}");
        }
    }
}
