//! `/listeners/:ticket/:name`: one listener, and its virtual server as the member cluster's AS3
//! ConfigMap holds it; updating itself until the cluster carries the current version.

use leptos::prelude::*;

use super::{DeleteListener, ListenerDetail, get_listener, protocol_label, session_label};
use crate::components::address::{Deployed, SplitBar, ThingHead, live_on_address};
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
    navigate_on_success(delete, |_| "/listeners".to_string());
    let l = d.listener.clone();
    view! {
        <ThingHead title=format!("Listener {name}") address=d.address.clone()
            edit_href=format!("/listeners/{ticket}/{name}/edit") edit=None
            question=format!("Delete listener {name}? Its virtual server leaves the load balancer.")
            delete=d.delete.clone() error=action_error(delete)
            on_delete=move |_| { delete.dispatch(DeleteListener { ticket: ticket.clone(), name: name.clone() }); } />
        <dl class="facts">
            <dt>"Port"</dt><dd>{l.port}</dd>
            <dt>"Protocol"</dt><dd>{protocol_label(l.protocol)}</dd>
            <dt>"Persistence"</dt><dd>{session_label(l.session)}</dd>
            <dt>"Rules"</dt><dd><a href=format!("/rules/{}/{}", d.address.ticket, l.name)>{rules_label(l.rules)}</a></dd>
        </dl>
        <h2>"Services"</h2>
        <SplitBar services=l.services.clone() />
        {table(&["Service", "Port", "Weight"], l.services.clone(), |s| view! {
            <tr><td>{s.service.clone()}</td><td>{s.port}</td><td>{format!("{}%", s.weight)}</td></tr>
        })}
        <Deployed deployed=d.deployed.clone() held="The virtual server as the AS3 ConfigMap of the member cluster holds it:"
            missing="Not in the member cluster's AS3 declaration yet." />
    }
}

/// The link to a listener's rules.
fn rules_label(n: usize) -> String {
    match n {
        0 => "No rule yet: add one".into(),
        1 => "1 rule".into(),
        n => format!("{n} rules"),
    }
}
