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
use crate::components::server_html::ServerHtml;
use crate::domain::crd::{BondState, IpPair};
use crate::domain::policy::{lb_deletable, reason};
use crate::error::AppError;
use crate::i18n::t;

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
        <Title text=crate::tf!("loadbalancers.detail.title", name = name) />
        <div class="page-head">
            <h1>{crate::tf!("loadbalancers.detail.title", name = name)}</h1>
            <div class="actions">
                <A href=format!("/loadbalancers/{name}/edit") attr:class="btn">{t("common.edit")}</A>
                <ConfirmButton
                    label=t("common.delete")
                    question=crate::tf!("loadbalancers.delete_question", name = name)
                    reason=Signal::derive(move || deletable.clone())
                    on_confirm=move |_| { delete.dispatch(DeleteLoadbalancer { name: to_delete.clone() }); }
                />
            </div>
        </div>
        <p class="field-error" role="alert">{move || error.get().map(|e| e.message())}</p>
        {d.row.unreachable.clone().map(|why| view! {
            <div class="notice-bad" role="status">
                {crate::tf!("loadbalancers.detail.unreachable", cluster = d.row.cluster)}
                <span class="muted" lang="en">{why}</span>
            </div>
        })}
        {d.row.overlap.clone().map(|why| view! {
            <div class="notice-bad" role="status">
                {t("loadbalancers.detail.overlap")} <span lang="en">{why}</span>
            </div>
        })}
        {d.row.cis_not_ready.clone().map(|why| view! {
            <div class="notice-bad" role="status">
                {t("loadbalancers.detail.cis_not_ready")} <span lang="en">{why}</span>
            </div>
        })}
        <ServerHtml html=d.facts.clone() />
        <PairList pairs />
        <h2>{t("loadbalancers.detail.requests")}</h2>
        {table_or_none(
            d.tickets.clone(),
            t("loadbalancers.detail.requests_none"),
            &["loadbalancers.detail.col.request", "loadbalancers.detail.col.namespace", "loadbalancers.detail.col.phase"],
            |r| view! {
                <tr><td translate="no"><a href=format!("/tickets/{}", r.name)>{r.name.clone()}</a></td><td translate="no">{r.namespace.clone()}</td><td>{r.phase.clone()}</td></tr>
            },
        )}
    }
}

/// The load balancer's facts, as HTML. NB: static, so rendered by the server (escaped by Leptos's
/// renderer, like every page) and only placed by the browser: its code stays out of the bundle.
#[cfg(feature = "ssr")]
pub fn facts_html(d: &LbDetail) -> String {
    let d = d.clone();
    view! {
        <dl class="facts">
            <dt>{t("loadbalancers.fact.cluster")}</dt><dd translate="no">{d.row.cluster.clone()}</dd>
            <dt>{t("loadbalancers.fact.tenant")}</dt><dd translate="no">{d.partition.clone()}</dd>
            <dt>{t("loadbalancers.fact.ve")}</dt><dd>{format!("{} — {}", d.row.ve_addr, d.row.ve_cidr)}</dd>
            <dt>{t("loadbalancers.fact.ve_certificate")}</dt><dd>{if d.form.ve_skip_verify { t("loadbalancers.fact.not_verified") } else { t("loadbalancers.fact.verified") }}</dd>
            <dt>{t("loadbalancers.fact.ltm")}</dt><dd>{format!("{} — {}", d.row.ltm_url, d.row.ltm_cidr)}</dd>
            <dt>{t("loadbalancers.fact.cis_namespace")}</dt><dd translate="no">{d.form.cis_namespace.clone()}</dd>
            <dt>{t("loadbalancers.fact.nsselector")}</dt><dd translate="no">{d.form.nsselector.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ")}</dd>
            <dt>{t("loadbalancers.fact.projects")}</dt><dd>{if d.form.scope.is_empty() { t("loadbalancers.fact.every_project").to_string() } else { d.form.scope.join(", ") }}</dd>
            <dt>{t("loadbalancers.fact.reserved")}</dt><dd>{if d.form.reserved.is_empty() { "—".to_string() } else { d.form.reserved.clone() }}</dd>
            <dt>{t("loadbalancers.fact.ltm_token")}</dt><dd>{if d.token_set { t("loadbalancers.fact.set") } else { t("loadbalancers.fact.not_set") }}</dd>
            <dt>{t("loadbalancers.fact.ve_credentials")}</dt><dd>{if d.credentials_set { t("loadbalancers.fact.set") } else { t("loadbalancers.fact.not_set") }}</dd>
            <dt>{t("loadbalancers.fact.capacity")}</dt><dd><UsageBar used=d.row.pairs_used free=d.row.pairs_free /></dd>
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
        <h2>{t("loadbalancers.pairs.title")}</h2>
        <div class="toolbar">
            <input type="search" placeholder=t("loadbalancers.pairs.search_placeholder") aria-label=t("loadbalancers.pairs.search")
                on:input=move |ev| search.set(event_target_value(&ev)) />
        </div>
        <Loaded resource show=move |page| {
            if page.rows.is_empty() {
                let none = if search.get_untracked().trim().is_empty() {
                    t("loadbalancers.pairs.none")
                } else {
                    t("loadbalancers.pairs.no_match")
                };
                return view! { <p class="muted">{none}</p> }.into_any();
            }
            let load = load_more(page.next.is_some(), move || more.add(search.get_untracked()));
            view! {
                {table(&["loadbalancers.pairs.col.veip", "loadbalancers.pairs.col.ltmip", "loadbalancers.pairs.col.request", "loadbalancers.pairs.col.state"], page.rows, |p| view! {
                    <tr><td>{p.veip.clone()}</td><td>{p.ltmip.clone()}</td>
                    <td translate="no"><a href=format!("/tickets/{}", p.ticket)>{p.ticket.clone()}</a></td>
                    <td>{bond_state(p.status)}</td></tr>
                })}
                {load}
            }.into_any()
        } />
    }
}

/// A pair's state in words.
fn bond_state(state: BondState) -> &'static str {
    match state {
        BondState::Pending => t("loadbalancers.pairs.state.pending"),
        BondState::Bond => t("loadbalancers.pairs.state.bond"),
        BondState::Releasing => t("loadbalancers.pairs.state.releasing"),
    }
}
