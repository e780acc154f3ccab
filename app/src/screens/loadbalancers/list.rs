//! `/loadbalancers`: every load balancer, searchable by name or cluster.

use leptos::prelude::*;
use leptos_meta::Title;

use super::{LbRow, list_loadbalancers};
use crate::components::controls::UsageBar;
use crate::components::layout::UserResource;
use crate::components::list::{ListHead, NoRows, table};
use crate::components::loaded::Loaded;
use crate::domain::access::{Target, Verb};

/// `/loadbalancers`
#[component]
pub fn Loadbalancers() -> impl IntoView {
    let user = expect_context::<UserResource>();
    let search = RwSignal::new(String::new());
    let rows = Resource::new(move || search.get(), list_loadbalancers);
    view! {
        <Title text="Load balancers" />
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                match user.await {
                    Ok(u) if u.may(Verb::Read, Target::Loadbalancers) => view! {
                        <ListHead title="Load balancers" create_href="/loadbalancers/new" create_label="New load balancer"
                            search_label="Search load balancers" placeholder="Search by name or cluster" search />
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
            <NoRows message="No load balancers yet." hint="Register the first one: LTM, VE and the CIS of a member cluster." />
        }
        .into_any();
    }
    table(&["Name", "Cluster", "VE", "LTM", "Address pairs", "Requests", "Ready"], rows, |r| {
        view! {
            <tr>
                <td><a href=format!("/loadbalancers/{}", r.name)>{r.name.clone()}</a></td>
                <td>{r.cluster.clone()}</td>
                <td>{r.ve_addr.clone()}<div class="muted">{r.ve_cidr.clone()}</div></td>
                <td>{r.ltm_url.clone()}<div class="muted">{r.ltm_cidr.clone()}</div></td>
                <td><UsageBar used=r.pairs_used free=r.pairs_free /></td>
                <td>{r.tickets}</td>
                <td>{match (&r.unreachable, &r.cis_not_ready, r.ready) {
                    (Some(why), _, _) => view! { <span class="badge badge-bad" title=why.clone()>"Cluster unreachable"</span> }.into_any(),
                    (None, Some(why), _) => view! { <span class="badge badge-bad" title=why.clone()>"CIS not ready"</span> }.into_any(),
                    (None, None, true) => view! { <span class="badge badge-ok">"Ready"</span> }.into_any(),
                    (None, None, false) => view! { <span class="badge badge-info">"Pending"</span> }.into_any(),
                }}</td>
            </tr>
        }
    })
}
