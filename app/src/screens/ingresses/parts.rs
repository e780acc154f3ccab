//! What the F5 Ingress form and page share: the routes editor and the CIS annotations.

use leptos::prelude::*;

use crate::components::address::{NoneFree, ServiceChoice, ServicePicker};
use crate::domain::crd::IngressRule;
use crate::error::AppError;
use crate::i18n::t;

/// The annotations lbdesk writes for CIS (`key: value` lines), read-only.
#[component]
pub fn CisAnnotations(#[prop(into)] annotations: Signal<String>) -> impl IntoView {
    view! { <pre class="json" data-testid="annotations">{annotations}</pre> }
}

/// The message of `error` about route `row`'s host, path, Service or port.
fn route_error(error: Option<AppError>, row: usize) -> Option<String> {
    let e = error?;
    ["host", "path", "service", "port"].into_iter().find_map(|f| e.for_field(&format!("rules[{row}].{f}")))
}

/// Edits an F5 Ingress's routes: a host (blank: every host), a path prefix, a Service of
/// `offered` and one of its ports; each route's error beside it.
#[component]
pub fn RoutesEditor(
    routes: RwSignal<Vec<IngressRule>>,
    /// What may be picked.
    offered: Vec<ServiceChoice>,
    /// The save's error.
    error: Signal<Option<AppError>>,
) -> impl IntoView {
    let offered = StoredValue::new(offered);
    let add = move |_| {
        if let Some((service, port)) = offered.with_value(|o| ServiceChoice::first_of(o)) {
            routes.update(|r| r.push(IngressRule { host: None, path: "/".into(), service, port }));
        }
    };
    let edit = move |i: usize, change: &dyn Fn(&mut IngressRule)| {
        routes.update(|r| {
            if let Some(route) = r.get_mut(i) {
                change(route);
            }
        })
    };
    let all = Signal::derive(move || error.get().and_then(|e| e.for_field("rules")));
    // NB: the rows re-render when their number changes, not on every keystroke.
    let count = Memo::new(move |_| routes.with(Vec::len));
    view! {
        <div class="field" class:has-error=move || all.get().is_some()>
            <span class="label" id="routes-label">{t("ingresses.routes")}</span>
            <div class="routes" role="group" aria-labelledby="routes-label">
                {move || (0..count.get()).map(|i| view! {
                    <div class="route-row" class:has-error=move || route_error(error.get(), i).is_some()>
                        <input aria-label=crate::tf!("ingresses.route.host", n = i + 1) placeholder=t("ingresses.every_host")
                            prop:value=move || routes.with(|r| r.get(i).and_then(|r| r.host.clone())).unwrap_or_default()
                            on:input=move |ev| {
                                let host = event_target_value(&ev);
                                edit(i, &|r| r.host = Some(host.clone()).filter(|h| !h.is_empty()));
                            } />
                        <input aria-label=crate::tf!("ingresses.route.path", n = i + 1) placeholder="/"
                            prop:value=move || routes.with(|r| r.get(i).map(|r| r.path.clone())).unwrap_or_default()
                            on:input=move |ev| {
                                let path = event_target_value(&ev);
                                edit(i, &|r| r.path = path.clone());
                            } />
                        <ServicePicker offered row=i
                            chosen=Signal::derive(move || routes.with(|r| r.get(i).map(|r| (r.service.clone(), r.port))).unwrap_or_default())
                            on_pick=move |(service, port): (String, u16)| edit(i, &|r| { r.service = service.clone(); r.port = port; }) />
                        <button type="button" class="btn btn-ghost" aria-label=crate::tf!("ingresses.route.remove", n = i + 1)
                            on:click=move |_| routes.update(|r| { if i < r.len() { r.remove(i); } })>"×"</button>
                        <span class="field-error" role="alert">{move || route_error(error.get(), i)}</span>
                    </div>
                }).collect_view()}
                <NoneFree offered />
                <button type="button" class="btn btn-ghost" on:click=add disabled=move || offered.with_value(Vec::is_empty)>{t("ingresses.route.add")}</button>
            </div>
            <span class="help">{t("ingresses.routes_help")}</span>
            <span class="field-error" role="alert">{move || all.get()}</span>
        </div>
    }
}
