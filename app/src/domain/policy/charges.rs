//! What a project holds against its quota when writes race: the objects the watch caches show,
//! and the charges admission recorded on the quota's status for writes the caches may not show
//! yet. Each object is counted once, at the larger of the two, so neither a lagging cache nor
//! the charge of a write that was then not stored can take a project past its quota.

use std::collections::{BTreeMap, BTreeSet};

use super::Held;
use crate::domain::crd::{Charge, Lbrule, Lbticket, Phase, Used, project_of};

/// How long a charge counts: the caches show its object long before; a write that was admitted
/// and then not stored (it lost a race, its name was taken) holds its share this long.
pub const CHARGE_SECONDS: i64 = 60;

impl Charge {
    /// The share of address request `t`: its address on its load balancer (none while Failed),
    /// its listeners and F5 Ingresses; nothing once Deleted.
    pub fn of_ticket(t: &Lbticket, at: &str) -> Charge {
        let name = t.metadata.name.as_deref().unwrap_or_default();
        let phase = t.status.as_ref().map(|s| s.phase).unwrap_or_default();
        let mut charge = Charge {
            object: format!("Lbticket/{name}"),
            loadbalancer: t.spec.loadbalancer.clone(),
            at: at.to_string(),
            ..Default::default()
        };
        if phase != Phase::Deleted {
            charge.addresses = u64::from(phase != Phase::Failed);
            charge.listeners = t.spec.listeners.len() as u64;
            charge.ingresses = t.spec.ingresses.len() as u64;
        }
        charge
    }

    /// The share of rule `name`.
    pub fn of_rule(name: &str, at: &str) -> Charge {
        Charge { object: format!("Lbrule/{name}"), rules: 1, at: at.to_string(), ..Default::default() }
    }

    /// Whether the share of `self` is larger than `other`'s in anything.
    pub fn grows_past(&self, other: &Charge) -> bool {
        self.addresses > other.addresses
            || self.listeners > other.listeners
            || self.rules > other.rules
            || self.ingresses > other.ingresses
            || (self.addresses > 0 && self.loadbalancer != other.loadbalancer)
    }

    fn max(&mut self, other: &Charge) {
        self.addresses = self.addresses.max(other.addresses);
        self.listeners = self.listeners.max(other.listeners);
        self.rules = self.rules.max(other.rules);
        self.ingresses = self.ingresses.max(other.ingresses);
        if self.loadbalancer.is_empty() {
            self.loadbalancer = other.loadbalancer.clone();
        }
    }
}

/// Everything a project holds, object by object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Holdings {
    /// Each address request's share, by its charge's object (`Lbticket/<name>`).
    tickets: BTreeMap<String, Charge>,
    /// The rules, by their charge's object (`Lbrule/<name>`).
    rules: BTreeSet<String>,
}

impl Holdings {
    /// What `project` holds among the objects the caches show: its address requests and the
    /// rules on those not Deleted.
    pub fn of<'a>(
        project: &str,
        tickets: impl IntoIterator<Item = &'a Lbticket>,
        rules: impl IntoIterator<Item = &'a Lbrule>,
    ) -> Holdings {
        let mut holdings = Holdings::default();
        let mut live = BTreeSet::new();
        for t in tickets.into_iter().filter(|t| project_of(t) == Some(project)) {
            let charge = Charge::of_ticket(t, "");
            if t.status.as_ref().is_none_or(|s| s.phase != Phase::Deleted) {
                live.insert(t.metadata.name.clone().unwrap_or_default());
            }
            holdings.tickets.insert(charge.object.clone(), charge);
        }
        for rule in rules.into_iter().filter(|r| live.contains(&r.spec.lbticket)) {
            holdings.rules.insert(format!("Lbrule/{}", rule.metadata.name.as_deref().unwrap_or_default()));
        }
        holdings
    }

    /// With `charges` taken in: each charged object at the larger of its two shares.
    pub fn with(mut self, charges: &[Charge]) -> Holdings {
        for charge in charges {
            if charge.object.starts_with("Lbrule/") {
                self.rules.insert(charge.object.clone());
            } else {
                self.tickets.entry(charge.object.clone()).or_default().max(charge);
            }
        }
        self
    }

    /// What it comes to on load balancer `lb` (and in all, for the rest).
    pub fn held(&self, lb: &str) -> Held {
        let mut held = Held { rules: self.rules.len() as u64, ..Held::default() };
        for share in self.tickets.values() {
            if share.loadbalancer == lb {
                held.addresses += share.addresses;
            }
            held.listeners += share.listeners;
            held.ingresses += share.ingresses;
        }
        held
    }

    /// What the quota's status records as used.
    pub fn used(&self) -> Used {
        let mut used = Used { rules: self.rules.len() as u64, ..Used::default() };
        for share in self.tickets.values() {
            if share.addresses > 0 {
                *used.addresses.entry(share.loadbalancer.clone()).or_default() += share.addresses;
            }
            used.listeners += share.listeners;
            used.ingresses += share.ingresses;
        }
        used
    }
}

/// The charges still kept at `now` (unix seconds): those younger than [`CHARGE_SECONDS`].
///
/// NB: a charge is kept whether or not the writer's caches show its object: a writer whose
/// caches show it would drop it, and the next writer, whose caches do not yet, would count it
/// neither way (a run admitted 3 requests against a quota of 2 so). Counted at the larger of the
/// caches' share and its own, a charge kept counts its object once.
pub fn pending(charges: &[Charge], now: i64) -> Vec<Charge> {
    charges.iter().filter(|c| seconds(&c.at).is_some_and(|at| now - at < CHARGE_SECONDS)).cloned().collect()
}

/// An RFC 3339 time in unix seconds.
fn seconds(at: &str) -> Option<i64> {
    time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339).ok().map(|t| t.unix_timestamp())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::domain::crd::{LABEL_PROJECT, LbticketSpec, LbticketStatus, Listener, Protocol, Session};

    const AT: &str = "2026-12-07T10:00:00Z";
    const NOW: i64 = 1_796_637_610; // ten seconds after AT

    fn ticket(name: &str, lb: &str, phase: Phase, listeners: usize) -> Lbticket {
        let listener = |i| Listener {
            name: format!("l{i}"),
            port: 80 + i as u16,
            protocol: Protocol::Http,
            session: Session::None,
            services: Vec::new(),
        };
        let spec = LbticketSpec {
            loadbalancer: lb.into(),
            listeners: (0..listeners).map(listener).collect(),
            ..Default::default()
        };
        let mut t = Lbticket::new(name, spec);
        t.metadata.labels = Some(BTreeMap::from([(LABEL_PROJECT.to_string(), "p".to_string())]));
        t.status = Some(LbticketStatus { phase, ..Default::default() });
        t
    }

    #[test]
    fn the_clock_of_the_tests_is_what_it_says() {
        assert_eq!(seconds(AT).map(|at| NOW - at), Some(10));
    }

    #[test]
    fn a_charge_counts_until_the_caches_show_its_object_and_once() {
        let cached = Holdings::of("p", &[ticket("a", "lb", Phase::Enabled, 1)], &[]);
        let rows: [(&str, Vec<Charge>, Held); 5] = [
            ("nothing charged: the caches alone", vec![], Held { addresses: 1, listeners: 1, ..Held::default() }),
            (
                "a request the caches do not show yet",
                vec![Charge::of_ticket(&ticket("b", "lb", Phase::Created, 0), AT)],
                Held { addresses: 2, listeners: 1, ..Held::default() },
            ),
            (
                "a request shown, with a listener more than the caches show",
                vec![Charge::of_ticket(&ticket("a", "lb", Phase::Enabled, 3), AT)],
                Held { addresses: 1, listeners: 3, ..Held::default() },
            ),
            (
                "a charge for less than the caches show: the caches",
                vec![Charge::of_ticket(&ticket("a", "lb", Phase::Enabled, 0), AT)],
                Held { addresses: 1, listeners: 1, ..Held::default() },
            ),
            (
                "a rule, and a request on another load balancer",
                vec![Charge::of_rule("r", AT), Charge::of_ticket(&ticket("c", "other", Phase::Created, 0), AT)],
                Held { addresses: 1, listeners: 1, rules: 1, ..Held::default() },
            ),
        ];
        for (what, charges, want) in rows {
            assert_eq!(cached.clone().with(&charges).held("lb"), want, "{what}");
        }
    }

    #[test]
    fn charges_are_kept_a_minute_and_count_their_object_once() {
        let cached = Holdings::of("p", &[ticket("a", "lb", Phase::Enabled, 1)], &[]);
        let old = "2026-12-07T09:58:00Z";
        let charges = [
            Charge::of_ticket(&ticket("a", "lb", Phase::Enabled, 1), AT),
            Charge::of_ticket(&ticket("b", "lb", Phase::Created, 0), AT),
            Charge::of_ticket(&ticket("c", "lb", Phase::Created, 0), old),
            Charge::of_rule("r", AT),
        ];
        let kept = pending(&charges, NOW);
        let objects: Vec<&str> = kept.iter().map(|c| c.object.as_str()).collect();
        assert_eq!(objects, ["Lbticket/a", "Lbticket/b", "Lbrule/r"], "c is a minute old");
        let held = cached.with(&kept).held("lb");
        assert_eq!((held.addresses, held.listeners, held.rules), (2, 1, 1), "a, shown and charged, counts once");
    }

    #[test]
    fn what_grows_is_what_a_charge_is_made_for() {
        let (one, two) = (ticket("a", "lb", Phase::Enabled, 1), ticket("a", "lb", Phase::Enabled, 2));
        assert!(Charge::of_ticket(&two, AT).grows_past(&Charge::of_ticket(&one, AT)));
        assert!(!Charge::of_ticket(&one, AT).grows_past(&Charge::of_ticket(&two, AT)));
        assert!(Charge::of_ticket(&one, AT).grows_past(&Charge::default()), "a new request");
        let failed = ticket("a", "lb", Phase::Failed, 1);
        assert!(!Charge::of_ticket(&failed, AT).grows_past(&Charge::of_ticket(&one, AT)));
    }
}
