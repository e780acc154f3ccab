//! `/tickets`: the address requests, searchable; an admin picks the project.

use leptos::prelude::*;
use leptos_meta::Title;

use super::{TicketRow, lbtype_label, list_tickets};
use crate::components::controls::PhaseBadge;
use crate::components::layout::{ProjectSwitches, UserResource};
use crate::components::list::{ListHead, NoRows, table};
use crate::components::loaded::Loaded;
use crate::components::time::LocalTime;
use crate::domain::access::{Target, Verb};

/// `/tickets`
#[component]
pub fn Tickets() -> impl IntoView {
    let user = expect_context::<UserResource>();
    let project = RwSignal::new(String::new());
    let switches = expect_context::<ProjectSwitches>().0;
    let rows = Resource::new(move || (project.get(), switches.get()), |(p, _)| list_tickets(p));
    let search = RwSignal::new(String::new());
    view! {
        <Title text="Address requests" />
        <ListHead title="Address requests" create_href="/tickets/new" create_label="Request an address"
            search_label="Search address requests" placeholder="Search by name, load balancer or namespace" search />
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                let u = user.await.ok()?;
                Some(if u.may(Verb::Read, Target::AllProjects) {
                    view! {
                        <div class="toolbar">
                            <label for="project-filter">"Project"</label>
                            <select id="project-filter" on:change=move |ev| project.set(event_target_value(&ev))>
                                <option value="">"All projects"</option>
                                {u.projects.iter().map(|p| view! { <option value=p.clone()>{p.clone()}</option> }).collect_view()}
                            </select>
                        </div>
                    }.into_any()
                } else {
                    view! { <p class="muted" data-testid="project">{format!("Project: {}", u.project.unwrap_or_else(|| "(none)".into()))}</p> }.into_any()
                })
            })}
        </Suspense>
        <Loaded resource=rows show=move |rows| view! { {move || ticket_table(&rows, &search.get())} }.into_any() />
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
                <td><PhaseBadge phase=r.phase /></td>
                <td><LocalTime at=r.created.clone() /></td>
                <td class="error-cell">{r.message.clone()}</td>
            </tr>
        }
    })
}
