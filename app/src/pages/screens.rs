//! The five screens; each gets its own module as it is built.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::components::layout::UserResource;

#[component]
fn ComingSoon(title: &'static str, what: &'static str) -> impl IntoView {
    view! {
        <Title text=title />
        <h1>{title}</h1>
        <div class="empty-state">
            <p>{what}</p>
            <p class="muted">"Coming soon."</p>
        </div>
    }
}

/// Screen 1: abstract load balancers (platform admins only).
#[component]
pub fn Loadbalancers() -> impl IntoView {
    let user = expect_context::<UserResource>();
    view! {
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                match user.await {
                    Ok(u) if u.is_admin() => view! {
                        <ComingSoon title="Load balancers" what="Register tier-1 LTM, tier-2 VE and the CIS of a cluster." />
                    }.into_any(),
                    _ => view! { <NotAllowed /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

/// Shown when a signed-in user opens a screen their role does not include.
#[component]
pub fn NotAllowed() -> impl IntoView {
    view! {
        <Title text="Not allowed" />
        <div class="empty-state">
            <h1>"Not allowed"</h1>
            <p>"This screen is for platform admins."</p>
        </div>
    }
}

/// Screen 2: address requests (tickets).
#[component]
pub fn Tickets() -> impl IntoView {
    let user = expect_context::<UserResource>();
    view! {
        <Title text="Address requests" />
        <h1>"Address requests"</h1>
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                user.await.ok().map(|u| view! {
                    <p class="muted" data-testid="project">
                        "Project: " {u.project.unwrap_or_else(|| "(none)".into())}
                    </p>
                })
            })}
        </Suspense>
        <div class="empty-state"><p class="muted">"Coming soon."</p></div>
    }
}

/// Screen 3: listeners.
#[component]
pub fn Listeners() -> impl IntoView {
    view! { <ComingSoon title="Listeners" what="Virtual servers on the addresses of your project." /> }
}

/// Screen 4: canary and content rules.
#[component]
pub fn Rules() -> impl IntoView {
    view! { <ComingSoon title="Rules" what="Canary and content routing on a listener." /> }
}

/// Screen 5: F5 Ingresses.
#[component]
pub fn Ingresses() -> impl IntoView {
    view! { <ComingSoon title="F5 Ingress" what="Ingresses served by the F5 CIS of your cluster." /> }
}
