//! `/ingresses/:ticket/:name`: one F5 Ingress, the CIS annotations lbdesk gives it, and the
//! Ingress as the member cluster holds it; updating itself until the cluster carries the
//! current version.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_navigate;

use super::parts::CisAnnotations;
use super::{DeleteIngress, IngressDetail, get_ingress, hosts};
use crate::components::address::{AddressLine, Carried, CarriedBadge, live_on_address};
use crate::components::controls::{ConfirmButton, ReasonButton};
use crate::components::form::{action_error, navigate_on_success};
use crate::components::list::table;
use crate::components::loaded::Loaded;

/// `/ingresses/:ticket/:name`
#[component]
pub fn IngressDetailPage() -> impl IntoView {
    let detail = live_on_address(get_ingress, |d: &IngressDetail| &d.address);
    view! { <Loaded resource=detail show=|d| view! { <IngressBody d /> }.into_any() /> }
}

#[component]
fn IngressBody(d: IngressDetail) -> impl IntoView {
    let (ticket, name) = (d.address.ticket.clone(), d.ingress.name.clone());
    let delete = ServerAction::<DeleteIngress>::new();
    let error = action_error(delete);
    navigate_on_success(delete, |_| "/ingresses".to_string());
    let edit = format!("/ingresses/{ticket}/{name}/edit");
    let edit_reason = d.edit.clone();
    let (t, n) = (ticket.clone(), name.clone());
    let annotations = d.cis.annotations(d.ingress.tls_secret.is_some()).to_string();
    view! {
        <Title text=format!("F5 Ingress {name}") />
        <div class="page-head">
            <h1>{format!("F5 Ingress {name}")} " " <CarriedBadge carried=d.address.carried.clone() /></h1>
            <div class="actions">
                <ReasonButton label="Edit" reason=Signal::derive(move || edit_reason.clone())
                    on_click=move |_| use_navigate()(&edit, Default::default()) />
                <ConfirmButton label="Delete"
                    question=format!("Delete F5 Ingress {name}? Its Ingress leaves the member cluster.")
                    reason=Signal::derive(|| None::<String>)
                    on_confirm=move |_| { delete.dispatch(DeleteIngress { ticket: t.clone(), name: n.clone() }); } />
            </div>
        </div>
        <p class="field-error" role="alert">{move || error.get().map(|e| e.to_string())}</p>
        <AddressLine address=d.address.clone() />
        {match &d.address.carried {
            Carried::Refused(why) => Some(view! { <div class="callout callout-bad"><strong>"Not in the member cluster: "</strong>{why.clone()}</div> }),
            _ => None,
        }}
        <dl class="facts">
            <dt>"Hosts"</dt><dd>{hosts(&d.ingress)}</dd>
            <dt>"TLS Secret"</dt><dd>{d.ingress.tls_secret.clone().unwrap_or_else(|| "None (plain HTTP)".into())}</dd>
            <dt>"Ingress class"</dt><dd><code>{d.cis.class.clone()}</code></dd>
        </dl>
        <h2>"Routes"</h2>
        {table(&["Host", "Path", "Service", "Port"], d.ingress.rules.clone(), |r| view! {
            <tr><td>{r.host.clone().unwrap_or_else(|| "every host".into())}</td><td>{r.path.clone()}</td><td>{r.service.clone()}</td><td>{r.port}</td></tr>
        })}
        <h2>"CIS annotations"</h2>
        <CisAnnotations annotations />
        <h2>"In the member cluster"</h2>
        {match d.deployed.clone() {
            Some(ingress) => view! {
                <p class="muted">"The Ingress's annotations, class and labels as the member cluster holds them:"</p>
                <pre class="json" data-testid="deployed">{ingress}</pre>
            }.into_any(),
            None => view! { <p class="muted" data-testid="deployed">"Not in the member cluster yet."</p> }.into_any(),
        }}
    }
}
