//! Changes to one AS3 tenant, one at a time: a change is checked against the tenant as it is
//! (its size above all) and written under the tenant's lock, so two changes that each fit but
//! together do not cannot both be accepted. One load balancer writes one tenant per member
//! cluster (`lb_unique`), so the lock is the load balancer's. NB: per lbdesk process; with
//! several replicas serving pages, the reconciler still holds back an over-size tenant alone.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

/// The tenants' locks, by load balancer name.
#[derive(Clone, Default)]
pub struct Saves(Arc<Mutex<HashMap<String, Arc<AsyncMutex<()>>>>>);

impl Saves {
    /// Waits for the tenant of `loadbalancer`, and holds it until the guard is dropped.
    pub async fn lock(&self, loadbalancer: &str) -> OwnedMutexGuard<()> {
        let lock = {
            let mut locks = self.0.lock().unwrap_or_else(|p| p.into_inner());
            // NB: locks nobody holds or waits for are dropped, so the map stays as small as
            // the number of tenants being changed at once.
            locks.retain(|_, l| Arc::strong_count(l) > 1);
            locks.entry(loadbalancer.to_string()).or_default().clone()
        };
        lock.lock_owned().await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn one_change_per_tenant_at_a_time_others_go_on() {
        let saves = Saves::default();
        let held = saves.lock("shared-lb").await;
        let same = tokio::time::timeout(Duration::from_millis(50), saves.lock("shared-lb")).await;
        assert!(same.is_err(), "a second change of the tenant waits");
        let other = tokio::time::timeout(Duration::from_millis(50), saves.lock("demo")).await;
        assert!(other.is_ok(), "another tenant's change does not");
        drop(held);
        let next = tokio::time::timeout(Duration::from_millis(50), saves.lock("shared-lb")).await;
        assert!(next.is_ok(), "the next change goes once the first is written");
    }
}
