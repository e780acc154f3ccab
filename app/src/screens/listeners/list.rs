//! `/listeners`: the project's listeners, grouped by address request.

use leptos::prelude::*;

use super::{AddressListeners, list_listeners, protocol_label, session_label};
use crate::components::address::{AddressGroup, AddressList, SplitBar};
use crate::components::list::table_or_none;

/// `/listeners`
#[component]
pub fn Listeners() -> impl IntoView {
    view! {
        <AddressList title="Listeners" fetch=list_listeners group
            empty="No address for listeners yet."
            hint="Request an address of type Listeners; once it is Enabled, add listeners here." />
    }
}

/// One address and its listeners.
fn group(g: AddressListeners) -> AnyView {
    let t = g.address.ticket.clone();
    let new = format!("/listeners/{t}/new");
    view! {
        <AddressGroup address=g.address add_label="Add listener" add_href=new add=g.add>
            {table_or_none(g.listeners, "No listener yet.", &["Name", "Port", "Protocol", "Persistence", "Services", "Rules"], move |l| view! {
                <tr>
                    <td><a href=format!("/listeners/{t}/{}", l.name)>{l.name.clone()}</a></td>
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
