//! `/loadbalancers`: every load balancer, searchable by name or cluster.

use leptos::prelude::*;
use leptos_meta::Title;

use super::{LbRow, list_loadbalancers};
use crate::components::controls::UsageBar;
use crate::components::layout::UserResource;
use crate::components::list::{ListHead, NoRows, table};
use crate::components::loaded::Loaded;
use crate::domain::access::{Target, Verb};
use crate::i18n::t;

/// `/loadbalancers`
#[component]
pub fn Loadbalancers() -> impl IntoView {
    let user = expect_context::<UserResource>();
    let search = RwSignal::new(String::new());
    let rows = Resource::new(move || search.get(), list_loadbalancers);
    view! {
        <Title text=t("loadbalancers.title") />
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                match user.await {
                    Ok(u) if u.may(Verb::Read, Target::Loadbalancers) => view! {
                        <ListHead title=t("loadbalancers.title") create_href="/loadbalancers/new" create_label=t("loadbalancers.new")
                            search_label=t("loadbalancers.search") placeholder=t("loadbalancers.search_placeholder") search />
                    }.into_any(),
                    _ => ().into_any(),
                }
            })}
        </Suspense>
        <Loaded resource=rows show=lb_table />
    }
}

/// The rows, or an invitation to register the first load balancer.
fn lb_table(rows: Vec<LbRow>) -> AnyView {
    if rows.is_empty() {
        return view! {
            <NoRows message=t("loadbalancers.empty") hint=t("loadbalancers.empty_hint") />
        }
        .into_any();
    }
    let headers = &[
        "loadbalancers.col.name",
        "loadbalancers.col.cluster",
        "loadbalancers.col.ve",
        "loadbalancers.col.ltm",
        "loadbalancers.col.pairs",
        "loadbalancers.col.requests",
        "loadbalancers.col.ready",
    ];
    table(headers, rows, |r| {
        view! {
            <tr>
                <td translate="no"><a href=format!("/loadbalancers/{}", r.name)>{r.name.clone()}</a></td>
                <td translate="no">{r.cluster.clone()}</td>
                <td>{r.ve_addr.clone()}<div class="muted">{r.ve_cidr.clone()}</div></td>
                <td>{r.ltm_url.clone()}<div class="muted">{r.ltm_cidr.clone()}</div></td>
                <td><UsageBar used=r.pairs_used free=r.pairs_free /></td>
                <td>{r.tickets}</td>
                <td>{match (&r.overlap, &r.unreachable, &r.cis_not_ready, r.ready) {
                    (Some(why), ..) => view! { <span class="badge badge-bad" title=why.clone() data-object-title="">{t("loadbalancers.badge.overlap")}</span> }.into_any(),
                    (None, Some(why), ..) => view! { <span class="badge badge-bad" title=why.clone() data-object-title="">{t("loadbalancers.badge.unreachable")}</span> }.into_any(),
                    (None, None, Some(why), _) => view! { <span class="badge badge-bad" title=why.clone() data-object-title="">{t("loadbalancers.badge.cis_not_ready")}</span> }.into_any(),
                    (None, None, None, true) => view! { <span class="badge badge-ok">{t("loadbalancers.badge.ready")}</span> }.into_any(),
                    (None, None, None, false) => view! { <span class="badge badge-info">{t("loadbalancers.badge.pending")}</span> }.into_any(),
                }}</td>
            </tr>
        }
    })
}
