//! `/tickets/:name`: one address request, updating itself live while the reconciler moves it.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_navigate, use_params_map};

use super::{ActOnTicket, Action, TicketDetail, get_ticket, lbtype_label};
use crate::components::controls::{ConfirmButton, PhaseBadge, ReasonButton, Timeline};
use crate::components::form::action_error;
use crate::components::list::table_or_none;
use crate::components::loaded::{Loaded, poll};
use crate::components::time::LocalTime;
use crate::domain::crd::{CONDITION_CIS_READY, DesiredState, LbType, Phase};
use crate::domain::policy::{
    ingress_creatable, listener_creatable, reason, ticket_deletable, ticket_disableable, ticket_editable,
    ticket_enableable,
};

/// Whether the reconciler is still carrying the request towards what was asked of it.
fn in_motion(phase: Phase, state: DesiredState) -> bool {
    match state {
        DesiredState::Active => matches!(phase, Phase::Created | Phase::Requested | Phase::Disabled),
        DesiredState::Disabled => phase == Phase::Enabled,
        DesiredState::Deleted => phase != Phase::Deleted,
    }
}

/// `/tickets/:name`, updating itself live.
#[component]
pub fn TicketDetailPage() -> impl IntoView {
    let params = use_params_map();
    let name = move || params.read().get("name").unwrap_or_default();
    let tick = RwSignal::new(0u32);
    let act = ServerAction::<ActOnTicket>::new();
    let detail = Resource::new(move || (name(), tick.get(), act.version().get()), |(n, _, _)| get_ticket(n));
    // Fast while loading or moving; an error page is settled.
    let moving = Memo::new(move |_| match detail.get() {
        Some(Ok(d)) => in_motion(d.row.phase, d.row.state),
        Some(Err(_)) => false,
        None => true,
    });
    poll(tick, moving);
    view! {
        <Loaded resource=detail show=move |d| view! { <TicketBody d act /> }.into_any() />
    }
}

/// The request's facts, timeline and conditions, with the actions its phase allows.
#[component]
fn TicketBody(d: TicketDetail, act: ServerAction<ActOnTicket>) -> impl IntoView {
    let name = d.row.name.clone();
    let phase = d.row.phase;
    let edit_reason = reason(&ticket_editable(phase));
    let disable_reason = reason(&ticket_disableable(phase, &d.usage));
    let enable_reason = reason(&ticket_enableable(phase));
    let delete_reason = reason(&ticket_deletable(phase));
    let error = action_error(act);
    let waiting = crate::domain::ipam::queue::told(&d.conditions);
    let (n1, n2, n3) = (name.clone(), name.clone(), name.clone());
    let go = |href: String| move |_| use_navigate()(&href, Default::default());
    let (add_label, add_reason) = match d.row.lbtype {
        LbType::Listener => ("Add listener", reason(&listener_creatable(phase, d.row.lbtype))),
        LbType::Ingress => ("Add F5 Ingress", reason(&ingress_creatable(phase, d.row.lbtype))),
    };
    let add_href = match d.row.lbtype {
        LbType::Listener => format!("/listeners/{name}/new"),
        LbType::Ingress => format!("/ingresses/{name}/new"),
    };
    let (uses, used_href) = match d.row.lbtype {
        LbType::Listener => (format!("{} listener(s)", d.usage.listeners), format!("/listeners#t-{name}")),
        LbType::Ingress => (format!("{} F5 Ingress(es)", d.usage.ingresses), "/ingresses".to_string()),
    };
    view! {
        <Title text=format!("Address request {name}") />
        <div class="page-head">
            <h1>{format!("Address request {name}")} " " <PhaseBadge phase /></h1>
            <div class="actions">
                <ReasonButton label=add_label reason=Signal::derive(move || add_reason.clone()) on_click=go(add_href) />
                <ReasonButton label="Edit" reason=Signal::derive(move || edit_reason.clone()) on_click=go(format!("/tickets/{name}/edit")) />
                {match phase {
                    Phase::Disabled => view! {
                        <ReasonButton label="Enable" reason=Signal::derive(move || enable_reason.clone())
                            on_click=move |_| { act.dispatch(ActOnTicket { name: n1.clone(), action: Action::Enable }); } />
                    }.into_any(),
                    _ => view! {
                        <ReasonButton label="Disable" reason=Signal::derive(move || disable_reason.clone())
                            on_click=move |_| { act.dispatch(ActOnTicket { name: n2.clone(), action: Action::Disable }); } />
                    }.into_any(),
                }}
                <ConfirmButton label="Delete"
                    question=format!("Delete {name}? Its addresses are released and its network policy revoked.")
                    reason=Signal::derive(move || delete_reason.clone())
                    on_confirm=move |_| { act.dispatch(ActOnTicket { name: n3.clone(), action: Action::Delete }); } />
            </div>
        </div>
        <p class="field-error" role="alert">{move || error.get().map(|e| e.to_string())}</p>
        {(!d.row.message.is_empty()).then(|| if waiting {
            view! { <div class="callout" role="status" data-testid="waiting">{d.row.message.clone()}</div> }.into_any()
        } else {
            view! { <div class="callout callout-bad" data-testid="last-error"><strong>"Last error: "</strong>{d.row.message.clone()}</div> }.into_any()
        })}
        {d.conditions.iter().find(|c| c.type_ == CONDITION_CIS_READY && c.status == "False").map(|c| view! {
            <div class="notice-bad" role="status" data-testid="cis-notice">{c.message.clone()}</div>
        })}
        <dl class="facts">
            <dt>"Project"</dt><dd>{d.row.project.clone()}</dd>
            <dt>"Load balancer"</dt><dd>{d.row.loadbalancer.clone()}</dd>
            <dt>"Cluster / namespace"</dt><dd>{format!("{} / {}", d.row.cluster, d.row.namespace)}</dd>
            <dt>"Type"</dt><dd>{lbtype_label(d.row.lbtype)}</dd>
            <dt>"VE IP"</dt><dd data-testid="veip">{or_dash(&d.row.veip)}</dd>
            <dt>"LTM IP"</dt><dd data-testid="ltmip">{or_dash(&d.row.ltmip)}</dd>
            <dt>"Requested"</dt><dd>{format!("VE {} / LTM {}", or_auto(&d.requested_veip), or_auto(&d.requested_ltmip))}</dd>
            <dt>"Claimer"</dt><dd>{d.claimer.clone()}</dd>
            <dt>"In use by"</dt><dd><a href=used_href>{uses}</a></dd>
        </dl>
        <h2>"Timeline"</h2>
        <Timeline history=d.history.clone() />
        <h2>"Conditions"</h2>
        {table_or_none(d.conditions.clone(), "None yet.", &["Type", "Status", "Reason", "Message", "Since"], |c| view! {
            <tr><td>{c.type_.clone()}</td><td>{c.status.clone()}</td><td>{c.reason.clone()}</td><td>{c.message.clone()}</td><td><LocalTime at=c.last_transition_time.clone() /></td></tr>
        })}
    }
}

/// An address handed out, or a dash while there is none.
fn or_dash(address: &str) -> String {
    if address.is_empty() { "—".into() } else { address.into() }
}

/// An address asked for, or "automatic" for the lowest free one.
fn or_auto(requested: &str) -> String {
    if requested.is_empty() { "automatic".into() } else { requested.into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_polls_fast_only_while_the_request_moves() {
        assert!(in_motion(Phase::Created, DesiredState::Active));
        assert!(in_motion(Phase::Requested, DesiredState::Active));
        assert!(in_motion(Phase::Enabled, DesiredState::Disabled));
        assert!(in_motion(Phase::Disabled, DesiredState::Deleted));
        assert!(!in_motion(Phase::Enabled, DesiredState::Active));
        assert!(!in_motion(Phase::Failed, DesiredState::Active));
        assert!(!in_motion(Phase::Disabled, DesiredState::Disabled));
        assert!(!in_motion(Phase::Deleted, DesiredState::Deleted));
    }
}
