//! `/ingresses`: the project's F5 Ingresses, grouped by address request.

use leptos::prelude::*;

use super::{AddressIngresses, hosts, list_ingresses};
use crate::components::address::{AddressGroup, AddressList};
use crate::components::list::table_or_none;
use crate::i18n::t;

/// `/ingresses`
#[component]
pub fn Ingresses() -> impl IntoView {
    view! {
        <AddressList title=t("ingresses.title") fetch=list_ingresses group
            empty=t("ingresses.empty")
            hint=t("ingresses.empty_hint") />
    }
}

/// One address and its F5 Ingresses.
fn group(g: AddressIngresses) -> AnyView {
    let ticket = g.address.ticket.clone();
    let new = format!("/ingresses/{ticket}/new");
    view! {
        <AddressGroup address=g.address add_label=t("ingresses.add") add_href=new add=g.add>
            {table_or_none(g.ingresses, t("ingresses.none_yet"), &["ingresses.col.name", "ingresses.col.hosts", "ingresses.col.routes", "ingresses.col.tls"], move |i| view! {
                <tr>
                    <td translate="no"><a href=format!("/ingresses/{ticket}/{}", i.name)>{i.name.clone()}</a></td>
                    <td translate="no">{hosts(&i)}</td>
                    <td>{i.rules.len()}</td>
                    <td translate="no">{i.tls_secret.clone().unwrap_or_else(|| "—".into())}</td>
                </tr>
            })}
        </AddressGroup>
    }
    .into_any()
}
