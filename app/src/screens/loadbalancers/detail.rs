//! `/loadbalancers/:name`: one load balancer, its address pairs and the requests using it.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::use_params_map;

use super::{DeleteLoadbalancer, LbDetail, get_loadbalancer, list_pairs};
use crate::components::controls::ConfirmButton;
#[cfg(feature = "ssr")]
use crate::components::controls::UsageBar;
use crate::components::form::{action_error, navigate_on_success};
use crate::components::list::{More, Page, load_more, read_pages, table, table_or_none};
use crate::components::loaded::Loaded;
use crate::domain::crd::IpPair;
use crate::domain::policy::{lb_deletable, reason};
use crate::error::AppError;

/// `/loadbalancers/:name`
#[component]
pub fn LoadbalancerDetail() -> impl IntoView {
    let params = use_params_map();
    let name = move || params.read().get("name").unwrap_or_default();
    let detail = Resource::new(name, get_loadbalancer);
    // Made here, not inside the detail's suspense: a resource made while another one resolves
    // would be numbered differently in the browser than on the server, and hydration would fail.
    let pairs = Pairs::new(name);
    let delete = ServerAction::<DeleteLoadbalancer>::new();
    navigate_on_success(delete, |_| "/loadbalancers".into());
    view! {
        <Loaded resource=detail show=move |d| view! { <LbDetailBody d delete pairs /> }.into_any() />
    }
}

/// The load balancer's facts and tables, with its delete button (greyed out while in use).
#[component]
fn LbDetailBody(d: LbDetail, delete: ServerAction<DeleteLoadbalancer>, pairs: Pairs) -> impl IntoView {
    let name = d.row.name.clone();
    let deletable = reason(&lb_deletable(d.row.tickets, d.do_not_delete));
    let error = action_error(delete);
    let to_delete = name.clone();
    view! {
        <Title text=format!("Load balancer {name}") />
        <div class="page-head">
            <h1>{format!("Load balancer {name}")}</h1>
            <div class="actions">
                <A href=format!("/loadbalancers/{name}/edit") attr:class="btn">"Edit"</A>
                <ConfirmButton
                    label="Delete"
                    question=format!("Delete load balancer {name}? Its AS3 tenant will be removed from the cluster.")
                    reason=Signal::derive(move || deletable.clone())
                    on_confirm=move |_| { delete.dispatch(DeleteLoadbalancer { name: to_delete.clone() }); }
                />
            </div>
        </div>
        <p class="field-error" role="alert">{move || error.get().map(|e| e.to_string())}</p>
        {d.row.unreachable.clone().map(|why| view! {
            <div class="notice-bad" role="status">
                {format!("Member cluster {} cannot be reached: nothing is placed there until it answers. ", d.row.cluster)}
                <span class="muted">{why}</span>
            </div>
        })}
        {d.row.cis_not_ready.clone().map(|why| view! {
            <div class="notice-bad" role="status">
                "CIS will not post everything lbdesk writes for this load balancer: " {why}
            </div>
        })}
        <div inner_html=d.facts.clone()></div>
        <PairList pairs />
        <h2>"Address requests using it"</h2>
        {table_or_none(d.tickets.clone(), "None.", &["Request", "Namespace", "Phase"], |t| view! {
            <tr><td><a href=format!("/tickets/{}", t.name)>{t.name.clone()}</a></td><td>{t.namespace.clone()}</td><td>{t.phase.clone()}</td></tr>
        })}
    }
}

/// The load balancer's facts, as HTML. NB: static, so rendered by the server (escaped by Leptos's
/// renderer, like every page) and only placed by the browser: its code stays out of the bundle.
#[cfg(feature = "ssr")]
pub fn facts_html(d: &LbDetail) -> String {
    let d = d.clone();
    view! {
        <dl class="facts">
            <dt>"Cluster"</dt><dd>{d.row.cluster.clone()}</dd>
            <dt>"AS3 tenant"</dt><dd>{d.partition.clone()}</dd>
            <dt>"VE"</dt><dd>{format!("{} — {}", d.row.ve_addr, d.row.ve_cidr)}</dd>
            <dt>"VE certificate"</dt><dd>{if d.form.ve_skip_verify { "not verified when BIG-IP is read back" } else { "verified when BIG-IP is read back" }}</dd>
            <dt>"LTM"</dt><dd>{format!("{} — {}", d.row.ltm_url, d.row.ltm_cidr)}</dd>
            <dt>"CIS namespace"</dt><dd>{d.form.cis_namespace.clone()}</dd>
            <dt>"Namespace selector"</dt><dd>{d.form.nsselector.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ")}</dd>
            <dt>"Projects"</dt><dd>{if d.form.scope.is_empty() { "every project of the cluster".to_string() } else { d.form.scope.join(", ") }}</dd>
            <dt>"Reserved"</dt><dd>{if d.form.reserved.is_empty() { "—".to_string() } else { d.form.reserved.clone() }}</dd>
            <dt>"LTM token"</dt><dd>{if d.token_set { "set" } else { "not set" }}</dd>
            <dt>"VE credentials"</dt><dd>{if d.credentials_set { "set" } else { "not set" }}</dd>
            <dt>"Capacity"</dt><dd><UsageBar used=d.row.pairs_used free=d.row.pairs_free /></dd>
        </dl>
    }
    .to_html()
}

/// The pairs handed out, in address order, a page at a time, searchable by address or request.
#[derive(Clone, Copy)]
struct Pairs {
    search: RwSignal<String>,
    more: More<String>,
    resource: Resource<Result<Page<IpPair>, AppError>>,
}

impl Pairs {
    fn new(name: impl Fn() -> String + Send + Sync + 'static) -> Self {
        let search = RwSignal::new(String::new());
        let more = More::default();
        let resource = Resource::new(
            move || (name(), search.get(), more.pages(&search.get())),
            move |(name, search, pages)| {
                read_pages(pages, move |after| list_pairs(name.clone(), search.clone(), after))
            },
        );
        Pairs { search, more, resource }
    }
}

/// The pairs' table with its search box and "Load more".
#[component]
fn PairList(pairs: Pairs) -> impl IntoView {
    let Pairs { search, more, resource } = pairs;
    view! {
        <h2>"Allocated pairs"</h2>
        <div class="toolbar">
            <input type="search" placeholder="Address or request" aria-label="Search pairs"
                on:input=move |ev| search.set(event_target_value(&ev)) />
        </div>
        <Loaded resource show=move |page| {
            if page.rows.is_empty() {
                let none = if search.get_untracked().trim().is_empty() { "No address is allocated." } else { "No pair matches." };
                return view! { <p class="muted">{none}</p> }.into_any();
            }
            let load = load_more(page.next.is_some(), move || more.add(search.get_untracked()));
            view! {
                {table(&["VE IP", "LTM IP", "Request", "State"], page.rows, |p| view! {
                    <tr><td>{p.veip.clone()}</td><td>{p.ltmip.clone()}</td>
                    <td><a href=format!("/tickets/{}", p.ticket)>{p.ticket.clone()}</a></td>
                    <td>{p.status.as_str()}</td></tr>
                })}
                {load}
            }.into_any()
        } />
    }
}
