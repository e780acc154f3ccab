//! The background reconciler: kube-runtime controllers for Lbtickets and Loadbalancers in the
//! management cluster, writing the member clusters' AS3 ConfigMaps, labels and Ingresses,
//! through `kube::Client` only. Every step is idempotent and recorded before the next side
//! effect, so a crash anywhere leaves a state the next run completes.
//!
//! As in kube-rs's controller-rs: the server builds one [`Context`] and joins [`run`], which
//! returns once its shutdown future resolves. Nothing here reads the embedded API's module:
//! in cluster mode there is none.

mod addresses;
mod allocation;
mod backoff;
mod cis;
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
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::events::{Event, Recorder, Reporter};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use tokio::sync::Mutex;

use backoff::Backoff;
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
/// [`run`]; what a run learns (its caches, memo) starts afresh with the next one, and its
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
    /// One tenant sync per member cluster at a time.
    sync_locks: std::sync::Mutex<HashMap<String, Arc<Mutex<()>>>>,
    /// What each member cluster's last sync placed.
    memo: std::sync::Mutex<plan::Memo>,
    /// What each member cluster's last sync wrote of the Ingresses.
    ingresses: std::sync::Mutex<HashMap<String, ingress::Written>>,
    /// Wakes the member clusters' syncers.
    wakers: Arc<syncers::Wakers>,
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
            sync_locks: Default::default(),
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

    fn sync_lock(&self, cluster: &str) -> Arc<Mutex<()>> {
        let mut locks = self.sync_locks.lock().unwrap_or_else(|p| p.into_inner());
        locks.entry(cluster.to_string()).or_default().clone()
    }
}

/// Reconciles running at once per controller. Unbounded, a resync of 10,000 tickets opens a
/// connection to the API per ticket; the API serialises writes anyway.
const CONCURRENCY: u16 = 16;

/// A cache of `api`, kept current by a watch, and the stream of the objects it takes in;
/// every change that `concerns` the member clusters wakes the syncers.
///
/// NB: the controllers are driven by this stream and read this cache, so each object is
/// watched and held once (a Loadbalancer with 2,000 pairs is 150 KB per change).
fn cache<K>(
    api: Api<K>,
    wake: Arc<syncers::Wakers>,
    mut concerns: impl FnMut(&K) -> bool + Send + 'static,
) -> (Store<K>, impl futures::Stream<Item = Result<K, watcher::Error>> + Send + 'static)
where
    K: kube::Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    let (reader, writer) = reflector::store();
    let changes = reflector::reflector(writer, watcher(api, watcher::Config::default()))
        .default_backoff()
        .touched_objects()
        .inspect(move |changed| {
            if changed.as_ref().map_or(true, &mut concerns) {
                wake.wake_all();
            }
        });
    (reader, changes)
}

/// Runs the controllers and one syncer per member cluster until `shutdown` resolves, then lets
/// the reconciles and syncs under way finish, and returns: the caller joins it (on SIGTERM;
/// with leader election, when the lease is lost, and runs it again once it is won back).
///
/// NB: one run at a time per context. A run lists afresh and forgets what the last one learned.
/// NB: the syncers work from the caches and run after every change the caches take in, so the
/// last sync always sees the last change: no stale view can have the last word.
pub async fn run(ctx: Arc<Context>, shutdown: impl Future<Output = ()> + Send + 'static) {
    let shutdown: Shutdown = shutdown.boxed().shared();
    ctx.running.store(true, Ordering::Relaxed);
    let mgmt = ctx.clusters.mgmt().clone();
    let wake = ctx.wakers.clone();
    let (tickets, ticket_changes) = cache(Api::all(mgmt.clone()), wake.clone(), tenant::placement_changes());
    let (rules, rule_changes) = cache(Api::<Lbrule>::all(mgmt.clone()), wake.clone(), |_| true);
    let (loadbalancers, lb_changes) = cache(Api::all(mgmt), wake, tenant::loadbalancer_changes());
    ctx.begin(Caches { tickets: tickets.clone(), rules, loadbalancers: loadbalancers.clone() });
    let rule_cache = rule_changes.take_until(shutdown.clone()).for_each(|_| async {});
    let (listed, ledger_listed) = tokio::sync::watch::channel(false);
    let ledger = addresses::follow(ctx.clone(), listed, shutdown.clone());
    // NB: a ticket's lifecycle follows the ticket alone. What rules and Loadbalancers
    // change is placement, which the syncers pick up from the caches.
    let (reconcile, failed) = with_backoff(&ctx, lbticket::reconcile);
    let ticket_run = Controller::for_stream(ticket_changes, tickets)
        .with_config(controller::Config::default().concurrency(CONCURRENCY))
        .graceful_shutdown_on(shutdown.clone())
        .run(reconcile, move |ticket, error, _| failed.retry_after(&ticket.name_any(), error), ctx.clone())
        .for_each(|r| {
            ctx.counters.reconciles.fetch_add(1, Ordering::Relaxed);
            if let Err(e) = r {
                tracing::debug!(error = %e, "ticket reconcile");
            }
            futures::future::ready(())
        });
    let (reconcile, failed) = with_backoff(&ctx, loadbalancer::reconcile);
    let lb_run = Controller::for_stream(lb_changes, loadbalancers)
        .with_config(controller::Config::default().concurrency(CONCURRENCY))
        .graceful_shutdown_on(shutdown.clone())
        .run(reconcile, move |lb, error, _| failed.retry_after(&lb.name_any(), error), ctx.clone())
        .for_each(|r| {
            if let Err(e) = r {
                tracing::debug!(error = %e, "load balancer reconcile");
            }
            futures::future::ready(())
        });
    let syncers = syncers::supervise(ctx.clone(), shutdown.clone());
    let readback = readback::run(ctx.clone(), shutdown.clone());
    let counters = addresses::count(ctx.clone(), shutdown.clone());
    let caches = ctx.caches();
    let synced = async { ctx.synced.store(caches.listed().await, Ordering::Relaxed) };
    // NB: nothing is allocated, released or counted before the ledger holds every address,
    // those of `status.ips` included.
    let work = async {
        if addresses::prepare(&ctx, ledger_listed, shutdown.clone()).await {
            tracing::info!("reconciler started");
            ctx.metrics.leading(true);
            tokio::join!(ticket_run, lb_run, syncers, readback, counters, synced);
        }
    };
    tokio::join!(rule_cache, ledger, work);
    ctx.events_published().await;
    ctx.synced.store(false, Ordering::Relaxed);
    ctx.running.store(false, Ordering::Relaxed);
    ctx.metrics.leading(false);
    tracing::info!("reconciler stopped");
}

/// One reconcile, as a controller runs it.
type Reconcile = BoxFuture<'static, Result<Action>>;

/// A controller's `reconcile` as a run drives it, and the run's backoff for its error policy:
/// a success forgets the object's failures, each failure waits longer. NB: the controller
/// spawns each reconcile, so the run's planned crash (tests) is carried into it.
fn with_backoff<K, Fut>(
    ctx: &Context,
    reconcile: fn(Arc<K>, Arc<Context>) -> Fut,
) -> (impl FnMut(Arc<K>, Arc<Context>) -> Reconcile, Arc<Backoff>)
where
    K: kube::Resource + Send + Sync + 'static,
    Fut: Future<Output = Result<Action>> + Send + 'static,
{
    let backoff = Arc::new(Backoff::new(ctx.config.retry_ceiling));
    let counted = backoff.clone();
    let reconcile = move |object: Arc<K>, ctx| {
        let backoff = counted.clone();
        let name = object.name_any();
        crash::carried(async move {
            let action = reconcile(object, ctx).await?;
            backoff.succeeded(&name);
            Ok(action)
        })
        .boxed()
    };
    (reconcile, backoff)
}

/// Runs one reconcile of `kind`, counted by result and timed for the metrics.
async fn measured<T>(ctx: &Context, kind: &str, reconcile: impl Future<Output = Result<T>>) -> Result<T> {
    let started = std::time::Instant::now();
    let result = reconcile.await;
    ctx.metrics.reconciled(kind, result.as_ref().map_or_else(Error::metric_label, |_| "ok"), started.elapsed());
    result
}
