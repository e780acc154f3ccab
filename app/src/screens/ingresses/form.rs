//! `/ingresses/:ticket/new` and `/ingresses/:ticket/:name/edit`: the F5 Ingress form, with the
//! CIS annotations it will carry shown as the TLS choice changes them.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;

use super::parts::{CisAnnotations, RoutesEditor};
use super::{IngressChoices, IngressForm, SaveIngress, ingress_form_choices};
use crate::components::address::{AddressLine, ServiceChoice, ticket_and_name};
use crate::components::controls::BusyButton;
use crate::components::form::{Field, FormError, action_error, field_error, navigate_on_success, set_field};
use crate::components::loaded::Loaded;
use crate::domain::crd::IngressRule;
use crate::error::AppError;
use crate::i18n::t;

/// `/ingresses/:ticket/new` and `/ingresses/:ticket/:name/edit`
#[component]
pub fn IngressFormPage() -> impl IntoView {
    let choices = Resource::new(ticket_and_name(), |(ticket, name)| ingress_form_choices(ticket, name));
    view! { <Loaded resource=choices show=|choices| view! { <IngressFormBody choices /> }.into_any() /> }
}

/// The fields the form shows errors beside (each route's are beside the route).
const FIELDS: &[&str] = &["name", "rules", "tlsSecret"];

/// The form, once its choices (and the F5 Ingress it edits) are loaded.
#[component]
fn IngressFormBody(choices: IngressChoices) -> impl IntoView {
    let editing = choices.ingress.is_some();
    let ticket = choices.address.ticket.clone();
    let initial = match &choices.ingress {
        Some(i) => IngressForm {
            ticket: ticket.clone(),
            name: i.name.clone(),
            rules: i.rules.clone(),
            tls_secret: i.tls_secret.clone(),
            generation: Some(choices.address.generation),
        },
        None => {
            // NB: a new Ingress starts with one route to the first free Service, on `/`.
            let first = ServiceChoice::first_of(&choices.services).map(|(service, port)| IngressRule {
                host: None,
                path: "/".into(),
                service,
                port,
            });
            IngressForm { ticket: ticket.clone(), rules: first.into_iter().collect(), ..Default::default() }
        }
    };
    let form = RwSignal::new(initial);
    let routes = RwSignal::new(form.with_untracked(|f| f.rules.clone()));
    let current = move || {
        let mut f = form.get_untracked();
        f.rules = routes.get_untracked();
        f
    };
    let save = ServerAction::<SaveIngress>::new();
    let error = action_error(save);
    // NB: each route's error is beside its route, not on top of the form.
    let top = Signal::derive(move || {
        error.get().filter(|e| !matches!(e, AppError::Invalid { field, .. } if field.starts_with("rules[")))
    });
    navigate_on_success(save, move |name| format!("/ingresses/{ticket}/{name}"));
    let title = if editing {
        crate::tf!("ingresses.form.title_edit", name = form.with_untracked(|f| f.name.clone()))
    } else {
        t("ingresses.form.title_new").into()
    };
    let blocked = choices.add.clone();
    let is_blocked = blocked.is_some();
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        save.dispatch(SaveIngress { form: current() });
    };
    let cancel = format!("/ingresses#t-{}", choices.address.ticket);
    let mut secrets = choices.secrets.clone();
    if let Some(chosen) = form.with_untracked(|f| f.tls_secret.clone()).filter(|s| !secrets.contains(s)) {
        secrets.insert(0, chosen);
    }
    let cis = choices.cis.clone();
    let annotations = Signal::derive(move || cis.annotations(form.with(|f| f.tls_secret.is_some())).to_string());
    view! {
        <Title text=title.clone() />
        <h1>{title}</h1>
        <AddressLine address=choices.address.clone() />
        {blocked.clone().map(|r| view! { <div class="callout callout-bad">{r}</div> })}
        <form class="form" on:submit=submit novalidate>
            <FormError error=top fields=FIELDS />
            <Field label=t("ingresses.form.name") id="name" help=t("ingresses.form.name_help") error=field_error(error, "name")>
                <input id="name" required disabled=editing prop:value=move || form.with(|f| f.name.clone())
                    on:input=set_field(form, |f, v| f.name = v) />
            </Field>
            <RoutesEditor routes offered=choices.services.clone() error />
            <Field label=t("ingresses.tls_secret") id="tlsSecret" help=t("ingresses.form.tls_secret_help") error=field_error(error, "tlsSecret")>
                <select id="tlsSecret" on:change=set_field(form, |f, v| f.tls_secret = Some(v).filter(|s| !s.is_empty()))>
                    <option value="" selected=move || form.with(|f| f.tls_secret.is_none())>{t("ingresses.no_tls")}</option>
                    {secrets.into_iter().map(|s| view! {
                        <option value=s.clone() selected={let s = s.clone(); move || form.with(|f| f.tls_secret.as_ref() == Some(&s))}>{s.clone()}</option>
                    }).collect_view()}
                </select>
            </Field>
            <fieldset>
                <legend>{t("ingresses.form.for_cis")}</legend>
                <p class="muted">{crate::tf!("ingresses.form.class_and_annotations", class = choices.cis.class)}</p>
                <CisAnnotations annotations />
            </fieldset>
            <div class="form-actions">
                <span title=blocked.clone()>
                    <BusyButton label=t("common.save") busy_label=t("common.saving") busy=save.pending() blocked=is_blocked submit=true />
                </span>
                <A href=cancel attr:class="btn btn-ghost">{t("common.cancel")}</A>
            </div>
        </form>
    }
}
