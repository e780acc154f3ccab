//! `/listeners`: the project's listeners, grouped by address request.

use leptos::prelude::*;
use leptos_meta::Title;

use super::{AddressListeners, list_listeners, protocol_label, session_label};
use crate::components::address::{AddressGroup, SplitBar};
use crate::components::list::{NoRows, ProjectFilter, project_key, table_or_none};
use crate::components::loaded::Loaded;

/// `/listeners`
#[component]
pub fn Listeners() -> impl IntoView {
    let project = RwSignal::new(String::new());
    let groups = Resource::new(project_key(project), |(p, _)| list_listeners(p));
    view! {
        <Title text="Listeners" />
        <div class="page-head"><h1>"Listeners"</h1></div>
        <ProjectFilter project />
        <Loaded resource=groups show=groups_view />
    }
}

/// Every address and its listeners, or why there are none.
fn groups_view(groups: Vec<AddressListeners>) -> AnyView {
    if groups.is_empty() {
        return view! {
            <NoRows message="No address for listeners yet." hint="Request an address of type Listeners; once it is Enabled, add listeners here." />
        }
        .into_any();
    }
    groups.into_iter().map(|g| view! { <Group g /> }).collect_view().into_any()
}

/// One address and its listeners.
#[component]
fn Group(g: AddressListeners) -> impl IntoView {
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
}
