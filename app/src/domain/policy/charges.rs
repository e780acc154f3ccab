//! What a project holds against its quota when writes race: the objects the watch caches show,
//! and the charges admission recorded on the quota's status for writes the caches may not show
//! yet. Each object is counted once, at the larger of the two, so neither a lagging cache nor
//! the charge of a write that was then not stored can take a project past its quota. Bytes of
//! an AS3 tenant, which no object holds alone, are the project's share as the caches render it,
//! and the bytes charged for each write the caches do not show yet (by its spec's digest).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::Held;
use crate::domain::crd::{Charge, Lbrule, Lbticket, Phase, Used, project_of};
use crate::domain::hash::fnv1a;

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
            spec_digest: spec_digest(&t.spec),
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

    /// The share of rule `rule`, on load balancer `lb`.
    pub fn of_rule(rule: &Lbrule, lb: &str, at: &str) -> Charge {
        Charge {
            object: format!("Lbrule/{}", rule.metadata.name.as_deref().unwrap_or_default()),
            loadbalancer: lb.to_string(),
            rules: 1,
            spec_digest: spec_digest(&rule.spec),
            at: at.to_string(),
            ..Default::default()
        }
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
    /// The digest of each object's spec as the caches show it, by its charge's object.
    digests: BTreeMap<String, String>,
    /// The project's share of each load balancer's AS3 tenant as the caches render it.
    shares: BTreeMap<String, u64>,
    /// The bytes charged to each object: counted while the caches show it otherwise.
    bytes: BTreeMap<String, Charge>,
}

/// The digest of `spec` a charge records: the caches show the object it charged once they
/// show this digest.
pub fn spec_digest(spec: &impl Serialize) -> String {
    format!("{:016x}", fnv1a(&serde_json::to_vec(spec).unwrap_or_default()))
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
            holdings.digests.insert(charge.object.clone(), charge.spec_digest.clone());
            if t.status.as_ref().is_none_or(|s| s.phase != Phase::Deleted) {
                live.insert(t.metadata.name.clone().unwrap_or_default());
            }
            holdings.tickets.insert(charge.object.clone(), charge);
        }
        for rule in rules.into_iter().filter(|r| live.contains(&r.spec.lbticket)) {
            let object = format!("Lbrule/{}", rule.metadata.name.as_deref().unwrap_or_default());
            holdings.digests.insert(object.clone(), spec_digest(&rule.spec));
            holdings.rules.insert(object);
        }
        holdings
    }

    /// With the project's share of load balancer `lb`'s tenant as the caches render it.
    pub fn sharing(mut self, lb: &str, bytes: u64) -> Holdings {
        self.shares.insert(lb.to_string(), bytes);
        self
    }

    /// With `charges` taken in: each charged object at the larger of its two shares.
    pub fn with(mut self, charges: &[Charge]) -> Holdings {
        for charge in charges {
            if charge.declaration_bytes > 0 {
                self.bytes.insert(charge.object.clone(), charge.clone());
            }
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
        held.declaration_bytes = self.shares.get(lb).copied().unwrap_or(0) + self.uncovered_bytes(lb);
        held
    }

    /// The bytes charged on `lb` for writes the caches do not show (not with the spec charged).
    fn uncovered_bytes(&self, lb: &str) -> u64 {
        self.bytes
            .values()
            .filter(|c| c.loadbalancer == lb && self.digests.get(&c.object) != Some(&c.spec_digest))
            .map(|c| c.declaration_bytes)
            .sum()
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
        used.declaration_bytes = self.shares.keys().map(|lb| (lb.clone(), self.held(lb).declaration_bytes)).collect();
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
    use crate::domain::crd::{LABEL_PROJECT, LbruleSpec, LbticketSpec, LbticketStatus, Listener, Protocol, Session};

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

    fn rule(name: &str, priority: u32) -> Lbrule {
        Lbrule::new(name, LbruleSpec { lbticket: "a".into(), priority, ..Default::default() })
    }

    #[test]
    fn bytes_charged_count_until_the_caches_show_the_spec_charged() {
        let shown = ticket("a", "lb", Phase::Enabled, 1);
        let cached = Holdings::of("p", [&shown], [&rule("r", 1)]).sharing("lb", 1_000);
        let bytes = |c: Charge, n| Charge { declaration_bytes: n, ..c };
        let rows: [(&str, Vec<Charge>, u64); 6] = [
            ("nothing charged: the share the caches render", vec![], 1_000),
            (
                "a listener more, not shown yet",
                vec![bytes(Charge::of_ticket(&ticket("a", "lb", Phase::Enabled, 2), AT), 300)],
                1_300,
            ),
            (
                "the request as the caches show it: counted already",
                vec![bytes(Charge::of_ticket(&shown, AT), 300)],
                1_000,
            ),
            ("a rule not shown yet", vec![bytes(Charge::of_rule(&rule("s", 2), "lb", AT), 200)], 1_200),
            ("a rule shown, with the spec charged", vec![bytes(Charge::of_rule(&rule("r", 1), "lb", AT), 200)], 1_000),
            (
                "bytes of another load balancer's tenant",
                vec![bytes(Charge::of_rule(&rule("s", 2), "other", AT), 200)],
                1_000,
            ),
        ];
        for (what, charges, want) in rows {
            assert_eq!(cached.clone().with(&charges).held("lb").declaration_bytes, want, "{what}");
        }
        let two = [
            bytes(Charge::of_ticket(&ticket("b", "lb", Phase::Created, 1), AT), 300),
            bytes(Charge::of_rule(&rule("s", 2), "lb", AT), 200),
        ];
        let used = cached.with(&two).used();
        assert_eq!(used.declaration_bytes.get("lb"), Some(&1_500), "two writes racing both count: {used:?}");
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
                vec![
                    Charge::of_rule(&rule("r", 1), "lb", AT),
                    Charge::of_ticket(&ticket("c", "other", Phase::Created, 0), AT),
                ],
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
            Charge::of_rule(&rule("r", 1), "lb", AT),
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
