//! Screen 3's server side: each body on the guarded path (`ssr::guard`). A listener lives in its
//! request's `spec.listeners`, so every change is a change of the request (`ssr::address::change`):
//! the caller's project, the grey-out rules, the Services rule, the AS3 check, then the write.

use kube::api::ListParams;
use kube::{Api, ResourceExt};
use serde_json::Value;

use super::{AddressListeners, ListenerChoices, ListenerDetail, ListenerForm, ListenerRow};
use crate::components::list::Page;
use crate::components::preview::Preview;
use crate::domain::access::Verb;
use crate::domain::as3::names;
use crate::domain::as3::placement::Placement;
use crate::domain::crd::{LbType, Lbrule, Lbticket};
use crate::domain::policy::{Owner, TicketUse, listener_creatable, listener_deletable, reason, validate_ticket};
use crate::error::AppError;
use crate::ssr::address::{self, World, project_of};
use crate::ssr::guard::{Caller, Written, caller, not_found};
use crate::ssr::{self, kube_error, preview, refused};

const LISTENER: &str = "such listener";

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
    let listener = t.spec.listeners.iter().find(|l| l.name == name).ok_or_else(|| not_found(LISTENER))?;
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
    Ok(ListenerDetail {
        address: address::summary(&t, world.cluster_of(&t)),
        listener: ListenerRow::of(listener, usage.rules_on(name)),
        delete: reason(&listener_deletable(&usage, name)),
        deployed,
    })
}

pub async fn choices(ticket: &str, name: &str) -> Result<ListenerChoices, AppError> {
    address::check_names(ticket, name)?;
    let caller = caller().await?;
    let t = address::ticket(&caller, Verb::Write, ticket).await?;
    let world = World::load().await?;
    let listener = match name {
        "" => None,
        name => Some(t.spec.listeners.iter().find(|l| l.name == name).ok_or_else(|| not_found(LISTENER))?),
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

/// Puts the form's listener into `spec`: replaces the one of its name when editing, adds it
/// otherwise.
fn put(form: &ListenerForm, spec: &mut crate::domain::crd::LbticketSpec) -> Result<usize, AppError> {
    let listener = form.listener();
    let name = listener.name.clone();
    address::put_named(&mut spec.listeners, listener, &name, |l| &l.name, form.generation.is_some(), "listener")
}

/// The error of a change of the request, said of the form's listener: its fields in the
/// request (`listeners[2].port`, `listener web.port`) become the form's (`port`).
fn of_listener(e: AppError, spec_index: Option<usize>, name: &str) -> AppError {
    let prefixes = [spec_index.map(|i| format!("listeners[{i}].")), Some(format!("listener {name}."))];
    address::within(e, &prefixes.into_iter().flatten().collect::<Vec<_>>())
}

pub async fn preview(form: ListenerForm) -> Result<Preview, AppError> {
    address::check_names(&form.ticket, form.name.trim())?;
    let caller = caller().await?;
    let mut t = address::ticket(&caller, Verb::Write, &form.ticket).await?;
    put(&form, &mut t.spec)?;
    let name = form.listener().name;
    let index = t.spec.listeners.iter().position(|l| l.name == name);
    validate_ticket(&t.name_any(), &t.spec).map_err(|r| of_listener(refused(r), index, &name))?;
    let world = World::load().await?;
    let rules: Vec<Lbrule> = world.rules_on(&t).cloned().collect();
    preview::preview(&world, &t, &rules).await
}

pub async fn save(form: ListenerForm) -> Result<String, AppError> {
    address::check_names(&form.ticket, form.name.trim())?;
    let caller = caller().await?;
    caller.write(|| save_once(&caller, &form)).await
}

async fn save_once(caller: &Caller, form: &ListenerForm) -> Result<Written<String>, AppError> {
    let name = form.listener().name;
    // NB: where the edit put the listener, to say its errors of the form's fields.
    let index = std::sync::atomic::AtomicUsize::new(usize::MAX);
    let changed = address::change(
        caller,
        &form.ticket,
        form.generation,
        |spec| {
            put(form, spec)?;
            let at = spec.listeners.iter().position(|l| l.name == name);
            index.store(at.unwrap_or(usize::MAX), std::sync::atomic::Ordering::Relaxed);
            Ok(())
        },
        |world, after| {
            let rules: Vec<Lbrule> = world.rules_on(after).cloned().collect();
            match preview::render(world, after, &rules)?.1 {
                Ok(_) => Ok(()),
                Err(why) => Err(AppError::Refused(format!("The AS3 declaration would be invalid: {why}"))),
            }
        },
    )
    .await;
    let at = Some(index.load(std::sync::atomic::Ordering::Relaxed)).filter(|i| *i != usize::MAX);
    let (before, after) = changed.map_err(|e| of_listener(e, at, &name))?;
    let action = if form.generation.is_some() { "update listener" } else { "add listener" };
    Ok(Written::change(action, "Lbticket", &form.ticket, project_of(&after))
        .before(&listener_of(&before, &name))
        .after(&listener_of(&after, &name))
        .answer(name))
}

/// The listener `name` of `t`, as JSON for the audit log (null when it has none).
fn listener_of(t: &Lbticket, name: &str) -> Value {
    t.spec
        .listeners
        .iter()
        .find(|l| l.name == name)
        .map_or(Value::Null, |l| serde_json::to_value(l).unwrap_or_default())
}

pub async fn delete(ticket: &str, name: &str) -> Result<(), AppError> {
    address::check_names(ticket, name)?;
    let caller = caller().await?;
    caller.write(|| delete_once(&caller, ticket, name)).await
}

async fn delete_once(caller: &Caller, ticket: &str, name: &str) -> Result<Written<()>, AppError> {
    let remove = |spec: &mut crate::domain::crd::LbticketSpec| {
        let before = spec.listeners.len();
        spec.listeners.retain(|l| l.name != name);
        if spec.listeners.len() == before { Err(not_found(LISTENER)) } else { Ok(()) }
    };
    let (before, after) = address::change(caller, ticket, None, remove, |_, _| Ok(())).await?;
    Ok(Written::change("delete listener", "Lbticket", ticket, project_of(&after)).before(&listener_of(&before, name)))
}
