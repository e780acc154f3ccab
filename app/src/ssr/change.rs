//! The save path of everything that lives in an address request's spec (its listeners and F5
//! Ingresses): one call per save, which owns the order — the caller's right to the request, the
//! form's generation, the one check admission also makes (`policy::check_change`), what only
//! the member cluster can tell (the Services' ports, the TLS Secrets), a declaration CIS will
//! accept — then the compare-and-swap write, tried again when it lost a race, the audit row,
//! and the errors said of the form's fields.

use serde_json::Value;

use super::address::{self, World, project_of, services, tls_secrets};
use super::guard::{Caller, Written, caller, not_found};
use super::{kube_error, preview, refused};
use crate::domain::access::Verb;
use crate::domain::crd::{F5Ingress, Lbrule, Lbticket, LbticketSpec, Listener};
use crate::domain::policy::{View, check_change, escaped};
use crate::error::AppError;
use crate::i18n::t;
use crate::wire::ServiceChoice;

/// What a screen changes in an address request: one of its listeners or F5 Ingresses, put
/// (added, or put over the one of its name when `editing`) or removed.
pub enum Edit {
    PutListener { listener: Listener, editing: bool },
    RemoveListener(String),
    PutIngress { ingress: F5Ingress, editing: bool },
    RemoveIngress(String),
}

impl Edit {
    /// The name of the listener or F5 Ingress.
    pub fn name(&self) -> &str {
        match self {
            Edit::PutListener { listener, .. } => &listener.name,
            Edit::PutIngress { ingress, .. } => &ingress.name,
            Edit::RemoveListener(name) | Edit::RemoveIngress(name) => name,
        }
    }

    fn is_listener(&self) -> bool {
        matches!(self, Edit::PutListener { .. } | Edit::RemoveListener(_))
    }

    /// What the audit log calls it.
    fn action(&self) -> &'static str {
        match self {
            Edit::PutListener { editing: false, .. } => "add listener",
            Edit::PutListener { editing: true, .. } => "update listener",
            Edit::RemoveListener(_) => "delete listener",
            Edit::PutIngress { editing: false, .. } => "add F5 Ingress",
            Edit::PutIngress { editing: true, .. } => "update F5 Ingress",
            Edit::RemoveIngress(_) => "delete F5 Ingress",
        }
    }

    /// Makes the edit in `spec`; returns where the listener or F5 Ingress now is (none once
    /// removed).
    pub fn apply(&self, spec: &mut LbticketSpec) -> Result<Option<usize>, AppError> {
        match self {
            Edit::PutListener { listener, editing } => {
                put_named(&mut spec.listeners, listener.clone(), |l| &l.name, *editing, Kind::Listener).map(Some)
            }
            Edit::PutIngress { ingress, editing } => {
                put_named(&mut spec.ingresses, ingress.clone(), |i| &i.name, *editing, Kind::Ingress).map(Some)
            }
            Edit::RemoveListener(name) => remove_named(&mut spec.listeners, name, |l| &l.name, Kind::Listener),
            Edit::RemoveIngress(name) => remove_named(&mut spec.ingresses, name, |i| &i.name, Kind::Ingress),
        }
    }

    /// The listener or F5 Ingress in `spec`, as JSON for the audit log (null when absent).
    fn part(&self, spec: &LbticketSpec) -> Value {
        let name = self.name();
        let found = if self.is_listener() {
            spec.listeners.iter().find(|l| l.name == name).map(serde_json::to_value)
        } else {
            spec.ingresses.iter().find(|i| i.name == name).map(serde_json::to_value)
        };
        found.and_then(Result::ok).unwrap_or(Value::Null)
    }

    /// The error of the change said of the form: a field of the request under the edited
    /// part (`listeners[2].port`, `listener web.port`, `ingresses[0].rules[1].service`) becomes
    /// the form's (`port`, `rules[1].service`); other errors pass unchanged.
    pub fn said_of_form(&self, e: AppError, index: Option<usize>) -> AppError {
        let AppError::Invalid { field, message } = e else { return e };
        let (list, one) = if self.is_listener() { ("listeners", "listener") } else { ("ingresses", "F5 Ingress") };
        let prefixes = [index.map(|i| format!("{list}[{i}].")), Some(format!("{one} {}.", self.name()))];
        let field =
            prefixes.iter().flatten().find_map(|p| field.strip_prefix(p.as_str())).map_or(field.clone(), String::from);
        AppError::Invalid { field, message }
    }
}

/// What an edit puts or removes, as its errors name it.
#[derive(Clone, Copy)]
enum Kind {
    Listener,
    Ingress,
}

impl Kind {
    /// The answer when there is no such one.
    fn not_found(self) -> AppError {
        not_found(match self {
            Kind::Listener => t("errors.what.listener"),
            Kind::Ingress => t("errors.what.ingress"),
        })
    }

    /// The refusal of a second one named `name`.
    fn name_taken(self, name: &str) -> AppError {
        let said = match self {
            Kind::Listener => crate::msg!("refusals.listener.name_taken", name = name),
            Kind::Ingress => crate::msg!("refusals.ingress.name_taken", name = name),
        };
        AppError::invalid("name", said.text())
    }
}

/// Puts `item` into `items`: over the one of its name when `editing`, else after them (a name
/// taken is refused beside `name`; `what` names the kind). Returns where it went.
fn put_named<T>(
    items: &mut Vec<T>,
    item: T,
    named: impl Fn(&T) -> &str,
    editing: bool,
    what: Kind,
) -> Result<usize, AppError> {
    let name = named(&item).to_string();
    match (items.iter().position(|i| named(i) == name), editing) {
        (Some(at), true) => {
            items[at] = item;
            Ok(at)
        }
        (None, false) => {
            items.push(item);
            Ok(items.len() - 1)
        }
        (Some(_), false) => Err(what.name_taken(&name)),
        (None, true) => Err(what.not_found()),
    }
}

fn remove_named<T>(
    items: &mut Vec<T>,
    name: &str,
    named: impl Fn(&T) -> &str,
    what: Kind,
) -> Result<Option<usize>, AppError> {
    let before = items.len();
    items.retain(|i| named(i) != name);
    if items.len() == before { Err(what.not_found()) } else { Ok(None) }
}

/// Saves `edit` of request `ticket` for the signed-in caller, the request unchanged since
/// `loaded` (its generation when the form was loaded, when editing). Returns the name of what
/// was saved.
pub async fn change(ticket: &str, loaded: Option<i64>, edit: Edit) -> Result<String, AppError> {
    address::check_names(ticket, edit.name().trim())?;
    let caller = caller().await?;
    caller.write(|| once(&caller, ticket, loaded, &edit)).await
}

/// One attempt: read, check, write over the version read.
async fn once(caller: &Caller, name: &str, loaded: Option<i64>, edit: &Edit) -> Result<Written<String>, AppError> {
    let before = address::ticket(caller, Verb::Write, name).await?;
    if let Some(loaded) = loaded {
        super::unchanged_since(loaded, &before.metadata)?;
    }
    // NB: the world is read, and the change checked and written, under the tenant's lock; the
    // request itself is written over the version read above, or not at all.
    let _tenant = super::state()?.saves.lock(&before.spec.loadbalancer).await;
    let mut after = before.clone();
    let index = edit.apply(&mut after.spec)?;
    let checked = checked(&before, &after, edit).await;
    checked.map_err(|e| edit.said_of_form(e, index))?;
    after
        .metadata
        .annotations
        .get_or_insert_default()
        .insert("ebcpaas.io/changed-by".into(), caller.user.username.clone());
    let written = caller
        .api::<Lbticket>(edit.action(), project_of(&before))?
        .replace(name, &after)
        .await
        .map_err(|e| edit.said_of_form(kube_error("address request", e), index))?;
    super::state()?.caches.seen(&written).await;
    Ok(Written::change(edit.action(), "Lbticket", name, project_of(&written))
        .before(&edit.part(&before.spec))
        .after(&edit.part(&written.spec))
        .stored(&written)
        .answer(edit.name().to_string()))
}

/// The checks of `before` becoming `after`, in order: what the member cluster holds is read
/// only when the change names Services or TLS Secrets it did not before.
async fn checked(before: &Lbticket, after: &Lbticket, edit: &Edit) -> Result<(), AppError> {
    let name = before.metadata.name.as_deref().unwrap_or_default();
    let world = World::load().await?;
    let cluster = world.cluster_of(after);
    let namespace = &after.spec.namespace;
    let mut held = Namespace::default();
    if !new_backends(&before.spec, &after.spec).is_empty() {
        held.services = services(cluster, namespace).await?;
    }
    if !new_secrets(&before.spec, &after.spec).is_empty() {
        held.secrets = tls_secrets(cluster, namespace).await?;
    }
    check(name, before, after, &world.view(), &held)?;
    // NB: a listener put is the change that can make the tenant's declaration one CIS refuses
    // (too large, or invalid); a removal only shrinks it.
    if let Edit::PutListener { .. } = edit {
        let rules: Vec<Lbrule> = world.rules_on(after).cloned().collect();
        if let Err(why) = preview::render(&world, after, &rules)?.1 {
            return Err(AppError::Refused(crate::tf!("errors.as3_invalid", why = why)));
        }
    }
    Ok(())
}

/// What the request's namespace in its member cluster holds, as far as a change needs it.
#[derive(Default)]
struct Namespace {
    services: Vec<ServiceChoice>,
    secrets: Vec<String>,
}

/// The checks of request `name` going from `before` to `after` that read nothing but their
/// arguments: the one check admission also makes, then the Services' ports and the TLS Secrets
/// the change names anew, against what the namespace holds.
fn check(name: &str, before: &Lbticket, after: &Lbticket, view: &View, held: &Namespace) -> Result<(), AppError> {
    check_change(name, Some(before), after, view).map_err(refused)?;
    let added = new_backends(&before.spec, &after.spec);
    if !added.is_empty() {
        real_ports(&held.services, added)?;
    }
    if let Some(missing) = new_secrets(&before.spec, &after.spec).into_iter().find(|s| !held.secrets.contains(s)) {
        let said = crate::tf!("errors.no_tls_secret", secret = escaped(&missing), namespace = after.spec.namespace);
        return Err(AppError::invalid("tlsSecret", said));
    }
    Ok(())
}

/// Whether every `(field, service, port)` names a Service of the namespace and one of its ports.
pub fn real_ports<'a>(
    offered: &[ServiceChoice],
    wanted: impl IntoIterator<Item = (String, &'a str, u16)>,
) -> Result<(), AppError> {
    for (field, service, port) in wanted {
        match offered.iter().find(|s| s.name == service) {
            None => {
                return Err(AppError::invalid(field, crate::tf!("errors.no_service", service = escaped(service))));
            }
            Some(s) if !s.ports.contains(&port) => {
                let ports: Vec<String> = s.ports.iter().map(u16::to_string).collect();
                let field = field.strip_suffix(".service").map_or(field.clone(), |at| format!("{at}.port"));
                let said = crate::tf!("errors.no_port", service = service, port = port, ports = ports.join(", "));
                return Err(AppError::invalid(field, said));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// The `(field, service, port)` of every Service port `new` uses that `old` did not: what must
/// be checked against the member cluster.
fn new_backends<'a>(old: &LbticketSpec, new: &'a LbticketSpec) -> Vec<(String, &'a str, u16)> {
    let had = |service: &str, port: u16| {
        old.listeners.iter().flat_map(|l| &l.services).any(|s| s.service == service && s.port == port)
            || old.ingresses.iter().flat_map(|i| &i.rules).any(|r| r.service == service && r.port == port)
    };
    let listeners = new.listeners.iter().enumerate().flat_map(|(i, l)| {
        l.services.iter().enumerate().map(move |(j, s)| (format!("listeners[{i}].services[{j}].service"), s))
    });
    let listeners = listeners.map(|(field, s)| (field, s.service.as_str(), s.port));
    let routes = new.ingresses.iter().enumerate().flat_map(|(i, ing)| {
        ing.rules.iter().enumerate().map(move |(j, r)| (format!("ingresses[{i}].rules[{j}].service"), r))
    });
    let routes = routes.map(|(field, r)| (field, r.service.as_str(), r.port));
    listeners.chain(routes).filter(|(_, service, port)| !had(service, *port)).collect()
}

/// The TLS Secrets `new`'s F5 Ingresses name that `old`'s did not.
fn new_secrets(old: &LbticketSpec, new: &LbticketSpec) -> Vec<String> {
    let had: Vec<&str> = old.ingresses.iter().filter_map(|i| i.tls_secret.as_deref()).collect();
    let named = new.ingresses.iter().filter_map(|i| i.tls_secret.as_deref());
    named.filter(|s| !had.contains(s)).map(String::from).collect()
}

#[cfg(test)]
#[path = "change_tests.rs"]
mod tests;
