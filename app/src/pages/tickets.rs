//! Screen 2: address requests (tickets).

use std::time::Duration;

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::{use_navigate, use_params_map};

use crate::components::controls::{ConfirmButton, Field, PhaseBadge, ReasonButton, Timeline, field_error, form_error};
use crate::components::layout::{ProjectSwitches, UserResource};
use crate::components::loaded::Loaded;
use crate::components::time::LocalTime;
use crate::domain::crd::{DesiredState, LbType, Phase};
use crate::domain::ipam::Side;
use crate::domain::policy::{reason, ticket_deletable, ticket_disableable, ticket_editable, ticket_enableable};
use crate::error::AppError;
use crate::tickets::{
    ActOnTicket, Action, SaveTicket, TicketDetail, TicketForm, TicketRow, check_address, get_ticket, list_tickets,
    ticket_form_choices,
};

/// `/tickets`
#[component]
pub fn Tickets() -> impl IntoView {
    let user = expect_context::<UserResource>();
    let project = RwSignal::new(String::new());
    let switches = expect_context::<ProjectSwitches>().0;
    let rows = Resource::new(move || (project.get(), switches.get()), |(p, _)| list_tickets(p));
    let search = RwSignal::new(String::new());
    view! {
        <Title text="Address requests" />
        <div class="page-head">
            <h1>"Address requests"</h1>
            <A href="/tickets/new" attr:class="btn btn-primary">"Request an address"</A>
        </div>
        <div class="toolbar">
            <input type="search" placeholder="Search by name, load balancer or namespace" aria-label="Search address requests"
                on:input=move |ev| search.set(event_target_value(&ev)) />
        </div>
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                let u = user.await.ok()?;
                Some(if u.is_admin() {
                    view! {
                        <div class="toolbar">
                            <label for="project-filter">"Project"</label>
                            <select id="project-filter" on:change=move |ev| project.set(event_target_value(&ev))>
                                <option value="">"All projects"</option>
                                {u.projects.iter().map(|p| view! { <option value=p.clone()>{p.clone()}</option> }).collect_view()}
                            </select>
                        </div>
                    }.into_any()
                } else {
                    view! { <p class="muted" data-testid="project">{format!("Project: {}", u.project.unwrap_or_else(|| "(none)".into()))}</p> }.into_any()
                })
            })}
        </Suspense>
        <Loaded resource=rows show=move |rows| view! { {move || ticket_table(&rows, &search.get())} }.into_any() />
    }
}

/// The rows the search finds, or why there are none.
fn ticket_table(rows: &[TicketRow], query: &str) -> AnyView {
    if rows.is_empty() {
        return view! {
            <div class="empty-state">
                <p>"No address requests yet."</p>
                <p class="muted">"Request a load-balancer address for a namespace of your project."</p>
            </div>
        }
        .into_any();
    }
    let found: Vec<&TicketRow> = rows.iter().filter(|r| r.matches(query)).collect();
    if found.is_empty() {
        return view! { <div class="empty-state"><p>{format!("No address request matches “{query}”.")}</p></div> }
            .into_any();
    }
    view! {
        <table class="table">
            <thead><tr>
                <th>"Name"</th><th>"Load balancer"</th><th>"Cluster / namespace"</th><th>"VE IP"</th><th>"LTM IP"</th><th>"Type"</th><th>"Phase"</th><th>"Created"</th><th>"Last error"</th>
            </tr></thead>
            <tbody>
                {found.into_iter().map(|r| view! {
                    <tr>
                        <td><a href=format!("/tickets/{}", r.name)>{r.name.clone()}</a></td>
                        <td>{r.loadbalancer.clone()}</td>
                        <td>{format!("{} / {}", r.cluster, r.namespace)}</td>
                        <td>{r.veip.clone()}</td>
                        <td>{r.ltmip.clone()}</td>
                        <td>{if r.lbtype == LbType::Ingress { "F5 Ingress" } else { "Listener" }}</td>
                        <td><PhaseBadge phase=r.phase /></td>
                        <td><LocalTime at=r.created.clone() /></td>
                        <td class="error-cell">{r.message.clone()}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}

/// Whether the reconciler is still carrying the request towards what was asked of it.
fn in_motion(phase: Phase, state: DesiredState) -> bool {
    match state {
        DesiredState::Active => matches!(phase, Phase::Created | Phase::Requested | Phase::Disabled),
        DesiredState::Disabled => phase == Phase::Enabled,
        DesiredState::Deleted => phase != Phase::Deleted,
    }
}

/// How often the detail page asks for news while the request moves; when settled, every
/// `POLL_SETTLED_EVERY` beats.
const POLL_MOVING: Duration = Duration::from_millis(250);
const POLL_SETTLED_EVERY: u32 = 8;

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
    Effect::new(move |_| {
        let beats = std::cell::Cell::new(0u32);
        let beat = move || {
            beats.set(beats.get().wrapping_add(1));
            if moving.get_untracked() || beats.get().is_multiple_of(POLL_SETTLED_EVERY) {
                tick.update(|t| *t = t.wrapping_add(1));
            }
        };
        if let Ok(handle) = set_interval_with_handle(beat, POLL_MOVING) {
            on_cleanup(move || handle.clear());
        }
    });
    view! {
        <Loaded resource=detail show=move |d| view! { <TicketBody d act /> }.into_any() />
    }
}

#[component]
fn TicketBody(d: TicketDetail, act: ServerAction<ActOnTicket>) -> impl IntoView {
    let name = d.row.name.clone();
    let phase = d.row.phase;
    let edit_reason = reason(&ticket_editable(phase));
    let disable_reason = reason(&ticket_disableable(phase, d.listeners, 0));
    let enable_reason = reason(&ticket_enableable(phase));
    let delete_reason = reason(&ticket_deletable(phase));
    let error = move || act.value().get().and_then(|r| r.err()).map(|e| e.to_string());
    let (n1, n2, n3) = (name.clone(), name.clone(), name.clone());
    let navigate_to_edit = {
        let href = format!("/tickets/{name}/edit");
        move |_| use_navigate()(&href, Default::default())
    };
    view! {
        <Title text=format!("Address request {name}") />
        <div class="page-head">
            <h1>{format!("Address request {name}")} " " <PhaseBadge phase /></h1>
            <div class="actions">
                <ReasonButton label="Edit" reason=Signal::derive(move || edit_reason.clone()) on_click=navigate_to_edit />
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
        <p class="field-error" role="alert">{error}</p>
        {(!d.row.message.is_empty()).then(|| view! { <div class="callout callout-bad" data-testid="last-error"><strong>"Last error: "</strong>{d.row.message.clone()}</div> })}
        <dl class="facts">
            <dt>"Project"</dt><dd>{d.row.project.clone()}</dd>
            <dt>"Load balancer"</dt><dd>{d.row.loadbalancer.clone()}</dd>
            <dt>"Cluster / namespace"</dt><dd>{format!("{} / {}", d.row.cluster, d.row.namespace)}</dd>
            <dt>"Type"</dt><dd>{if d.row.lbtype == LbType::Ingress { "F5 Ingress" } else { "Listener" }}</dd>
            <dt>"VE IP"</dt><dd data-testid="veip">{if d.row.veip.is_empty() { "—".to_string() } else { d.row.veip.clone() }}</dd>
            <dt>"LTM IP"</dt><dd data-testid="ltmip">{if d.row.ltmip.is_empty() { "—".to_string() } else { d.row.ltmip.clone() }}</dd>
            <dt>"Requested"</dt><dd>{format!("VE {} / LTM {}", or_auto(&d.requested_veip), or_auto(&d.requested_ltmip))}</dd>
            <dt>"Claimer"</dt><dd>{d.claimer.clone()}</dd>
            <dt>"Listeners"</dt><dd>{d.listeners}</dd>
        </dl>
        <h2>"Timeline"</h2>
        <Timeline history=d.history.clone() />
        <h2>"Conditions"</h2>
        {if d.conditions.is_empty() {
            view! { <p class="muted">"None yet."</p> }.into_any()
        } else {
            view! {
                <table class="table">
                    <thead><tr><th>"Type"</th><th>"Status"</th><th>"Reason"</th><th>"Message"</th><th>"Since"</th></tr></thead>
                    <tbody>{d.conditions.clone().into_iter().map(|c| view! {
                        <tr><td>{c.type_.clone()}</td><td>{c.status.clone()}</td><td>{c.reason.clone()}</td><td>{c.message.clone()}</td><td><LocalTime at=c.last_transition_time.clone() /></td></tr>
                    }).collect_view()}</tbody>
                </table>
            }.into_any()
        }}
    }
}

fn or_auto(requested: &str) -> String {
    if requested.is_empty() { "automatic".into() } else { requested.into() }
}

/// `/tickets/new` and `/tickets/:name/edit`
#[component]
pub fn TicketFormPage() -> impl IntoView {
    let params = use_params_map();
    let editing = move || params.read().get("name");
    let loaded = Resource::new(editing, |name| async move {
        let choices = ticket_form_choices().await?;
        let detail = match name {
            Some(n) => Some(get_ticket(n).await?),
            None => None,
        };
        Ok::<_, AppError>((choices, detail))
    });
    view! {
        <Loaded resource=loaded show=|(choices, detail)| view! { <TicketFormBody choices detail /> }.into_any() />
    }
}

const TICKET_FIELDS: &[&str] = &["name", "metadata.name", "namespace", "loadbalancer", "veip", "ltmip"];

#[component]
fn TicketFormBody(choices: crate::tickets::TicketChoices, detail: Option<TicketDetail>) -> impl IntoView {
    let editing = detail.is_some();
    let edit_reason = detail.as_ref().and_then(|d| reason(&ticket_editable(d.row.phase)));
    let locked = edit_reason.is_some();
    let first_ns = choices.namespaces.first().cloned().unwrap_or_default();
    let initial = match &detail {
        Some(d) => TicketForm {
            name: d.row.name.clone(),
            cluster: d.row.cluster.clone(),
            namespace: d.row.namespace.clone(),
            loadbalancer: d.row.loadbalancer.clone(),
            lbtype: d.row.lbtype,
            veip: d.requested_veip.clone(),
            ltmip: d.requested_ltmip.clone(),
            generation: Some(d.generation),
        },
        None => TicketForm {
            cluster: first_ns.0.clone(),
            namespace: first_ns.1.clone(),
            loadbalancer: choices
                .loadbalancers
                .iter()
                .find(|l| l.cluster == first_ns.0)
                .map(|l| l.name.clone())
                .unwrap_or_default(),
            ..Default::default()
        },
    };
    let form = RwSignal::new(initial);
    let lbs = StoredValue::new(choices.loadbalancers.clone());
    let offered = move || {
        let cluster = form.get().cluster;
        lbs.get_value().into_iter().filter(|l| l.cluster == cluster).collect::<Vec<_>>()
    };
    let save = ServerAction::<SaveTicket>::new();
    let error = Signal::derive(move || save.value().get().and_then(|r| r.err()));
    Effect::new(move |_| {
        if let Some(Ok(name)) = save.value().get() {
            use_navigate()(&format!("/tickets/{name}"), Default::default());
        }
    });
    // Requested addresses are checked as they are typed.
    // Browser-only: nothing to check while the page is rendered on the server.
    let check = |side: Side| {
        LocalResource::new(move || {
            let f = form.get();
            let address = if side == Side::Ve { f.veip } else { f.ltmip };
            async move {
                if f.loadbalancer.is_empty() || address.trim().is_empty() {
                    return None;
                }
                check_address(f.loadbalancer, side, address, f.name).await.err().map(|e| e.to_string())
            }
        })
    };
    let (ve_check, ltm_check) = (check(Side::Ve), check(Side::Ltm));
    let address_error = move |side: Side, checked: LocalResource<Option<String>>| {
        Signal::derive(move || field_error(error, side.field()).get().or_else(|| checked.get().flatten()))
    };
    let set = move |f: fn(&mut TicketForm, String)| {
        move |ev: leptos::ev::Event| form.update(|v| f(v, event_target_value(&ev)))
    };
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        save.dispatch(SaveTicket { form: form.get_untracked() });
    };
    let title = if editing { format!("Edit {}", form.get_untracked().name) } else { "Request an address".to_string() };
    let namespaces = choices.namespaces.clone();
    let no_lb = choices.loadbalancers.is_empty();
    view! {
        <Title text=title.clone() />
        <h1>{title}</h1>
        {edit_reason.clone().map(|r| view! { <div class="callout callout-bad">{r}</div> })}
        {(!editing && no_lb).then(|| view! { <div class="callout">"No load balancer is offered to your project yet; ask a platform admin."</div> })}
        <form class="form" on:submit=submit novalidate>
            <p class="field-error form-error" role="alert">{move || form_error(error, TICKET_FIELDS).get()}</p>
            <Field label="Name" id="name" help="Lower-case letters, digits, '-' and '.'." error=field_error(error, "name")>
                <input id="name" required disabled=editing value=move || form.get().name on:input=set(|f, v| f.name = v) />
            </Field>
            <Field label="Namespace" id="namespace" help="A namespace of your project." error=field_error(error, "namespace")>
                <select id="namespace" disabled=editing on:change=move |ev| {
                    let value = event_target_value(&ev);
                    if let Some((c, n)) = value.split_once('/') {
                        let (c, n) = (c.to_string(), n.to_string());
                        let lb = lbs.get_value().into_iter().find(|l| l.cluster == c).map(|l| l.name).unwrap_or_default();
                        form.update(|f| { f.cluster = c; f.namespace = n; f.loadbalancer = lb; });
                    }
                }>
                    {namespaces.into_iter().map(|(c, n)| {
                        let value = format!("{c}/{n}");
                        let selected = { let f = form.get_untracked(); f.cluster == c && f.namespace == n };
                        view! { <option value=value.clone() selected=selected>{value.clone()}</option> }
                    }).collect_view()}
                </select>
            </Field>
            <Field label="Load balancer" id="loadbalancer" help="The load balancers of this cluster offered to your project." error=field_error(error, "loadbalancer")>
                <select id="loadbalancer" disabled=editing on:change=set(|f, v| f.loadbalancer = v)>
                    {move || offered().into_iter().map(|l| {
                        let selected = form.get_untracked().loadbalancer == l.name;
                        view! { <option value=l.name.clone() selected=selected>{format!("{} (VE {}, LTM {})", l.name, l.ve_cidr, l.ltm_cidr)}</option> }
                    }).collect_view()}
                </select>
            </Field>
            <Field label="Type" id="lbtype" error=Signal::derive(|| None::<String>)>
                <select id="lbtype" disabled=editing on:change=move |ev| form.update(|f| f.lbtype = if event_target_value(&ev) == "ingress" { LbType::Ingress } else { LbType::Listener })>
                    <option value="listener" selected=form.get_untracked().lbtype == LbType::Listener>"Listeners"</option>
                    <option value="ingress" selected=form.get_untracked().lbtype == LbType::Ingress>"F5 Ingress"</option>
                </select>
            </Field>
            <Field label="VE IP" id="veip" help="Optional: leave empty for the lowest free address." error=address_error(Side::Ve, ve_check)>
                <input id="veip" disabled=locked value=move || form.get().veip on:input=set(|f, v| f.veip = v) />
            </Field>
            <Field label="LTM IP" id="ltmip" help="Optional: leave empty for the lowest free address." error=address_error(Side::Ltm, ltm_check)>
                <input id="ltmip" disabled=locked value=move || form.get().ltmip on:input=set(|f, v| f.ltmip = v) />
            </Field>
            <div class="form-actions">
                <button type="submit" class="btn btn-primary" disabled=move || save.pending().get() || locked>
                    {move || if save.pending().get() { "Submitting…" } else if editing { "Save" } else { "Request" }}
                </button>
                <A href="/tickets" attr:class="btn btn-ghost">"Cancel"</A>
            </div>
        </form>
    }
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
