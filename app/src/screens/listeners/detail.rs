//! `/listeners/:ticket/:name`: one listener, and its virtual server as the member cluster's AS3
//! ConfigMap holds it; updating itself until the cluster carries the current version.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_navigate;

use super::{DeleteListener, ListenerDetail, get_listener, protocol_label, session_label};
use crate::components::address::{AddressLine, Carried, CarriedBadge, SplitBar, live_on_address};
use crate::components::controls::{ConfirmButton, ReasonButton};
use crate::components::form::{action_error, navigate_on_success};
use crate::components::list::table;
use crate::components::loaded::Loaded;

/// `/listeners/:ticket/:name`
#[component]
pub fn ListenerDetailPage() -> impl IntoView {
    let detail = live_on_address(get_listener, |d: &ListenerDetail| &d.address);
    view! { <Loaded resource=detail show=|d| view! { <ListenerBody d /> }.into_any() /> }
}

#[component]
fn ListenerBody(d: ListenerDetail) -> impl IntoView {
    let (ticket, name) = (d.address.ticket.clone(), d.listener.name.clone());
    let delete = ServerAction::<DeleteListener>::new();
    let error = action_error(delete);
    navigate_on_success(delete, |_| "/listeners".to_string());
    let edit = format!("/listeners/{ticket}/{name}/edit");
    let delete_reason = d.delete.clone();
    let (t, n) = (ticket.clone(), name.clone());
    let l = d.listener.clone();
    view! {
        <Title text=format!("Listener {name}") />
        <div class="page-head">
            <h1>{format!("Listener {name}")} " " <CarriedBadge carried=d.address.carried.clone() /></h1>
            <div class="actions">
                <ReasonButton label="Edit" reason=Signal::derive(|| None::<String>) on_click=move |_| use_navigate()(&edit, Default::default()) />
                <ConfirmButton label="Delete"
                    question=format!("Delete listener {name}? Its virtual server leaves the load balancer.")
                    reason=Signal::derive(move || delete_reason.clone())
                    on_confirm=move |_| { delete.dispatch(DeleteListener { ticket: t.clone(), name: n.clone() }); } />
            </div>
        </div>
        <p class="field-error" role="alert">{move || error.get().map(|e| e.to_string())}</p>
        <AddressLine address=d.address.clone() />
        {match &d.address.carried {
            Carried::Refused(why) => Some(view! { <div class="callout callout-bad"><strong>"Not in the member cluster: "</strong>{why.clone()}</div> }),
            _ => None,
        }}
        <dl class="facts">
            <dt>"Port"</dt><dd>{l.port}</dd>
            <dt>"Protocol"</dt><dd>{protocol_label(l.protocol)}</dd>
            <dt>"Persistence"</dt><dd>{session_label(l.session)}</dd>
            <dt>"Rules"</dt><dd>{l.rules}</dd>
        </dl>
        <h2>"Services"</h2>
        <SplitBar services=l.services.clone() />
        {table(&["Service", "Port", "Weight"], l.services.clone(), |s| view! {
            <tr><td>{s.service.clone()}</td><td>{s.port}</td><td>{format!("{}%", s.weight)}</td></tr>
        })}
        <h2>"In the member cluster"</h2>
        {match d.deployed.clone() {
            Some(vs) => view! {
                <p class="muted">"The virtual server as the AS3 ConfigMap of the member cluster holds it:"</p>
                <pre class="json" data-testid="deployed">{vs}</pre>
            }.into_any(),
            None => view! { <p class="muted" data-testid="deployed">"Not in the member cluster's AS3 declaration yet."</p> }.into_any(),
        }}
    }
}
