//! The ledger of every Lbaddress, kept current by their watch; the pairs that versions before
//! Lbaddress recorded in `Loadbalancer.status.ips`, adopted into objects before anything is
//! allocated; and each Loadbalancer's capacity counters, written at most once a second (not
//! once per allocation: the Loadbalancer is no hot object).

use std::sync::Arc;
use std::time::Duration;

use app::domain::crd::{Lbaddress, Loadbalancer, Phase};
use app::domain::ipam::Side;
use futures::StreamExt;
use kube::api::PostParams;
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, watcher as watch};
use kube::{Api, ResourceExt};
use serde_json::json;
use tokio::sync::watch as signal;

use super::{Context, Result, Shutdown};

/// How often the capacity counters are brought up to date.
const COUNT_EVERY: Duration = Duration::from_secs(1);

/// Follows the Lbaddress objects into the ledger until `shutdown`; `listed` turns true once
/// the first complete list is in (and again after every re-list).
pub async fn follow(ctx: Arc<Context>, listed: signal::Sender<bool>, shutdown: Shutdown) {
    let api: Api<Lbaddress> = Api::all(ctx.clusters.mgmt().clone());
    let events = watch(api, watcher::Config::default()).default_backoff().take_until(shutdown);
    let mut events = std::pin::pin!(events);
    let mut listing = Vec::new();
    while let Some(event) = events.next().await {
        match event {
            Ok(Event::Init) => listing.clear(),
            Ok(Event::InitApply(a)) => listing.push(a),
            Ok(Event::InitDone) => {
                {
                    let mut ledger = ctx.ledger();
                    ledger.clear();
                    listing.drain(..).for_each(|a| ledger.put(a));
                }
                listed.send_replace(true);
            }
            Ok(Event::Apply(a)) => ctx.ledger().put(a),
            Ok(Event::Delete(a)) => ctx.ledger().remove(&a),
            Err(e) => tracing::warn!(error = %e, "watching the addresses"),
        }
    }
}

/// Waits for the ledger's first list, then adopts what `status.ips` still holds, retrying
/// with backoff until it is done; false when `shutdown` came first.
pub async fn prepare(ctx: &Context, mut listed: signal::Receiver<bool>, shutdown: Shutdown) -> bool {
    let ready = async {
        if listed.wait_for(|l| *l).await.is_err() {
            return false;
        }
        let mut delay = Duration::from_millis(250);
        loop {
            match adopt(ctx).await {
                Ok(()) => return true,
                Err(e) => tracing::warn!(error = %e, retry_in = ?delay, "adopting the pairs of status.ips"),
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(30));
        }
    };
    tokio::select! {
        ready = ready => ready,
        () = shutdown => false,
    }
}

/// Writes an object for each address of each pair in a Loadbalancer's `status.ips`, then
/// empties the list (on the version read: a concurrent change is adopted on the next try).
/// Every pair survives: an address whose object already exists for the same ticket is kept;
/// one another ticket's object holds is logged and left to that object (both cannot hold it).
async fn adopt(ctx: &Context) -> Result<()> {
    let lbs: Api<Loadbalancer> = Api::all(ctx.clusters.mgmt().clone());
    for mut lb in lbs.list(&Default::default()).await?.items {
        let Some(status) = lb.status.as_mut().filter(|s| !s.ips.is_empty()) else { continue };
        let name = lb.metadata.name.clone().unwrap_or_default();
        let mut objects = Vec::new();
        for pair in std::mem::take(&mut status.ips) {
            let (Ok(ve), Ok(ltm)) = (pair.veip.parse(), pair.ltmip.parse()) else {
                tracing::warn!(loadbalancer = %name, ticket = %pair.ticket, veip = %pair.veip, ltmip = %pair.ltmip, "a recorded pair that is no address pair is dropped");
                continue;
            };
            objects.push(Lbaddress::held(&name, Side::Ve, ve, ltm, &pair.ticket, pair.status));
            objects.push(Lbaddress::held(&name, Side::Ltm, ltm, ve, &pair.ticket, pair.status));
        }
        let written: Vec<Result<()>> =
            futures::stream::iter(objects).map(|a| adopt_one(ctx, a)).buffer_unordered(ADOPTING).collect().await;
        written.into_iter().collect::<Result<()>>()?;
        lbs.replace_status(&name, &PostParams::default(), &lb).await?;
        tracing::info!(loadbalancer = %name, "the pairs of status.ips are adopted into Lbaddress objects");
    }
    Ok(())
}

/// Address objects written at once while adopting.
const ADOPTING: usize = 16;

/// Writes one adopted address object, unless it exists.
async fn adopt_one(ctx: &Context, address: Lbaddress) -> Result<()> {
    let api: Api<Lbaddress> = Api::all(ctx.clusters.mgmt().clone());
    match api.create(&PostParams::default(), &address).await {
        Ok(created) => ctx.ledger().put(created),
        Err(kube::Error::Api(e)) if e.code == 409 => {
            let holder = api.get_opt(&address.name_any()).await?.map(|a| a.spec.ticket);
            if holder.as_deref() != Some(address.spec.ticket.as_str()) {
                tracing::warn!(address = %address.name_any(), recorded_for = %address.spec.ticket, held_by = ?holder, "a recorded address is held by another object");
            }
        }
        Err(e) => return Err(e.into()),
    }
    Ok(())
}

/// Keeps every Loadbalancer's capacity counters equal to the ledger's, and the metrics of
/// pairs and waiting tickets current, until `shutdown`.
pub async fn count(ctx: Arc<Context>, shutdown: Shutdown) {
    let mut tick = tokio::time::interval(COUNT_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = shutdown.clone() => return,
        }
        let caches = ctx.caches();
        let waiting = caches
            .tickets
            .state()
            .into_iter()
            .filter(|t| t.status.as_ref().is_none_or(|s| matches!(s.phase, Phase::Created | Phase::Requested)));
        ctx.metrics.waiting("lbticket", waiting.count());
        for lb in caches.loadbalancers.state() {
            if let Err(e) = write_capacity(&ctx, &lb).await {
                tracing::debug!(error = %e, loadbalancer = %lb.name_any(), "capacity counters");
            }
        }
    }
}

/// Writes `lb`'s counters when they differ from the ledger's (a conflict waits for the next tick).
async fn write_capacity(ctx: &Context, lb: &Loadbalancer) -> Result<()> {
    if lb.metadata.deletion_timestamp.is_some() {
        return Ok(());
    }
    let capacity = ctx.ledger().capacity(lb);
    if let Some(c) = &capacity {
        ctx.metrics.pairs(&lb.name_any(), c.ve_used, c.ve_free.min(c.ltm_free));
    }
    if lb.status.as_ref().and_then(|s| s.capacity.as_ref()) == capacity.as_ref() {
        return Ok(());
    }
    super::status::patch_lb_status(ctx, lb, json!({"capacity": capacity})).await.map(drop)
}
