//! `/tickets`: the address requests, searchable; an admin picks the project.

use leptos::prelude::*;
use leptos_meta::Title;

use super::{TicketList, TicketRow, lbtype_label, list_tickets};
use crate::components::controls::PhaseBadge;
use crate::components::list::{ListHead, NoRows, ProjectFilter, project_key, table};
use crate::components::loaded::Loaded;
use crate::components::time::LocalTime;

/// `/tickets`
#[component]
pub fn Tickets() -> impl IntoView {
    let project = RwSignal::new(String::new());
    let rows = Resource::new(project_key(project), |(p, _)| list_tickets(p));
    let search = RwSignal::new(String::new());
    view! {
        <Title text="Address requests" />
        <ListHead title="Address requests" create_href="/tickets/new" create_label="Request an address"
            search_label="Search address requests" placeholder="Search by name, load balancer or namespace" search />
        <ProjectFilter project />
        <Loaded resource=rows show=move |list: TicketList| {
            let quota = (!list.quota.is_empty()).then(|| view! {
                <dl class="quota-use" data-testid="quota" aria-label="Your project's quota">
                    {list.quota.into_iter().map(|(what, used)| view! { <dt>{what}</dt><dd>{used}</dd> }).collect_view()}
                </dl>
            });
            let rows = list.rows;
            view! { {quota} {move || ticket_table(&rows, &search.get())} }.into_any()
        } />
    }
}

/// The rows the search finds, or why there are none.
fn ticket_table(rows: &[TicketRow], query: &str) -> AnyView {
    if rows.is_empty() {
        return view! {
            <NoRows message="No address requests yet." hint="Request a load-balancer address for a namespace of your project." />
        }
        .into_any();
    }
    let found: Vec<&TicketRow> = rows.iter().filter(|r| r.matches(query)).collect();
    if found.is_empty() {
        return view! { <NoRows message=format!("No address request matches “{query}”.") /> }.into_any();
    }
    let headers =
        &["Name", "Load balancer", "Cluster / namespace", "VE IP", "LTM IP", "Type", "Phase", "Created", "Last error"];
    table(headers, found, |r| {
        view! {
            <tr>
                <td><a href=format!("/tickets/{}", r.name)>{r.name.clone()}</a></td>
                <td>{r.loadbalancer.clone()}</td>
                <td>{format!("{} / {}", r.cluster, r.namespace)}</td>
                <td>{r.veip.clone()}</td>
                <td>{r.ltmip.clone()}</td>
                <td>{lbtype_label(r.lbtype)}</td>
                <td><PhaseBadge phase=r.phase />
                    {(!r.on_bigip.is_empty()).then(|| view! { <div class="muted" data-testid="bigip-rollup">{r.on_bigip.clone()}</div> })}</td>
                <td><LocalTime at=r.created.clone() /></td>
                <td class="error-cell">{r.message.clone()}</td>
            </tr>
        }
    })
}
