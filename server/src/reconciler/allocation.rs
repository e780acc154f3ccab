//! Address pairs as Lbaddress objects, one per address (KEP-1880): a pair is chosen from the
//! ledger, claimed by creating its two objects (a 409 means someone holds that address: choose
//! again), marked by patching them and released by deleting them. No object grows with the
//! number of pairs, and no allocation waits on another.

use std::net::IpAddr;

use app::domain::crd::{BondState, GROUP, Lbaddress, Lbquota, Lbticket, Loadbalancer, VERSION, project_of};
use app::domain::ipam::{AllocError, Device, Pair, Side, queue};
use app::domain::policy::Limits;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Resource, ResourceExt};
use serde_json::json;

use super::{Context, Error, Result, Step};

/// Claims tried before a reconcile gives way to the others (and is tried again later).
const TRIES: usize = 32;

fn api(ctx: &Context) -> Api<Lbaddress> {
    Api::all(ctx.clusters.mgmt().clone())
}

fn requested(address: Option<&str>) -> bool {
    address.map(str::trim).is_some_and(|a| !a.is_empty())
}

/// Why `ticket` may not have a pair now: its project holds its quota of pairs on `lb` (a
/// request past the quota, made before the quota was lowered, waits, and the network-policy
/// driver is not asked for it).
///
/// NB: counted from the ledger, which holds this process's own claims the moment they are
/// written, under the lock of the project's pairs on `lb` (held through the claim): a ticket's
/// status, written only with the driver's answer, let parallel reconciles each see room for one
/// more (a project held 64 pairs on a quota of 59).
async fn over_quota(ctx: &Context, lb: &Loadbalancer, ticket: &Lbticket) -> Result<Option<String>> {
    let Some(project) = project_of(ticket) else { return Ok(None) };
    let quota = Api::<Lbquota>::all(ctx.clusters.mgmt().clone()).get_opt(project).await?;
    let limits = Limits::of(quota.as_ref().map(|q| &q.spec), &lb.spec, 0);
    let (lb_name, name) = (lb.name_any(), ticket.name_any());
    let tickets = ctx.caches().tickets;
    let of_project = |holder: &str| {
        holder != name && tickets.get(&ObjectRef::new(holder)).is_some_and(|t| project_of(&t) == Some(project))
    };
    let held = ctx.ledger().holders(&lb_name).into_iter().filter(|h| of_project(h)).count() as u64;
    Ok((held >= limits.addresses).then(|| {
        format!("project {project} holds its quota of {} addresses on load balancer {lb_name}", limits.addresses)
    }))
}

/// Why a request has no pair.
#[derive(Debug)]
pub enum NoPair {
    /// Not now: the ranges are full, or earlier requests wait for the pairs there are.
    Waiting(String),
    /// Not as asked: an address that is taken or outside the range, or no usable range.
    Refused(String),
}

/// What a claim of one address came to.
enum Claim {
    /// The object is written (or was already the ticket's).
    Held,
    /// Another ticket holds the address.
    Taken,
}

/// Writes the object saying `ticket` holds `ip` on `side` of `lb` (named after the device, so
/// that no other load balancer on it can hold the address too), owned by the ticket (so a
/// cluster's garbage collector removes it should the ticket ever go without its finalizer).
async fn claim(
    ctx: &Context,
    lb: &Loadbalancer,
    ticket: &Lbticket,
    side: Side,
    ip: IpAddr,
    partner: IpAddr,
) -> Result<Claim> {
    let (lb_name, name) = (lb.name_any(), ticket.name_any());
    let mut address = Lbaddress::held(&lb_name, &Device::of(&lb.spec, side), ip, partner, &name, BondState::Pending);
    address.metadata.owner_references = ticket.uid().map(|uid| {
        vec![OwnerReference {
            api_version: format!("{GROUP}/{VERSION}"),
            kind: Lbticket::kind(&()).into_owned(),
            name: name.clone(),
            uid,
            ..Default::default()
        }]
    });
    let outcome = match api(ctx).create(&PostParams::default(), &address).await {
        Ok(created) => {
            ctx.ledger().put(created);
            return Ok(Claim::Held);
        }
        Err(kube::Error::Api(e)) if e.code == 409 => match api(ctx).get_opt(&address.name_any()).await {
            Ok(Some(existing)) if existing.spec.ticket == name => {
                ctx.ledger().put(existing);
                return Ok(Claim::Held);
            }
            Ok(existing) => {
                ctx.ledger().unpick(&lb_name, side, ip, &name);
                // NB: gone again already, the address is free: the next choice may take it.
                existing.into_iter().for_each(|e| ctx.ledger().put(e));
                Ok(Claim::Taken)
            }
            Err(e) => Err(e.into()),
        },
        Err(e) => Err(e.into()),
    };
    if outcome.is_err() {
        ctx.ledger().unpick(&lb_name, side, ip, &name);
    }
    outcome
}

/// Deletes one address object (the very object seen: a newer one of the same address is
/// someone else's).
pub(super) async fn delete(ctx: &Context, address: &Lbaddress) -> Result<()> {
    let params = DeleteParams {
        preconditions: Some(Preconditions { uid: address.uid(), resource_version: None }),
        ..Default::default()
    };
    match api(ctx).delete(&address.name_any(), &params).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
        Err(e) => return Err(e.into()),
    }
    ctx.ledger().remove(address);
    Ok(())
}

/// The pair of `ticket` on `lb`: the one it holds, or a new one (requested addresses honoured).
/// `Err` carries why no pair can be had (for the ticket's message): a range exhausted, an
/// address requested that is out of range, reserved or someone else's. Losing an address to
/// another claim is no such reason: another is chosen.
pub async fn allocate(
    ctx: &Context,
    lb: &Loadbalancer,
    ticket: &Lbticket,
    veip: Option<&str>,
    ltmip: Option<&str>,
) -> Result<std::result::Result<Pair, NoPair>> {
    let (lb_name, name) = (lb.name_any(), ticket.name_any());
    // NB: one claim of the project's pairs on the load balancer at a time (see `over_quota`).
    let lock = project_of(ticket).map(|p| ctx.lock(&format!("pairs of {p} on {lb_name}")));
    let _one_at_a_time = match &lock {
        Some(lock) => Some(lock.lock().await),
        None => None,
    };
    for _ in 0..TRIES {
        let held = ctx.ledger().held(&lb_name, &name);
        if let Some(pair) = held.pair() {
            return Ok(Ok(pair));
        }
        // Half a pair: a crash between the two creates. Give it back and choose again.
        for half in held.objects() {
            delete(ctx, half).await?;
        }
        if let Some(why) = over_quota(ctx, lb, ticket).await? {
            return Ok(Err(NoPair::Waiting(why)));
        }
        // NB: requests that found the ranges full are served first, in the order they were
        // made: a later one takes a pair only when there are more free than wait before it.
        let ahead = match requested(veip) || requested(ltmip) {
            true => 0,
            false => queue::ahead(ticket, ctx.caches().tickets.state().iter().map(|t| &**t)),
        };
        let chosen = ctx.ledger().allocator(lb).map_err(|e| NoPair::Refused(e.to_string())).and_then(|a| {
            if ahead > 0 && a.free_pairs() <= ahead as u64 {
                return Err(NoPair::Waiting(format!("{ahead} earlier requests wait for a free address")));
            }
            a.allocate(&name, veip, ltmip).map_err(|e| match e {
                AllocError::Exhausted { .. } => NoPair::Waiting(e.to_string()),
                e => NoPair::Refused(e.to_string()),
            })
        });
        let pair = match chosen {
            Ok(pair) => pair,
            Err(no) => return Ok(Err(no)),
        };
        let taken = |side: Side, addr: IpAddr| {
            NoPair::Refused(AllocError::Taken { side, addr: addr.to_string(), by: String::new() }.to_string())
        };
        if let Claim::Taken = claim(ctx, lb, ticket, Side::Ve, pair.veip, pair.ltmip).await? {
            ctx.ledger().unpick(&lb_name, Side::Ltm, pair.ltmip, &name);
            if requested(veip) {
                return Ok(Err(taken(Side::Ve, pair.veip)));
            }
            continue;
        }
        if let Claim::Taken = claim(ctx, lb, ticket, Side::Ltm, pair.ltmip, pair.veip).await? {
            let ve = ctx.ledger().held(&lb_name, &name).ve;
            for half in ve.iter() {
                delete(ctx, half).await?;
            }
            if requested(ltmip) {
                return Ok(Err(taken(Side::Ltm, pair.ltmip)));
            }
            continue;
        }
        super::crash::point(Step::Allocation).await;
        return Ok(Ok(pair));
    }
    // NB: contention is no reason to fail a request: the ticket stays as it is and is
    // reconciled again after a backoff.
    Err(Error::Busy(format!("load balancer {lb_name}: {TRIES} addresses in a row were claimed by others first")))
}

/// Whether `ticket` holds a pair on `lb` in `state`.
pub fn holds(ctx: &Context, lb: &str, ticket: &str, state: BondState) -> bool {
    let held = ctx.ledger().held(lb, ticket);
    held.pair().is_some() && held.objects().all(|a| a.spec.state == state)
}

/// Marks the addresses of `ticket` with `state`.
pub async fn mark(ctx: &Context, lb: &str, ticket: &str, state: BondState) -> Result<()> {
    let held = ctx.ledger().held(lb, ticket);
    for address in held.objects().filter(|a| a.spec.state != state) {
        let patch = json!({
            "metadata": {"resourceVersion": address.resource_version()},
            "spec": {"state": state},
        });
        match api(ctx).patch(&address.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(written) => ctx.ledger().put(written),
            Err(kube::Error::Api(e)) if e.code == 409 => {
                // NB: changed since the ledger saw it: read it, and mark it on the next try.
                if let Some(fresh) = api(ctx).get_opt(&address.name_any()).await? {
                    ctx.ledger().put(fresh);
                }
                return Err(Error::Busy(format!("address {} changed while being marked", address.spec.address)));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Frees the pair of `ticket` (nothing when it holds none).
pub async fn release(ctx: &Context, lb: &str, ticket: &str) -> Result<()> {
    let held = ctx.ledger().held(lb, ticket);
    for address in held.objects() {
        delete(ctx, address).await?;
    }
    super::crash::point(Step::Allocation).await;
    Ok(())
}
