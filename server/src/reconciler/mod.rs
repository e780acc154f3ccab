//! The background reconciler: kube-runtime controllers for Lbtickets and Loadbalancers in the
//! management cluster, writing the member clusters' AS3 ConfigMaps and labels, through
//! `kube::Client` only. Every step is idempotent and recorded before the next side effect, so
//! a crash anywhere leaves a state the next run completes.

mod allocation;
mod lbticket;
mod loadbalancer;
mod status;
mod tenant;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use app::domain::crd::{Lbrule, Lbticket, Loadbalancer};
use app::ssr::clusters::Clusters;
use futures::StreamExt;
use kube::Api;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::Mutex;

use crate::driver::{DriverClient, DriverError};

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
}

impl Error {
    /// The label of the error in logs and metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::Kube(_) => "kube",
            Error::Driver(_) => "driver",
            Error::Invalid(_) => "invalid",
            Error::Finalizer(_) => "finalizer",
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The write steps a crash can be injected after (tests).
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
}

/// How the reconciler runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// How often every object is reconciled even when nothing changed (drift repair).
    pub ensure_every: Duration,
    /// Stop dead right after this step, the first time it is reached (crash tests).
    pub crash_after: Option<Step>,
}

/// What every reconcile reaches.
pub struct Context {
    pub clusters: Clusters,
    pub driver: DriverClient,
    pub recorder: Recorder,
    /// Caches of the management cluster (writes always read fresh from the API).
    pub tickets: Store<Lbticket>,
    pub rules: Store<Lbrule>,
    pub loadbalancers: Store<Loadbalancer>,
    /// Each Loadbalancer as this process last wrote it, until the cache has it.
    written: std::sync::Mutex<HashMap<String, Arc<Loadbalancer>>>,
    pub config: Config,
    /// One tenant sync per member cluster at a time.
    sync_locks: std::sync::Mutex<HashMap<String, Arc<Mutex<()>>>>,
    /// What each member cluster's last sync placed.
    memo: std::sync::Mutex<tenant::Memo>,
    /// Wakes a member cluster's syncer.
    sync_requests: Arc<HashMap<String, Arc<tokio::sync::Notify>>>,
    /// Consecutive failures per object, for the backoff.
    failures: std::sync::Mutex<HashMap<String, u32>>,
    crashed: Arc<AtomicBool>,
    counters: Counters,
}

/// How much the reconciler has done (for benchmarks and logs).
#[derive(Clone, Default)]
pub struct Counters {
    /// Ticket reconciles finished (either way).
    pub reconciles: Arc<AtomicU64>,
    /// Cluster syncs finished successfully.
    pub syncs: Arc<AtomicU64>,
}

impl Context {
    /// Halts forever right after `step` if a crash is planned there (the test then kills the
    /// reconciler, as a process dying at that point would).
    pub async fn crash_point(&self, step: Step) {
        if self.config.crash_after == Some(step) && !self.crashed.swap(true, Ordering::SeqCst) {
            tracing::warn!(?step, "crash injected");
            std::future::pending::<()>().await;
        }
    }

    fn sync_lock(&self, cluster: &str) -> Arc<Mutex<()>> {
        let mut locks = self.sync_locks.lock().unwrap_or_else(|p| p.into_inner());
        locks.entry(cluster.to_string()).or_default().clone()
    }

    fn backoff(&self, key: &str) -> Duration {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let n = failures.entry(key.to_string()).or_default();
        *n = n.saturating_add(1);
        Duration::from_millis(500u64.saturating_mul(1 << (*n - 1).min(7))).min(Duration::from_secs(60))
    }

    fn succeeded(&self, key: &str) {
        self.failures.lock().unwrap_or_else(|p| p.into_inner()).remove(key);
    }
}

/// A handle on a running reconciler.
pub struct Running {
    /// Set when a planned crash point was reached.
    pub crashed: Arc<AtomicBool>,
    pub counters: Counters,
    pub task: tokio::task::JoinHandle<()>,
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
    wake: Arc<HashMap<String, Arc<tokio::sync::Notify>>>,
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
                wake.values().for_each(|n| n.notify_one());
            }
        });
    (reader, changes)
}

/// Starts the controllers and one syncer per member cluster; they run until the task is aborted.
///
/// NB: the syncers work from the caches and run after every change the caches take in, so the
/// last sync always sees the last change: no stale view can have the last word.
pub fn start(clusters: Clusters, driver: DriverClient, config: Config) -> Running {
    let crashed = Arc::new(AtomicBool::new(false));
    let flag = crashed.clone();
    let counters = Counters::default();
    let counting = counters.clone();
    let task = tokio::spawn(async move {
        let mgmt = clusters.mgmt().clone();
        let tickets_api: Api<Lbticket> = Api::all(mgmt.clone());
        let rules_api: Api<Lbrule> = Api::all(mgmt.clone());
        let lbs_api: Api<Loadbalancer> = Api::all(mgmt.clone());
        let sync_requests: Arc<HashMap<String, Arc<tokio::sync::Notify>>> =
            Arc::new(clusters.members().into_iter().map(|c| (c, Arc::new(tokio::sync::Notify::new()))).collect());
        let (tickets, ticket_changes) = cache(tickets_api, sync_requests.clone(), tenant::placement_changes());
        let (rules, rule_changes) = cache(rules_api, sync_requests.clone(), |_| true);
        let (loadbalancers, lb_changes) = cache(lbs_api, sync_requests.clone(), tenant::loadbalancer_changes());
        let rule_cache = rule_changes.for_each(|_| async {});
        let recorder = Recorder::new(mgmt.clone(), Reporter { controller: "lbdesk".into(), instance: None });
        let ctx = Arc::new(Context {
            clusters,
            driver,
            recorder,
            tickets: tickets.clone(),
            rules,
            loadbalancers: loadbalancers.clone(),
            written: Default::default(),
            config,
            sync_locks: Default::default(),
            memo: Default::default(),
            sync_requests,
            failures: Default::default(),
            crashed: flag,
            counters: counting,
        });
        // NB: a ticket's lifecycle follows the ticket alone. What rules and Loadbalancers
        // change is placement, which the syncers pick up from the caches.
        let ticket_run = Controller::for_stream(ticket_changes, tickets)
            .with_config(controller::Config::default().concurrency(CONCURRENCY))
            .run(lbticket::reconcile, lbticket::error_policy, ctx.clone())
            .for_each(|r| {
                let done = ctx.counters.reconciles.clone();
                async move {
                    done.fetch_add(1, Ordering::Relaxed);
                    if let Err(e) = r {
                        tracing::debug!(error = %e, "ticket reconcile");
                    }
                }
            });
        let lb_run = Controller::for_stream(lb_changes, loadbalancers)
            .with_config(controller::Config::default().concurrency(CONCURRENCY))
            .run(loadbalancer::reconcile, loadbalancer::error_policy, ctx.clone())
            .for_each(|r| async move {
                if let Err(e) = r {
                    tracing::debug!(error = %e, "load balancer reconcile");
                }
            });
        let syncers =
            futures::future::join_all(ctx.sync_requests.keys().map(|c| tenant::syncer(ctx.clone(), c.clone())));
        tracing::info!("reconciler started");
        tokio::join!(rule_cache, ticket_run, lb_run, syncers);
    });
    Running { crashed, counters, task }
}

/// The requeue after a failure: exponential per object, 0.5 s to 60 s.
fn retry_after(ctx: &Context, key: &str, error: &Error) -> Action {
    let delay = ctx.backoff(key);
    tracing::warn!(object = %key, error = %error, kind = error.metric_label(), retry_in = ?delay, "reconcile failed");
    Action::requeue(delay)
}
