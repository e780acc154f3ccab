//! The books one process keeps of every load balancer's addresses: each [`Lbaddress`] object
//! seen (from the watch, and from its own creates), by ticket, and each load balancer's
//! allocator, built once from them and kept current, so choosing a pair costs the same with
//! 20,000 pairs held as with none.
//!
//! NB: the books may lag the API. They only choose: the API server's create-if-absent decides
//! (a second claim of an address is a 409), so a stale choice costs a retry, never a duplicate.

use std::collections::{BTreeSet, HashMap};
use std::net::IpAddr;

use kube::ResourceExt;

use super::{Pair, PairAllocator, RangeError, Side};
use crate::domain::crd::{Capacity, Lbaddress, Loadbalancer, LoadbalancerSpec, address_name};

/// What the allocator of a load balancer was built from: a change of either range or of the
/// reserved list rebuilds it.
type Ranges = (String, String, Vec<String>);

fn ranges(spec: &LoadbalancerSpec) -> Ranges {
    (spec.ve.cidr.clone(), spec.ltm.cidr.clone(), spec.reserved.clone())
}

/// The books of one load balancer.
#[derive(Debug, Default)]
struct Book {
    /// Every address object, by name.
    objects: HashMap<String, Lbaddress>,
    /// The names of each ticket's objects.
    tickets: HashMap<String, BTreeSet<String>>,
    /// The allocator, with the ranges it was built for; built on first use.
    alloc: Option<(Ranges, PairAllocator)>,
}

/// The addresses a ticket holds on one load balancer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Held {
    pub ve: Option<Lbaddress>,
    pub ltm: Option<Lbaddress>,
}

impl Held {
    /// Both addresses, as a pair.
    pub fn pair(&self) -> Option<Pair> {
        Some(Pair { veip: self.ve.as_ref()?.spec.ip()?, ltmip: self.ltm.as_ref()?.spec.ip()? })
    }

    /// Every object held.
    pub fn objects(&self) -> impl Iterator<Item = &Lbaddress> {
        self.ve.iter().chain(self.ltm.iter())
    }
}

/// The books of every load balancer.
#[derive(Debug, Default)]
pub struct Ledger {
    books: HashMap<String, Book>,
}

impl Book {
    fn pool(&mut self, side: Side) -> Option<&mut super::Pool> {
        self.alloc.as_mut().map(|(_, a)| if side == Side::Ve { &mut a.ve } else { &mut a.ltm })
    }

    fn forget(&mut self, name: &str) {
        let Some(old) = self.objects.remove(name) else { return };
        if let Some(names) = self.tickets.get_mut(&old.spec.ticket) {
            names.remove(name);
            if names.is_empty() {
                self.tickets.remove(&old.spec.ticket);
            }
        }
        if let (Some(ip), Some(pool)) = (old.spec.ip(), self.pool(old.spec.side))
            && pool.holder(ip) == Some(old.spec.ticket.as_str())
        {
            pool.release(ip);
        }
    }
}

impl Ledger {
    /// Forgets everything (the watch lists afresh).
    pub fn clear(&mut self) {
        self.books.clear();
    }

    /// Records an address object as it now is.
    pub fn put(&mut self, address: Lbaddress) {
        let name = address.name_any();
        let book = self.books.entry(address.spec.loadbalancer.clone()).or_default();
        book.forget(&name);
        if let (Some(ip), Some(pool)) = (address.spec.ip(), book.pool(address.spec.side)) {
            // NB: the object is the truth: a choice of the same address for another ticket,
            // not written yet, gives way (its create will find it taken).
            if pool.holder(ip).is_some_and(|h| h != address.spec.ticket) {
                pool.release(ip);
            }
            // NB: an address outside the ranges (a hand-written object) holds nothing to count.
            let _ = pool.take(ip, &address.spec.ticket);
        }
        book.tickets.entry(address.spec.ticket.clone()).or_default().insert(name.clone());
        book.objects.insert(name, address);
    }

    /// Forgets an address object that was deleted; a delete of an older object of the same
    /// name (a later one is held now) changes nothing.
    pub fn remove(&mut self, address: &Lbaddress) {
        let Some(book) = self.books.get_mut(&address.spec.loadbalancer) else { return };
        let name = address.name_any();
        let same = book.objects.get(&name).is_some_and(|held| match (held.uid(), address.uid()) {
            (Some(a), Some(b)) => a == b,
            _ => held.spec.ticket == address.spec.ticket,
        });
        if same {
            book.forget(&name);
        }
    }

    /// The addresses `ticket` holds on load balancer `lb`.
    pub fn held(&self, lb: &str, ticket: &str) -> Held {
        let mut held = Held::default();
        let Some(book) = self.books.get(lb) else { return held };
        for name in book.tickets.get(ticket).into_iter().flatten() {
            if let Some(a) = book.objects.get(name) {
                match a.spec.side {
                    Side::Ve => held.ve = Some(a.clone()),
                    Side::Ltm => held.ltm = Some(a.clone()),
                }
            }
        }
        held
    }

    /// How many addresses of load balancer `lb` are held, on both sides.
    pub fn count(&self, lb: &str) -> usize {
        self.books.get(lb).map_or(0, |b| b.objects.len())
    }

    /// The allocator of `lb`: its ranges, with every address of the books taken.
    pub fn allocator(&mut self, lb: &Loadbalancer) -> Result<&mut PairAllocator, RangeError> {
        let book = self.books.entry(lb.name_any()).or_default();
        let wanted = ranges(&lb.spec);
        let alloc = match book.alloc.take() {
            Some((built, alloc)) if built == wanted => alloc,
            _ => {
                let mut alloc = PairAllocator::new(&lb.spec, &[])?;
                for a in book.objects.values() {
                    if let Some(ip) = a.spec.ip() {
                        let pool = if a.spec.side == Side::Ve { &mut alloc.ve } else { &mut alloc.ltm };
                        let _ = pool.take(ip, &a.spec.ticket);
                    }
                }
                alloc
            }
        };
        Ok(&mut book.alloc.insert((wanted, alloc)).1)
    }

    /// The capacity counters of `lb` (`None` when its ranges are not valid).
    pub fn capacity(&mut self, lb: &Loadbalancer) -> Option<Capacity> {
        self.allocator(lb).ok().map(|a| a.capacity())
    }

    /// Gives back an address chosen for `ticket` whose object was not written (the create
    /// failed, or found it taken): it is free again unless an object holds it.
    pub fn unpick(&mut self, lb: &str, side: Side, ip: IpAddr, ticket: &str) {
        let Some(book) = self.books.get_mut(lb) else { return };
        let held = book.objects.contains_key(&address_name(lb, side, ip));
        if let Some(pool) = book.pool(side)
            && !held
            && pool.holder(ip) == Some(ticket)
        {
            pool.release(ip);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::crd::BondState;

    fn lb(reserved: &[&str]) -> Loadbalancer {
        let mut spec = LoadbalancerSpec::default();
        spec.ve.cidr = "20.1.0.0/29".into();
        spec.ltm.cidr = "10.0.0.0/29".into();
        spec.reserved = reserved.iter().map(|r| r.to_string()).collect();
        Loadbalancer::new("big", spec)
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    fn address(side: Side, at: &str, partner: &str, ticket: &str, uid: &str) -> Lbaddress {
        let mut a = Lbaddress::held("big", side, ip(at), ip(partner), ticket, BondState::Pending);
        a.metadata.uid = Some(uid.into());
        a
    }

    fn hold(ledger: &mut Ledger, ve: &str, ltm: &str, ticket: &str) {
        ledger.put(address(Side::Ve, ve, ltm, ticket, &format!("{ticket}-ve")));
        ledger.put(address(Side::Ltm, ltm, ve, ticket, &format!("{ticket}-ltm")));
    }

    #[test]
    fn what_a_ticket_holds_is_found_and_taken() {
        let (mut ledger, lb) = (Ledger::default(), lb(&[]));
        hold(&mut ledger, "20.1.0.1", "10.0.0.1", "t1");
        let held = ledger.held("big", "t1");
        assert_eq!(held.pair(), Some(Pair { veip: ip("20.1.0.1"), ltmip: ip("10.0.0.1") }));
        assert_eq!(held.objects().count(), 2);
        assert_eq!(ledger.held("big", "t2"), Held::default());
        let pair = ledger.allocator(&lb).expect("valid").allocate("t2", None, None).expect("free");
        assert_eq!(pair, Pair { veip: ip("20.1.0.2"), ltmip: ip("10.0.0.2") }, "the held pair is skipped");
        assert_eq!(ledger.count("big"), 2);
    }

    #[test]
    fn objects_seen_after_the_allocator_was_built_keep_it_current() {
        let (mut ledger, lb) = (Ledger::default(), lb(&[]));
        let before = ledger.capacity(&lb).expect("valid");
        hold(&mut ledger, "20.1.0.1", "10.0.0.1", "t1");
        let after = ledger.capacity(&lb).expect("valid");
        assert_eq!((after.ve_used, after.ltm_used, after.ve_free), (1, 1, before.ve_free - 1));
        ledger.remove(&address(Side::Ve, "20.1.0.1", "10.0.0.1", "t1", "t1-ve"));
        assert_eq!(ledger.capacity(&lb).expect("valid").ve_used, 0);
        assert_eq!(ledger.held("big", "t1").ve, None);
    }

    #[test]
    fn a_late_delete_of_an_older_object_frees_nothing() {
        let (mut ledger, lb) = (Ledger::default(), lb(&[]));
        ledger.allocator(&lb).expect("valid");
        hold(&mut ledger, "20.1.0.1", "10.0.0.1", "t1");
        ledger.remove(&address(Side::Ve, "20.1.0.1", "10.0.0.1", "t1", "an-older-uid"));
        assert!(ledger.held("big", "t1").ve.is_some());
        assert_eq!(ledger.allocator(&lb).expect("valid").ve.holder(ip("20.1.0.1")), Some("t1"));
    }

    #[test]
    fn a_choice_not_written_is_given_back_unless_an_object_holds_it() {
        let (mut ledger, lb) = (Ledger::default(), lb(&[]));
        let pair = ledger.allocator(&lb).expect("valid").allocate("t1", None, None).expect("free");
        ledger.unpick("big", Side::Ve, pair.veip, "t1");
        assert_eq!(ledger.allocator(&lb).expect("valid").ve.holder(pair.veip), None);
        // The LTM address was chosen for t1, but t2's object holds it: t2 has it.
        ledger.put(address(Side::Ltm, "10.0.0.1", "20.1.0.7", "t2", "t2-ltm"));
        ledger.unpick("big", Side::Ltm, pair.ltmip, "t1");
        assert_eq!(ledger.allocator(&lb).expect("valid").ltm.holder(pair.ltmip), Some("t2"));
        ledger.remove(&address(Side::Ltm, "10.0.0.1", "20.1.0.7", "t2", "t2-ltm"));
        assert_eq!(ledger.allocator(&lb).expect("valid").ltm.holder(pair.ltmip), None, "nothing leaks");
    }

    #[test]
    fn a_changed_range_or_reserved_list_rebuilds_the_allocator() {
        let mut ledger = Ledger::default();
        hold(&mut ledger, "20.1.0.1", "10.0.0.1", "t1");
        let first = ledger.allocator(&lb(&[])).expect("valid").allocate("t2", None, None).expect("free");
        assert_eq!(first.veip, ip("20.1.0.2"));
        let rebuilt = ledger.allocator(&lb(&["20.1.0.2"])).expect("valid");
        assert_eq!(rebuilt.ve.holder(ip("20.1.0.1")), Some("t1"), "held addresses stay held");
        assert_eq!(rebuilt.ve.holder(ip("20.1.0.2")), None, "a choice not written is not carried over");
        assert_eq!(rebuilt.allocate("t3", None, None).expect("free").veip, ip("20.1.0.3"), "reserved skipped");
    }
}
