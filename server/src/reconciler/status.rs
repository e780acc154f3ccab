//! A ticket's status: phase transitions with their history, conditions, and the write (only
//! when something changed).

use app::domain::crd::{Condition, HistoryEntry, Lbticket, LbticketStatus, Loadbalancer, Phase};
use kube::Api;
use kube::api::{Patch, PatchParams};
use kube::runtime::events::{Event, EventType};
use kube::{Resource, ResourceExt};
use serde_json::json;

use super::{Context, Error, Result, Step};

/// Most entries kept in `status.history`.
pub const HISTORY: usize = 50;

/// Sets a condition, keeping its transition time when its status does not change.
pub fn set_condition(
    conditions: &mut Vec<Condition>,
    type_: &str,
    ok: bool,
    reason: &str,
    message: &str,
    generation: Option<i64>,
) {
    let status = if ok { "True" } else { "False" };
    let at = match conditions.iter().find(|c| c.type_ == type_) {
        Some(c) if c.status == status => c.last_transition_time.clone(),
        _ => app::ssr::now(),
    };
    conditions.retain(|c| c.type_ != type_);
    conditions.push(Condition {
        type_: type_.into(),
        status: status.into(),
        reason: reason.into(),
        message: message.into(),
        last_transition_time: at,
        observed_generation: generation,
    });
    conditions.sort_by(|a, b| a.type_.cmp(&b.type_));
}

/// Moves to `phase` (history entry by `by`), or keeps the phase and updates the message.
pub fn transition(status: &mut LbticketStatus, phase: Phase, message: &str, by: &str) {
    if status.phase != phase || status.history.is_empty() {
        status.history.push(HistoryEntry { phase, at: app::ssr::now(), message: message.into(), by: by.into() });
        let excess = status.history.len().saturating_sub(HISTORY);
        status.history.drain(..excess);
    }
    status.phase = phase;
    status.message = if phase == Phase::Enabled || phase == Phase::Disabled || phase == Phase::Deleted {
        String::new()
    } else {
        message.to_string()
    };
    set_condition(&mut status.conditions, "Ready", phase == Phase::Enabled, phase.as_str(), message, None);
}

/// Who caused what happens to a ticket now: the user named by the annotation lbdesk's screens
/// set on each change, else the claimer.
pub fn actor(ticket: &Lbticket) -> String {
    ticket
        .annotations()
        .get("ebcpaas.io/changed-by")
        .cloned()
        .unwrap_or_else(|| if ticket.spec.claimer.is_empty() { "lbdesk".into() } else { ticket.spec.claimer.clone() })
}

/// Writes `next` as the ticket's status when it differs from the current one, on the version
/// of the ticket it was decided from; publishes an Event for a phase change. Returns the ticket
/// as written.
///
/// NB: a ticket changed since (another reconcile, a user's edit) is [`Error::Stale`], never
/// overwritten: the caller reads it again and decides again. A status decided from a stale copy
/// once overwrote `Enabled` with `Failed`, and the history entries written meanwhile.
pub async fn write(ctx: &Context, ticket: &Lbticket, mut next: LbticketStatus) -> Result<Lbticket> {
    next.observed_generation = ticket.metadata.generation;
    let current = ticket.status.clone().unwrap_or_default();
    if current == next {
        return Ok(ticket.clone());
    }
    let api: Api<Lbticket> = Api::all(ctx.clusters.mgmt().clone());
    // NB: a merge patch keeps what it does not mention: fields now absent are sent as null.
    let mut fields = serde_json::to_value(&next).unwrap_or_default();
    if let (Some(fields), Ok(serde_json::Value::Object(old))) = (fields.as_object_mut(), serde_json::to_value(&current))
    {
        for key in old.keys() {
            fields.entry(key.clone()).or_insert(serde_json::Value::Null);
        }
    }
    let patch = json!({ "metadata": {"resourceVersion": ticket.resource_version()}, "status": fields });
    let written = match api.patch_status(&ticket.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await {
        Ok(written) => written,
        Err(kube::Error::Api(e)) if e.code == 409 => return Err(Error::Stale(ticket.name_any())),
        Err(e) => return Err(e.into()),
    };
    if current.phase != next.phase || ticket.status.is_none() {
        let event = Event {
            type_: if next.phase == Phase::Failed { EventType::Warning } else { EventType::Normal },
            reason: next.phase.as_str().into(),
            note: next.history.last().map(|h| h.message.clone()).filter(|m| !m.is_empty()),
            action: "Reconcile".into(),
            secondary: None,
        };
        ctx.publish(event, ticket.object_ref(&()));
    }
    super::crash::point(Step::StatusWrite).await;
    Ok(written)
}

/// Merges `status` into `lb`'s status, on the version read: false when a concurrent change
/// won (no error: the caller reads again and writes again, now or on its next pass).
pub(super) async fn patch_lb_status(ctx: &Context, lb: &Loadbalancer, status: serde_json::Value) -> Result<bool> {
    let patch = serde_json::json!({"metadata": {"resourceVersion": lb.resource_version()}, "status": status});
    let api: kube::Api<Loadbalancer> = Api::all(ctx.clusters.mgmt().clone());
    match api.patch_status(&lb.name_any(), &kube::api::PatchParams::default(), &kube::api::Patch::Merge(&patch)).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
        Err(e) => Err(e.into()),
    }
}
