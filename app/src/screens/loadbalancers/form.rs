//! `/loadbalancers/new` and `/loadbalancers/:name/edit`: the form, with the fields a load
//! balancer in use may not change locked, and write-only credentials.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;

use super::{LbChoices, LbDetail, LbForm, SaveLoadbalancer, get_loadbalancer, loadbalancer_choices};
use crate::components::controls::{BusyButton, KeyValueEditor};
use crate::components::form::{Field, FormError, action_error, editor, field_error, navigate_on_success, set_field};
use crate::domain::policy::{lb_field_editable, reason};
use crate::i18n::t;

/// `/loadbalancers/new` and `/loadbalancers/:name/edit`
#[component]
pub fn LoadbalancerForm() -> impl IntoView {
    editor(loadbalancer_choices, get_loadbalancer, |(choices, detail)| {
        view! { <LbFormBody choices detail /> }.into_any()
    })
}

/// The fields the form shows errors beside.
const LB_FIELDS: &[&str] = &[
    "name",
    "metadata.name",
    "ltm.url",
    "ltm.token",
    "ltm.cidr",
    "ve.addr",
    "ve.user",
    "ve.cidr",
    "cluster",
    "nsselector",
    "partition",
    "cis.namespace",
    "scope",
    "reserved",
];

/// The form itself, once its choices (and the load balancer it edits) are loaded.
#[component]
fn LbFormBody(choices: LbChoices, detail: Option<LbDetail>) -> impl IntoView {
    let editing = detail.is_some();
    let initial = detail.as_ref().map(|d| d.form.clone()).unwrap_or_else(|| LbForm {
        cluster: choices.clusters.first().cloned().unwrap_or_default(),
        cis_namespace: "kube-system".into(),
        ..Default::default()
    });
    let in_use = detail.as_ref().map(|d| d.row.tickets).unwrap_or(0);
    let (token_set, credentials_set) =
        detail.as_ref().map(|d| (d.token_set, d.credentials_set)).unwrap_or((false, false));
    let form = RwSignal::new(initial);
    let nsselector = RwSignal::new(form.get_untracked().nsselector.clone());
    let save = ServerAction::<SaveLoadbalancer>::new();
    let error = action_error(save);
    navigate_on_success(save, |name| format!("/loadbalancers/{name}"));
    let locked = move |field: &'static str| reason(&lb_field_editable(field, in_use));
    let set = move |put: fn(&mut LbForm, String)| set_field(form, put);
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let mut f = form.get_untracked();
        f.nsselector = nsselector.get_untracked();
        save.dispatch(SaveLoadbalancer { form: f });
    };
    let title = if editing {
        crate::tf!("loadbalancers.form.title_edit", name = form.get_untracked().name)
    } else {
        t("loadbalancers.new").to_string()
    };
    // Said under a credential: it goes one way only.
    let secret_help = t("loadbalancers.form.secret_help");
    let lock_note =
        move |field: &'static str| locked(field).map(|r| view! { <span class="locked" role="note">{r}</span> });
    // A required field of a tier (its address, its range), locked while the rule says so.
    let tier_field = move |label: &'static str,
                           id: &'static str,
                           field: &'static str,
                           help: &'static str,
                           placeholder: &'static str,
                           get: fn(&LbForm) -> String,
                           put: fn(&mut LbForm, String)| {
        view! {
            <Field label id help error=field_error(error, field)>
                <input id=id required placeholder=placeholder disabled=locked(field).is_some() title=locked(field)
                    value=move || get(&form.get()) on:input=set(put) />
                {lock_note(field)}
            </Field>
        }
    };
    // A write-only credential: left empty, what is stored stays.
    let secret_field = move |label: &'static str,
                             id: &'static str,
                             field: &'static str,
                             help: &'static str,
                             password: bool,
                             stored: bool,
                             put: fn(&mut LbForm, Option<String>)| {
        view! {
            <Field label id help error=field_error(error, field)>
                <SecretInput id password stored set=move |v| form.update(|f| put(f, v)) />
            </Field>
        }
    };
    let projects = choices.projects.clone();
    view! {
        <Title text=title.clone() />
        <h1>{title}</h1>
        <form class="form" on:submit=submit novalidate>
            <FormError error fields=LB_FIELDS />
            <Field label=t("loadbalancers.form.name") id="name" help=t("loadbalancers.form.name_help") error=field_error(error, "metadata.name")>
                <input id="name" required disabled=editing value=move || form.get().name on:input=set(|f, v| f.name = v) />
            </Field>
            <fieldset>
                <legend>{t("loadbalancers.form.tier1")}</legend>
                {tier_field(t("loadbalancers.form.ltm_url"), "ltm-url", "ltm.url", "", "http://100.1.1.1/api", |f| f.ltm_url.clone(), |f, v| f.ltm_url = v)}
                {secret_field(t("loadbalancers.form.ltm_token"), "ltm-token", "ltm.token", secret_help, true, token_set, |f, v| f.ltm_token = v)}
                {tier_field(t("loadbalancers.form.ltm_cidr"), "ltm-cidr", "ltm.cidr", t("loadbalancers.form.ltm_cidr_help"), "10.0.0.0/24", |f| f.ltm_cidr.clone(), |f, v| f.ltm_cidr = v)}
            </fieldset>
            <fieldset>
                <legend>{t("loadbalancers.form.tier2")}</legend>
                {tier_field(t("loadbalancers.form.ve_addr"), "ve-addr", "ve.addr", "", "200.1.1.1", |f| f.ve_addr.clone(), |f, v| f.ve_addr = v)}
                {secret_field(t("loadbalancers.form.ve_user"), "ve-user", "ve.user", "", false, credentials_set, |f, v| f.ve_user = v)}
                {secret_field(t("loadbalancers.form.ve_password"), "ve-password", "ve.password", secret_help, true, credentials_set, |f, v| f.ve_password = v)}
                {tier_field(t("loadbalancers.form.ve_cidr"), "ve-cidr", "ve.cidr", t("loadbalancers.form.ve_cidr_help"), "20.1.0.0/16", |f| f.ve_cidr.clone(), |f, v| f.ve_cidr = v)}
                <label class="check">
                    <input type="checkbox" id="ve-skip-verify" prop:checked=move || form.get().ve_skip_verify
                        on:change=move |ev| form.update(|f| f.ve_skip_verify = event_target_checked(&ev)) />
                    " " {t("loadbalancers.form.skip_verify")}
                </label>
            </fieldset>
            <fieldset>
                <legend>{t("loadbalancers.form.cis")}</legend>
                <Field label=t("loadbalancers.form.cluster") id="cluster" error=field_error(error, "cluster")>
                    <select id="cluster" disabled=locked("cluster").is_some() title=locked("cluster") on:change=set(|f, v| f.cluster = v)>
                        {choices.clusters.iter().map(|c| {
                            let c = c.clone();
                            let selected = form.get_untracked().cluster == c;
                            view! { <option value=c.clone() selected=selected>{c.clone()}</option> }
                        }).collect_view()}
                    </select>
                    {lock_note("cluster")}
                </Field>
                <Field label=t("loadbalancers.form.nsselector") id="nsselector" error=field_error(error, "nsselector")>
                    <KeyValueEditor id="nsselector" pairs=nsselector disabled=Signal::derive(move || locked("nsselector").is_some()) />
                    {lock_note("nsselector")}
                    // NB: the help as `Field` places it, with the flag's name as a parameter (no word to translate).
                    <span class="help">{crate::tf!("loadbalancers.form.nsselector_help", flag = "--namespace-label")}</span>
                </Field>
                <Field label=t("loadbalancers.form.partition") id="partition" help=t("loadbalancers.form.partition_help") error=field_error(error, "partition")>
                    <input id="partition" value=move || form.get().partition on:input=set(|f, v| f.partition = v) />
                </Field>
                <Field label=t("loadbalancers.form.cis_namespace") id="cis-namespace" help=t("loadbalancers.form.cis_namespace_help") error=field_error(error, "cis.namespace")>
                    <input id="cis-namespace" value=move || form.get().cis_namespace on:input=set(|f, v| f.cis_namespace = v) />
                </Field>
            </fieldset>
            <Field label=t("loadbalancers.form.projects") id="scope" help=t("loadbalancers.form.projects_help") error=field_error(error, "scope")>
                <div id="scope" class="checks">
                    {projects.into_iter().map(|p| {
                        let checked = form.get_untracked().scope.contains(&p);
                        let value = p.clone();
                        view! {
                            <label class="check">
                                <input type="checkbox" checked=checked on:change=move |ev| {
                                    let on = event_target_checked(&ev);
                                    let value = value.clone();
                                    form.update(|f| { f.scope.retain(|s| *s != value); if on { f.scope.push(value); } });
                                } />
                                {p.clone()}
                            </label>
                        }
                    }).collect_view()}
                </div>
            </Field>
            <Field label=t("loadbalancers.form.reserved") id="reserved" help=t("loadbalancers.form.reserved_help") error=field_error(error, "reserved")>
                <textarea id="reserved" rows="2" prop:value=move || form.get().reserved on:input=set(|f, v| f.reserved = v)></textarea>
            </Field>
            <div class="form-actions">
                <BusyButton label=t("common.save") busy_label=t("common.saving") busy=save.pending() submit=true />
                <A href="/loadbalancers" attr:class="btn btn-ghost">{t("common.cancel")}</A>
            </div>
        </form>
    }
}

/// A write-only input: left empty, what is stored stays; the placeholder says whether anything is.
#[component]
fn SecretInput(
    id: &'static str,
    #[prop(optional)] password: bool,
    stored: bool,
    #[prop(into)] set: Callback<Option<String>>,
) -> impl IntoView {
    view! {
        <input id=id type=if password { "password" } else { "text" }
            autocomplete=if password { "new-password" } else { "off" }
            placeholder=if stored { t("loadbalancers.form.secret_set") } else { "" }
            on:input=move |ev| set.run(Some(event_target_value(&ev)).filter(|v| !v.is_empty())) />
    }
}
