//! `/tickets/new` and `/tickets/:name/edit`: the request form, its addresses checked as typed.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;

use super::{SaveTicket, TicketChoices, TicketDetail, TicketForm, check_address, get_ticket, ticket_form_choices};
use crate::components::controls::BusyButton;
use crate::components::form::{Field, FormError, action_error, editor, field_error, navigate_on_success, set_field};
use crate::domain::crd::LbType;
use crate::domain::ipam::Side;
use crate::domain::policy::{reason, ticket_editable};
use crate::i18n::t;

/// `/tickets/new` and `/tickets/:name/edit`
#[component]
pub fn TicketFormPage() -> impl IntoView {
    editor(ticket_form_choices, get_ticket, |(choices, detail)| view! { <TicketFormBody choices detail /> }.into_any())
}

/// The fields the form shows errors beside.
const TICKET_FIELDS: &[&str] = &["name", "metadata.name", "namespace", "loadbalancer", "veip", "ltmip"];

/// What the form starts with: the request being edited, or the project's first namespace and
/// the first load balancer of its cluster.
fn initial(choices: &TicketChoices, detail: Option<&TicketDetail>) -> TicketForm {
    match detail {
        Some(d) => TicketForm {
            name: d.row.name.clone(),
            cluster: d.row.cluster.clone(),
            namespace: d.row.namespace.clone(),
            loadbalancer: d.row.loadbalancer.clone(),
            lbtype: d.row.lbtype,
            veip: d.requested_veip.clone(),
            ltmip: d.requested_ltmip.clone(),
            generation: Some(d.generation),
        },
        None => {
            let (cluster, namespace) = choices.namespaces.first().cloned().unwrap_or_default();
            let loadbalancer =
                choices.loadbalancers.iter().find(|l| l.cluster == cluster).map(|l| l.name.clone()).unwrap_or_default();
            TicketForm { cluster, namespace, loadbalancer, ..Default::default() }
        }
    }
}

/// What the server says of the address asked for on `side`, as it is typed: `None` while it is
/// fine, empty, or not checked yet.
///
/// NB: browser-only, so an effect writing a signal, never a `LocalResource`. A local resource
/// never loads on the server, and reading one inside `Loaded`'s `Transition` made the server
/// give the whole form up to the browser ("Loading…" in the HTML) while that suspense's effect
/// was still walking the form's view, in a task of its own, reading `form`. Once the rest of
/// the page was sent, the request's reactive owner dropped `form` under that walk: "you tried to
/// access a reactive value … already disposed", a panic.
fn address_check(form: RwSignal<TicketForm>, side: Side) -> ReadSignal<Option<String>> {
    let (found, set_found) = signal(None);
    // What the check depends on: the load balancer, the address and the request it is for.
    let asked =
        Memo::new(move |_| form.with(|f| (f.loadbalancer.clone(), f.address(side).to_string(), f.name.clone())));
    Effect::new(move |_| {
        let (loadbalancer, address, ticket) = asked.get();
        if loadbalancer.is_empty() || address.trim().is_empty() {
            set_found.set(None);
            return;
        }
        leptos::task::spawn_local(async move {
            let sent = (loadbalancer.clone(), address.clone(), ticket.clone());
            let answer = check_address(loadbalancer, side, address, ticket).await.err().map(|e| e.message());
            // Only the answer about what the field still holds: a slower, older one must not win.
            if asked.try_with_untracked(|now| *now == sent) == Some(true) {
                set_found.try_set(answer);
            }
        });
    });
    found
}

/// The form itself, once its choices (and the request it edits) are loaded.
#[component]
fn TicketFormBody(choices: TicketChoices, detail: Option<TicketDetail>) -> impl IntoView {
    let editing = detail.is_some();
    let edit_reason = detail.as_ref().and_then(|d| reason(&ticket_editable(d.row.phase)));
    let locked = edit_reason.is_some();
    let form = RwSignal::new(initial(&choices, detail.as_ref()));
    let lbs = StoredValue::new(choices.loadbalancers.clone());
    let offered = move || {
        let cluster = form.get().cluster;
        lbs.get_value().into_iter().filter(|l| l.cluster == cluster).collect::<Vec<_>>()
    };
    let save = ServerAction::<SaveTicket>::new();
    let error = action_error(save);
    navigate_on_success(save, |name| format!("/tickets/{name}"));
    let (ve_check, ltm_check) = (address_check(form, Side::Ve), address_check(form, Side::Ltm));
    let address_error = move |side: Side, checked: ReadSignal<Option<String>>| {
        Signal::derive(move || field_error(error, side.field()).get().or_else(|| checked.get()))
    };
    let set = move |put: fn(&mut TicketForm, String)| set_field(form, put);
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        save.dispatch(SaveTicket { form: form.get_untracked() });
    };
    let title = if editing {
        crate::tf!("tickets.form.title_edit", name = form.get_untracked().name)
    } else {
        t("tickets.request_address").to_string()
    };
    let namespaces = choices.namespaces.clone();
    let no_lb = choices.loadbalancers.is_empty();
    view! {
        <Title text=title.clone() />
        <h1>{title}</h1>
        {edit_reason.clone().map(|r| view! { <div class="callout callout-bad">{r}</div> })}
        {(!editing && no_lb).then(|| view! { <div class="callout">{t("tickets.form.no_loadbalancer")}</div> })}
        <form class="form" on:submit=submit novalidate>
            <FormError error fields=TICKET_FIELDS />
            <Field label=t("tickets.form.name") id="name" help=t("tickets.form.name_help") error=field_error(error, "name")>
                <input id="name" required disabled=editing value=move || form.get().name on:input=set(|f, v| f.name = v) />
            </Field>
            <Field label=t("tickets.form.namespace") id="namespace" help=t("tickets.form.namespace_help") error=field_error(error, "namespace")>
                <select id="namespace" disabled=editing on:change=move |ev| {
                    let value = event_target_value(&ev);
                    if let Some((c, n)) = value.split_once('/') {
                        let (c, n) = (c.to_string(), n.to_string());
                        let lb = lbs.get_value().into_iter().find(|l| l.cluster == c).map(|l| l.name).unwrap_or_default();
                        form.update(|f| { f.cluster = c; f.namespace = n; f.loadbalancer = lb; });
                    }
                }>
                    {namespaces.into_iter().map(|(c, n)| {
                        let value = format!("{c}/{n}");
                        let selected = { let f = form.get_untracked(); f.cluster == c && f.namespace == n };
                        view! { <option value=value.clone() selected=selected>{value.clone()}</option> }
                    }).collect_view()}
                </select>
            </Field>
            <Field label=t("tickets.form.loadbalancer") id="loadbalancer" help=t("tickets.form.loadbalancer_help") error=field_error(error, "loadbalancer")>
                <select id="loadbalancer" disabled=editing on:change=set(|f, v| f.loadbalancer = v)>
                    {move || offered().into_iter().map(|l| {
                        let selected = form.get_untracked().loadbalancer == l.name;
                        view! { <option value=l.name.clone() selected=selected>{crate::tf!("tickets.form.loadbalancer_option", name = l.name, ve = l.ve_cidr, ltm = l.ltm_cidr)}</option> }
                    }).collect_view()}
                </select>
            </Field>
            <Field label=t("tickets.form.type") id="lbtype" error=Signal::derive(|| None::<String>)>
                <select id="lbtype" disabled=editing on:change=move |ev| form.update(|f| f.lbtype = if event_target_value(&ev) == "ingress" { LbType::Ingress } else { LbType::Listener })>
                    <option value="listener" selected=form.get_untracked().lbtype == LbType::Listener>{t("tickets.form.type_listeners")}</option>
                    <option value="ingress" selected=form.get_untracked().lbtype == LbType::Ingress>{t("tickets.lbtype.ingress")}</option>
                </select>
            </Field>
            <Field label=t("tickets.form.veip") id="veip" help=t("tickets.form.address_help") error=address_error(Side::Ve, ve_check)>
                <input id="veip" disabled=locked value=move || form.get().veip on:input=set(|f, v| f.veip = v) />
            </Field>
            <Field label=t("tickets.form.ltmip") id="ltmip" help=t("tickets.form.address_help") error=address_error(Side::Ltm, ltm_check)>
                <input id="ltmip" disabled=locked value=move || form.get().ltmip on:input=set(|f, v| f.ltmip = v) />
            </Field>
            <div class="form-actions">
                <BusyButton label=if editing { t("common.save") } else { t("tickets.form.request") } busy_label=t("tickets.form.submitting") busy=save.pending()
                    blocked=locked submit=true />
                <A href="/tickets" attr:class="btn btn-ghost">{t("common.cancel")}</A>
            </div>
        </form>
    }
}

#[cfg(all(test, feature = "ssr"))]
mod tests {
    use axum::body::Body;
    use leptos_meta::{MetaTags, provide_meta_context};
    use leptos_router::components::Router;

    use super::*;
    use crate::components::loaded::Loaded;
    use crate::domain::crd::Phase;
    use crate::error::AppError;
    use crate::screens::tickets::{LbChoice, TicketRow};

    fn choices() -> TicketChoices {
        TicketChoices {
            project: "project-a".into(),
            namespaces: vec![("acp-region01".into(), "team-a".into())],
            loadbalancers: vec![LbChoice {
                name: "demo-lb".into(),
                cluster: "acp-region01".into(),
                ve_cidr: "20.1.0.0/16".into(),
                ltm_cidr: "10.0.0.0/24".into(),
            }],
        }
    }

    fn failed(name: &str, veip: &str) -> TicketDetail {
        TicketDetail {
            row: TicketRow {
                name: name.into(),
                project: "project-a".into(),
                loadbalancer: "demo-lb".into(),
                cluster: "acp-region01".into(),
                namespace: "team-a".into(),
                veip: String::new(),
                ltmip: String::new(),
                lbtype: LbType::Listener,
                phase: Phase::Failed,
                state: Default::default(),
                created: String::new(),
                message: "reserved for the payment zone".into(),
                on_bigip: String::new(),
            },
            claimer: "alice".into(),
            requested_veip: veip.into(),
            requested_ltmip: String::new(),
            usage: Default::default(),
            history: Vec::new(),
            conditions: Vec::new(),
            generation: 1,
        }
    }

    /// The HTML the server sends for the form over `detail`, as leptos_axum renders a page.
    async fn rendered(detail: Option<TicketDetail>) -> String {
        let app = move || {
            let detail = detail.clone();
            provide_meta_context();
            let loaded = Resource::new(
                || (),
                move |_| {
                    let detail = detail.clone();
                    async move { Ok::<_, AppError>((choices(), detail)) }
                },
            );
            view! {
                <!DOCTYPE html>
                <html>
                    <head><MetaTags /></head>
                    <body>
                        <Router>
                            <Loaded resource=loaded show=|(choices, detail)| view! { <TicketFormBody choices detail /> }.into_any() />
                        </Router>
                    </body>
                </html>
            }
        };
        // NB: this also starts leptos's executor, which rendering needs.
        let _ = leptos_axum::generate_route_list(app.clone());
        let request = axum::http::Request::get("/tickets/new").body(Body::empty()).expect("a request");
        let response = leptos_axum::render_app_to_stream(app)(request).await;
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.expect("the whole page");
        String::from_utf8(body.to_vec()).expect("HTML is UTF-8")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_form_is_rendered_on_the_server_not_left_to_the_browser() {
        let new = rendered(None).await;
        assert!(new.contains(r#"<input id="veip""#), "the address fields are in the page: {new}");
        let edit = rendered(Some(failed("pay-a", "20.1.250.10"))).await;
        assert!(edit.contains(r#"value="20.1.250.10""#), "the requested address is in the page: {edit}");
    }
}
