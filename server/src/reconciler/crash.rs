//! Crash injection for the integration tests: a run told to crash after a write step halts
//! there, and the test drops it as a process dying at that point would end. The plan travels
//! with the run's task ([`Crash::during`]), not in the reconciler's `Context`: a production
//! run has none, so its crash points do nothing.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

tokio::task_local! {
    /// The crash planned for the run being polled.
    static PLANNED: Arc<Crash>;
}

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

    /// Runs `run` (a reconciler run) with this crash planned in it.
    pub async fn during<F: Future>(self: Arc<Self>, run: F) -> F::Output {
        PLANNED.scope(self, run).await
    }

    /// Halts forever when `step` is the planned one and no reconcile has halted yet.
    async fn at(&self, step: Step) {
        if step == self.after && !self.reached.swap(true, Ordering::SeqCst) {
            tracing::warn!(?step, "crash injected");
            std::future::pending::<()>().await;
        }
    }
}

/// Halts forever right after `step` when the run under way has a crash planned there.
pub(super) async fn point(step: Step) {
    if let Ok(crash) = PLANNED.try_with(Arc::clone) {
        crash.at(step).await;
    }
}

/// `task` carrying the run's planned crash, if any: for what the run spawns.
pub(super) fn carried<F: Future>(task: F) -> impl Future<Output = F::Output> {
    let planned = PLANNED.try_with(Arc::clone).ok();
    async move {
        match planned {
            Some(crash) => PLANNED.scope(crash, task).await,
            None => task.await,
        }
    }
}
