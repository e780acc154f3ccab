//! What the screens built on an address (listeners, rules, F5 Ingresses) share: the address's
//! summary, the Services a namespace offers, the weighted-services editor and its split bar.

use leptos::prelude::*;
use leptos_router::hooks::{use_navigate, use_params_map};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::components::controls::{ConfirmButton, PhaseBadge, ReasonButton};
use crate::components::list::{More, NoRows, ProjectFilter, load_more, project_key, read_pages};
use crate::components::loaded::{Loaded, poll};
use crate::domain::crd::ServiceRef;
use crate::error::AppError;
use crate::i18n::t;
use crate::wire::Page;
pub use crate::wire::{ADDRESS_PAGE, AddressSummary, Carried, ServiceChoice};

/// The route's `:ticket` and `:name` (empty when absent), for the pages of a thing on an address.
pub fn ticket_and_name() -> impl Fn() -> (String, String) + Copy + Send + Sync + 'static {
    let params = use_params_map();
    move || params.with(|p| (p.get("ticket").unwrap_or_default(), p.get("name").unwrap_or_default()))
}

/// The route's thing on an address, read by `fetch(ticket, name)`, and read again while the
/// member cluster is catching up with its address (`address` of it) and now and then after.
pub fn live_on_address<T, F, Fut>(fetch: F, address: fn(&T) -> &AddressSummary) -> Resource<Result<T, AppError>>
where
    T: Clone + Send + Sync + Serialize + DeserializeOwned + 'static,
    F: Fn(String, String) -> Fut + Copy + Send + Sync + 'static,
    Fut: Future<Output = Result<T, AppError>> + Send + 'static,
{
    let key = ticket_and_name();
    let tick = RwSignal::new(0u32);
    let resource = Resource::new(move || (key(), tick.get()), move |((ticket, name), _)| fetch(ticket, name));
    let moving = Memo::new(move |_| match resource.get() {
        Some(Ok(thing)) => address(&thing).carried == Carried::Pending,
        Some(Err(_)) => false,
        None => true,
    });
    poll(tick, moving);
    resource
}

/// A list page of the project's addresses and the things on them (`title`), read a page of
/// addresses at a time: each address drawn by `group`, or `empty` and `hint` when there is none.
#[component]
pub fn AddressList<G, F, Fut>(
    title: &'static str,
    /// Reads the groups of a project (empty: all the caller may see) after a cursor.
    fetch: F,
    group: fn(G) -> AnyView,
    empty: &'static str,
    hint: &'static str,
) -> impl IntoView
where
    G: Clone + Send + Sync + Serialize + DeserializeOwned + 'static,
    F: Fn(String, String) -> Fut + Copy + Send + Sync + 'static,
    Fut: Future<Output = Result<Page<G>, AppError>> + Send + 'static,
{
    let project = RwSignal::new(String::new());
    let key = project_key(project);
    let more = More::default();
    let groups = Resource::new(
        move || (key(), more.pages(&key())),
        move |((project, _), pages)| read_pages(pages, move |after| fetch(project.clone(), after)),
    );
    let show = move |page: Page<G>| {
        if page.rows.is_empty() {
            return view! { <NoRows message=empty hint /> }.into_any();
        }
        let load = load_more(page.next.is_some(), move || more.add(untrack(key)));
        view! { {page.rows.into_iter().map(group).collect_view()} {load} }.into_any()
    };
    view! {
        <leptos_meta::Title text=title />
        <div class="page-head"><h1>{title}</h1></div>
        <ProjectFilter project />
        <Loaded resource=groups show />
    }
}

/// The address's name, namespace, VE IP and phase, in one line under a page's heading.
#[component]
pub fn AddressLine(address: AddressSummary) -> impl IntoView {
    view! {
        <p class="muted">
            {t("common.address.request")} " " <a translate="no" href=format!("/tickets/{}", address.ticket)>{address.ticket.clone()}</a>
            {format!(" · {} / {} · VE {} ", address.cluster, address.namespace, if address.veip.is_empty() { "—" } else { &address.veip })}
            <PhaseBadge phase=address.phase />
        </p>
    }
}

/// One address of a list page: its name and whether the member cluster carries it, the button
/// adding one more thing to it (greyed with the reason when it cannot), its line, and below
/// them `children` (its things).
#[component]
pub fn AddressGroup(
    address: AddressSummary,
    /// The add button's label.
    add_label: &'static str,
    /// Where the add button goes.
    add_href: String,
    /// Why nothing can be added now; `None` when it can.
    add: Option<String>,
    children: Children,
) -> impl IntoView {
    let ticket = address.ticket.clone();
    view! {
        <section class="group" id=format!("t-{ticket}") aria-label=crate::tf!("common.address.request_named", ticket = ticket)>
            <div class="page-head">
                <h2>{ticket.clone()} " " <CarriedBadge carried=address.carried.clone() /></h2>
                <ReasonButton label=add_label reason=Signal::derive(move || add.clone())
                    on_click=move |_| use_navigate()(&add_href, Default::default()) />
            </div>
            <AddressLine address />
            {children()}
        </section>
    }
}

/// The top of the page of one thing on an address (a listener, an F5 Ingress): its heading with
/// whether the member cluster carries it, Edit and Delete (each greyed with its reason), the
/// delete's error, the address, and why the cluster refused the address's change if it did.
#[component]
pub fn ThingHead(
    /// "Listener web".
    title: String,
    address: AddressSummary,
    edit_href: String,
    /// Why it cannot be edited now.
    edit: Option<String>,
    /// Asked before deleting.
    question: String,
    /// Why it cannot be deleted now.
    delete: Option<String>,
    #[prop(into)] on_delete: Callback<()>,
    /// The delete's error.
    error: Signal<Option<AppError>>,
) -> impl IntoView {
    let refused = match &address.carried {
        Carried::Refused(why) => Some(why.clone()),
        _ => None,
    };
    view! {
        <leptos_meta::Title text=title.clone() />
        <div class="page-head">
            <h1>{title} " " <CarriedBadge carried=address.carried.clone() /></h1>
            <div class="actions">
                <ReasonButton label=t("common.edit") reason=Signal::derive(move || edit.clone())
                    on_click=move |_| use_navigate()(&edit_href, Default::default()) />
                <ConfirmButton label=t("common.delete") question reason=Signal::derive(move || delete.clone())
                    on_confirm=move |_| on_delete.run(()) />
            </div>
        </div>
        <p class="field-error" role="alert">{move || error.get().map(|e| e.message())}</p>
        <AddressLine address />
        {refused.map(|why| view! { <div class="callout callout-bad"><strong>{t("common.address.not_in_cluster")}</strong><span lang="en">{why}</span></div> })}
    }
}

/// What the member cluster holds of a thing (`deployed`, introduced by `held`), or `missing`.
#[component]
pub fn Deployed(deployed: Option<String>, held: &'static str, missing: &'static str) -> impl IntoView {
    let shown = deployed.is_some();
    view! {
        <h2>{t("common.address.in_member_cluster")}</h2>
        <p class="muted" data-testid=(!shown).then_some("deployed")>{if shown { held } else { missing }}</p>
        {deployed.map(|text| view! { <pre class="json" data-testid="deployed">{text}</pre> })}
    }
}

/// Whether the member cluster carries the current version, as a badge with the reason.
#[component]
pub fn CarriedBadge(carried: Carried) -> impl IntoView {
    let (class, text, title) = match carried {
        Carried::Yes => ("badge badge-ok", t("common.carried.yes"), String::new()),
        Carried::Pending => ("badge badge-info", t("common.carried.pending"), String::new()),
        Carried::Refused(why) => ("badge badge-bad", t("common.carried.refused"), why),
        Carried::Idle => ("badge badge-neutral", t("common.carried.idle"), String::new()),
    };
    // NB: the reason is the ticket's condition, English as every object field is.
    view! { <span class=class title=title data-object-title="" data-testid="carried">{text}</span> }
}

/// Weights as a bar split between the services, each part labelled. Static: a list renders a
/// thousand of them, so it carries no reactive node; an editor re-renders it as weights change.
#[component]
pub fn SplitBar(services: Vec<ServiceRef>) -> impl IntoView {
    let label = split_label(&services);
    let parts = services.into_iter().enumerate().filter(|(_, s)| s.weight > 0).map(|(i, s)| {
        let style = format!("flex-grow: {}", s.weight);
        view! { <span class=format!("split-part split-{}", i % 6) style=style>{format!("{} {}%", s.service, s.weight)}</span> }
    });
    view! { <div class="split" role="img" translate="no" aria-label=label.clone() title=label>{parts.collect_view()}</div> }
}

/// What a split bar says to a screen reader.
pub fn split_label(services: &[ServiceRef]) -> String {
    services.iter().map(|s| format!("{}:{} {}%", s.service, s.port, s.weight)).collect::<Vec<_>>().join(", ")
}

/// Edits weighted services: a Service of `offered`, one of its ports, a weight; rows added and
/// removed; the split bar and the sum shown live.
#[component]
pub fn ServicesEditor(
    /// The services being edited.
    services: RwSignal<Vec<ServiceRef>>,
    /// What may be picked.
    offered: Vec<ServiceChoice>,
    /// The message beside the editor.
    #[prop(into)]
    error: Signal<Option<String>>,
) -> impl IntoView {
    let offered = StoredValue::new(offered);
    let add = move |_| {
        if let Some((service, port)) = offered.with_value(|o| ServiceChoice::first_of(o)) {
            services.update(|s| {
                let weight = if s.is_empty() { 100 } else { 0 };
                s.push(ServiceRef { service, port, weight })
            });
        }
    };
    let total = move || services.with(|s| s.iter().map(|s| s.weight).sum::<u32>());
    // NB: the rows re-render when their number changes, not on every keystroke.
    let count = Memo::new(move |_| services.with(Vec::len));
    view! {
        <div class="field" class:has-error=move || error.get().is_some()>
            <span class="label" id="services-label">{t("common.services")}</span>
            <div class="services" role="group" aria-labelledby="services-label">
                {move || (0..count.get()).map(|i| view! {
                    <div class="service-row">
                        <ServicePicker offered row=i
                            chosen=Signal::derive(move || services.with(|s| s.get(i).map(|r| (r.service.clone(), r.port))).unwrap_or_default())
                            on_pick=move |(name, port): (String, u16)| services.update(|s| if let Some(row) = s.get_mut(i) { row.service = name; row.port = port; }) />
                        <input type="number" min="0" max="100" class="weight" aria-label=crate::tf!("common.services.weight", n = i + 1)
                            prop:value=move || services.with(|s| s.get(i).map(|r| r.weight.to_string())).unwrap_or_default()
                            on:input=move |ev| {
                                let weight = event_target_value(&ev).trim().parse().unwrap_or_default();
                                services.update(|s| if let Some(row) = s.get_mut(i) { row.weight = weight; });
                            } />
                        <span class="muted">"%"</span>
                        <button type="button" class="btn btn-ghost" aria-label=crate::tf!("common.services.remove", n = i + 1)
                            on:click=move |_| services.update(|s| { if i < s.len() { s.remove(i); } })>"×"</button>
                    </div>
                }).collect_view()}
                <NoneFree offered />
                <button type="button" class="btn btn-ghost" on:click=add disabled=move || offered.with_value(Vec::is_empty)>{t("common.services.add")}</button>
            </div>
            {move || view! { <SplitBar services=services.get() /> }}
            <span class="help" data-testid="weight-sum" class:field-error=move || total() != 100>
                {move || crate::tf!("common.services.sum", total = total())}
            </span>
            <span class="field-error" role="alert">{move || error.get()}</span>
        </div>
    }
}

/// A Service of `offered` and one of its ports, as two selects (of row `row`, counted from 0);
/// picking a Service picks its first port.
#[component]
pub fn ServicePicker(
    offered: StoredValue<Vec<ServiceChoice>>,
    row: usize,
    /// The Service and port chosen now.
    #[prop(into)]
    chosen: Signal<(String, u16)>,
    /// Called with the new choice.
    #[prop(into)]
    on_pick: Callback<(String, u16)>,
) -> impl IntoView {
    let ports_of = move |service: &str| {
        offered.with_value(|o| o.iter().find(|c| c.name == service).map(|c| c.ports.clone()).unwrap_or_default())
    };
    view! {
        <select aria-label=crate::tf!("common.services.service", n = row + 1) on:change=move |ev| {
            let name = event_target_value(&ev);
            let port = ports_of(&name).first().copied().unwrap_or_default();
            on_pick.run((name, port));
        }>
            {move || {
                let chosen = chosen.get().0;
                let mut names: Vec<String> = offered.with_value(|o| o.iter().map(|c| c.name.clone()).collect());
                if !chosen.is_empty() && !names.contains(&chosen) {
                    names.insert(0, chosen.clone());
                }
                names.into_iter().map(|n| view! { <option value=n.clone() selected=n == chosen>{n.clone()}</option> }).collect_view()
            }}
        </select>
        <select aria-label=crate::tf!("common.services.port", n = row + 1) on:change=move |ev| {
            let port = event_target_value(&ev).parse().unwrap_or_default();
            on_pick.run((chosen.get_untracked().0, port));
        }>
            {move || {
                let (name, chosen) = chosen.get();
                let mut ports = ports_of(&name);
                if !ports.contains(&chosen) {
                    ports.insert(0, chosen);
                }
                ports.into_iter().map(|p| view! { <option value=p.to_string() selected=p == chosen>{p.to_string()}</option> }).collect_view()
            }}
        </select>
    }
}

/// What a Service picker says when the namespace has no free Service.
#[component]
pub fn NoneFree(offered: StoredValue<Vec<ServiceChoice>>) -> impl IntoView {
    move || {
        offered.with_value(Vec::is_empty).then(|| {
            view! {
                <p class="muted">{t("common.services.none_free")}</p>
            }
        })
    }
}
