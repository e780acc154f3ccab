//! `/rules`: the project's listeners, grouped by address request, each with its rules.

use leptos::prelude::*;

use crate::components::address::{AddressGroup, AddressList, SplitBar};
use crate::components::list::table_or_none;
use crate::screens::listeners::{AddressListeners, list_listeners, protocol_label};

/// `/rules`
#[component]
pub fn Rules() -> impl IntoView {
    view! {
        <AddressList title="Rules" fetch=list_listeners group
            empty="No listener for rules yet."
            hint="Rules go on the listeners of an Enabled address; add a listener first." />
    }
}

/// One address and its listeners, each linking to its rules.
fn group(g: AddressListeners) -> AnyView {
    let t = g.address.ticket.clone();
    let new = format!("/listeners/{t}/new");
    view! {
        <AddressGroup address=g.address add_label="Add listener" add_href=new add=g.add>
            {table_or_none(g.listeners, "No listener yet.", &["Listener", "Port", "Protocol", "Rules", "Default services"], move |l| view! {
                <tr>
                    <td><a href=format!("/rules/{t}/{}", l.name)>{l.name.clone()}</a></td>
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
