//! The allocator's errors as the grey-out rules' [`Refusal`], so no caller maps them by hand.

use super::Refusal;
use crate::domain::ipam::{AllocError, RangeError};

impl From<RangeError> for Refusal {
    /// A bad range, beside the Loadbalancer field it is in.
    fn from(e: RangeError) -> Refusal {
        Refusal::field(e.field, e.reason)
    }
}

impl From<AllocError> for Refusal {
    /// An address that cannot be had, beside the ticket field it was asked for in.
    fn from(e: AllocError) -> Refusal {
        Refusal::field(e.field(), e.msg())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::crd::{BondState, IpPair, LoadbalancerSpec};
    use crate::domain::ipam::PairAllocator;

    fn allocator(ve: &str, ltm: &str, ips: &[(&str, &str, &str)]) -> Result<PairAllocator, RangeError> {
        let mut spec = LoadbalancerSpec::default();
        spec.ve.cidr = ve.into();
        spec.ltm.cidr = ltm.into();
        let ips: Vec<IpPair> = ips
            .iter()
            .map(|(veip, ltmip, ticket)| IpPair {
                veip: veip.to_string(),
                ltmip: ltmip.to_string(),
                ticket: ticket.to_string(),
                status: BondState::Bond,
            })
            .collect();
        PairAllocator::new(&spec, &ips)
    }

    #[test]
    fn a_bad_range_is_refused_beside_its_field() {
        let err = allocator("20.1.0.0/24", "10.0.0.1/24", &[]).expect_err("host bits");
        let refusal = Refusal::from(err);
        assert_eq!(refusal.field.as_deref(), Some("ltm.cidr"));
        assert_eq!(refusal.reason.to_string(), "10.0.0.1/24 has host bits set; did you mean 10.0.0.0/24?");
    }

    #[test]
    fn an_address_that_cannot_be_had_is_refused_beside_the_ticket_field() {
        let mut alloc = allocator("20.1.0.0/29", "10.0.0.0/29", &[("20.1.0.1", "10.0.0.1", "t1")]).expect("valid");
        for (ve, ltm, field, reason) in [
            (Some("20.1.0.1"), None, "veip", "20.1.0.1 is already taken by another address request"),
            (None, Some("10.1.0.1"), "ltmip", "10.1.0.1 is not inside the LTM range 10.0.0.0/29"),
        ] {
            let err = alloc.allocate("t2", ve, ltm).expect_err(reason);
            assert_eq!(err.msg().to_string(), err.to_string(), "the reader's words are the log's, in English");
            let refusal = Refusal::from(err);
            assert_eq!((refusal.field.as_deref(), refusal.reason.to_string().as_str()), (Some(field), reason));
        }
    }
}
