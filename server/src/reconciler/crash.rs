//! Crash injection for the integration tests: a run told to crash after a write step halts
//! there, and the test drops it as a process dying at that point would end. Production
//! contexts carry no [`Crash`], so their crash points do nothing.

use std::sync::atomic::{AtomicBool, Ordering};

/// The write steps a crash can be injected after.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    /// The pair recorded in `Loadbalancer.status.ips`.
    Allocation,
    /// The driver answered a request or revocation.
    DriverRequest,
    /// A ticket's status written.
    StatusWrite,
    /// An AS3 ConfigMap written.
    ConfigMapWrite,
    /// Namespace or Service labels written.
    LabelWrite,
    /// An Ingress created, replaced or deleted.
    IngressWrite,
}

/// A crash planned right after one step: the first reconcile to finish that step halts there
/// for good (later ones pass, so a test sees exactly one crash).
#[derive(Debug)]
pub struct Crash {
    after: Step,
    reached: AtomicBool,
}

impl Crash {
    /// A crash right after `step`.
    pub fn after(step: Step) -> Crash {
        Crash { after: step, reached: AtomicBool::new(false) }
    }

    /// Whether a reconcile has halted at the crash (the test may then drop the run).
    pub fn reached(&self) -> bool {
        self.reached.load(Ordering::SeqCst)
    }

    /// Halts forever when `step` is the planned one and no reconcile has halted yet.
    pub(super) async fn at(&self, step: Step) {
        if step == self.after && !self.reached.swap(true, Ordering::SeqCst) {
            tracing::warn!(?step, "crash injected");
            std::future::pending::<()>().await;
        }
    }
}
