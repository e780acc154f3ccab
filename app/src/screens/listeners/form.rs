//! `/listeners/:ticket/new` and `/listeners/:ticket/:name/edit`: the listener form, with its
//! weights shown live and the AS3 preview before saving.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;

use super::{
    ListenerChoices, ListenerForm, PreviewListener, SaveListener, listener_form_choices, protocol_label, session_label,
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

/// Why a field cannot change on edit.
const FIXED: &str = "The port and protocol of a listener cannot change; create another listener.";

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
        format!("Edit listener {}", form.with_untracked(|f| f.name.clone()))
    } else {
        "Add a listener".into()
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
            <Field label="Name" id="name" help="Lower-case letters, digits and '-'." error=field_error(error, "name")>
                <input id="name" required disabled=editing prop:value=move || form.with(|f| f.name.clone())
                    on:input=set_field(form, |f, v| f.name = v) />
            </Field>
            <Field label="Port" id="port" help=if editing { FIXED } else { "Unique on this address." } error=field_error(error, "port")>
                <input id="port" type="number" min="1" max="65535" disabled=editing
                    prop:value=move || form.with(|f| f.port.to_string())
                    on:input=set_field(form, |f, v| f.port = v.trim().parse().unwrap_or_default()) />
            </Field>
            <Field label="Protocol" id="protocol" help=if editing { FIXED } else { "" } error=field_error(error, "protocol")>
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
            <Field label="Persistence" id="session" help="Cookie persistence needs HTTP or HTTPS." error=field_error(error, "session")>
                <select id="session" on:change=set_field(form, |f, v| {
                    f.session = [Session::None, Session::SourceAddress, Session::Cookie].into_iter().find(|s| session_label(*s) == v).unwrap_or_default();
                })>
                    {[Session::None, Session::SourceAddress, Session::Cookie].into_iter().map(|s| view! {
                        <option value=session_label(s) selected=move || form.with(|f| f.session == s)
                            disabled=move || s == Session::Cookie && form.with(|f| !f.protocol.is_http())>{session_label(s)}</option>
                    }).collect_view()}
                </select>
            </Field>
            <ServicesEditor services offered=choices.services.clone() error=field_error(error, "services") />
            <div class="form-actions">
                <BusyButton label=t("common.preview_as3") busy_label=t("common.rendering") busy=preview.pending()
                    on_click=move |_| { preview.dispatch(PreviewListener { form: current() }); } />
                <BusyButton label=t("common.save") busy_label=t("common.saving") busy=save.pending() blocked=blocked.is_some() submit=true />
                <A href=cancel attr:class="btn btn-ghost">"Cancel"</A>
            </div>
        </form>
        {move || preview.value().get().and_then(Result::ok).map(|p| view! { <PreviewPanel preview=p /> })}
    }
}
