//! Address-pair allocation from a Loadbalancer's two CIDRs (VE and LTM), IPv4 or IPv6.
//!
//! Each range is a [`Pool`]: the addresses that may never be handed out (network and
//! broadcast of an IPv4 prefix shorter than /31, the reserved list) and the taken ones are
//! kept as merged intervals, so "lowest free address" is one ordered-map lookup however full
//! the range is, and an IPv6 /64 costs no more than an IPv4 /24.
//!
//! What is taken lives in the [`Lbaddress`](crate::domain::crd::Lbaddress) objects; the
//! [`Ledger`] keeps each load balancer's allocator current from them.

mod device;
mod ledger;
mod pool;
pub mod queue;

pub use device::Device;
pub use ledger::{Held, Ledger};
pub use pool::Pool;

use std::fmt;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

pub use super::crd::Side;
use super::crd::{Capacity, IpPair, LoadbalancerSpec};
use crate::i18n::Msg;

/// Why an address that is in the range may not be handed out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reserve {
    /// The network address of an IPv4 range shorter than /31.
    Network,
    /// The broadcast address of an IPv4 range shorter than /31.
    Broadcast,
    /// On the Loadbalancer's reserved list.
    Administrator,
}

impl fmt::Display for Reserve {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Reserve::Network => "the network address of the range",
            Reserve::Broadcast => "the broadcast address of the range",
            Reserve::Administrator => "reserved by the administrator",
        })
    }
}

/// Why an address cannot be had. Its `Display` (English) is for logs and the status the
/// reconciler writes; a reader is told [`AllocError::msg`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum AllocError {
    /// Not an address, or outside the range.
    #[error("{addr} is not inside the {} range {cidr}", side.label())]
    OutOfRange { side: Side, addr: String, cidr: String },
    /// Reserved by the administrator, or the network/broadcast address.
    #[error("{addr} is {why} and cannot be handed out")]
    Reserved { side: Side, addr: String, why: Reserve },
    /// Already handed out to another ticket. NB: the message names no ticket: the holder may
    /// be another project's, and who holds what is not a tenant's to learn.
    #[error("{addr} is already taken by another address request")]
    Taken { side: Side, addr: String, by: String },
    /// No free address is left.
    #[error("no free address is left in the {} range {cidr}", side.label())]
    Exhausted { side: Side, cidr: String },
}

impl AllocError {
    /// The ticket field the error belongs beside.
    pub fn field(&self) -> &'static str {
        match self {
            AllocError::OutOfRange { side, .. }
            | AllocError::Reserved { side, .. }
            | AllocError::Taken { side, .. }
            | AllocError::Exhausted { side, .. } => side.field(),
        }
    }

    /// What the reader is told (the same words as the `Display`, in their locale).
    pub fn msg(&self) -> Msg {
        match self {
            AllocError::OutOfRange { side, addr, cidr } => {
                crate::msg!("refusals.ipam.out_of_range", addr = addr, side = side.label(), cidr = cidr)
            }
            AllocError::Reserved { addr, why: Reserve::Network, .. } => {
                crate::msg!("refusals.ipam.network_address", addr = addr)
            }
            AllocError::Reserved { addr, why: Reserve::Broadcast, .. } => {
                crate::msg!("refusals.ipam.broadcast_address", addr = addr)
            }
            AllocError::Reserved { addr, why: Reserve::Administrator, .. } => {
                crate::msg!("refusals.ipam.reserved", addr = addr)
            }
            AllocError::Taken { addr, .. } => crate::msg!("refusals.ipam.taken", addr = addr),
            AllocError::Exhausted { side, cidr } => {
                crate::msg!("refusals.ipam.exhausted", side = side.label(), cidr = cidr)
            }
        }
    }
}

/// Why a Loadbalancer's ranges give no allocator: the spec field at fault (`ve.cidr`,
/// `ltm.cidr` or `reserved`) and why. Its `Display` is `field: reason`, for logs and ticket
/// messages; the screens and admission take it as a `Refusal` beside that field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct RangeError {
    /// The Loadbalancer spec field the reason belongs beside.
    pub field: &'static str,
    /// What the user reads (logs and ticket messages: its English `Display`).
    pub reason: Msg,
}

/// Both ranges of a Loadbalancer, with what is taken (kept by the [`Ledger`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairAllocator {
    pub ve: Pool,
    pub ltm: Pool,
}

/// A pair handed out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pair {
    pub veip: IpAddr,
    pub ltmip: IpAddr,
}

impl fmt::Display for Pair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VE {} / LTM {}", self.veip, self.ltmip)
    }
}

impl PairAllocator {
    /// The allocator for a Loadbalancer spec; pairs in `ips` are taken. A recorded pair that no
    /// longer fits the ranges is kept as taken only where it still fits (the CIDRs are locked
    /// while in use, so this happens only for hand-edited objects).
    /// NB: for a stored Loadbalancer the [`Ledger`] keeps one; this is for a spec being checked
    /// (no pairs) and for tests.
    pub fn new(spec: &LoadbalancerSpec, ips: &[IpPair]) -> Result<PairAllocator, RangeError> {
        let ve = Pool::new(Side::Ve, &spec.ve.cidr, &spec.reserved)?;
        let ltm = Pool::new(Side::Ltm, &spec.ltm.cidr, &spec.reserved)?;
        let mut alloc = PairAllocator { ve, ltm };
        for pair in ips {
            if let Ok(a) = pair.veip.parse() {
                let _ = alloc.ve.take(a, &pair.ticket);
            }
            if let Ok(a) = pair.ltmip.parse() {
                let _ = alloc.ltm.take(a, &pair.ticket);
            }
        }
        Ok(alloc)
    }

    /// Allocates a pair for `ticket`, honouring the requested addresses (or the lowest free).
    /// Both sides are checked before either is taken, so a failure leaves nothing behind.
    pub fn allocate(&mut self, ticket: &str, veip: Option<&str>, ltmip: Option<&str>) -> Result<Pair, AllocError> {
        let veip = self.ve.pick(ticket, veip)?;
        let ltmip = self.ltm.pick(ticket, ltmip)?;
        self.ve.take(veip, ticket)?;
        self.ltm.take(ltmip, ticket)?;
        Ok(Pair { veip, ltmip })
    }

    /// Frees a pair.
    pub fn release(&mut self, pair: Pair) {
        self.ve.release(pair.veip);
        self.ltm.release(pair.ltmip);
    }

    /// Capacity figures for `status.capacity` and the screens.
    pub fn capacity(&self) -> Capacity {
        Capacity {
            ve_total: self.ve.total(),
            ve_used: self.ve.used(),
            ve_free: self.ve.free(),
            ltm_total: self.ltm.total(),
            ltm_used: self.ltm.used(),
            ltm_free: self.ltm.free(),
        }
    }

    /// How many more pairs can be handed out.
    pub fn free_pairs(&self) -> u64 {
        self.ve.free().min(self.ltm.free())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use ipnet::IpNet;
    use proptest::prelude::*;

    use super::*;
    use crate::domain::crd::BondState;

    fn spec(ve: &str, ltm: &str, reserved: &[&str]) -> LoadbalancerSpec {
        let mut spec = LoadbalancerSpec::default();
        spec.ve.cidr = ve.into();
        spec.ltm.cidr = ltm.into();
        spec.reserved = reserved.iter().map(|s| s.to_string()).collect();
        spec
    }

    enum Op {
        Alloc(
            &'static str,
            Option<&'static str>,
            Option<&'static str>,
            Result<(&'static str, &'static str), &'static str>,
        ),
        Release(&'static str, &'static str),
    }
    use Op::*;

    /// A sequential script, as a person would operate the desk; invariants after every row.
    #[test]
    fn allocation_follows_the_script_and_keeps_its_books() {
        let lb = spec("20.1.0.0/29", "10.0.0.0/30", &["20.1.0.2", "10.9.9.9", "fd00::1"]);
        let mut alloc = PairAllocator::new(&lb, &[]).expect("valid ranges");
        assert_eq!(alloc.ve.total(), 6);
        assert_eq!(alloc.ltm.total(), 2);
        let rows = [
            ("the lowest free of each range", Alloc("t1", None, None, Ok(("20.1.0.1", "10.0.0.1")))),
            ("skips the reserved VE address", Alloc("t2", None, None, Ok(("20.1.0.3", "10.0.0.2")))),
            ("LTM range is full", Alloc("t3", None, None, Err("no free address is left in the LTM range 10.0.0.0/30"))),
            ("t1 frees its pair", Release("20.1.0.1", "10.0.0.1")),
            ("a requested VE address", Alloc("t3", Some("20.1.0.6"), None, Ok(("20.1.0.6", "10.0.0.1")))),
            (
                "taken by another",
                Alloc("t4", Some("20.1.0.6"), None, Err("20.1.0.6 is already taken by another address request")),
            ),
            (
                "reserved",
                Alloc(
                    "t4",
                    Some("20.1.0.2"),
                    None,
                    Err("20.1.0.2 is reserved by the administrator and cannot be handed out"),
                ),
            ),
            (
                "network address",
                Alloc(
                    "t4",
                    Some("20.1.0.0"),
                    None,
                    Err("20.1.0.0 is the network address of the range and cannot be handed out"),
                ),
            ),
            (
                "broadcast address",
                Alloc(
                    "t4",
                    Some("20.1.0.7"),
                    None,
                    Err("20.1.0.7 is the broadcast address of the range and cannot be handed out"),
                ),
            ),
            ("outside", Alloc("t4", Some("20.1.1.1"), None, Err("20.1.1.1 is not inside the VE range 20.1.0.0/29"))),
            (
                "not an address",
                Alloc("t4", Some("twenty"), None, Err("\"twenty\" is not inside the VE range 20.1.0.0/29")),
            ),
            (
                "wrong family",
                Alloc("t4", None, Some("fd00::5"), Err("fd00::5 is not inside the LTM range 10.0.0.0/30")),
            ),
        ];
        for (what, op) in rows {
            let before = alloc.clone();
            match op {
                Alloc(ticket, ve, ltm, want) => {
                    let got = alloc.allocate(ticket, ve, ltm);
                    match (got, want) {
                        (Ok(p), Ok((v, l))) => {
                            assert_eq!((p.veip.to_string(), p.ltmip.to_string()), (v.into(), l.into()), "{what}")
                        }
                        (Err(e), Err(msg)) => {
                            assert_eq!(e.to_string(), msg, "{what}");
                            assert_eq!(e.msg().to_string(), msg, "{what}: the reader's words, in English");
                            assert_eq!(alloc, before, "{what}: a failed allocation records nothing");
                        }
                        (got, want) => panic!("{what}: got {got:?}, want {want:?}"),
                    }
                }
                Release(ve, ltm) => {
                    alloc.release(Pair { veip: ve.parse().expect("ip"), ltmip: ltm.parse().expect("ip") })
                }
            }
            assert_eq!(alloc.ve.free(), alloc.ve.total() - alloc.ve.used() - 1, "{what}: one VE address is reserved");
            assert_eq!(alloc.ltm.free(), alloc.ltm.total() - alloc.ltm.used(), "{what}");
        }
    }

    #[test]
    fn a_ticket_asking_again_for_its_own_address_gets_it() {
        let lb = spec("20.1.0.0/24", "10.0.0.0/24", &[]);
        let held = [IpPair {
            veip: "20.1.0.9".into(),
            ltmip: "10.0.0.9".into(),
            ticket: "t".into(),
            status: BondState::Pending,
        }];
        let mut alloc = PairAllocator::new(&lb, &held).expect("valid");
        let pair = alloc.allocate("t", Some("20.1.0.9"), Some("10.0.0.9")).expect("its own");
        assert_eq!(pair.veip.to_string(), "20.1.0.9");
        assert!(alloc.allocate("u", Some("20.1.0.9"), None).is_err());
    }

    #[test]
    fn ipv6_ranges_work_without_broadcast_rules() {
        let lb = spec("fd00:20::/120", "fd00:10::/126", &["fd00:20::/126"]);
        let mut alloc = PairAllocator::new(&lb, &[]).expect("valid");
        assert_eq!(alloc.ve.total(), 256);
        let pair = alloc.allocate("t", None, None).expect("free");
        assert_eq!(pair.veip.to_string(), "fd00:20::4");
        assert_eq!(pair.ltmip.to_string(), "fd00:10::");
        let huge = spec("fd00::/64", "10.0.0.0/8", &[]);
        let alloc = PairAllocator::new(&huge, &[]).expect("valid");
        assert_eq!(alloc.ve.total(), u64::MAX, "saturates");
        assert_eq!(alloc.ltm.total(), (1 << 24) - 2);
    }

    #[test]
    fn slash_31_and_32_have_no_network_or_broadcast() {
        let lb = spec("20.1.0.0/31", "10.0.0.7/32", &[]);
        let mut alloc = PairAllocator::new(&lb, &[]).expect("valid");
        assert_eq!(alloc.ve.total(), 2);
        assert_eq!(alloc.ltm.total(), 1);
        let p = alloc.allocate("t", None, None).expect("free");
        assert_eq!((p.veip.to_string(), p.ltmip.to_string()), ("20.1.0.0".into(), "10.0.0.7".into()));
    }

    #[test]
    fn bad_ranges_are_refused_with_the_field() {
        for (ve, ltm, reserved, field, msg) in [
            ("20.1.0.0/33", "10.0.0.0/24", None, "ve.cidr", "is not a CIDR"),
            ("20.1.0.0/24", "10.0.0.1/24", None, "ltm.cidr", "did you mean 10.0.0.0/24?"),
            ("20.1.0.0/24", "banana", None, "ltm.cidr", "is not a CIDR"),
            ("20.1.0.0/24", "10.0.0.0/24", Some("10.0.0.x"), "reserved", "neither an address nor a CIDR"),
        ] {
            let err = PairAllocator::new(&spec(ve, ltm, reserved.as_slice()), &[]).expect_err("refused");
            assert_eq!(err.field, field, "{ve} {ltm} {reserved:?}");
            assert!(err.reason.to_string().contains(msg), "{}", err.reason);
            assert_eq!(err.to_string(), format!("{field}: {}", err.reason), "logs name the field");
        }
        // A huge value is quoted cut short, not sent back whole.
        let huge = "x".repeat(100_000);
        let err = PairAllocator::new(&spec(&huge, "10.0.0.0/24", None.as_slice()), &[]).expect_err("refused");
        assert!(err.reason.to_string().len() < 200, "{} bytes", err.reason.to_string().len());
    }

    #[test]
    fn a_nearly_full_slash_16_still_finds_the_last_hole() {
        let lb = spec("20.1.0.0/16", "10.0.0.0/16", &[]);
        let mut alloc = PairAllocator::new(&lb, &[]).expect("valid");
        for i in 0..65_000u32 {
            alloc.allocate(&format!("t{i}"), None, None).expect("free");
        }
        alloc.release(Pair { veip: "20.1.1.10".parse().expect("ip"), ltmip: "10.0.1.10".parse().expect("ip") });
        let p = alloc.allocate("late", None, None).expect("the hole");
        assert_eq!(p.veip.to_string(), "20.1.1.10");
        assert_eq!(alloc.capacity().ve_used, 65_000);
        assert_eq!(alloc.free_pairs(), 65_534 - 65_000);
    }

    proptest! {
        /// Random allocate/release sequences never hand out a taken, reserved or out-of-range
        /// address, fail with Exhausted only when nothing is free, and keep the counts exact.
        #[test]
        fn allocation_never_hands_out_an_unavailable_address(
            ops in proptest::collection::vec((any::<bool>(), 0u8..40, proptest::option::of(0u8..64)), 1..200),
            reserved in proptest::collection::vec(0u8..64, 0..6),
        ) {
            let reserved: Vec<String> = reserved.iter().map(|o| format!("20.1.0.{o}")).collect();
            let mut lb = spec("20.1.0.0/26", "10.0.0.0/26", &[]);
            lb.reserved = reserved.clone();
            let mut alloc = PairAllocator::new(&lb, &[]).expect("valid");
            let mut held: BTreeMap<String, Pair> = BTreeMap::new();
            for (allocate, ticket, wanted) in ops {
                let ticket = format!("t{ticket}");
                if allocate && !held.contains_key(&ticket) {
                    let wanted = wanted.map(|o| format!("20.1.0.{o}"));
                    match alloc.allocate(&ticket, wanted.as_deref(), None) {
                        Ok(pair) => {
                            let ve = pair.veip.to_string();
                            prop_assert!(!reserved.contains(&ve), "reserved {ve} handed out");
                            prop_assert!(!held.values().any(|p| p.veip == pair.veip || p.ltmip == pair.ltmip), "double allocation");
                            prop_assert!(lb.ve.cidr.parse::<IpNet>().expect("net").contains(&pair.veip));
                            prop_assert!(pair.veip.to_string() != "20.1.0.0" && pair.veip.to_string() != "20.1.0.63");
                            held.insert(ticket, pair);
                        }
                        Err(AllocError::Exhausted { side, .. }) => {
                            let pool = if side == Side::Ve { &alloc.ve } else { &alloc.ltm };
                            prop_assert_eq!(pool.free(), 0, "Exhausted while addresses are free");
                        }
                        Err(_) => prop_assert!(wanted.is_some(), "only a request for a specific address may fail otherwise"),
                    }
                } else if let Some(pair) = held.remove(&ticket) {
                    alloc.release(pair);
                    prop_assert_eq!(alloc.ve.holder(pair.veip), None);
                }
                prop_assert_eq!(alloc.ve.used(), held.len() as u64);
                prop_assert_eq!(alloc.ltm.used(), held.len() as u64);
                let reserved_inside = reserved.iter().filter(|r| *r != "20.1.0.0" && *r != "20.1.0.63").collect::<std::collections::BTreeSet<_>>().len() as u64;
                prop_assert_eq!(alloc.ve.free(), 62 - held.len() as u64 - reserved_inside);
            }
        }
    }
}
