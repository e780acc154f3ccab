//! Requests waiting for an address pair, served in the order they were made: a request that
//! finds its load balancer's ranges full waits (it is not Failed) and takes a pair once one
//! comes free, unless requests made before it are waiting for one too.

use crate::domain::crd::{Condition, Lbticket, Phase};

/// The ticket condition saying whether the request holds its address pair.
pub const CONDITION_ADDRESS: &str = "AddressAllocated";
/// The condition's reason while the request waits for a free pair.
pub const WAITING: &str = "Waiting";

/// Whether `t` waits for a free pair: Created or Requested, holding none, and told so.
pub fn waiting(t: &Lbticket) -> bool {
    let Some(status) = &t.status else { return false };
    matches!(status.phase, Phase::Created | Phase::Requested) && status.veip.is_none() && told(&status.conditions)
}

/// Whether `conditions` say the request waits for a free pair.
pub fn told(conditions: &[Condition]) -> bool {
    conditions.iter().any(|c| c.type_ == CONDITION_ADDRESS && c.reason == WAITING)
}

/// How many requests on `me`'s load balancer made before it wait for a pair (by creation
/// time, then name: Kubernetes keeps creation times in whole seconds).
pub fn ahead<'a>(me: &Lbticket, tickets: impl IntoIterator<Item = &'a Lbticket>) -> usize {
    let key = |t: &'a Lbticket| (t.metadata.creation_timestamp.as_ref().map(|c| c.0), t.metadata.name.as_deref());
    let mine = (me.metadata.creation_timestamp.as_ref().map(|c| c.0), me.metadata.name.as_deref());
    tickets.into_iter().filter(|t| t.spec.loadbalancer == me.spec.loadbalancer && waiting(t) && key(t) < mine).count()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;
    use crate::domain::crd::{LbticketSpec, LbticketStatus};

    fn ticket(name: &str, lb: &str, age: i64, phase: Phase, veip: Option<&str>, told: bool) -> Lbticket {
        let mut t = Lbticket::new(name, LbticketSpec { loadbalancer: lb.into(), ..Default::default() });
        let at = k8s_openapi::jiff::Timestamp::from_second(1_700_000_000 + age).expect("a time");
        t.metadata.creation_timestamp = Some(Time(at));
        let reason = if told { WAITING } else { "Allocated" };
        let condition = Condition { type_: CONDITION_ADDRESS.into(), reason: reason.into(), ..Default::default() };
        t.status = Some(LbticketStatus {
            phase,
            veip: veip.map(String::from),
            conditions: vec![condition],
            ..Default::default()
        });
        t
    }

    #[test]
    fn the_queue_is_the_waiting_requests_of_one_load_balancer_made_before() {
        let me = ticket("me", "lb", 10, Phase::Created, None, false);
        let cases = [
            ("an earlier request waiting", ticket("a", "lb", 5, Phase::Created, None, true), 1),
            ("an earlier one waiting, Requested", ticket("a", "lb", 5, Phase::Requested, None, true), 1),
            ("a later one waiting", ticket("z", "lb", 20, Phase::Created, None, true), 0),
            ("made at the same time, named before", ticket("a", "lb", 10, Phase::Created, None, true), 1),
            ("made at the same time, named after", ticket("z", "lb", 10, Phase::Created, None, true), 0),
            ("another load balancer's", ticket("a", "other", 5, Phase::Created, None, true), 0),
            ("an earlier one holding a pair", ticket("a", "lb", 5, Phase::Enabled, Some("20.1.0.1"), false), 0),
            ("an earlier one not told to wait", ticket("a", "lb", 5, Phase::Created, None, false), 0),
            ("an earlier Failed one", ticket("a", "lb", 5, Phase::Failed, None, true), 0),
        ];
        for (what, other, want) in cases {
            assert_eq!(ahead(&me, [&other, &me]), want, "{what}");
        }
    }
}
