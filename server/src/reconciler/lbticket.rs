//! The ticket lifecycle (DESIGN §3): Created → Requested → Enabled, Failed, Disabled, Deleted.

use std::sync::Arc;
use std::time::Duration;

use app::domain::crd::{
    BondState, DesiredState, DriverState, Lbticket, LbticketStatus, Loadbalancer, Phase, PolicyStatus,
};
use app::domain::ipam::queue;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType};
use kube::runtime::finalizer::{Event as Finalizer, finalizer};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Resource, ResourceExt};
use serde_json::json;

use super::allocation::NoPair;
use super::status::{actor, set_condition, transition, write};
use super::{Context, Error, FINALIZER, Result, Step, allocation, measured, tenant};
use crate::driver::{DriverAnswer, DriverRequest, Hook};

/// How often a request waiting for a free address looks again: a pair given back is taken
/// within this time.
const WAIT_RETRY: Duration = Duration::from_secs(3);

/// The reconciler's entry point for a ticket.
pub async fn reconcile(ticket: Arc<Lbticket>, ctx: Arc<Context>) -> Result<Action> {
    measured(&ctx, "lbticket", reconcile_ticket(ticket, &ctx)).await
}

async fn reconcile_ticket(ticket: Arc<Lbticket>, ctx: &Arc<Context>) -> Result<Action> {
    let api: Api<Lbticket> = Api::all(ctx.clusters.mgmt().clone());
    let ticket = if ticket.metadata.deletion_timestamp.is_none() && !ticket.finalizers().iter().any(|f| f == FINALIZER)
    {
        Arc::new(add_finalizer(&api, &ticket).await?)
    } else {
        ticket
    };
    let action = finalizer(&api, FINALIZER, ticket, |event| async {
        match event {
            Finalizer::Apply(t) => apply(&t, ctx).await,
            Finalizer::Cleanup(t) => cleanup(&t, ctx).await.map(|_| Action::await_change()),
        }
    })
    .await?;
    Ok(action)
}

/// Adds the finalizer, on the version of the ticket seen (a concurrent change is a conflict,
/// retried), and returns the ticket as written.
///
/// NB: `finalizer` would add it too, then wait for the watch to bring the ticket back: done
/// here, a new ticket goes on at once.
async fn add_finalizer(api: &Api<Lbticket>, ticket: &Lbticket) -> Result<Lbticket> {
    let mut finalizers = ticket.finalizers().to_vec();
    finalizers.push(FINALIZER.into());
    let patch = json!({"metadata": {"finalizers": finalizers, "resourceVersion": ticket.resource_version()}});
    Ok(api.patch(&ticket.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await?)
}

/// The Loadbalancer, from the cache; from the API when the cache has none (yet).
async fn loadbalancer(ctx: &Context, name: &str) -> Result<Option<Arc<Loadbalancer>>> {
    if let Some(lb) = ctx.caches().loadbalancers.get(&ObjectRef::new(name)) {
        return Ok(Some(lb));
    }
    Ok(Api::<Loadbalancer>::all(ctx.clusters.mgmt().clone()).get_opt(name).await?.map(Arc::new))
}

/// The record ID of the ticket's n-th policy request (stable across retries of that request).
fn record_id(ticket: &Lbticket, attempt: u32) -> String {
    format!("{}-{attempt}", ticket.uid().unwrap_or_else(|| ticket.name_any()))
}

fn attempt_of(record: &str) -> u32 {
    record.rsplit('-').next().and_then(|n| n.parse().ok()).unwrap_or(0)
}

fn driver_request(ticket: &Lbticket, lb: &Loadbalancer, record: &str, veip: &str, ltmip: &str) -> DriverRequest {
    DriverRequest {
        record_id: record.into(),
        retry_id: String::new(),
        ticket: ticket.name_any(),
        loadbalancer: lb.name_any(),
        cluster: lb.spec.cluster.clone(),
        namespace: ticket.spec.namespace.clone(),
        veip: veip.into(),
        ltmip: ltmip.into(),
    }
}

/// How long after a `Running` answer the driver is asked again: its `minRetryDelayInSeconds`,
/// at least a second, at most five minutes.
fn retry_delay(answer: &DriverAnswer) -> Duration {
    Duration::from_secs(answer.min_retry_delay.clamp(1, 300))
}

/// The policy of `record` after the driver's `answer`: after `Running`, when it may be asked again.
fn answered(record: String, answer: &DriverAnswer) -> PolicyStatus {
    let next_call_at = (answer.status == DriverState::Running).then(|| {
        let at = time::OffsetDateTime::now_utc() + retry_delay(answer);
        at.format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
    });
    PolicyStatus { record_id: record, state: Some(answer.status), next_call_at }
}

/// How long until the driver may be asked again for `policy`'s record, if it may not be yet.
fn wait(policy: &PolicyStatus) -> Option<Duration> {
    let at = policy.next_call_at.as_deref()?;
    let at = time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339).ok()?;
    let left = at - time::OffsetDateTime::now_utc();
    left.is_positive().then(|| left.unsigned_abs())
}

/// What one step of the lifecycle leads to.
enum Next {
    /// The next step, at once, on the ticket as just written (not on the cache, which may not
    /// have it yet).
    Continue(Box<Lbticket>),
    /// Nothing more for now.
    Done(Action),
}

/// Steps one reconcile takes at most before handing the ticket back to the queue (Created to
/// Enabled takes two).
const STEPS: usize = 8;

/// Takes the ticket through as many steps as it can go at once. A step whose status write
/// found the ticket changed since its copy ([`Error::Stale`]) is decided again on the ticket as
/// the API holds it now.
async fn apply(ticket: &Lbticket, ctx: &Context) -> Result<Action> {
    let mut current = Box::new(ticket.clone());
    for _ in 0..STEPS {
        current = match step(&current, ctx).await {
            Ok(Next::Continue(written)) => written,
            Ok(Next::Done(action)) => return Ok(action),
            Err(Error::Stale(_)) => match fresh(ctx, &current).await? {
                Some(fresh) => Box::new(fresh),
                // Gone, or being deleted: the finalizer's turn.
                None => return Ok(Action::requeue(Duration::ZERO)),
            },
            Err(e) => return Err(e),
        };
    }
    Ok(Action::requeue(Duration::ZERO))
}

/// The ticket as the API holds it now, unless it is gone or being deleted.
async fn fresh(ctx: &Context, ticket: &Lbticket) -> Result<Option<Lbticket>> {
    let api: Api<Lbticket> = Api::all(ctx.clusters.mgmt().clone());
    Ok(api.get_opt(&ticket.name_any()).await?.filter(|t| t.metadata.deletion_timestamp.is_none()))
}

async fn step(ticket: &Lbticket, ctx: &Context) -> Result<Next> {
    let mut status = ticket.status.clone().unwrap_or_default();
    let by = actor(ticket);
    if ticket.status.is_none() {
        transition(&mut status, Phase::Created, "address requested", &by);
        return Ok(Next::Continue(Box::new(write(ctx, ticket, status).await?)));
    }
    let Some(lb) = loadbalancer(ctx, &ticket.spec.loadbalancer).await? else {
        if matches!(status.phase, Phase::Created | Phase::Requested) {
            transition(
                &mut status,
                Phase::Failed,
                &format!("load balancer {} does not exist", ticket.spec.loadbalancer),
                "lbdesk",
            );
            write(ctx, ticket, status).await?;
        }
        return Ok(Next::Done(Action::requeue(ctx.config.ensure_every)));
    };
    let done = Next::Done;
    match (ticket.spec.state, status.phase) {
        (_, Phase::Deleted) => Ok(done(Action::await_change())),
        (DesiredState::Deleted, Phase::Disabled | Phase::Failed) => delete(ticket, ctx, &lb, status).await.map(done),
        (DesiredState::Disabled, Phase::Enabled) => {
            transition(&mut status, Phase::Disabled, "disabled: listeners withdrawn, addresses and policy kept", &by);
            write(ctx, ticket, status).await?;
            Ok(done(Action::requeue(ctx.config.ensure_every)))
        }
        (DesiredState::Active, Phase::Disabled) => {
            transition(&mut status, Phase::Enabled, "enabled again", &by);
            enabled(ticket, ctx, &lb, status).await.map(done)
        }
        (DesiredState::Active, Phase::Failed) if edited(ticket, &status) => {
            transition(&mut status, Phase::Created, "edited: requested again", &by);
            // NB: a refused request is asked again under a new recordID: the driver answers a
            // recordID it has decided with the same answer (LBCF), so the refusal would come
            // back however the request changed.
            if let Some(policy) = status.policy.as_mut().filter(|p| p.state == Some(DriverState::Fail)) {
                *policy = PolicyStatus::new(record_id(ticket, attempt_of(&policy.record_id) + 1));
            }
            Ok(Next::Continue(Box::new(write(ctx, ticket, status).await?)))
        }
        (DesiredState::Active, Phase::Created | Phase::Requested) => request(ticket, ctx, &lb, status).await,
        (DesiredState::Active, Phase::Enabled) => enabled(ticket, ctx, &lb, status).await.map(done),
        // Failed and not edited, or an intent this phase cannot take (admission refuses those).
        _ => Ok(done(Action::requeue(ctx.config.ensure_every))),
    }
}

fn edited(ticket: &Lbticket, status: &LbticketStatus) -> bool {
    ticket.metadata.generation.is_some_and(|g| status.observed_generation.is_none_or(|o| g > o))
}

/// Whether the held pair is not what the ticket asks for now.
fn moved(ticket: &Lbticket, status: &LbticketStatus) -> bool {
    let differs = |wanted: &Option<String>, held: &Option<String>| {
        wanted.as_deref().map(str::trim).filter(|w| !w.is_empty()).is_some_and(|w| Some(w) != held.as_deref())
    };
    differs(&ticket.spec.veip, &status.veip) || differs(&ticket.spec.ltmip, &status.ltmip)
}

/// Created or Requested: hold a pair, ask for the network policy, follow the answer.
async fn request(ticket: &Lbticket, ctx: &Context, lb: &Loadbalancer, mut status: LbticketStatus) -> Result<Next> {
    let name = ticket.name_any();
    if status.phase == Phase::Created && status.veip.is_some() && moved(ticket, &status) {
        // An edit asked for other addresses: give the old pair back first, and ask for the
        // policy of the new pair under a record of its own (unless this one was never sent).
        allocation::release(ctx, &lb.name_any(), &name).await?;
        status.veip = None;
        status.ltmip = None;
        if let Some(policy) = status.policy.as_mut().filter(|p| p.state.is_some()) {
            *policy = PolicyStatus::new(record_id(ticket, attempt_of(&policy.record_id) + 1));
        }
        return Ok(Next::Continue(Box::new(write(ctx, ticket, status).await?)));
    }
    if status.veip.is_none() {
        let pair =
            allocation::allocate(ctx, lb, ticket, ticket.spec.veip.as_deref(), ticket.spec.ltmip.as_deref()).await?;
        match pair {
            Ok(pair) => {
                status.veip = Some(pair.veip.to_string());
                status.ltmip = Some(pair.ltmip.to_string());
                if status.policy.is_none() {
                    status.policy = Some(PolicyStatus::new(record_id(ticket, 1)));
                }
                status.message = String::new();
                status.conditions.retain(|c| c.type_ != queue::CONDITION_ADDRESS);
                // NB: written with the driver's answer: the pair's objects name the ticket,
                // so a crash before that finds it again.
            }
            Err(NoPair::Waiting(why)) => {
                // Not a failure: the request takes a pair once one comes free, in its turn.
                // NB: the network-policy driver is not asked for a request that holds no pair.
                status.message = format!("Waiting for a free address: {why}.");
                let generation = ticket.metadata.generation;
                set_condition(
                    &mut status.conditions,
                    queue::CONDITION_ADDRESS,
                    false,
                    queue::WAITING,
                    &why,
                    generation,
                );
                write(ctx, ticket, status).await?;
                return Ok(Next::Done(Action::requeue(WAIT_RETRY)));
            }
            Err(NoPair::Refused(reason)) => {
                transition(&mut status, Phase::Failed, &reason, "lbdesk");
                write(ctx, ticket, status).await?;
                return Ok(Next::Done(Action::requeue(ctx.config.ensure_every)));
            }
        }
    }
    let record = match &status.policy {
        Some(p) => p.record_id.clone(),
        None => record_id(ticket, 1),
    };
    // NB: the driver is asked on the ticket as the API holds it now, not on a cache that may
    // not have this reconciler's last write yet (which says when the driver may be asked
    // again): the ticket's own status write brings it back at once, before its cache has it.
    match fresh(ctx, ticket).await? {
        Some(now) if now.resource_version() != ticket.resource_version() => return Ok(Next::Continue(Box::new(now))),
        Some(_) => {}
        None => return Ok(Next::Done(Action::requeue(Duration::ZERO))),
    }
    if let Some(wait) = status.policy.as_ref().and_then(wait) {
        return Ok(Next::Done(Action::requeue(wait)));
    }
    let (veip, ltmip) = (status.veip.clone().unwrap_or_default(), status.ltmip.clone().unwrap_or_default());
    let answer = ctx.call_driver(Hook::RequestNetworkPolicy, driver_request(ticket, lb, &record, &veip, &ltmip)).await;
    super::crash::point(Step::DriverRequest).await;
    let answer = match answer {
        Ok(a) => a,
        Err(e) => {
            // The last error shows on the ticket; the phase stays and the call is retried.
            status.message = e.to_string();
            set_condition(
                &mut status.conditions,
                "PolicyApproved",
                false,
                "DriverError",
                &e.to_string(),
                ticket.metadata.generation,
            );
            write(ctx, ticket, status).await?;
            return Err(e.into());
        }
    };
    status.policy = Some(answered(record, &answer));
    match answer.status {
        DriverState::Running => {
            transition(&mut status, Phase::Requested, "network policy requested", "lbdesk");
            set_condition(
                &mut status.conditions,
                "PolicyApproved",
                false,
                "Running",
                &answer.msg,
                ticket.metadata.generation,
            );
            write(ctx, ticket, status).await?;
            Ok(Next::Done(Action::requeue(retry_delay(&answer))))
        }
        DriverState::Fail => {
            let message =
                if answer.msg.is_empty() { "the network policy was refused".to_string() } else { answer.msg.clone() };
            transition(&mut status, Phase::Failed, &message, "lbdesk");
            set_condition(
                &mut status.conditions,
                "PolicyApproved",
                false,
                "Refused",
                &message,
                ticket.metadata.generation,
            );
            write(ctx, ticket, status).await?;
            Ok(Next::Done(Action::requeue(ctx.config.ensure_every)))
        }
        DriverState::Succ => {
            transition(&mut status, Phase::Enabled, "network policy approved", "lbdesk");
            set_condition(&mut status.conditions, "PolicyApproved", true, "Approved", "", ticket.metadata.generation);
            enabled(ticket, ctx, lb, status).await.map(Next::Done)
        }
    }
}

/// Enabled: the pair is bound; the cluster's syncer places the listeners (and reports on them)
/// once its cache takes in the status written here.
async fn enabled(ticket: &Lbticket, ctx: &Context, lb: &Loadbalancer, status: LbticketStatus) -> Result<Action> {
    let (lb_name, name) = (lb.name_any(), ticket.name_any());
    if !allocation::holds(ctx, &lb_name, &name, BondState::Bond) {
        allocation::mark(ctx, &lb_name, &name, BondState::Bond).await?;
    }
    write(ctx, ticket, status).await?;
    Ok(Action::requeue(ctx.config.ensure_every))
}

/// Deleted (from Disabled): withdrawn, policy revoked, pair released; the ticket stays as a record.
async fn delete(ticket: &Lbticket, ctx: &Context, lb: &Loadbalancer, mut status: LbticketStatus) -> Result<Action> {
    if let Revoked::Not(action) = release_all(ticket, ctx, Some(lb), &mut status).await? {
        return Ok(action);
    }
    let released = format!(
        "deleted: addresses {} / {} released, network policy revoked",
        status.veip.as_deref().unwrap_or("-"),
        status.ltmip.as_deref().unwrap_or("-")
    );
    transition(&mut status, Phase::Deleted, &released, &actor(ticket));
    status.veip = None;
    status.ltmip = None;
    write(ctx, ticket, status).await?;
    Ok(Action::await_change())
}

/// Whether the ticket's network policy is revoked.
enum Revoked {
    /// Revoked (or there was none), its objects withdrawn and its pair free.
    Yes,
    /// Not yet: the driver answered `Running`; ask again after this.
    Not(Action),
}

/// The condition saying whether a deleted ticket's network policy is revoked.
const CONDITION_REVOKED: &str = "PolicyRevoked";

/// Withdraws the ticket's objects, revokes its policy (idempotent) and frees its pair. A revoke
/// the driver refuses, has not decided yet, or cannot be asked is said on the ticket (its
/// message, the `PolicyRevoked` condition and a Warning Event), not only in the log; the pair
/// stays held until the revoke succeeds.
async fn release_all(
    ticket: &Lbticket,
    ctx: &Context,
    lb: Option<&Loadbalancer>,
    status: &mut LbticketStatus,
) -> Result<Revoked> {
    let Some(lb) = lb else { return Ok(Revoked::Yes) };
    // NB: synchronously, so nothing generated outlives the ticket (it is no longer live).
    tenant::sync(ctx, &lb.spec.cluster, Some(&ticket.name_any()), false).await?;
    if let Some(policy) = &status.policy {
        let record = format!("revoke-{}", policy.record_id);
        let (veip, ltmip) = (status.veip.clone().unwrap_or_default(), status.ltmip.clone().unwrap_or_default());
        let answer =
            ctx.call_driver(Hook::RevokeNetworkPolicy, driver_request(ticket, lb, &record, &veip, &ltmip)).await;
        super::crash::point(Step::DriverRequest).await;
        // NB: a refusal or an error is tried again after the backoff, with the same recordID.
        let (reason, message, outcome) = match answer {
            Ok(a) if a.status == DriverState::Succ => (None, String::new(), Ok(Revoked::Yes)),
            Ok(a) if a.status == DriverState::Running => {
                let message = format!("revoking the network policy: the driver is still working on it ({})", a.msg);
                (Some("Running"), message, Ok(Revoked::Not(Action::requeue(retry_delay(&a)))))
            }
            Ok(a) => {
                let why = if a.msg.is_empty() { "no reason given".to_string() } else { a.msg };
                let message = format!("the network policy could not be revoked: the driver refused it: {why}");
                (Some("Refused"), message.clone(), Err(Error::Invalid(message)))
            }
            Err(e) => (Some("DriverError"), format!("the network policy could not be revoked: {e}"), Err(e.into())),
        };
        let generation = ticket.metadata.generation;
        set_condition(
            &mut status.conditions,
            CONDITION_REVOKED,
            reason.is_none(),
            reason.unwrap_or("Revoked"),
            &message,
            generation,
        );
        if let Some(reason) = reason {
            if status.message != message {
                ctx.publish(
                    Event {
                        type_: EventType::Warning,
                        reason: format!("Revoke{reason}"),
                        note: Some(message.clone()),
                        action: "Revoke".into(),
                        secondary: None,
                    },
                    ticket.object_ref(&()),
                );
            }
            status.message = message;
            write(ctx, ticket, status.clone()).await?;
            return outcome;
        }
    }
    allocation::release(ctx, &lb.name_any(), &ticket.name_any()).await?;
    Ok(Revoked::Yes)
}

/// A real delete (`kubectl delete`): the same clean-up as Deleted, then the object goes.
async fn cleanup(ticket: &Lbticket, ctx: &Context) -> Result<()> {
    let mut status = ticket.status.clone().unwrap_or_default();
    if status.phase == Phase::Deleted {
        return Ok(());
    }
    let lb = loadbalancer(ctx, &ticket.spec.loadbalancer).await?;
    match release_all(ticket, ctx, lb.as_deref(), &mut status).await? {
        Revoked::Yes => Ok(()),
        // NB: the finalizer stays until the revoke is decided: tried again after the backoff.
        Revoked::Not(_) => Err(Error::Busy(status.message)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_ids_count_attempts() {
        let mut t = Lbticket::new("t", Default::default());
        t.metadata.uid = Some("u".into());
        assert_eq!(record_id(&t, 3), "u-3");
        assert_eq!(attempt_of("u-3"), 3);
        assert_eq!(attempt_of("no-number-x"), 0);
    }

    #[test]
    fn an_edit_that_moves_the_addresses_is_seen() {
        let mut t = Lbticket::new("t", Default::default());
        let held =
            LbticketStatus { veip: Some("20.1.0.1".into()), ltmip: Some("10.0.0.1".into()), ..Default::default() };
        assert!(!moved(&t, &held), "no request: keep the pair");
        t.spec.veip = Some("20.1.0.1".into());
        assert!(!moved(&t, &held));
        t.spec.ltmip = Some("10.0.0.9".into());
        assert!(moved(&t, &held));
    }
}
