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
use crate::i18n::t;

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
        LbType::Listener => (t("tickets.detail.add_listener"), reason(&listener_creatable(phase, d.row.lbtype))),
        LbType::Ingress => (t("tickets.detail.add_ingress"), reason(&ingress_creatable(phase, d.row.lbtype))),
    };
    let add_href = match d.row.lbtype {
        LbType::Listener => format!("/listeners/{name}/new"),
        LbType::Ingress => format!("/ingresses/{name}/new"),
    };
    let (uses, used_href) = match d.row.lbtype {
        LbType::Listener => {
            (crate::tf!("tickets.detail.uses_listeners", n = d.usage.listeners), format!("/listeners#t-{name}"))
        }
        LbType::Ingress => {
            (crate::tf!("tickets.detail.uses_ingresses", n = d.usage.ingresses), "/ingresses".to_string())
        }
    };
    let title = crate::tf!("common.address.request_named", ticket = name);
    view! {
        <Title text=title.clone() />
        <div class="page-head">
            <h1>{title} " " <PhaseBadge phase /></h1>
            <div class="actions">
                <ReasonButton label=add_label reason=Signal::derive(move || add_reason.clone()) on_click=go(add_href) />
                <ReasonButton label=t("common.edit") reason=Signal::derive(move || edit_reason.clone()) on_click=go(format!("/tickets/{name}/edit")) />
                {match phase {
                    Phase::Disabled => view! {
                        <ReasonButton label=t("tickets.detail.enable") reason=Signal::derive(move || enable_reason.clone())
                            on_click=move |_| { act.dispatch(ActOnTicket { name: n1.clone(), action: Action::Enable }); } />
                    }.into_any(),
                    _ => view! {
                        <ReasonButton label=t("tickets.detail.disable") reason=Signal::derive(move || disable_reason.clone())
                            on_click=move |_| { act.dispatch(ActOnTicket { name: n2.clone(), action: Action::Disable }); } />
                    }.into_any(),
                }}
                <ConfirmButton label=t("common.delete")
                    question=crate::tf!("tickets.detail.delete_question", name = name)
                    reason=Signal::derive(move || delete_reason.clone())
                    on_confirm=move |_| { act.dispatch(ActOnTicket { name: n3.clone(), action: Action::Delete }); } />
            </div>
        </div>
        <p class="field-error" role="alert">{move || error.get().map(|e| e.message())}</p>
        {(!d.row.message.is_empty()).then(|| if waiting {
            view! { <div class="callout" role="status" data-testid="waiting" lang="en">{d.row.message.clone()}</div> }.into_any()
        } else {
            view! { <div class="callout callout-bad" data-testid="last-error"><strong>{t("tickets.detail.last_error")}</strong><span lang="en">{d.row.message.clone()}</span></div> }.into_any()
        })}
        {d.conditions.iter().find(|c| c.type_ == CONDITION_CIS_READY && c.status == "False").map(|c| view! {
            <div class="notice-bad" role="status" data-testid="cis-notice" lang="en">{c.message.clone()}</div>
        })}
        <dl class="facts">
            <dt>{t("common.project")}</dt><dd>{d.row.project.clone()}</dd>
            <dt>{t("tickets.col.loadbalancer")}</dt><dd>{d.row.loadbalancer.clone()}</dd>
            <dt>{t("tickets.col.cluster_namespace")}</dt><dd>{format!("{} / {}", d.row.cluster, d.row.namespace)}</dd>
            <dt>{t("tickets.col.type")}</dt><dd>{lbtype_label(d.row.lbtype)}</dd>
            <dt>{t("tickets.col.veip")}</dt><dd data-testid="veip">{or_dash(&d.row.veip)}</dd>
            <dt>{t("tickets.col.ltmip")}</dt><dd data-testid="ltmip">{or_dash(&d.row.ltmip)}</dd>
            <dt>{t("tickets.detail.requested")}</dt><dd>{crate::tf!("tickets.detail.requested_addresses", ve = or_auto(&d.requested_veip), ltm = or_auto(&d.requested_ltmip))}</dd>
            <dt>{t("tickets.detail.claimer")}</dt><dd>{d.claimer.clone()}</dd>
            <dt>{t("tickets.detail.in_use_by")}</dt><dd><a href=used_href>{uses}</a></dd>
        </dl>
        <h2>{t("tickets.detail.timeline")}</h2>
        <Timeline history=d.history.clone() />
        <h2>{t("tickets.detail.conditions")}</h2>
        {table_or_none(d.conditions.clone(), t("tickets.detail.no_conditions"), &[
            "tickets.condition.type",
            "tickets.condition.status",
            "tickets.condition.reason",
            "tickets.condition.message",
            "tickets.condition.since",
        ], |c| view! {
            <tr lang="en"><td>{c.type_.clone()}</td><td>{c.status.clone()}</td><td>{c.reason.clone()}</td><td>{c.message.clone()}</td><td><LocalTime at=c.last_transition_time.clone() /></td></tr>
        })}
    }
}

/// An address handed out, or a dash while there is none.
fn or_dash(address: &str) -> String {
    if address.is_empty() { "—".into() } else { address.into() }
}

/// An address asked for, or "automatic" for the lowest free one.
fn or_auto(requested: &str) -> String {
    if requested.is_empty() { t("tickets.detail.automatic").into() } else { requested.into() }
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
