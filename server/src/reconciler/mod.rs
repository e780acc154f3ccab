//! The background reconciler: kube-runtime controllers for Lbtickets and Loadbalancers in the
//! management cluster, writing the member clusters' AS3 ConfigMaps, labels and Ingresses,
//! through `kube::Client` only. Every step is idempotent and recorded before the next side
//! effect, so a crash anywhere leaves a state the next run completes.
//!
//! As in kube-rs's controller-rs: the server builds one [`Context`] and joins [`controllers::run`], which
//! returns once its shutdown future resolves. Nothing here reads the embedded API's module:
//! in cluster mode there is none.

mod addresses;
mod allocation;
mod backoff;
mod cis;
mod concerns;
pub mod controllers;
mod crash;
mod desired;
#[cfg(test)]
mod fixtures;
mod ingress;
mod labels;
mod lbticket;
mod loadbalancer;
mod plan;
mod reachability;
mod readback;
mod status;
mod syncers;
mod tenant;

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use app::domain::crd::{Lbrule, Lbticket, Loadbalancer};
use app::domain::ipam::Ledger;
use app::ssr::clusters::Clusters;
use futures::future::{BoxFuture, Shared};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, Recorder, Reporter};
use kube::runtime::reflector::{self, Store};
use tokio::sync::{Mutex, Notify};

pub use crash::{Crash, Step};

use crate::driver::{DriverAnswer, DriverClient, DriverError, DriverRequest, Hook};
use crate::metrics::Metrics;

/// The finalizer that makes a real delete do the clean-up.
pub const FINALIZER: &str = "ebcpaas.io/cleanup";

/// Everything a reconcile can fail with; each is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("Kubernetes: {0}")]
    Kube(#[from] kube::Error),
    #[error("{0}")]
    Driver(#[from] DriverError),
    #[error("{0}")]
    Invalid(String),
    #[error("cleanup: {0}")]
    Finalizer(String),
    /// Others kept changing an object between this reconcile's read and write: not a refusal,
    /// the reconcile is simply tried again later.
    #[error("{0}")]
    Busy(String),
    /// The ticket changed since the copy a status was decided from: read it again and decide
    /// again.
    #[error("ticket {0} changed meanwhile")]
    Stale(String),
}

impl Error {
    /// Whether the error says a cluster could not be reached (no answer, not a refusal).
    pub fn unreachable(&self) -> bool {
        matches!(self, Error::Kube(e) if !matches!(e, kube::Error::Api(_)))
    }

    /// The label of the error in logs and metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::Kube(_) => "kube",
            Error::Driver(_) => "driver",
            Error::Invalid(_) => "invalid",
            Error::Finalizer(_) => "finalizer",
            Error::Busy(_) => "busy",
            Error::Stale(_) => "stale",
        }
    }
}

/// A finalizer's step failed with the reconcile's own error, passed on as it is; anything else
/// (the finalizer could not be added or removed) is the finalizer's.
impl From<kube::runtime::finalizer::Error<Error>> for Error {
    fn from(e: kube::runtime::finalizer::Error<Error>) -> Self {
        use kube::runtime::finalizer::Error as F;
        match e {
            F::ApplyFailed(e) | F::CleanupFailed(e) => e,
            other => Error::Finalizer(other.to_string()),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Whether an object is not being deleted.
fn live<K: kube::Resource>(o: &K) -> bool {
    o.meta().deletion_timestamp.is_none()
}

/// How the reconciler runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// How often every object is reconciled even when nothing changed (drift repair).
    pub ensure_every: Duration,
    /// The ingress class the member clusters' CIS watches (its `--ingress-class`).
    pub ingress_class: String,
    /// The longest a failed reconcile waits before it is tried again.
    pub retry_ceiling: Duration,
    /// How often each load balancer's BIG-IP is read back.
    pub bigip_every: Duration,
    /// Where every BIG-IP is reached instead of `https://<ve.addr>` (embedded mode's simulator).
    pub bigip_url: Option<String>,
}

/// How much the reconciler has done (for benchmarks and logs).
#[derive(Debug, Default)]
pub struct Counters {
    /// Ticket reconciles finished (either way).
    pub reconciles: AtomicU64,
    /// Cluster syncs finished successfully.
    pub syncs: AtomicU64,
}

/// The caches of the management cluster a run reads (writes always read fresh from the API).
#[derive(Clone)]
struct Caches {
    tickets: Store<Lbticket>,
    rules: Store<Lbrule>,
    loadbalancers: Store<Loadbalancer>,
}

impl Caches {
    /// Waits until every cache holds its first complete list; false when one never will.
    async fn listed(&self) -> bool {
        let (tickets, rules, lbs) = tokio::join!(
            self.tickets.wait_until_ready(),
            self.rules.wait_until_ready(),
            self.loadbalancers.wait_until_ready()
        );
        tickets.is_ok() && rules.is_ok() && lbs.is_ok()
    }
}

/// What every reconcile reaches. Built once per process ([`Context::new`]) and handed to each
/// [`controllers::run`]; what a run learns (its caches, memo) starts afresh with the next one, and its
/// backoffs are its own (`run` makes them).
pub struct Context {
    /// The management cluster (where the objects are) and the member clusters (where CIS is).
    pub clusters: Clusters,
    /// The network-policy driver.
    pub driver: DriverClient,
    /// Publishes the Events shown on the tickets.
    pub recorder: Recorder,
    /// Events being published (off the tickets' path), waited for when a run ends so that
    /// none lands after it.
    events: std::sync::Mutex<tokio::task::JoinSet<()>>,
    pub config: Config,
    pub counters: Counters,
    /// What `/metrics` exports.
    pub metrics: Arc<Metrics>,
    /// A run is under way, and it has every cache listed (for `/readyz`).
    running: AtomicBool,
    synced: AtomicBool,
    /// The caches of the run under way.
    caches: std::sync::RwLock<Caches>,
    /// Every address held, from the Lbaddress watch and this process's own writes.
    ledger: std::sync::Mutex<Ledger>,
    /// One holder at a time of each key: a member cluster's sync, a project's pairs on a load
    /// balancer.
    locks: std::sync::Mutex<HashMap<String, Arc<Mutex<()>>>>,
    /// What each member cluster's last sync placed.
    memo: std::sync::Mutex<tenant::Memo>,
    /// What each member cluster's last sync wrote of the Ingresses.
    ingresses: std::sync::Mutex<HashMap<String, Written>>,
    /// Wakes the member clusters' syncers.
    wakers: Arc<Wakers>,
}

/// What the last successful sync of a cluster's Ingresses wrote, from which inputs (`ingress`).
#[derive(Clone, Default)]
pub struct Written {
    digest: u64,
    faults: plan::Faults,
}

/// What wakes the syncers (`syncers`): a [`Notify`] per member cluster, and one for the
/// supervisor.
#[derive(Default)]
pub struct Wakers {
    by_cluster: std::sync::RwLock<HashMap<String, Arc<Notify>>>,
    supervisor: Notify,
}

/// What tells a run to stop, shared by its controllers and syncers.
type Shutdown = Shared<BoxFuture<'static, ()>>;

impl Context {
    /// The reconciler's context over these clusters and this driver.
    pub fn new(clusters: Clusters, driver: DriverClient, config: Config) -> Context {
        let recorder = Recorder::new(clusters.mgmt().clone(), Reporter { controller: "lbdesk".into(), instance: None });
        // NB: never ready, never read: every run puts its own caches in first.
        let caches =
            Caches { tickets: reflector::store().0, rules: reflector::store().0, loadbalancers: reflector::store().0 };
        Context {
            clusters,
            driver,
            recorder,
            events: Default::default(),
            config,
            counters: Counters::default(),
            metrics: Arc::default(),
            running: AtomicBool::new(false),
            synced: AtomicBool::new(false),
            caches: std::sync::RwLock::new(caches),
            ledger: Default::default(),
            locks: Default::default(),
            memo: Default::default(),
            ingresses: Default::default(),
            wakers: Arc::default(),
        }
    }

    /// The same context, recording into `metrics` (the server's, which `/metrics` exports).
    pub fn with_metrics(self, metrics: Arc<Metrics>) -> Context {
        Context { metrics, ..self }
    }

    /// Whether no run is under way, or the one under way has every cache listed: a replica
    /// that does not lead is ready with its pages.
    pub fn ready(&self) -> bool {
        !self.running.load(Ordering::Relaxed) || self.synced.load(Ordering::Relaxed)
    }

    /// Calls the driver, counting the call by hook and answer.
    async fn call_driver(&self, hook: Hook, request: DriverRequest) -> Result<DriverAnswer, DriverError> {
        let answer = self.driver.call(hook, request).await;
        let status = match &answer {
            Ok(a) => a.status.as_str(),
            Err(_) => "error",
        };
        self.metrics.driver_called(hook.label(), status);
        answer
    }

    /// Publishes `event` on `reference` without waiting for it: an Event is a record for
    /// people, not a step of a ticket's lifecycle.
    fn publish(&self, event: Event, reference: ObjectReference) {
        let recorder = self.recorder.clone();
        let mut events = self.events.lock().unwrap_or_else(|p| p.into_inner());
        while events.try_join_next().is_some() {}
        events.spawn(async move {
            if let Err(e) = recorder.publish(&event, &reference).await {
                tracing::warn!(error = %e, "could not record an event");
            }
        });
    }

    /// Waits (a few seconds at most) for the Events still being published; drops the rest.
    async fn events_published(&self) {
        let mut events = std::mem::take(&mut *self.events.lock().unwrap_or_else(|p| p.into_inner()));
        let drained = async { while events.join_next().await.is_some() {} };
        if tokio::time::timeout(Duration::from_secs(5), drained).await.is_err() {
            tracing::warn!("events still unpublished when the reconciler stopped were dropped");
        }
    }

    /// The caches of the run under way.
    fn caches(&self) -> Caches {
        self.caches.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Starts a run on `caches`, forgetting what an earlier run learned.
    ///
    /// NB: another process may have written meanwhile (a leader that held the lease): the
    /// ledger or a memo of what was placed from then would be stale now.
    fn begin(&self, caches: Caches) {
        *self.caches.write().unwrap_or_else(|p| p.into_inner()) = caches;
        self.ledger().clear();
        self.memo.lock().unwrap_or_else(|p| p.into_inner()).clear();
        self.ingresses.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// The address books. NB: never held across an await.
    fn ledger(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Forgets what the syncs of `cluster` placed: its registration changed, so the next
    /// sync reads everything back.
    fn forget(&self, cluster: &str) {
        self.memo.lock().unwrap_or_else(|p| p.into_inner()).remove(cluster);
        self.ingresses.lock().unwrap_or_else(|p| p.into_inner()).remove(cluster);
    }

    /// The lock of `key` (a member cluster's name: its syncs).
    fn lock(&self, key: &str) -> Arc<Mutex<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(|p| p.into_inner());
        locks.entry(key.to_string()).or_default().clone()
    }
}

/// Runs one reconcile of `kind`, counted by result and timed for the metrics.
async fn measured<T>(ctx: &Context, kind: &str, reconcile: impl Future<Output = Result<T>>) -> Result<T> {
    let started = std::time::Instant::now();
    let result = reconcile.await;
    ctx.metrics.reconciled(kind, result.as_ref().map_or_else(Error::metric_label, |_| "ok"), started.elapsed());
    result
}

#[cfg(test)]
mod tests {
    use super::Error;
    use kube::runtime::finalizer::Error as Finalizer;

    #[test]
    fn a_finalizers_step_fails_with_its_own_error_and_the_finalizer_with_its_own() {
        let refused = Error::from(Finalizer::CleanupFailed(Error::Invalid("it stays".into())));
        assert!(matches!(&refused, Error::Invalid(why) if why == "it stays"), "{refused:?}");
        let applied = Error::from(Finalizer::ApplyFailed(Error::Busy("changed meanwhile".into())));
        assert!(matches!(&applied, Error::Busy(why) if why == "changed meanwhile"), "{applied:?}");
        let unnamed = Error::from(Finalizer::<Error>::UnnamedObject);
        assert_eq!(unnamed.metric_label(), "finalizer", "{unnamed:?}");
    }
}
