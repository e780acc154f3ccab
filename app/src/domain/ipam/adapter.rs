//! The allocator's adapter (metallb's `k8salloc`): a stored Loadbalancer in, its allocator
//! out, and the allocator's errors as the grey-out rules' [`Refusal`], so no caller rebuilds
//! the allocator from `status.ips` or maps its errors by hand.

use super::{AllocError, PairAllocator, RangeError};
use crate::domain::crd::Loadbalancer;
use crate::domain::policy::Refusal;

impl PairAllocator {
    /// The allocator of `lb`: its two ranges and reserved list, with every pair recorded in
    /// `status.ips` taken. The one place an allocator is built from a Loadbalancer (the
    /// screens, the server functions and the reconciler all read the same books).
    pub fn of(lb: &Loadbalancer) -> Result<PairAllocator, RangeError> {
        let ips = lb.status.as_ref().map(|s| s.ips.as_slice()).unwrap_or_default();
        PairAllocator::new(&lb.spec, ips)
    }
}

impl From<RangeError> for Refusal {
    /// A bad range, beside the Loadbalancer field it is in.
    fn from(e: RangeError) -> Refusal {
        Refusal::field(e.field, e.reason)
    }
}

impl From<AllocError> for Refusal {
    /// An address that cannot be had, beside the ticket field it was asked for in.
    fn from(e: AllocError) -> Refusal {
        Refusal::field(e.field(), e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::crd::{BondState, IpPair, LoadbalancerSpec, LoadbalancerStatus};

    fn lb(ve: &str, ltm: &str, ips: &[(&str, &str, &str)]) -> Loadbalancer {
        let mut spec = LoadbalancerSpec::default();
        spec.ve.cidr = ve.into();
        spec.ltm.cidr = ltm.into();
        let mut lb = Loadbalancer::new("demo", spec);
        if !ips.is_empty() {
            let ips = ips
                .iter()
                .map(|(veip, ltmip, ticket)| IpPair {
                    veip: veip.to_string(),
                    ltmip: ltmip.to_string(),
                    ticket: ticket.to_string(),
                    status: BondState::Bond,
                })
                .collect();
            lb.status = Some(LoadbalancerStatus { ips, ..Default::default() });
        }
        lb
    }

    #[test]
    fn the_allocator_of_a_loadbalancer_holds_the_pairs_of_its_status() {
        for (what, lb, ve_used, ltm_used, holder) in [
            ("no status yet", lb("20.1.0.0/29", "10.0.0.0/29", &[]), 0, 0, None),
            ("one pair", lb("20.1.0.0/29", "10.0.0.0/29", &[("20.1.0.1", "10.0.0.1", "t1")]), 1, 1, Some("t1")),
            (
                "a hand-edited pair outside a range counts only where it fits",
                lb("20.1.0.0/29", "10.0.0.0/29", &[("20.1.0.1", "10.9.9.9", "t1")]),
                1,
                0,
                Some("t1"),
            ),
        ] {
            let alloc = PairAllocator::of(&lb).expect(what);
            assert_eq!((alloc.ve.used(), alloc.ltm.used()), (ve_used, ltm_used), "{what}");
            assert_eq!(alloc.ve.holder("20.1.0.1".parse().expect("ip")), holder, "{what}");
        }
    }

    #[test]
    fn a_bad_range_is_refused_beside_its_field() {
        let err = PairAllocator::of(&lb("20.1.0.0/24", "10.0.0.1/24", &[])).expect_err("host bits");
        let refusal = Refusal::from(err);
        assert_eq!(refusal.field.as_deref(), Some("ltm.cidr"));
        assert_eq!(refusal.reason, "10.0.0.1/24 has host bits set; did you mean 10.0.0.0/24?");
    }

    #[test]
    fn an_address_that_cannot_be_had_is_refused_beside_the_ticket_field() {
        let mut alloc =
            PairAllocator::of(&lb("20.1.0.0/29", "10.0.0.0/29", &[("20.1.0.1", "10.0.0.1", "t1")])).expect("valid");
        for (ve, ltm, field, reason) in [
            (Some("20.1.0.1"), None, "veip", "20.1.0.1 is already taken by another address request"),
            (None, Some("10.1.0.1"), "ltmip", "10.1.0.1 is not inside the LTM range 10.0.0.0/29"),
        ] {
            let refusal = Refusal::from(alloc.allocate("t2", ve, ltm).expect_err(reason));
            assert_eq!((refusal.field.as_deref(), refusal.reason.as_str()), (Some(field), reason));
        }
    }
}
