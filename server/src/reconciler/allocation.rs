//! Address pairs recorded in `Loadbalancer.status.ips`, by compare-and-swap on the
//! Loadbalancer's resourceVersion, retried on conflict: two tickets never get one address.

use std::collections::HashMap;
use std::sync::Arc;

use app::domain::crd::{BondState, IpPair, Loadbalancer};
use app::domain::ipam::{PairAllocator, ip_pair};
use kube::api::PostParams;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, ResourceExt};

use super::{Context, Error, Result, Step};

/// Writes tried before a reconcile gives way to the others (and is tried again later).
const TRIES: usize = 32;

/// Applies `change` to the Loadbalancer's pairs and writes them (with fresh capacity figures)
/// when they differ; on a conflict, reads again and retries. `change` gets the Loadbalancer as
/// read (its `status.ips` still the pairs it is handed) and returns what the caller wants
/// back, or an error for the user (nothing is written then).
///
/// The first try works on the freshest copy known here (reading 2,000 pairs costs more than
/// the write); only a write, checked by its resourceVersion, is trusted from it. Any other
/// outcome is decided again on the object read from the API.
async fn update<T>(
    ctx: &Context,
    lb_name: &str,
    mut change: impl FnMut(&Loadbalancer, &mut Vec<IpPair>) -> std::result::Result<T, String>,
) -> Result<std::result::Result<T, String>> {
    let api: Api<Loadbalancer> = Api::all(ctx.clusters.mgmt().clone());
    let mut cached = latest(ctx, lb_name);
    for _ in 0..TRIES {
        let (mut lb, fresh) = match cached.take() {
            Some(lb) => ((*lb).clone(), false),
            None => (api.get(lb_name).await?, true),
        };
        let mut ips = lb.status.as_ref().map(|s| s.ips.clone()).unwrap_or_default();
        let before = ips.clone();
        let out = match change(&lb, &mut ips) {
            Ok(out) => out,
            Err(_) if !fresh => continue,
            Err(message) => return Ok(Err(message)),
        };
        let unchanged = ips == before;
        lb.status.get_or_insert_with(Default::default).ips = ips;
        let capacity = PairAllocator::of(&lb).ok().map(|a| a.capacity());
        let status = lb.status.get_or_insert_with(Default::default);
        if unchanged && status.capacity == capacity {
            if fresh {
                return Ok(Ok(out));
            }
            continue;
        }
        status.capacity = capacity;
        match api.replace_status(lb_name, &PostParams::default(), &lb).await {
            Ok(written) => {
                written_lock(ctx).insert(lb_name.to_string(), Arc::new(written));
                return Ok(Ok(out));
            }
            Err(kube::Error::Api(e)) if e.code == 409 => {
                forget(ctx, lb_name);
                continue;
            }
            Err(e) => return Err(e.into()),
        }
    }
    // NB: contention is no reason to fail a request: the ticket stays as it is and is
    // reconciled again after a backoff.
    Err(Error::Busy(format!("load balancer {lb_name} changed under {TRIES} writes in a row")))
}

fn written_lock(ctx: &Context) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Loadbalancer>>> {
    ctx.written.lock().unwrap_or_else(|p| p.into_inner())
}

/// The freshest copy of a Loadbalancer known here: the one this process last wrote, until the
/// cache has taken it in (the next steps of a ticket come sooner than the watch).
pub fn latest(ctx: &Context, lb_name: &str) -> Option<Arc<Loadbalancer>> {
    let cached = ctx.caches().loadbalancers.get(&ObjectRef::new(lb_name));
    let mut written = written_lock(ctx);
    match (written.get(lb_name), cached) {
        (Some(w), Some(c)) if w.resource_version() == c.resource_version() => {
            written.remove(lb_name);
            Some(c)
        }
        (Some(w), _) => Some(w.clone()),
        (None, c) => c,
    }
}

/// Drops the copy written last (it turned out stale, or the Loadbalancer is gone).
pub fn forget(ctx: &Context, lb_name: &str) {
    written_lock(ctx).remove(lb_name);
}

/// The pair of `ticket`: the one it holds, or a new one (requested addresses honoured),
/// recorded `pending`. `Err` carries why no pair can be had (for the ticket's message).
pub async fn allocate(
    ctx: &Context,
    lb_name: &str,
    ticket: &str,
    veip: Option<&str>,
    ltmip: Option<&str>,
) -> Result<std::result::Result<IpPair, String>> {
    let result = update(ctx, lb_name, |lb, ips| {
        if let Some(pair) = ips.iter().find(|p| p.ticket == ticket) {
            return Ok(pair.clone());
        }
        // NB: nothing has changed the pairs yet, so the allocator of `lb` holds exactly `ips`.
        let mut alloc = PairAllocator::of(lb).map_err(|e| e.to_string())?;
        let pair = alloc.allocate(ticket, veip, ltmip).map_err(|e| e.to_string())?;
        let pair = ip_pair(pair, ticket, BondState::Pending);
        ips.push(pair.clone());
        Ok(pair)
    })
    .await?;
    if result.is_ok() {
        ctx.crash_point(Step::Allocation).await;
    }
    Ok(result)
}

/// Marks the pair of `ticket` with `state`.
pub async fn mark(ctx: &Context, lb_name: &str, ticket: &str, state: BondState) -> Result<()> {
    let _ = update(ctx, lb_name, |_, ips| {
        for p in ips.iter_mut().filter(|p| p.ticket == ticket) {
            p.status = state;
        }
        Ok(())
    })
    .await?;
    Ok(())
}

/// Frees the pair of `ticket` (nothing when it holds none).
pub async fn release(ctx: &Context, lb_name: &str, ticket: &str) -> Result<()> {
    let _ = update(ctx, lb_name, |_, ips| {
        ips.retain(|p| p.ticket != ticket);
        Ok(())
    })
    .await?;
    ctx.crash_point(Step::Allocation).await;
    Ok(())
}

/// Rewrites only the capacity figures (a Loadbalancer with no tickets yet, or a changed
/// range), when they are not those of its pairs.
pub async fn refresh_capacity(ctx: &Context, lb: &Loadbalancer) -> Result<()> {
    let capacity = PairAllocator::of(lb).ok().map(|a| a.capacity());
    if lb.status.as_ref().and_then(|s| s.capacity.as_ref()) != capacity.as_ref() {
        let _ = update(ctx, &lb.name_any(), |_, _| Ok(())).await?;
    }
    Ok(())
}
