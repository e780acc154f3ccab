//! What a run of the reconciler starts: a controller for tickets and one for load balancers,
//! driven by the caches it fills, one syncer per member cluster, the BIG-IP read-back and the
//! address counters; and how each controller's reconciles back off.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use app::domain::crd::Lbrule;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};

use super::backoff::Backoff;
use super::concerns::{Change, Wake};
use super::{
    Caches, Context, Result, Shutdown, Wakers, addresses, concerns, crash, lbticket, loadbalancer, readback, syncers,
};

/// Reconciles running at once per controller. Unbounded, a resync of 10,000 tickets opens a
/// connection to the API per ticket; the API serialises writes anyway.
const CONCURRENCY: u16 = 16;

/// A cache of `api`, kept current by a watch, and the stream of the objects it takes in;
/// each change wakes the syncers of the member clusters it `concerns`.
///
/// NB: the controllers are driven by this stream and read this cache, so each object is
/// watched and held once (a Loadbalancer with 2,000 pairs is 150 KB per change).
fn cache<K>(
    api: Api<K>,
    wake: Arc<Wakers>,
    mut concerns: impl FnMut(Change<K>) -> Wake + Send + 'static,
) -> (Store<K>, impl futures::Stream<Item = Result<K, watcher::Error>> + Send + 'static)
where
    K: kube::Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    let (reader, writer) = reflector::store();
    let cached = reader.clone();
    // NB: the reflector has applied each event to the cache before it comes here; at the end of
    // a list, the cache holds exactly what was listed.
    let holds = move |name: &str| cached.get(&ObjectRef::new(name)).is_some();
    let changes = reflector::reflector(writer, watcher(api, watcher::Config::default()))
        .default_backoff()
        .inspect(move |event| {
            wake.wake(&match event {
                Ok(watcher::Event::Apply(object) | watcher::Event::InitApply(object)) => concerns(Change::Held(object)),
                Ok(watcher::Event::Delete(object)) => concerns(Change::Gone(object)),
                Ok(watcher::Event::InitDone) => concerns(Change::Relisted(&holds)),
                Ok(watcher::Event::Init) => Wake::Nobody,
                Err(_) => Wake::Everyone,
            })
        })
        .touched_objects();
    (reader, changes)
}

/// Runs the controllers and one syncer per member cluster until `shutdown` resolves, then lets
/// the reconciles and syncs under way finish, and returns: the caller joins it (on SIGTERM;
/// with leader election, when the lease is lost, and runs it again once it is won back).
///
/// NB: one run at a time per context. A run lists afresh and forgets what the last one learned.
/// NB: the syncers work from the caches and each runs after every change the caches take in
/// that concerns its cluster, so its last sync always sees the last such change: no stale view
/// can have the last word.
pub async fn run(ctx: Arc<Context>, shutdown: impl Future<Output = ()> + Send + 'static) {
    let shutdown: Shutdown = shutdown.boxed().shared();
    ctx.running.store(true, Ordering::Relaxed);
    let mgmt = ctx.clusters.mgmt().clone();
    let wake = ctx.wakers.clone();
    let (loadbalancers, lb_changes) = cache(Api::all(mgmt.clone()), wake.clone(), concerns::loadbalancers());
    let (tickets, ticket_changes) =
        cache(Api::all(mgmt.clone()), wake.clone(), concerns::tickets(loadbalancers.clone()));
    let rules_concern = concerns::rules(tickets.clone(), loadbalancers.clone());
    let (rules, rule_changes) = cache(Api::<Lbrule>::all(mgmt), wake, rules_concern);
    ctx.begin(Caches { tickets: tickets.clone(), rules, loadbalancers: loadbalancers.clone() });
    let rule_cache = rule_changes.take_until(shutdown.clone()).for_each(|_| async {});
    let (listed, ledger_listed) = tokio::sync::watch::channel(false);
    let ledger = addresses::follow(ctx.clone(), listed, shutdown.clone());
    // NB: a ticket's lifecycle follows the ticket alone. What rules and Loadbalancers
    // change is placement, which the syncers pick up from the caches.
    let ticket_run = controller(&ctx, ticket_changes, tickets, lbticket::reconcile, &shutdown).for_each(|r| {
        ctx.counters.reconciles.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = r {
            tracing::debug!(error = %e, "ticket reconcile");
        }
        futures::future::ready(())
    });
    let lb_run = controller(&ctx, lb_changes, loadbalancers, loadbalancer::reconcile, &shutdown).for_each(|r| {
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

/// The reconciles of `K`: a controller driven by `changes` over `cache`, each object's failures
/// backing off, until `shutdown`; each item says how one reconcile ended.
fn controller<K, Fut>(
    ctx: &Arc<Context>,
    changes: impl futures::Stream<Item = Result<K, watcher::Error>> + Send + 'static,
    cache: Store<K>,
    reconcile: fn(Arc<K>, Arc<Context>) -> Fut,
    shutdown: &Shutdown,
) -> impl futures::Stream<Item = Result<(ObjectRef<K>, Action), controller::Error<super::Error, watcher::Error>>>
where
    K: kube::Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
    Fut: Future<Output = Result<Action>> + Send + 'static,
{
    let (reconcile, failed) = with_backoff(ctx, reconcile);
    Controller::for_stream(changes, cache)
        .with_config(controller::Config::default().concurrency(CONCURRENCY))
        .graceful_shutdown_on(shutdown.clone())
        .run(reconcile, move |object, error, _| failed.retry_after(&object.name_any(), error), ctx.clone())
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

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use app::domain::crd::LbruleSpec;
    use http::Method;
    use serde_json::json;

    use super::super::fixtures::{Call, Scenario};
    use super::*;

    /// What `cache` tells its concerns: each object held or gone, and at the end of each list
    /// whether `r1` is still held.
    #[derive(Debug, PartialEq)]
    enum Told {
        Held(String),
        Gone(String),
        Listed { r1: bool },
    }

    fn list(names: &[&str], version: &str) -> serde_json::Value {
        let rules: Vec<Lbrule> = names.iter().map(|n| Lbrule::new(n, LbruleSpec::default())).collect();
        json!({"apiVersion": "ebcpaas.io/v1", "kind": "LbruleList", "metadata": {"resourceVersion": version}, "items": rules})
    }

    /// A rule deleted while the watch was down is missed by every event; the list that follows
    /// the watch's expiry (410) does not have it, and its end is when that is told.
    #[tokio::test]
    async fn the_end_of_a_list_tells_which_names_the_cache_no_longer_holds() {
        let expired = json!({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "status": "Failure",
            "code": 410, "reason": "Expired", "message": "too old resource version"}});
        let (client, scenario) = Scenario::client(vec![
            Call::new(Method::GET, "/apis/ebcpaas.io/v1/lbrules?&limit=500", 200, list(&["r1", "r2"], "5")),
            Call::new(
                Method::GET,
                "/apis/ebcpaas.io/v1/lbrules?&watch=true&timeoutSeconds=290&allowWatchBookmarks=true&resourceVersion=5",
                200,
                expired,
            ),
            Call::new(Method::GET, "/apis/ebcpaas.io/v1/lbrules?&limit=500", 200, list(&["r2"], "9")),
            // NB: the watch the stream asks for right after that list's end, refused so that
            // the stream yields (an error) and is not asked again.
            Call::new(
                Method::GET,
                "/apis/ebcpaas.io/v1/lbrules?&watch=true&timeoutSeconds=290&allowWatchBookmarks=true&resourceVersion=9",
                500,
                json!({}),
            ),
        ]);
        let told = Arc::new(Mutex::new(Vec::new()));
        let record = told.clone();
        let concerns = move |change: Change<Lbrule>| {
            let seen = match change {
                Change::Held(rule) => Told::Held(rule.name_any()),
                Change::Gone(rule) => Told::Gone(rule.name_any()),
                Change::Relisted(holds) => Told::Listed { r1: holds("r1") },
            };
            record.lock().unwrap_or_else(|p| p.into_inner()).push(seen);
            Wake::Nobody
        };
        let (_cache, changes) = cache(Api::<Lbrule>::all(client), Arc::new(Wakers::default()), concerns);
        let second_list = async {
            let mut changes = std::pin::pin!(changes);
            while told.lock().unwrap_or_else(|p| p.into_inner()).len() < 5 {
                changes.next().await;
            }
        };
        // NB: after the 410 the stream backs off (0.8 s and a random part) before it lists again.
        scenario.run_within(std::time::Duration::from_secs(5), second_list).await;
        let told = told.lock().unwrap_or_else(|p| p.into_inner());
        let held = |name: &str| Told::Held(name.into());
        assert_eq!(*told, [held("r1"), held("r2"), Told::Listed { r1: true }, held("r2"), Told::Listed { r1: false }]);
    }
}
