//! `/listeners`: the project's listeners, grouped by address request.

use leptos::prelude::*;

use super::{AddressListeners, list_listeners, protocol_label, session_label};
use crate::components::address::{AddressGroup, AddressList, SplitBar};
use crate::components::list::table_or_none;
use crate::i18n::t;

/// `/listeners`
#[component]
pub fn Listeners() -> impl IntoView {
    view! {
        <AddressList title=t("listeners.title") fetch=list_listeners group
            empty=t("listeners.empty")
            hint=t("listeners.empty_hint") />
    }
}

/// The columns of an address's listeners (keys).
const HEADERS: &[&str] = &[
    "listeners.field.name",
    "listeners.field.port",
    "listeners.field.protocol",
    "listeners.field.persistence",
    "listeners.field.services",
    "listeners.field.rules",
];

/// One address and its listeners.
fn group(g: AddressListeners) -> AnyView {
    let ticket = g.address.ticket.clone();
    let new = format!("/listeners/{ticket}/new");
    view! {
        <AddressGroup address=g.address add_label=t("listeners.add") add_href=new add=g.add>
            {table_or_none(g.listeners, t("listeners.none"), HEADERS, move |l| view! {
                <tr>
                    <td translate="no"><a href=format!("/listeners/{ticket}/{}", l.name)>{l.name.clone()}</a></td>
                    <td>{l.port}</td>
                    <td>{protocol_label(l.protocol)}</td>
                    <td>{session_label(l.session)}</td>
                    <td><SplitBar services=l.services.clone() /></td>
                    <td>{l.rules}</td>
                </tr>
            })}
        </AddressGroup>
    }
    .into_any()
}
