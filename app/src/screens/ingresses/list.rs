//! `/ingresses`: the project's F5 Ingresses, grouped by address request.

use leptos::prelude::*;
use leptos_meta::Title;

use super::{AddressIngresses, hosts, list_ingresses};
use crate::components::address::AddressGroup;
use crate::components::list::{NoRows, ProjectFilter, project_key, table_or_none};
use crate::components::loaded::Loaded;

/// `/ingresses`
#[component]
pub fn Ingresses() -> impl IntoView {
    let project = RwSignal::new(String::new());
    let groups = Resource::new(project_key(project), |(p, _)| list_ingresses(p));
    view! {
        <Title text="F5 Ingresses" />
        <div class="page-head"><h1>"F5 Ingresses"</h1></div>
        <ProjectFilter project />
        <Loaded resource=groups show=groups_view />
    }
}

/// Every address and its F5 Ingresses, or why there are none.
fn groups_view(groups: Vec<AddressIngresses>) -> AnyView {
    if groups.is_empty() {
        return view! {
            <NoRows message="No address for F5 Ingresses yet." hint="Request an address of type F5 Ingress; once it is Enabled, add F5 Ingresses here." />
        }
        .into_any();
    }
    groups.into_iter().map(|g| view! { <Group g /> }).collect_view().into_any()
}

/// One address and its F5 Ingresses.
#[component]
fn Group(g: AddressIngresses) -> impl IntoView {
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
}
