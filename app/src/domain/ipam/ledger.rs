//! The books one process keeps of every address held: each [`Lbaddress`] object seen (from the
//! watch, and from its own creates), by load balancer and ticket, and by the device it is held
//! on; and each load balancer's allocator, built once from its devices' addresses and kept
//! current, so choosing a pair costs the same with 20,000 pairs held as with none.
//!
//! NB: an address is taken on its device, whichever load balancer's object holds it: two load
//! balancers on one VE (an overlap an earlier version let an admin save) never hand out one
//! address twice.
//!
//! NB: the books may lag the API. They only choose: the API server's create-if-absent decides
//! (a second claim of an address on its device is a 409), so a stale choice costs a retry,
//! never a duplicate.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;

use kube::ResourceExt;

use super::{Device, Pair, PairAllocator, RangeError, Side};
use crate::domain::crd::{Capacity, Lbaddress, Loadbalancer, LoadbalancerSpec};

/// What the allocator of a load balancer was built from: a change of either range, of the
/// reserved list or of a device rebuilds it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Built {
    ve_cidr: String,
    ltm_cidr: String,
    reserved: Vec<String>,
    ve: Device,
    ltm: Device,
}

impl Built {
    fn of(spec: &LoadbalancerSpec) -> Built {
        Built {
            ve_cidr: spec.ve.cidr.clone(),
            ltm_cidr: spec.ltm.cidr.clone(),
            reserved: spec.reserved.clone(),
            ve: Device::of(spec, Side::Ve),
            ltm: Device::of(spec, Side::Ltm),
        }
    }

    fn device(&self, side: Side) -> &Device {
        if side == Side::Ve { &self.ve } else { &self.ltm }
    }
}

/// The books of one load balancer: the objects it holds, whatever their device.
#[derive(Debug, Default)]
struct Book {
    /// Every address object, by name.
    objects: HashMap<String, Lbaddress>,
    /// The names of each ticket's objects.
    tickets: HashMap<String, BTreeSet<String>>,
    /// The allocator, with what it was built from; built on first use.
    alloc: Option<(Built, PairAllocator)>,
}

impl Book {
    fn pool(&mut self, side: Side) -> Option<&mut super::Pool> {
        self.alloc.as_mut().map(|(_, a)| if side == Side::Ve { &mut a.ve } else { &mut a.ltm })
    }
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

/// The objects holding one address on a device: name → ticket. More than one only for an
/// address an earlier version handed out twice.
type Holders = BTreeMap<String, String>;

/// The books of every load balancer and device.
#[derive(Debug, Default)]
pub struct Ledger {
    books: HashMap<String, Book>,
    /// Every address held on each device, with the objects holding it.
    devices: HashMap<Device, BTreeMap<IpAddr, Holders>>,
}

/// Where an object's address is counted: its device (as recorded, or `None` for an object of an
/// earlier version, counted for its load balancer alone) and the address.
fn place(address: &Lbaddress) -> Option<(Option<Device>, IpAddr)> {
    Some((address.spec.device(), address.spec.ip()?))
}

impl Ledger {
    /// Forgets everything (the watch lists afresh).
    pub fn clear(&mut self) {
        self.books.clear();
        self.devices.clear();
    }

    /// Records an address object as it now is.
    pub fn put(&mut self, address: Lbaddress) {
        let name = address.name_any();
        self.forget(&address.spec.loadbalancer, &name);
        let ticket = address.spec.ticket.clone();
        if let Some((device, ip)) = place(&address) {
            if let Some(device) = &device {
                self.devices
                    .entry(device.clone())
                    .or_default()
                    .entry(ip)
                    .or_default()
                    .insert(name.clone(), ticket.clone());
            }
            // NB: the object is the truth: a choice of the same address for another ticket,
            // not written yet, gives way (its create will find it taken).
            for pool in self.pools(&address.spec.loadbalancer, device.as_ref(), address.spec.side) {
                if pool.holder(ip).is_some_and(|h| h != ticket) {
                    pool.release(ip);
                }
                // NB: an address outside the ranges (a hand-written object) holds nothing to count.
                let _ = pool.take(ip, &ticket);
            }
        }
        let book = self.books.entry(address.spec.loadbalancer.clone()).or_default();
        book.tickets.entry(ticket).or_default().insert(name.clone());
        book.objects.insert(name, address);
    }

    /// Forgets an address object that was deleted; a delete of an older object of the same
    /// name (a later one is held now) changes nothing.
    pub fn remove(&mut self, address: &Lbaddress) {
        let Some(book) = self.books.get(&address.spec.loadbalancer) else { return };
        let name = address.name_any();
        let same = book.objects.get(&name).is_some_and(|held| match (held.uid(), address.uid()) {
            (Some(a), Some(b)) => a == b,
            _ => held.spec.ticket == address.spec.ticket,
        });
        if same {
            self.forget(&address.spec.loadbalancer, &name);
        }
    }

    /// Drops object `name` of load balancer `lb` from the books; its address is free again
    /// unless another object holds it on its device.
    fn forget(&mut self, lb: &str, name: &str) {
        let Some(book) = self.books.get_mut(lb) else { return };
        let Some(old) = book.objects.remove(name) else { return };
        if let Some(names) = book.tickets.get_mut(&old.spec.ticket) {
            names.remove(name);
            if names.is_empty() {
                book.tickets.remove(&old.spec.ticket);
            }
        }
        let Some((device, ip)) = place(&old) else { return };
        let remaining = device.as_ref().and_then(|d| {
            let addresses = self.devices.get_mut(d)?;
            let holders = addresses.get_mut(&ip)?;
            holders.remove(name);
            let next = holders.values().next().cloned();
            if holders.is_empty() {
                addresses.remove(&ip);
            }
            next
        });
        for pool in self.pools(lb, device.as_ref(), old.spec.side) {
            if pool.holder(ip) == Some(old.spec.ticket.as_str()) {
                pool.release(ip);
                if let Some(next) = &remaining {
                    let _ = pool.take(ip, next);
                }
            }
        }
    }

    /// The pools that count an address of `side` on `device` held for load balancer `lb`: those
    /// of every load balancer on the device, or only `lb`'s for an object of an earlier version.
    fn pools<'a>(
        &'a mut self,
        lb: &'a str,
        device: Option<&'a Device>,
        side: Side,
    ) -> impl Iterator<Item = &'a mut super::Pool> {
        self.books
            .iter_mut()
            .filter(move |(name, book)| match (device, &book.alloc) {
                (Some(d), Some((built, _))) => built.device(side) == d,
                (None, _) => name.as_str() == lb,
                (Some(_), None) => false,
            })
            .filter_map(move |(_, book)| book.pool(side))
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

    /// The tickets holding addresses of load balancer `lb`.
    pub fn holders(&self, lb: &str) -> Vec<String> {
        self.books.get(lb).map(|b| b.tickets.keys().cloned().collect()).unwrap_or_default()
    }

    /// How many addresses load balancer `lb`'s objects hold, on both sides.
    pub fn count(&self, lb: &str) -> usize {
        self.books.get(lb).map_or(0, |b| b.objects.len())
    }

    /// The addresses held more than once on a device (by objects an earlier version wrote for
    /// two load balancers), with the tickets holding each.
    pub fn held_twice(&self) -> Vec<(Device, IpAddr, Vec<String>)> {
        let mut twice = Vec::new();
        for (device, addresses) in &self.devices {
            for (ip, holders) in addresses.iter().filter(|(_, h)| h.len() > 1) {
                let mut tickets: Vec<String> = holders.values().cloned().collect();
                tickets.sort();
                twice.push((device.clone(), *ip, tickets));
            }
        }
        twice.sort();
        twice
    }

    /// The allocator of `lb`: its ranges, with every address held on its two devices taken
    /// (whichever load balancer's object holds it), and its own objects of earlier versions.
    pub fn allocator(&mut self, lb: &Loadbalancer) -> Result<&mut PairAllocator, RangeError> {
        let wanted = Built::of(&lb.spec);
        let book = self.books.entry(lb.name_any()).or_default();
        let alloc = match book.alloc.take() {
            Some((built, alloc)) if built == wanted => alloc,
            _ => {
                let mut alloc = PairAllocator::new(&lb.spec, &[])?;
                for (side, pool) in [(Side::Ve, &mut alloc.ve), (Side::Ltm, &mut alloc.ltm)] {
                    for (ip, holders) in self.devices.get(wanted.device(side)).into_iter().flatten() {
                        if let Some(ticket) = holders.values().next() {
                            let _ = pool.take(*ip, ticket);
                        }
                    }
                }
                for a in book.objects.values().filter(|a| a.spec.device().is_none()) {
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

    /// Gives back an address chosen for `ticket` on `side` of `lb` whose object was not written
    /// (the create failed, or found it taken): it is free again unless an object holds it.
    pub fn unpick(&mut self, lb: &str, side: Side, ip: IpAddr, ticket: &str) {
        let Some(book) = self.books.get_mut(lb) else { return };
        let device = book.alloc.as_ref().map(|(built, _)| built.device(side).clone());
        let on_device = device.is_some_and(|d| self.devices.get(&d).is_some_and(|a| a.contains_key(&ip)));
        let own = book.objects.values().any(|a| a.spec.side == side && a.spec.ip() == Some(ip));
        if let Some(pool) = book.pool(side)
            && !on_device
            && !own
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
        spec.ve.addr = "200.1.1.1".into();
        spec.ve.cidr = "20.1.0.0/29".into();
        spec.ltm.url = "http://100.1.1.1/api".into();
        spec.ltm.cidr = "10.0.0.0/29".into();
        spec.reserved = reserved.iter().map(|r| r.to_string()).collect();
        Loadbalancer::new("big", spec)
    }

    /// Another load balancer, `small`, on big's VE (its range inside big's) and an LTM of its own.
    fn small() -> Loadbalancer {
        let mut lb = lb(&[]);
        lb.metadata.name = Some("small".into());
        lb.spec.ve.cidr = "20.1.0.0/30".into();
        lb.spec.ltm.url = "http://100.1.1.2/api".into();
        lb
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    fn address_of(lb: &Loadbalancer, side: Side, at: &str, partner: &str, ticket: &str, uid: &str) -> Lbaddress {
        let device = Device::of(&lb.spec, side);
        let mut a = Lbaddress::held(&lb.name_any(), &device, ip(at), ip(partner), ticket, BondState::Pending);
        a.metadata.uid = Some(uid.into());
        a
    }

    fn address(side: Side, at: &str, partner: &str, ticket: &str, uid: &str) -> Lbaddress {
        address_of(&lb(&[]), side, at, partner, ticket, uid)
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
        assert_eq!(ledger.holders("big"), ["t1"]);
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

    #[test]
    fn an_address_held_on_a_device_is_taken_for_every_load_balancer_on_it() {
        let (mut ledger, big, small) = (Ledger::default(), lb(&[]), small());
        ledger.allocator(&small).expect("valid");
        hold(&mut ledger, "20.1.0.1", "10.0.0.1", "t1");
        let pair = ledger.allocator(&small).expect("valid").allocate("t2", None, None).expect("free");
        assert_eq!(pair.veip, ip("20.1.0.2"), "big's address on the shared VE is skipped");
        assert_eq!(pair.ltmip, ip("10.0.0.1"), "small's LTM is another device: its 10.0.0.1 is free");
        assert_eq!(ledger.count("small"), 0, "counted as big's");
        ledger.remove(&address(Side::Ve, "20.1.0.1", "10.0.0.1", "t1", "t1-ve"));
        assert_eq!(ledger.allocator(&small).expect("valid").ve.holder(ip("20.1.0.1")), None, "freed on the device");
        // Built after the object was seen, the allocator takes it too.
        let mut fresh = Ledger::default();
        hold(&mut fresh, "20.1.0.1", "10.0.0.1", "t1");
        assert_eq!(fresh.allocator(&small).expect("valid").ve.holder(ip("20.1.0.1")), Some("t1"));
        assert_eq!(fresh.allocator(&big).expect("valid").ve.holder(ip("20.1.0.1")), Some("t1"));
    }

    #[test]
    fn an_address_held_twice_stays_taken_until_both_let_it_go() {
        let (mut ledger, big, small) = (Ledger::default(), lb(&[]), small());
        ledger.allocator(&big).expect("valid");
        ledger.put(address(Side::Ve, "20.1.0.2", "10.0.0.2", "t1", "u1"));
        let mut twice = address_of(&small, Side::Ve, "20.1.0.2", "10.0.0.9", "t2", "u2");
        // NB: an object of an earlier version, named after its load balancer, given its device.
        twice.metadata.name = Some(crate::domain::crd::legacy_address_name("small", Side::Ve, ip("20.1.0.2")));
        ledger.put(twice.clone());
        assert_eq!(
            ledger.held_twice(),
            vec![(Device::ve("200.1.1.1"), ip("20.1.0.2"), vec!["t1".into(), "t2".into()])]
        );
        ledger.remove(&address(Side::Ve, "20.1.0.2", "10.0.0.2", "t1", "u1"));
        assert_eq!(ledger.allocator(&big).expect("valid").ve.holder(ip("20.1.0.2")), Some("t2"), "still held");
        ledger.remove(&twice);
        assert_eq!(ledger.allocator(&big).expect("valid").ve.holder(ip("20.1.0.2")), None);
        assert!(ledger.held_twice().is_empty());
    }

    #[test]
    fn an_object_of_an_earlier_version_counts_for_its_load_balancer_alone() {
        let (mut ledger, big, small) = (Ledger::default(), lb(&[]), small());
        let mut legacy = address(Side::Ve, "20.1.0.1", "10.0.0.1", "t1", "u1");
        legacy.spec.device = String::new();
        ledger.put(legacy);
        assert_eq!(ledger.allocator(&big).expect("valid").ve.holder(ip("20.1.0.1")), Some("t1"));
        assert_eq!(ledger.allocator(&small).expect("valid").ve.holder(ip("20.1.0.1")), None);
    }
}
