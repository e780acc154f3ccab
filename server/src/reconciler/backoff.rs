//! How long a failed reconcile waits before its next attempt: half a second after the first
//! failure of an object, doubling with each one after, up to a ceiling the operator sets
//! (`--retry-max-delay`). A success forgets the object's failures.
//!
//! NB: a run of the reconciler holds its own (one per controller; a syncer counts its own
//! failures): what an earlier run, perhaps another leader's, saw fail may be fine now.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use kube::runtime::controller::Action;

use super::Error;

/// The wait after the first failure.
const FIRST: Duration = Duration::from_millis(500);

/// The wait after `failures` consecutive failures (at least one), up to `ceiling`.
pub fn delay(failures: u32, ceiling: Duration) -> Duration {
    FIRST.saturating_mul(1 << failures.saturating_sub(1).min(16)).min(ceiling)
}

/// Consecutive failures per object of one controller (a ticket's name, a load balancer's).
pub struct Backoff {
    ceiling: Duration,
    failures: Mutex<HashMap<String, u32>>,
}

impl Backoff {
    pub fn new(ceiling: Duration) -> Backoff {
        Backoff { ceiling, failures: Mutex::default() }
    }

    /// Counts a failure of `key`; how long to wait before trying it again.
    pub fn failed(&self, key: &str) -> Duration {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let n = failures.entry(key.to_string()).or_default();
        *n = n.saturating_add(1);
        delay(*n, self.ceiling)
    }

    /// The requeue after `key` failed with `error`, logged.
    pub fn retry_after(&self, key: &str, error: &Error) -> Action {
        let delay = self.failed(key);
        tracing::warn!(object = %key, error = %error, kind = error.metric_label(), retry_in = ?delay, "reconcile failed");
        Action::requeue(delay)
    }

    /// `key` was reconciled: its next failure waits the shortest time again.
    pub fn succeeded(&self, key: &str) {
        self.failures.lock().unwrap_or_else(|p| p.into_inner()).remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_per_failure_up_to_the_ceiling_and_a_success_starts_over() {
        let backoff = Backoff::new(Duration::from_secs(5));
        let waits: Vec<u64> = (0..6).map(|_| backoff.failed("web").as_millis() as u64).collect();
        assert_eq!(waits, [500, 1000, 2000, 4000, 5000, 5000]);
        assert_eq!(backoff.failed("other"), FIRST, "each object counts its own failures");
        backoff.succeeded("web");
        assert_eq!(backoff.failed("web"), FIRST);
        assert_eq!(delay(3, Duration::from_secs(60)), Duration::from_secs(2), "a syncer's third failure");
    }

    #[test]
    fn a_thousand_failures_stay_at_the_ceiling() {
        let backoff = Backoff::new(Duration::from_secs(60));
        let last = (0..1000).map(|_| backoff.failed("web")).last();
        assert_eq!(last, Some(Duration::from_secs(60)));
    }
}
