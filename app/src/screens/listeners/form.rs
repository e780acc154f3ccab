//! `/listeners/:ticket/new` and `/listeners/:ticket/:name/edit`: the listener form, with its
//! weights shown live and the AS3 preview before saving.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;

use super::{
    ListenerChoices, ListenerForm, PreviewListener, SaveListener, listener_form_choices, protocol_label, session_label,
    session_value,
};
use crate::components::address::{AddressLine, ServicesEditor, ticket_and_name};
use crate::components::controls::BusyButton;
use crate::components::form::{Field, FormError, action_error, field_error, navigate_on_success, set_field};
use crate::components::loaded::Loaded;
use crate::components::preview::PreviewPanel;
use crate::domain::crd::{Protocol, Session};
use crate::i18n::t;

/// `/listeners/:ticket/new` and `/listeners/:ticket/:name/edit`
#[component]
pub fn ListenerFormPage() -> impl IntoView {
    let choices = Resource::new(ticket_and_name(), |(ticket, name)| listener_form_choices(ticket, name));
    view! { <Loaded resource=choices show=|choices| view! { <ListenerFormBody choices /> }.into_any() /> }
}

/// The fields the form shows errors beside.
const FIELDS: &[&str] = &["name", "port", "protocol", "session", "services"];

/// Why a field cannot change on edit (a key).
const FIXED: &str = "listeners.form.fixed";

/// The form, once its choices (and the listener it edits) are loaded.
#[component]
fn ListenerFormBody(choices: ListenerChoices) -> impl IntoView {
    let editing = choices.listener.is_some();
    let initial = match &choices.listener {
        Some(l) => ListenerForm {
            ticket: choices.address.ticket.clone(),
            name: l.name.clone(),
            port: l.port,
            protocol: l.protocol,
            session: l.session,
            services: l.services.clone(),
            generation: Some(choices.address.generation),
        },
        None => ListenerForm { ticket: choices.address.ticket.clone(), port: 80, ..Default::default() },
    };
    let form = RwSignal::new(initial);
    let services = RwSignal::new(form.with_untracked(|f| f.services.clone()));
    let current = move || {
        let mut f = form.get();
        f.services = services.get();
        f
    };
    let save = ServerAction::<SaveListener>::new();
    let preview = ServerAction::<PreviewListener>::new();
    let ticket = choices.address.ticket.clone();
    let (save_error, preview_error) = (action_error(save), action_error(preview));
    let error = Signal::derive(move || save_error.get().or_else(|| preview_error.get()));
    navigate_on_success(save, move |name| format!("/listeners/{ticket}/{name}"));
    let title = if editing {
        crate::tf!("listeners.form.title_edit", name = form.with_untracked(|f| f.name.clone()))
    } else {
        t("listeners.form.title_new").to_string()
    };
    let blocked = if editing { None } else { choices.add.clone() };
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        save.dispatch(SaveListener { form: current() });
    };
    let cancel = format!("/listeners#t-{}", choices.address.ticket);
    view! {
        <Title text=title.clone() />
        <h1>{title}</h1>
        <AddressLine address=choices.address.clone() />
        {blocked.clone().map(|r| view! { <div class="callout callout-bad">{r}</div> })}
        <form class="form" on:submit=submit novalidate>
            <FormError error fields=FIELDS />
            <Field label=t("listeners.field.name") id="name" help=t("listeners.form.name_help") error=field_error(error, "name")>
                <input id="name" required disabled=editing prop:value=move || form.with(|f| f.name.clone())
                    on:input=set_field(form, |f, v| f.name = v) />
            </Field>
            <Field label=t("listeners.field.port") id="port" help=t(if editing { FIXED } else { "listeners.form.port_help" }) error=field_error(error, "port")>
                <input id="port" type="number" min="1" max="65535" disabled=editing
                    prop:value=move || form.with(|f| f.port.to_string())
                    on:input=set_field(form, |f, v| f.port = v.trim().parse().unwrap_or_default()) />
            </Field>
            <Field label=t("listeners.field.protocol") id="protocol" help=if editing { t(FIXED) } else { "" } error=field_error(error, "protocol")>
                <select id="protocol" disabled=editing on:change=set_field(form, |f, v| {
                    f.protocol = Protocol::ALL.into_iter().find(|p| p.as_str() == v).unwrap_or_default();
                    if !f.protocol.is_http() && f.session == Session::Cookie {
                        f.session = Session::None;
                    }
                })>
                    {Protocol::ALL.into_iter().map(|p| view! {
                        <option value=p.as_str() selected=move || form.with(|f| f.protocol == p)>{protocol_label(p)}</option>
                    }).collect_view()}
                </select>
            </Field>
            <Field label=t("listeners.field.persistence") id="session" help=t("listeners.form.session_help") error=field_error(error, "session")>
                <select id="session" on:change=set_field(form, |f, v| {
                    f.session = [Session::None, Session::SourceAddress, Session::Cookie].into_iter().find(|s| session_value(*s) == v).unwrap_or_default();
                })>
                    {[Session::None, Session::SourceAddress, Session::Cookie].into_iter().map(|s| view! {
                        <option value=session_value(s) selected=move || form.with(|f| f.session == s)
                            disabled=move || s == Session::Cookie && form.with(|f| !f.protocol.is_http())>{session_label(s)}</option>
                    }).collect_view()}
                </select>
            </Field>
            <ServicesEditor services offered=choices.services.clone() error=field_error(error, "services") />
            <div class="form-actions">
                <BusyButton label=t("common.preview_as3") busy_label=t("common.rendering") busy=preview.pending()
                    on_click=move |_| { preview.dispatch(PreviewListener { form: current() }); } />
                <BusyButton label=t("common.save") busy_label=t("common.saving") busy=save.pending() blocked=blocked.is_some() submit=true />
                <A href=cancel attr:class="btn btn-ghost">{t("common.cancel")}</A>
            </div>
        </form>
        {move || preview.value().get().and_then(Result::ok).map(|p| view! { <PreviewPanel preview=p /> })}
    }
}
