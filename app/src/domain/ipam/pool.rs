//! One address range as merged intervals: what is usable, reserved and taken.

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipnet::IpNet;

use super::{AllocError, RangeError, Reserve, Side};
use crate::domain::text::escaped;
use crate::i18n::Msg;

/// A set of `u128` offsets kept as merged, non-adjacent inclusive intervals (start → end).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Intervals(BTreeMap<u128, u128>);

impl Intervals {
    /// The interval holding `x`, if any.
    fn containing(&self, x: u128) -> Option<(u128, u128)> {
        self.0.range(..=x).next_back().filter(|(_, end)| **end >= x).map(|(s, e)| (*s, *e))
    }

    fn contains(&self, x: u128) -> bool {
        self.containing(x).is_some()
    }

    /// Adds `[lo, hi]`, merging with overlapping or adjacent intervals.
    fn insert(&mut self, lo: u128, hi: u128) {
        let (mut lo, mut hi) = (lo, hi);
        if let Some((s, e)) = self.0.range(..=lo).next_back().map(|(s, e)| (*s, *e))
            && e.saturating_add(1) >= lo
        {
            lo = s;
            hi = hi.max(e);
            self.0.remove(&s);
        }
        while let Some((s, e)) = self.0.range(lo..).next().map(|(s, e)| (*s, *e)) {
            if s > hi.saturating_add(1) {
                break;
            }
            hi = hi.max(e);
            self.0.remove(&s);
        }
        self.0.insert(lo, hi);
    }

    /// Removes the single offset `x` (splitting its interval).
    fn remove(&mut self, x: u128) {
        if let Some((s, e)) = self.containing(x) {
            self.0.remove(&s);
            if s < x {
                self.0.insert(s, x - 1);
            }
            if x < e {
                self.0.insert(x + 1, e);
            }
        }
    }

    /// How many offsets of `[lo, hi]` the set holds.
    fn count_within(&self, lo: u128, hi: u128) -> u128 {
        let first = self.0.range(..=lo).next_back().map(|(s, _)| *s).unwrap_or(lo);
        self.0
            .range(first..=hi)
            .map(|(s, e)| {
                let (a, b) = ((*s).max(lo), (*e).min(hi));
                if a <= b { b - a + 1 } else { 0 }
            })
            .sum()
    }
}

/// One address range: what is usable, reserved and taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pool {
    side: Side,
    net: IpNet,
    /// Offsets from the network address of the first and last usable address.
    first: u128,
    last: u128,
    /// Reserved offsets inside `[first, last]`.
    reserved: Intervals,
    /// Taken offsets and the ticket holding each.
    taken: BTreeMap<u128, String>,
    /// `reserved ∪ taken`, merged: what allocation skips.
    blocked: Intervals,
}

fn to_u128(addr: IpAddr) -> u128 {
    match addr {
        IpAddr::V4(a) => u32::from(a) as u128,
        IpAddr::V6(a) => u128::from(a),
    }
}

impl Pool {
    /// A pool over `cidr`, with the entries of `reserved` (addresses or CIDRs) that fall in it.
    /// Entries of the other address family or outside the range are ignored: the reserved
    /// list of a Loadbalancer covers both of its ranges.
    pub fn new(side: Side, cidr: &str, reserved: &[String]) -> Result<Pool, RangeError> {
        let bad_cidr = |reason: Msg| RangeError { field: side.cidr_field(), reason };
        let net: IpNet =
            cidr.trim().parse().map_err(|_| bad_cidr(crate::msg!("refusals.ipam.not_cidr", value = escaped(cidr))))?;
        if net.trunc() != net {
            return Err(bad_cidr(crate::msg!("refusals.ipam.host_bits", cidr = cidr, net = net.trunc())));
        }
        let host_bits = u32::from(net.max_prefix_len() - net.prefix_len());
        let last_offset = if host_bits >= 128 { u128::MAX } else { (1u128 << host_bits) - 1 };
        // NB: an IPv4 prefix shorter than /31 loses its network and broadcast addresses.
        let (first, last) = match net {
            IpNet::V4(n) if n.prefix_len() < 31 => (1, last_offset - 1),
            _ => (0, last_offset),
        };
        let mut pool = Pool {
            side,
            net,
            first,
            last,
            reserved: Intervals::default(),
            taken: BTreeMap::new(),
            blocked: Intervals::default(),
        };
        for entry in reserved {
            let entry = entry.trim();
            let (lo, hi) = match entry.parse::<IpNet>() {
                Ok(r) => (r.network(), r.broadcast()),
                Err(_) => match entry.parse::<IpAddr>() {
                    Ok(a) => (a, a),
                    Err(_) => {
                        return Err(RangeError {
                            field: "reserved",
                            reason: crate::msg!("refusals.ipam.reserved_entry", value = escaped(entry)),
                        });
                    }
                },
            };
            if lo.is_ipv4() != net.addr().is_ipv4() {
                continue;
            }
            let base = to_u128(net.network());
            let (lo, hi) = (to_u128(lo), to_u128(hi));
            let (lo, hi) = (lo.max(base + pool.first), hi.min(base + pool.last));
            if lo <= hi {
                pool.reserved.insert(lo - base, hi - base);
                pool.blocked.insert(lo - base, hi - base);
            }
        }
        Ok(pool)
    }

    /// The range, as written.
    pub fn cidr(&self) -> IpNet {
        self.net
    }

    fn offset(&self, addr: IpAddr) -> Option<u128> {
        if !self.net.contains(&addr) {
            return None;
        }
        Some(to_u128(addr) - to_u128(self.net.network()))
    }

    fn addr(&self, offset: u128) -> IpAddr {
        let raw = to_u128(self.net.network()) + offset;
        match self.net {
            IpNet::V4(_) => IpAddr::V4((raw as u32).into()),
            IpNet::V6(_) => IpAddr::V6(raw.into()),
        }
    }

    /// Parses `text` as an address of this pool's family.
    pub fn parse(&self, text: &str) -> Result<IpAddr, AllocError> {
        text.trim().parse::<IpAddr>().map_err(|_| AllocError::OutOfRange {
            side: self.side,
            addr: crate::domain::text::shown(text),
            cidr: self.net.to_string(),
        })
    }

    /// Whether `addr` could be handed out to `ticket` now (free, or already held by it).
    pub fn check(&self, addr: IpAddr, ticket: &str) -> Result<(), AllocError> {
        let out_of_range =
            || AllocError::OutOfRange { side: self.side, addr: addr.to_string(), cidr: self.net.to_string() };
        let offset = self.offset(addr).ok_or_else(out_of_range)?;
        if offset < self.first || offset > self.last {
            let why = if offset == 0 { Reserve::Network } else { Reserve::Broadcast };
            return Err(AllocError::Reserved { side: self.side, addr: addr.to_string(), why });
        }
        if self.reserved.contains(offset) {
            return Err(AllocError::Reserved { side: self.side, addr: addr.to_string(), why: Reserve::Administrator });
        }
        match self.taken.get(&offset) {
            Some(by) if by != ticket => {
                Err(AllocError::Taken { side: self.side, addr: addr.to_string(), by: by.clone() })
            }
            _ => Ok(()),
        }
    }

    /// The lowest address nobody holds and nobody reserved.
    pub fn lowest_free(&self) -> Option<IpAddr> {
        let candidate = match self.blocked.containing(self.first) {
            None => self.first,
            Some((_, end)) => end.checked_add(1)?,
        };
        (candidate <= self.last).then(|| self.addr(candidate))
    }

    /// Marks `addr` as held by `ticket` (after [`Pool::check`]).
    pub fn take(&mut self, addr: IpAddr, ticket: &str) -> Result<(), AllocError> {
        self.check(addr, ticket)?;
        let offset = self.offset(addr).unwrap_or_default();
        self.taken.insert(offset, ticket.to_string());
        self.blocked.insert(offset, offset);
        Ok(())
    }

    /// Frees `addr`; freeing a free address does nothing.
    pub fn release(&mut self, addr: IpAddr) {
        if let Some(offset) = self.offset(addr)
            && self.taken.remove(&offset).is_some()
            && !self.reserved.contains(offset)
        {
            self.blocked.remove(offset);
        }
    }

    /// Who holds `addr`, if anyone.
    pub fn holder(&self, addr: IpAddr) -> Option<&str> {
        self.offset(addr).and_then(|o| self.taken.get(&o)).map(String::as_str)
    }

    /// Usable addresses (saturating at `u64::MAX` for huge IPv6 ranges).
    pub fn total(&self) -> u64 {
        u64::try_from((self.last - self.first).saturating_add(1)).unwrap_or(u64::MAX)
    }

    /// Addresses held by tickets.
    pub fn used(&self) -> u64 {
        self.taken.len() as u64
    }

    /// Addresses that can still be handed out.
    pub fn free(&self) -> u64 {
        let blocked = self.blocked.count_within(self.first, self.last);
        u64::try_from((self.last - self.first).saturating_add(1) - blocked).unwrap_or(u64::MAX)
    }

    /// The address `wanted` names (checked: in range, not reserved, free for `ticket`), or the
    /// lowest free one when nothing is asked for.
    pub(super) fn pick(&self, ticket: &str, wanted: Option<&str>) -> Result<IpAddr, AllocError> {
        match wanted.map(str::trim).filter(|w| !w.is_empty()) {
            Some(text) => {
                let addr = self.parse(text)?;
                self.check(addr, ticket)?;
                Ok(addr)
            }
            None => {
                self.lowest_free().ok_or_else(|| AllocError::Exhausted { side: self.side, cidr: self.net.to_string() })
            }
        }
    }
}
