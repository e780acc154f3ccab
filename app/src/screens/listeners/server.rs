//! Screen 3's server side: each body on the guarded path (`ssr::guard`). A listener lives in its
//! request's `spec.listeners`, so every change is a change of the request, saved in one call
//! (`ssr::change`).

use kube::api::ListParams;
use kube::{Api, ResourceExt};

use super::{AddressListeners, ListenerChoices, ListenerDetail, ListenerForm, ListenerRow};
use crate::components::bigip;
use crate::components::list::Page;
use crate::components::preview::Preview;
use crate::domain::access::Verb;
use crate::domain::as3::names;
use crate::domain::as3::placement::Placement;
use crate::domain::crd::{LbType, Lbrule, Lbticket};
use crate::domain::policy::{Owner, TicketUse, listener_creatable, listener_deletable, reason, validate_ticket};
use crate::error::AppError;
use crate::ssr::address::{self, World};
use crate::ssr::change::{Edit, change};
use crate::ssr::guard::caller;
use crate::ssr::{self, kube_error, preview, refused};

/// What a call naming a listener its request does not hold is told.
fn no_listener() -> AppError {
    AppError::NotFound(crate::i18n::t("listeners.not_found").into())
}

/// Why no listener can be added to `t` now.
fn add_reason(t: &Lbticket) -> Option<String> {
    let phase = t.status.as_ref().map(|s| s.phase).unwrap_or_default();
    reason(&listener_creatable(phase, t.spec.lbtype))
}

pub async fn list(project: &str, after: &str) -> Result<Page<AddressListeners>, AppError> {
    let caller = caller().await?;
    let page = address::addresses(&caller, project, LbType::Listener, after).await?;
    let rules = rules_if(&page.rows).await?;
    let rows = page
        .rows
        .iter()
        .map(|t| {
            let usage = TicketUse::of(t, &rules);
            AddressListeners {
                address: address::summary(t, &cluster_label(t)),
                add: add_reason(t),
                listeners: t.spec.listeners.iter().map(|l| ListenerRow::of(l, usage.rules_on(&l.name))).collect(),
            }
        })
        .collect();
    Ok(Page { rows, next: page.next })
}

/// The rules, when any of `tickets` has a listener they could be on.
async fn rules_if(tickets: &[Lbticket]) -> Result<Vec<Lbrule>, AppError> {
    if tickets.iter().all(|t| t.spec.listeners.is_empty()) {
        return Ok(Vec::new());
    }
    let rules = Api::<Lbrule>::all(ssr::mgmt()?).list(&ListParams::default()).await;
    Ok(rules.map_err(|e| kube_error("rules", e))?.items)
}

/// The member cluster a request's label names (the pages set it on every request).
fn cluster_label(t: &Lbticket) -> String {
    t.labels().get(crate::domain::crd::LABEL_CLUSTER).cloned().unwrap_or_default()
}

pub async fn detail(ticket: &str, name: &str) -> Result<ListenerDetail, AppError> {
    address::check_names(ticket, name)?;
    let caller = caller().await?;
    let t = address::ticket(&caller, Verb::Read, ticket).await?;
    let listener = t.spec.listeners.iter().find(|l| l.name == name).ok_or_else(no_listener)?;
    let world = World::load().await?;
    let usage = TicketUse::of(&t, world.rules_on(&t));
    let deployed = match world.loadbalancer_of(&t) {
        Some(lb) => {
            let declaration = preview::deployed(lb, &Placement::of(&lb.spec)).await?;
            let tenant = Placement::of(&lb.spec).tenant;
            let app = names::application(&t.spec.namespace, listener.protocol);
            let vs = names::virtual_server(&t.name_any(), listener.port);
            declaration
                .as_ref()
                .and_then(|d| d.get(&tenant)?.get(&app)?.get(&vs))
                .map(|v| serde_json::to_string_pretty(v).unwrap_or_default())
        }
        None => None,
    };
    let on_bigip = bigip::section(&t, name, false);
    let mut detail = ListenerDetail {
        address: address::summary(&t, world.cluster_of(&t)),
        listener: ListenerRow::of(listener, usage.rules_on(name)),
        delete: reason(&listener_deletable(&usage, name)),
        deployed,
        body: String::new(),
    };
    detail.body = super::detail::body_html(&detail, on_bigip);
    Ok(detail)
}

pub async fn choices(ticket: &str, name: &str) -> Result<ListenerChoices, AppError> {
    address::check_names(ticket, name)?;
    let caller = caller().await?;
    let t = address::ticket(&caller, Verb::Write, ticket).await?;
    let world = World::load().await?;
    let listener = match name {
        "" => None,
        name => Some(t.spec.listeners.iter().find(|l| l.name == name).ok_or_else(no_listener)?),
    };
    let me = Owner::Listener { ticket: t.name_any(), listener: name.to_string() };
    let usage = TicketUse::of(&t, world.rules_on(&t));
    Ok(ListenerChoices {
        address: address::summary(&t, world.cluster_of(&t)),
        add: add_reason(&t),
        services: address::offered(&world, &t, &me).await?,
        listener: listener.map(|l| ListenerRow::of(l, usage.rules_on(&l.name))),
    })
}

pub async fn preview(form: ListenerForm) -> Result<Preview, AppError> {
    address::check_names(&form.ticket, form.name.trim())?;
    let caller = caller().await?;
    let mut t = address::ticket(&caller, Verb::Write, &form.ticket).await?;
    let edit = form.edit();
    let index = edit.apply(&mut t.spec)?;
    validate_ticket(&t.name_any(), &t.spec).map_err(|r| edit.said_of_form(refused(r), index))?;
    let world = World::load().await?;
    let rules: Vec<Lbrule> = world.rules_on(&t).cloned().collect();
    preview::preview(&world, &t, &rules).await
}

pub async fn save(form: ListenerForm) -> Result<String, AppError> {
    change(&form.ticket, form.generation, form.edit()).await
}

pub async fn delete(ticket: &str, name: &str) -> Result<(), AppError> {
    change(ticket, None, Edit::RemoveListener(name.to_string())).await.map(|_| ())
}
