//! Screen 1: abstract load balancers (platform admins only).

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::{use_navigate, use_params_map};

use crate::components::controls::{ConfirmButton, Field, KeyValueEditor, UsageBar, field_error, form_error};
use crate::components::layout::UserResource;
use crate::components::loaded::Loaded;
use crate::domain::policy::{lb_deletable, lb_field_editable, reason};
use crate::loadbalancers::{
    DeleteLoadbalancer, LbDetail, LbForm, LbRow, SaveLoadbalancer, get_loadbalancer, list_loadbalancers,
    loadbalancer_choices,
};

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
                    Ok(u) if u.is_admin() => view! {
                        <div class="page-head">
                            <h1>"Load balancers"</h1>
                            <A href="/loadbalancers/new" attr:class="btn btn-primary">"New load balancer"</A>
                        </div>
                        <div class="toolbar">
                            <input type="search" placeholder="Search by name or cluster" aria-label="Search load balancers"
                                on:input=move |ev| search.set(event_target_value(&ev)) />
                        </div>
                    }.into_any(),
                    _ => ().into_any(),
                }
            })}
        </Suspense>
        <Loaded resource=rows show=lb_table />
    }
}

fn lb_table(rows: Vec<LbRow>) -> AnyView {
    if rows.is_empty() {
        return view! {
            <div class="empty-state">
                <p>"No load balancers yet."</p>
                <p class="muted">"Register the first one: LTM, VE and the CIS of a member cluster."</p>
            </div>
        }
        .into_any();
    }
    view! {
        <table class="table">
            <thead><tr>
                <th>"Name"</th><th>"Cluster"</th><th>"VE"</th><th>"LTM"</th><th>"Address pairs"</th><th>"Requests"</th><th>"Ready"</th>
            </tr></thead>
            <tbody>
                {rows.into_iter().map(|r| view! {
                    <tr>
                        <td><a href=format!("/loadbalancers/{}", r.name)>{r.name.clone()}</a></td>
                        <td>{r.cluster.clone()}</td>
                        <td>{r.ve_addr.clone()}<div class="muted">{r.ve_cidr.clone()}</div></td>
                        <td>{r.ltm_url.clone()}<div class="muted">{r.ltm_cidr.clone()}</div></td>
                        <td><UsageBar used=r.pairs_used free=r.pairs_free /></td>
                        <td>{r.tickets}</td>
                        <td>{if r.ready { view! { <span class="badge badge-ok">"Ready"</span> } } else { view! { <span class="badge badge-info">"Pending"</span> } }}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}

/// `/loadbalancers/:name`
#[component]
pub fn LoadbalancerDetail() -> impl IntoView {
    let params = use_params_map();
    let name = move || params.read().get("name").unwrap_or_default();
    let detail = Resource::new(name, get_loadbalancer);
    let delete = ServerAction::<DeleteLoadbalancer>::new();
    Effect::new(move |_| {
        if let Some(Ok(())) = delete.value().get() {
            use_navigate()("/loadbalancers", Default::default());
        }
    });
    view! {
        <Loaded resource=detail show=move |d| view! { <LbDetailBody d delete /> }.into_any() />
    }
}

#[component]
fn LbDetailBody(d: LbDetail, delete: ServerAction<DeleteLoadbalancer>) -> impl IntoView {
    let name = d.row.name.clone();
    let deletable = reason(&lb_deletable(d.row.tickets, d.do_not_delete));
    let error = move || delete.value().get().and_then(|r| r.err()).map(|e| e.to_string());
    let to_delete = name.clone();
    view! {
        <Title text=format!("Load balancer {name}") />
        <div class="page-head">
            <h1>{format!("Load balancer {name}")}</h1>
            <div class="actions">
                <A href=format!("/loadbalancers/{name}/edit") attr:class="btn">"Edit"</A>
                <ConfirmButton
                    label="Delete"
                    question=format!("Delete load balancer {name}? Its AS3 tenant will be removed from the cluster.")
                    reason=Signal::derive(move || deletable.clone())
                    on_confirm=move |_| { delete.dispatch(DeleteLoadbalancer { name: to_delete.clone() }); }
                />
            </div>
        </div>
        <p class="field-error" role="alert">{error}</p>
        <dl class="facts">
            <dt>"Cluster"</dt><dd>{d.row.cluster.clone()}</dd>
            <dt>"AS3 tenant"</dt><dd>{d.partition.clone()}</dd>
            <dt>"VE"</dt><dd>{format!("{} — {}", d.row.ve_addr, d.row.ve_cidr)}</dd>
            <dt>"LTM"</dt><dd>{format!("{} — {}", d.row.ltm_url, d.row.ltm_cidr)}</dd>
            <dt>"CIS namespace"</dt><dd>{d.form.cis_namespace.clone()}</dd>
            <dt>"Namespace selector"</dt><dd>{d.form.nsselector.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ")}</dd>
            <dt>"Projects"</dt><dd>{if d.form.scope.is_empty() { "every project of the cluster".to_string() } else { d.form.scope.join(", ") }}</dd>
            <dt>"Reserved"</dt><dd>{if d.form.reserved.is_empty() { "—".to_string() } else { d.form.reserved.clone() }}</dd>
            <dt>"LTM token"</dt><dd>{if d.token_set { "set" } else { "not set" }}</dd>
            <dt>"VE credentials"</dt><dd>{if d.credentials_set { "set" } else { "not set" }}</dd>
            <dt>"Capacity"</dt><dd><UsageBar used=d.row.pairs_used free=d.row.pairs_free /></dd>
        </dl>
        <h2>"Allocated pairs"</h2>
        {if d.pairs.is_empty() {
            view! { <p class="muted">"No address is allocated."</p> }.into_any()
        } else {
            view! {
                <table class="table">
                    <thead><tr><th>"VE IP"</th><th>"LTM IP"</th><th>"Request"</th><th>"State"</th></tr></thead>
                    <tbody>{d.pairs.clone().into_iter().map(|p| view! {
                        <tr><td>{p.veip.clone()}</td><td>{p.ltmip.clone()}</td>
                        <td><a href=format!("/tickets/{}", p.ticket)>{p.ticket.clone()}</a></td>
                        <td>{p.status.as_str()}</td></tr>
                    }).collect_view()}</tbody>
                </table>
            }.into_any()
        }}
        <h2>"Address requests using it"</h2>
        {if d.tickets.is_empty() {
            view! { <p class="muted">"None."</p> }.into_any()
        } else {
            view! {
                <table class="table">
                    <thead><tr><th>"Request"</th><th>"Namespace"</th><th>"Phase"</th></tr></thead>
                    <tbody>{d.tickets.clone().into_iter().map(|t| view! {
                        <tr><td><a href=format!("/tickets/{}", t.name)>{t.name.clone()}</a></td><td>{t.namespace.clone()}</td><td>{t.phase.clone()}</td></tr>
                    }).collect_view()}</tbody>
                </table>
            }.into_any()
        }}
    }
}

/// `/loadbalancers/new` and `/loadbalancers/:name/edit`
#[component]
pub fn LoadbalancerForm() -> impl IntoView {
    let params = use_params_map();
    let editing = move || params.read().get("name");
    let loaded = Resource::new(editing, |name| async move {
        let choices = loadbalancer_choices().await?;
        let detail = match name {
            Some(n) => Some(get_loadbalancer(n).await?),
            None => None,
        };
        Ok::<_, crate::error::AppError>((choices, detail))
    });
    view! {
        <Loaded resource=loaded show=|(choices, detail)| view! { <LbFormBody choices detail /> }.into_any() />
    }
}

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

#[component]
fn LbFormBody(choices: crate::loadbalancers::LbChoices, detail: Option<LbDetail>) -> impl IntoView {
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
    let error = Signal::derive(move || save.value().get().and_then(|r| r.err()));
    Effect::new(move |_| {
        if let Some(Ok(name)) = save.value().get() {
            use_navigate()(&format!("/loadbalancers/{name}"), Default::default());
        }
    });
    let locked = move |field: &'static str| reason(&lb_field_editable(field, in_use));
    let set =
        move |f: fn(&mut LbForm, String)| move |ev: leptos::ev::Event| form.update(|v| f(v, event_target_value(&ev)));
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
    // A range that is locked while requests use the load balancer.
    let cidr_input = move |id: &'static str,
                           field: &'static str,
                           placeholder: &'static str,
                           get: fn(&LbForm) -> String,
                           put: fn(&mut LbForm, String)| {
        view! {
            <input id=id required placeholder=placeholder disabled=locked(field).is_some() title=locked(field)
                value=move || get(&form.get()) on:input=set(put) />
            {lock_note(field)}
        }
    };
    let projects = choices.projects.clone();
    view! {
        <Title text=title.clone() />
        <h1>{title}</h1>
        <form class="form" on:submit=submit novalidate>
            <p class="field-error form-error" role="alert">{move || form_error(error, LB_FIELDS).get()}</p>
            <Field label="Name" id="name" help="Lower-case letters, digits and '-'." error=field_error(error, "metadata.name")>
                <input id="name" required disabled=editing value=move || form.get().name on:input=set(|f, v| f.name = v) />
            </Field>
            <fieldset>
                <legend>"Tier-1 LTM"</legend>
                <Field label="LTM URL" id="ltm-url" error=field_error(error, "ltm.url")>
                    <input id="ltm-url" required placeholder="http://100.1.1.1/api" value=move || form.get().ltm_url on:input=set(|f, v| f.ltm_url = v) />
                </Field>
                <Field label="LTM token" id="ltm-token" help="Stored in a Secret; never shown again." error=field_error(error, "ltm.token")>
                    <SecretInput id="ltm-token" password=true stored=token_set set=move |v| form.update(|f| f.ltm_token = v) />
                </Field>
                <Field label="LTM CIDR" id="ltm-cidr" help="Bank-facing addresses to allocate from." error=field_error(error, "ltm.cidr")>
                    {cidr_input("ltm-cidr", "ltm.cidr", "10.0.0.0/24", |f| f.ltm_cidr.clone(), |f, v| f.ltm_cidr = v)}
                </Field>
            </fieldset>
            <fieldset>
                <legend>"Tier-2 BIG-IP VE"</legend>
                <Field label="VE address" id="ve-addr" error=field_error(error, "ve.addr")>
                    <input id="ve-addr" required placeholder="200.1.1.1" value=move || form.get().ve_addr on:input=set(|f, v| f.ve_addr = v) />
                </Field>
                <Field label="VE user" id="ve-user" error=field_error(error, "ve.user")>
                    <SecretInput id="ve-user" stored=credentials_set set=move |v| form.update(|f| f.ve_user = v) />
                </Field>
                <Field label="VE password" id="ve-password" help="Stored in a Secret; never shown again." error=field_error(error, "ve.password")>
                    <SecretInput id="ve-password" password=true stored=credentials_set set=move |v| form.update(|f| f.ve_password = v) />
                </Field>
                <Field label="VE CIDR" id="ve-cidr" help="Virtual-server addresses users get." error=field_error(error, "ve.cidr")>
                    {cidr_input("ve-cidr", "ve.cidr", "20.1.0.0/16", |f| f.ve_cidr.clone(), |f, v| f.ve_cidr = v)}
                </Field>
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
                <button type="submit" class="btn btn-primary" disabled=move || save.pending().get()>
                    {move || if save.pending().get() { "Saving…" } else { "Save" }}
                </button>
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
