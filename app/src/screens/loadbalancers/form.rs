//! `/loadbalancers/new` and `/loadbalancers/:name/edit`: the form, with the fields a load
//! balancer in use may not change locked, and write-only credentials.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;

use super::{LbChoices, LbDetail, LbForm, SaveLoadbalancer, get_loadbalancer, loadbalancer_choices};
use crate::components::controls::{BusyButton, KeyValueEditor};
use crate::components::form::{Field, FormError, action_error, editor, field_error, navigate_on_success, set_field};
use crate::domain::policy::{lb_field_editable, reason};

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

/// Said under a credential: it goes one way only.
const SECRET_HELP: &str = "Stored in a Secret; never shown again.";

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
        format!("Edit load balancer {}", form.get_untracked().name)
    } else {
        "New load balancer".to_string()
    };
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
            <Field label="Name" id="name" help="Lower-case letters, digits and '-'." error=field_error(error, "metadata.name")>
                <input id="name" required disabled=editing value=move || form.get().name on:input=set(|f, v| f.name = v) />
            </Field>
            <fieldset>
                <legend>"Tier-1 LTM"</legend>
                {tier_field("LTM URL", "ltm-url", "ltm.url", "", "http://100.1.1.1/api", |f| f.ltm_url.clone(), |f, v| f.ltm_url = v)}
                {secret_field("LTM token", "ltm-token", "ltm.token", SECRET_HELP, true, token_set, |f, v| f.ltm_token = v)}
                {tier_field("LTM CIDR", "ltm-cidr", "ltm.cidr", "Bank-facing addresses to allocate from.", "10.0.0.0/24", |f| f.ltm_cidr.clone(), |f, v| f.ltm_cidr = v)}
            </fieldset>
            <fieldset>
                <legend>"Tier-2 BIG-IP VE"</legend>
                {tier_field("VE address", "ve-addr", "ve.addr", "", "200.1.1.1", |f| f.ve_addr.clone(), |f, v| f.ve_addr = v)}
                {secret_field("VE user", "ve-user", "ve.user", "", false, credentials_set, |f, v| f.ve_user = v)}
                {secret_field("VE password", "ve-password", "ve.password", SECRET_HELP, true, credentials_set, |f, v| f.ve_password = v)}
                {tier_field("VE CIDR", "ve-cidr", "ve.cidr", "Virtual-server addresses users get.", "20.1.0.0/16", |f| f.ve_cidr.clone(), |f, v| f.ve_cidr = v)}
                <label class="check">
                    <input type="checkbox" id="ve-skip-verify" prop:checked=move || form.get().ve_skip_verify
                        on:change=move |ev| form.update(|f| f.ve_skip_verify = event_target_checked(&ev)) />
                    " Skip verification of the VE's management certificate when reading BIG-IP back"
                </label>
            </fieldset>
            <fieldset>
                <legend>"F5 CIS"</legend>
                <Field label="Cluster" id="cluster" error=field_error(error, "cluster")>
                    <select id="cluster" disabled=locked("cluster").is_some() title=locked("cluster") on:change=set(|f, v| f.cluster = v)>
                        {choices.clusters.iter().map(|c| {
                            let c = c.clone();
                            let selected = form.get_untracked().cluster == c;
                            view! { <option value=c.clone() selected=selected>{c.clone()}</option> }
                        }).collect_view()}
                    </select>
                    {lock_note("cluster")}
                </Field>
                <Field label="Namespace selector" id="nsselector" help="Labels put on namespaces with listeners, as the CIS --namespace-label expects." error=field_error(error, "nsselector")>
                    <KeyValueEditor id="nsselector" pairs=nsselector disabled=Signal::derive(move || locked("nsselector").is_some()) />
                    {lock_note("nsselector")}
                </Field>
                <Field label="Partition (AS3 tenant)" id="partition" help="Optional; the cluster name when empty. Unique per cluster." error=field_error(error, "partition")>
                    <input id="partition" value=move || form.get().partition on:input=set(|f, v| f.partition = v) />
                </Field>
                <Field label="CIS namespace" id="cis-namespace" help="Where this CIS reads its AS3 ConfigMap." error=field_error(error, "cis.namespace")>
                    <input id="cis-namespace" value=move || form.get().cis_namespace on:input=set(|f, v| f.cis_namespace = v) />
                </Field>
            </fieldset>
            <Field label="Projects" id="scope" help="Projects allowed to use it; none checked means every project of the cluster." error=field_error(error, "scope")>
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
            <Field label="Reserved addresses" id="reserved" help="Addresses or CIDRs never handed out, separated by commas." error=field_error(error, "reserved")>
                <textarea id="reserved" rows="2" prop:value=move || form.get().reserved on:input=set(|f, v| f.reserved = v)></textarea>
            </Field>
            <div class="form-actions">
                <BusyButton label="Save" busy_label="Saving…" busy=save.pending() submit=true />
                <A href="/loadbalancers" attr:class="btn btn-ghost">"Cancel"</A>
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
            placeholder=if stored { "set — type to replace" } else { "" }
            on:input=move |ev| set.run(Some(event_target_value(&ev)).filter(|v| !v.is_empty())) />
    }
}
