//! Whether a Loadbalancer's member cluster answers, as the reconciler records it in the
//! Loadbalancer's conditions.

use super::Loadbalancer;

/// The Loadbalancer condition saying whether its member cluster answers.
pub const CONDITION_REACHABLE: &str = "MemberClusterReachable";
/// The Loadbalancer condition saying whether its CIS posts everything lbdesk writes for it.
pub const CONDITION_CIS_READY: &str = "CisReady";

impl Loadbalancer {
    /// Why its member cluster cannot be reached, when its last sync could not reach it.
    pub fn unreachable(&self) -> Option<&str> {
        let conditions = self.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
        conditions.iter().find(|c| c.type_ == CONDITION_REACHABLE && c.status == "False").map(|c| c.message.as_str())
    }

    /// Why its CIS would not post what lbdesk writes, when the last check found a reason.
    pub fn cis_not_ready(&self) -> Option<&str> {
        let conditions = self.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
        conditions.iter().find(|c| c.type_ == CONDITION_CIS_READY && c.status == "False").map(|c| c.message.as_str())
    }
}
