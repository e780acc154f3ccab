//! What the reconciler records in a Loadbalancer's conditions: whether its member cluster
//! answers, whether its CIS posts what lbdesk writes, whether its ranges overlap another's.

use super::Loadbalancer;

/// The Loadbalancer condition saying whether its member cluster answers.
pub const CONDITION_REACHABLE: &str = "MemberClusterReachable";
/// The Loadbalancer condition saying whether its CIS posts everything lbdesk writes for it.
pub const CONDITION_CIS_READY: &str = "CisReady";
/// The Loadbalancer condition saying whether its ranges are apart from every other load
/// balancer's on the same device (an earlier version let an admin save overlapping ones).
pub const CONDITION_RANGES_DISJOINT: &str = "RangesDisjoint";

impl Loadbalancer {
    /// Why its member cluster cannot be reached, when its last sync could not reach it.
    pub fn unreachable(&self) -> Option<&str> {
        self.failing(CONDITION_REACHABLE)
    }

    /// Why its CIS would not post what lbdesk writes, when the last check found a reason.
    pub fn cis_not_ready(&self) -> Option<&str> {
        self.failing(CONDITION_CIS_READY)
    }

    /// Which other load balancers' ranges overlap its own on the same device, when the
    /// reconciler found some.
    pub fn ranges_overlap(&self) -> Option<&str> {
        self.failing(CONDITION_RANGES_DISJOINT)
    }

    /// The message of condition `type_`, when it is False.
    fn failing(&self, type_: &str) -> Option<&str> {
        let conditions = self.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
        conditions.iter().find(|c| c.type_ == type_ && c.status == "False").map(|c| c.message.as_str())
    }
}
