//! `/ingresses`: the project's F5 Ingresses, grouped by address request.

use leptos::prelude::*;

use super::{AddressIngresses, hosts, list_ingresses};
use crate::components::address::{AddressGroup, AddressList};
use crate::components::list::table_or_none;

/// `/ingresses`
#[component]
pub fn Ingresses() -> impl IntoView {
    view! {
        <AddressList title="F5 Ingresses" fetch=list_ingresses group
            empty="No address for F5 Ingresses yet."
            hint="Request an address of type F5 Ingress; once it is Enabled, add F5 Ingresses here." />
    }
}

/// One address and its F5 Ingresses.
fn group(g: AddressIngresses) -> AnyView {
    let t = g.address.ticket.clone();
    let new = format!("/ingresses/{t}/new");
    view! {
        <AddressGroup address=g.address add_label="Add F5 Ingress" add_href=new add=g.add>
            {table_or_none(g.ingresses, "No F5 Ingress yet.", &["Name", "Hosts", "Routes", "TLS"], move |i| view! {
                <tr>
                    <td><a href=format!("/ingresses/{t}/{}", i.name)>{i.name.clone()}</a></td>
                    <td>{hosts(&i)}</td>
                    <td>{i.rules.len()}</td>
                    <td>{i.tls_secret.clone().unwrap_or_else(|| "—".into())}</td>
                </tr>
            })}
        </AddressGroup>
    }
    .into_any()
}
