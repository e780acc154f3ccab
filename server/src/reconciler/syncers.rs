//! One syncer per member cluster, started when the cluster is registered and stopped when it
//! goes (a changed registration restarts it); and, for load balancers whose cluster is not
//! usable, the reason shown on them.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use futures::FutureExt;
use tokio::sync::Notify;

use super::concerns::Wake;
use super::{Context, Shutdown, Wakers, measured, reachability, tenant};

impl Wakers {
    /// Wakes the syncers `wake` names, and the supervisor: something they read changed.
    pub fn wake(&self, wake: &Wake) {
        let by_cluster = self.by_cluster.read().unwrap_or_else(|p| p.into_inner());
        match wake {
            Wake::Nobody => return,
            Wake::Everyone => by_cluster.values().for_each(|n| n.notify_one()),
            Wake::Clusters(clusters) => clusters.iter().filter_map(|c| by_cluster.get(c)).for_each(|n| n.notify_one()),
        }
        self.supervisor.notify_one();
    }

    /// The waker of `cluster`'s syncer, made awake: a new syncer syncs at once.
    fn add(&self, cluster: &str) -> Arc<Notify> {
        let notify = Arc::new(Notify::new());
        notify.notify_one();
        self.by_cluster.write().unwrap_or_else(|p| p.into_inner()).insert(cluster.to_string(), notify.clone());
        notify
    }

    fn remove(&self, cluster: &str) {
        self.by_cluster.write().unwrap_or_else(|p| p.into_inner()).remove(cluster);
    }
}

/// Keeps one syncer running per usable member cluster until `shutdown`, then waits for them to
/// stop (a sync under way finishes first). A load balancer whose cluster is not registered, or
/// whose registration is unusable, says why.
pub async fn supervise(ctx: Arc<Context>, shutdown: Shutdown) {
    // NB: an empty cache would withdraw everything: wait for the first complete lists.
    let caches = ctx.caches();
    let listed = tokio::select! {
        listed = caches.listed() => listed,
        _ = shutdown.clone() => false,
    };
    if !listed {
        return;
    }
    let mut changes = ctx.clusters.changes();
    let mut running: HashMap<String, (u64, tokio::sync::oneshot::Sender<()>)> = HashMap::new();
    // NB: spawned, so that the syncers run while the supervisor writes its reports.
    let mut syncers = tokio::task::JoinSet::new();
    loop {
        changes.borrow_and_update();
        let members = ctx.clusters.usable();
        running.retain(|cluster, (registered, _)| {
            let keep = members.get(cluster) == Some(registered);
            if !keep {
                tracing::info!(%cluster, "member cluster changed or gone: its syncer stops");
                ctx.wakers.remove(cluster);
                ctx.forget(cluster);
            }
            keep
        });
        let new: Vec<(String, u64)> = members.into_iter().filter(|(c, _)| !running.contains_key(c)).collect();
        for (cluster, registered) in new {
            let (stop, stopping) = tokio::sync::oneshot::channel::<()>();
            let requests = ctx.wakers.add(&cluster);
            let until = shutdown.clone();
            let own: Shutdown = async move {
                tokio::select! {
                    _ = until => {}
                    _ = stopping => {}
                }
            }
            .boxed()
            .shared();
            tracing::info!(%cluster, "member cluster registered: its syncer starts");
            syncers.spawn(super::crash::carried(syncer(ctx.clone(), cluster.clone(), requests, own)));
            running.insert(cluster, (registered, stop));
        }
        report_unusable(&ctx).await;
        tokio::select! {
            changed = changes.changed() => if changed.is_err() { break },
            _ = ctx.wakers.supervisor.notified() => {}
            Some(_) = syncers.join_next() => {}
            _ = shutdown.clone() => break,
        }
    }
    drop(running);
    while syncers.join_next().await.is_some() {}
}

/// Tells each load balancer whose cluster cannot be used why (written only when it changes).
async fn report_unusable(ctx: &Context) {
    let named: BTreeSet<String> = ctx
        .caches()
        .loadbalancers
        .state()
        .iter()
        .filter(|lb| super::live(&***lb))
        .map(|lb| lb.spec.cluster.clone())
        .collect();
    for cluster in named {
        if let Some(why) = ctx.clusters.problem(&cluster) {
            reachability::report(ctx, &cluster, Err(why)).await;
        }
    }
}

/// How often each member cluster's CIS Deployments are read again, apart from the syncs: an
/// operator who changes CIS's arguments is told within this time, not at the next ensure pass
/// or change of lbdesk's objects. NB: a GET of each Deployment (member clusters grant lbdesk
/// `get` and `list` of Deployments, not `watch`).
const CIS_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// A member cluster's syncer: syncs when asked (requests arriving meanwhile are coalesced into
/// the next run) and checks everything, drift included, every ensure period; a failed sync is
/// retried with backoff. Between syncs, its CIS is checked every [`CIS_EVERY`].
///
/// It stops at `shutdown`, between syncs: a sync under way finishes first.
async fn syncer(ctx: Arc<Context>, cluster: String, requests: Arc<Notify>, shutdown: Shutdown) {
    let mut next_ensure = tokio::time::Instant::now() + ctx.config.ensure_every;
    let mut cis_check = tokio::time::interval_at(tokio::time::Instant::now() + CIS_EVERY, CIS_EVERY);
    cis_check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = requests.notified() => {}
            _ = tokio::time::sleep_until(next_ensure) => {}
            _ = cis_check.tick() => {
                if let Some(client) = ctx.clusters.member(&cluster) {
                    super::cis::report(&ctx, &client, &cluster).await;
                }
                continue;
            }
            _ = shutdown.clone() => return,
        }
        let ensure = tokio::time::Instant::now() >= next_ensure;
        let mut failures = 0;
        loop {
            let result = measured(&ctx, "sync", tenant::sync(&ctx, &cluster, None, ensure)).await;
            match &result {
                Ok(_) => reachability::report(&ctx, &cluster, Ok(())).await,
                Err(e) if e.unreachable() => reachability::report(&ctx, &cluster, Err(e.to_string())).await,
                Err(_) => {}
            }
            match result {
                Ok(_) => {
                    ctx.counters.syncs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    break;
                }
                Err(e) => {
                    failures += 1;
                    let delay = super::backoff::delay(failures, ctx.config.retry_ceiling);
                    tracing::warn!(%cluster, error = %e, retry_in = ?delay, "sync failed");
                    tokio::select! {
                        _ = tokio::time::sleep(delay) => {}
                        _ = shutdown.clone() => return,
                    }
                }
            }
        }
        if ensure {
            next_ensure = tokio::time::Instant::now() + ctx.config.ensure_every;
        }
    }
}
