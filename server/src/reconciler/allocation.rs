//! Address pairs recorded in `Loadbalancer.status.ips`, by compare-and-swap on the
//! Loadbalancer's resourceVersion, retried on conflict: two tickets never get one address.

use app::domain::crd::{BondState, IpPair, Loadbalancer};
use app::domain::ipam::{PairAllocator, ip_pair};
use kube::api::PostParams;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, ResourceExt};

use super::{Context, Result, Step};

/// Applies `change` to the Loadbalancer's pairs and writes them (with fresh capacity figures)
/// when they differ; on a conflict, reads again and retries. `change` returns what the caller
/// wants back, or an error for the user (nothing is written then).
///
/// The first try works on the cached Loadbalancer (reading 2,000 pairs costs more than the
/// write); only a write, checked by its resourceVersion, is trusted from it. Any other outcome
/// is decided again on the object read from the API.
async fn update<T>(
    ctx: &Context,
    lb_name: &str,
    mut change: impl FnMut(&Loadbalancer, &mut Vec<IpPair>) -> std::result::Result<T, String>,
) -> Result<std::result::Result<T, String>> {
    let api: Api<Loadbalancer> = Api::all(ctx.clusters.mgmt().clone());
    let mut cached = ctx.loadbalancers.get(&ObjectRef::new(lb_name));
    for _ in 0..32 {
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
        let capacity = PairAllocator::new(&lb.spec, &ips).ok().map(|a| a.capacity());
        let status = lb.status.get_or_insert_with(Default::default);
        if ips == before && status.capacity == capacity {
            if fresh {
                return Ok(Ok(out));
            }
            continue;
        }
        status.ips = ips;
        status.capacity = capacity;
        match api.replace_status(lb_name, &PostParams::default(), &lb).await {
            Ok(_) => return Ok(Ok(out)),
            Err(kube::Error::Api(e)) if e.code == 409 => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(Err(format!("load balancer {lb_name} is too busy; will retry")))
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
        let mut alloc = PairAllocator::new(&lb.spec, ips).map_err(|(field, e)| format!("{field}: {e}"))?;
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
    let status = lb.status.clone().unwrap_or_default();
    let capacity = PairAllocator::new(&lb.spec, &status.ips).ok().map(|a| a.capacity());
    if status.capacity != capacity {
        let _ = update(ctx, &lb.name_any(), |_, _| Ok(())).await?;
    }
    Ok(())
}
