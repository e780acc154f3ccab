//! `/tickets`: the address requests, searchable; an admin picks the project.

use leptos::prelude::*;
use leptos_meta::Title;

use super::{TicketList, TicketRow, lbtype_label, list_tickets};
use crate::components::controls::PhaseBadge;
use crate::components::list::{ListHead, NoRows, ProjectFilter, project_key, table};
use crate::components::loaded::Loaded;
use crate::components::time::LocalTime;
use crate::i18n::t;

/// `/tickets`
#[component]
pub fn Tickets() -> impl IntoView {
    let project = RwSignal::new(String::new());
    let rows = Resource::new(project_key(project), |(p, _)| list_tickets(p));
    let search = RwSignal::new(String::new());
    view! {
        <Title text=t("tickets.title") />
        <ListHead title=t("tickets.title") create_href="/tickets/new" create_label=t("tickets.request_address")
            search_label=t("tickets.search") placeholder=t("tickets.search_placeholder") search />
        <ProjectFilter project />
        <Loaded resource=rows show=move |list: TicketList| {
            let quota = (!list.quota.is_empty()).then(|| view! {
                <dl class="quota-use" data-testid="quota" aria-label=t("tickets.quota")>
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
            <NoRows message=t("tickets.empty") hint=t("tickets.empty_hint") />
        }
        .into_any();
    }
    let found: Vec<&TicketRow> = rows.iter().filter(|r| r.matches(query)).collect();
    if found.is_empty() {
        return view! { <NoRows message=crate::tf!("tickets.no_match", query = query) /> }.into_any();
    }
    let headers = &[
        "tickets.col.name",
        "tickets.col.loadbalancer",
        "tickets.col.cluster_namespace",
        "tickets.col.veip",
        "tickets.col.ltmip",
        "tickets.col.type",
        "tickets.col.phase",
        "tickets.col.created",
        "tickets.col.last_error",
    ];
    table(headers, found, |r| {
        view! {
            <tr>
                <td translate="no"><a href=format!("/tickets/{}", r.name)>{r.name.clone()}</a></td>
                <td translate="no">{r.loadbalancer.clone()}</td>
                <td translate="no">{format!("{} / {}", r.cluster, r.namespace)}</td>
                <td>{r.veip.clone()}</td>
                <td>{r.ltmip.clone()}</td>
                <td>{lbtype_label(r.lbtype)}</td>
                <td><PhaseBadge phase=r.phase />
                    {(!r.on_bigip.is_empty()).then(|| view! { <div class="muted" data-testid="bigip-rollup">{r.on_bigip.clone()}</div> })}</td>
                <td><LocalTime at=r.created.clone() /></td>
                <td class="error-cell" lang="en">{r.message.clone()}</td>
            </tr>
        }
    })
}
