//! `/rules`: the project's listeners, grouped by address request, each with its rules.

use leptos::prelude::*;

use crate::components::address::{AddressGroup, AddressList, SplitBar};
use crate::components::list::table_or_none;
use crate::i18n::t;
use crate::screens::listeners::{AddressListeners, list_listeners, protocol_label};

/// `/rules`
#[component]
pub fn Rules() -> impl IntoView {
    view! {
        <AddressList title=t("rules.title") fetch=list_listeners group
            empty=t("rules.empty")
            hint=t("rules.empty_hint") />
    }
}

/// The columns of an address's listeners (keys).
const HEADERS: &[&str] =
    &["rules.col.listener", "rules.col.port", "rules.col.protocol", "rules.col.rules", "rules.col.default_services"];

/// One address and its listeners, each linking to its rules.
fn group(g: AddressListeners) -> AnyView {
    let ticket = g.address.ticket.clone();
    let new = format!("/listeners/{ticket}/new");
    view! {
        <AddressGroup address=g.address add_label=t("listeners.add") add_href=new add=g.add>
            {table_or_none(g.listeners, t("listeners.none"), HEADERS, move |l| view! {
                <tr>
                    <td translate="no"><a href=format!("/rules/{ticket}/{}", l.name)>{l.name.clone()}</a></td>
                    <td>{l.port}</td>
                    <td>{protocol_label(l.protocol)}</td>
                    <td>{l.rules}</td>
                    <td><SplitBar services=l.services.clone() /></td>
                </tr>
            })}
        </AddressGroup>
    }
    .into_any()
}
