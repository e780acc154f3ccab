//! The ledger of every Lbaddress, kept current by their watch; the pairs that versions before
//! Lbaddress recorded in `Loadbalancer.status.ips`, adopted into objects before anything is
//! allocated; and each Loadbalancer's capacity counters, written at most once a second (not
//! once per allocation: the Loadbalancer is no hot object).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use app::domain::crd::{CONDITION_RANGES_DISJOINT, LABEL_DEVICE, Lbaddress, Loadbalancer, Phase};
use app::domain::ipam::{Device, Side};
use app::domain::policy::overlaps;
use futures::StreamExt;
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, watcher as watch};
use kube::{Api, ResourceExt};
use serde_json::json;
use tokio::sync::watch as signal;

use super::reachability::set_on_loadbalancers;
use super::{Context, Result, Shutdown, allocation};

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
                Ok(()) => match rename(ctx).await {
                    Ok(()) => return true,
                    Err(e) => tracing::warn!(error = %e, retry_in = ?delay, "naming the address objects by device"),
                },
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
            for (side, ip, partner) in [(Side::Ve, ve, ltm), (Side::Ltm, ltm, ve)] {
                let device = Device::of(&lb.spec, side);
                objects.push(Lbaddress::held(&name, &device, ip, partner, &pair.ticket, pair.status));
            }
        }
        let written: Vec<Result<()>> =
            futures::stream::iter(objects).map(|a| adopt_one(ctx, a)).buffer_unordered(ADOPTING).collect().await;
        written.into_iter().collect::<Result<()>>()?;
        lbs.replace_status(&name, &PostParams::default(), &lb).await?;
        tracing::info!(loadbalancer = %name, "the pairs of status.ips are adopted into Lbaddress objects");
    }
    Ok(())
}

/// Gives each address object an earlier version named after its load balancer
/// (`<lb>.<side>.<address>`) the name of its device (`Device`), so that no other load balancer
/// on that VE or LTM can hold the address too: a copy under the device's name, then the old
/// object deleted (a crash in between leaves both, for one ticket: the next start finishes).
///
/// NB: an address the device already holds for another ticket was handed out twice (two load
/// balancers whose ranges overlapped on one VE): its old object stays, to keep the traffic it
/// carries, with its device recorded, so the address is taken on the device for both and never
/// handed out a third time; the load balancers' `RangesDisjoint` condition names both requests.
async fn rename(ctx: &Context) -> Result<()> {
    let api: Api<Lbaddress> = Api::all(ctx.clusters.mgmt().clone());
    let legacy: Vec<Lbaddress> =
        api.list(&Default::default()).await?.items.into_iter().filter(|a| a.spec.device.is_empty()).collect();
    if legacy.is_empty() {
        return Ok(());
    }
    let lbs: Api<Loadbalancer> = Api::all(ctx.clusters.mgmt().clone());
    let lbs: HashMap<String, Loadbalancer> =
        lbs.list(&Default::default()).await?.items.into_iter().map(|lb| (lb.name_any(), lb)).collect();
    for old in legacy {
        let (Some(lb), Some(ip), Ok(partner)) =
            (lbs.get(&old.spec.loadbalancer), old.spec.ip(), old.spec.partner.parse())
        else {
            tracing::warn!(address = %old.name_any(), "an address object of no load balancer is left as it is");
            continue;
        };
        let device = Device::of(&lb.spec, old.spec.side);
        let mut renamed =
            Lbaddress::held(&old.spec.loadbalancer, &device, ip, partner, &old.spec.ticket, old.spec.state);
        renamed.metadata.owner_references = old.metadata.owner_references.clone();
        let holder = match api.create(&PostParams::default(), &renamed).await {
            Ok(created) => Some(created),
            Err(kube::Error::Api(e)) if e.code == 409 => api.get_opt(&renamed.name_any()).await?,
            Err(e) => return Err(e.into()),
        };
        match holder {
            Some(held) if held.spec.ticket == old.spec.ticket => {
                ctx.ledger().put(held);
                allocation::delete(ctx, &old).await?;
            }
            Some(held) => {
                tracing::warn!(address = %ip, device = %device, tickets = ?[&held.spec.ticket, &old.spec.ticket], "an address held twice on one device: both keep it until one lets it go");
                let patch = json!({
                    "metadata": {"resourceVersion": old.resource_version(), "labels": {LABEL_DEVICE: device.key()}},
                    "spec": {"device": device.id},
                });
                let patched = api.patch(&old.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await?;
                ctx.ledger().put(patched);
            }
            // Gone again already: the next start names it.
            None => {}
        }
    }
    tracing::info!("the address objects are named by device");
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
        report_overlaps(&ctx).await;
    }
}

/// Says on each load balancer whose range overlaps another's on the same device (saved by a
/// version that allowed it) which, and every address its device holds twice: the condition
/// `RangesDisjoint`. Admission refuses such a save now; this is what an upgrade finds.
async fn report_overlaps(ctx: &Context) {
    let lbs = ctx.caches().loadbalancers.state();
    let live: Vec<&Loadbalancer> = lbs.iter().map(|lb| &**lb).filter(|lb| super::live(*lb)).collect();
    let found = overlaps(live.iter().map(|lb| (name_of(lb), &lb.spec)));
    let twice = ctx.ledger().held_twice();
    set_on_loadbalancers(ctx, None, CONDITION_RANGES_DISJOINT, |lb| {
        let mut said: Vec<String> = found
            .get(name_of(lb))
            .into_iter()
            .flatten()
            .map(|o| format!("{}: {}", o.side.cidr_field(), o.msg()))
            .collect();
        for (device, ip, tickets) in &twice {
            if Device::of(&lb.spec, device.side) == *device {
                said.push(format!("{ip} is held twice on {device}, by the address requests {}", tickets.join(" and ")));
            }
        }
        match said.is_empty() {
            true => (true, "Disjoint", String::new()),
            false => (false, "Overlap", said.join("; ")),
        }
    })
    .await;
}

fn name_of(lb: &Loadbalancer) -> &str {
    lb.metadata.name.as_deref().unwrap_or_default()
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
