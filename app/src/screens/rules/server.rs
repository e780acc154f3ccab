//! Screen 4's server side: each body on the guarded path (`ssr::guard`). A rule belongs to the
//! project of its address request: the caller reaches it only through that request, and every
//! write is checked by the domain's `rule_write`, as admission checks a `kubectl` write.

use kube::api::DeleteParams;
use kube::{Api, ResourceExt};

use super::{RuleChoices, RuleDetail, RuleForm, RulePreview, RuleRow, RulesOfListener, ShiftStep, form_field, summary};
use crate::components::address::{AddressSummary, split_label};
use crate::components::bigip::pool_health;
use crate::domain::access::Verb;
use crate::domain::as3::names;
use crate::domain::as3::placement::Placement;
use crate::domain::crd::{Lbrule, LbruleSpec, Lbticket, Listener};
use crate::domain::policy::{
    Held, Owner, Refusal, TicketUse, Usage, dns_label, object_name, reason, rule_creatable, rule_write, within_quota,
};
use crate::error::AppError;
use crate::i18n::t;
use crate::screens::listeners::ListenerRow;
use crate::ssr::address::{self, World, project_of};
use crate::ssr::audit::{Filter, Projects};
use crate::ssr::guard::{Caller, Written, caller};
use crate::ssr::{self, kube_error, preview, refused};

/// What a call naming a rule the listener does not hold is told.
fn no_rule() -> AppError {
    AppError::NotFound(t("rules.not_found").into())
}

/// What a call naming a listener the request does not hold is told.
fn no_listener() -> AppError {
    AppError::NotFound(t("listeners.not_found").into())
}

/// Priorities a listener's rules are given when renumbered: 10, 20, 30…
const STEP: u32 = 10;

/// The request `ticket` the caller may `verb`, its listener `listener`, and the world around it.
struct Ground {
    ticket: Lbticket,
    listener: Listener,
    world: World,
    /// The tenant's lock, held by a change until it is written (`ssr::saves`).
    _tenant: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl Ground {
    async fn load(caller: &Caller, verb: Verb, ticket: &str, listener: &str) -> Result<Ground, AppError> {
        Ground::read(caller, verb, ticket, listener, false).await
    }

    /// [`Ground::load`] for a change that can grow the tenant: the world is read, and the
    /// change checked and written, under the tenant's lock (`ssr::saves`).
    async fn for_change(caller: &Caller, ticket: &str, listener: &str) -> Result<Ground, AppError> {
        Ground::read(caller, Verb::Write, ticket, listener, true).await
    }

    async fn read(caller: &Caller, verb: Verb, ticket: &str, listener: &str, lock: bool) -> Result<Ground, AppError> {
        let read = address::ticket(caller, verb, ticket).await?;
        let tenant = match lock {
            true => Some(ssr::state()?.saves.lock(&read.spec.loadbalancer).await),
            false => None,
        };
        let world = World::load().await?;
        // NB: the request as the world read under the lock holds it, not as read before.
        let read = world.tickets.iter().find(|w| w.metadata.name == read.metadata.name).cloned().unwrap_or(read);
        let l = read.spec.listeners.iter().find(|l| l.name == listener).cloned().ok_or_else(no_listener)?;
        Ok(Ground { ticket: read, listener: l, world, _tenant: tenant })
    }

    /// The rules on the listener, in the order they are tried.
    fn rules(&self) -> Vec<&Lbrule> {
        let mut rules: Vec<&Lbrule> =
            self.world.rules_on(&self.ticket).filter(|r| r.spec.listener == self.listener.name).collect();
        rules.sort_by_key(|r| (r.spec.priority, r.name_any()));
        rules
    }

    fn rule(&self, name: &str) -> Result<&Lbrule, AppError> {
        self.rules().into_iter().find(|r| r.name_any() == name).ok_or_else(no_rule)
    }

    fn summary(&self) -> AddressSummary {
        address::summary(&self.ticket, self.world.cluster_of(&self.ticket))
    }

    /// What BIG-IP runs of the listener, as its page's section (HTML).
    fn on_bigip(&self) -> String {
        crate::components::bigip::section(&self.ticket, &self.listener.name, false)
    }

    /// Per pool of the listener, what BIG-IP last reported of its members.
    fn health(&self) -> Vec<(String, String)> {
        let bigip = self.ticket.status.as_ref().and_then(|s| s.bigip.as_ref());
        let on = bigip.and_then(|b| b.listeners.iter().find(|l| l.name == self.listener.name));
        on.map(|l| pool_health(&l.members)).unwrap_or_default()
    }

    fn listener_row(&self) -> ListenerRow {
        let usage = TicketUse::of(&self.ticket, self.world.rules_on(&self.ticket));
        ListenerRow::of(&self.listener, usage.rules_on(&self.listener.name))
    }

    /// Why no rule can be written on the listener now.
    fn add_reason(&self) -> Option<String> {
        let phase = self.ticket.status.as_ref().map(|s| s.phase).unwrap_or_default();
        reason(&rule_creatable(phase, self.ticket.spec.lbtype, true))
    }

    /// Whether rule `name` may take the form `spec` (`before`: its stored form).
    fn check(&self, name: &str, spec: &LbruleSpec, before: Option<&LbruleSpec>) -> Result<(), AppError> {
        let w = &self.world;
        let usage = Usage::beside(&self.ticket, &w.tickets, &w.loadbalancers, &w.rules);
        rule_write(name, spec, before, Some(&self.ticket), &w.rules, &usage).map_err(of_form)
    }
}

/// The names a call gives, checked before anything is read (`name` empty: none yet).
fn check_names(ticket: &str, listener: &str, name: &str) -> Result<(), AppError> {
    object_name("ticket", ticket).map_err(refused)?;
    dns_label("listener", listener).map_err(refused)?;
    if name.is_empty() { Ok(()) } else { object_name("name", name).map_err(refused) }
}

/// A refusal said of the form's fields.
fn of_form(r: Refusal) -> AppError {
    let field = r.field.as_deref().filter(|f| !f.is_empty()).map(|f| form_field(f).to_string());
    refused(Refusal { field, reason: r.reason })
}

fn row(r: &Lbrule) -> RuleRow {
    RuleRow { name: r.name_any(), summary: summary(r.spec.match_, &r.spec.rules), spec: r.spec.clone() }
}

fn form_of(r: &Lbrule) -> RuleForm {
    RuleForm {
        ticket: r.spec.lbticket.clone(),
        listener: r.spec.listener.clone(),
        name: r.name_any(),
        match_: r.spec.match_,
        conditions: r.spec.rules.clone(),
        services: r.spec.services.clone(),
        version: r.resource_version(),
    }
}

pub async fn listener_rules(ticket: &str, listener: &str) -> Result<RulesOfListener, AppError> {
    check_names(ticket, listener, "")?;
    let caller = caller().await?;
    let g = Ground::load(&caller, Verb::Read, ticket, listener).await?;
    let deployed = match g.world.loadbalancer_of(&g.ticket) {
        Some(lb) => {
            let place = Placement::of(&lb.spec);
            let declaration = preview::deployed(lb, &place).await?;
            let app = names::application(&g.ticket.spec.namespace, g.listener.protocol);
            let irule = names::irule(&names::virtual_server(ticket, g.listener.port));
            declaration
                .as_ref()
                .and_then(|d| d.get(&place.tenant)?.get(&app)?.get(&irule)?.get("iRule")?.as_str().map(String::from))
        }
        None => None,
    };
    Ok(RulesOfListener {
        address: g.summary(),
        listener: g.listener_row(),
        rules: g.rules().into_iter().map(row).collect(),
        add: g.add_reason(),
        deployed,
        health: g.health(),
        on_bigip: g.on_bigip(),
    })
}

pub async fn detail(ticket: &str, listener: &str, name: &str) -> Result<RuleDetail, AppError> {
    check_names(ticket, listener, name)?;
    let caller = caller().await?;
    let g = Ground::load(&caller, Verb::Read, ticket, listener).await?;
    let r = g.rule(name)?;
    Ok(RuleDetail {
        address: g.summary(),
        listener: g.listener_row(),
        row: row(r),
        form: form_of(r),
        edit: g.add_reason(),
        history: history(name).await?,
    })
}

pub async fn choices(ticket: &str, listener: &str, name: &str) -> Result<RuleChoices, AppError> {
    check_names(ticket, listener, name)?;
    let caller = caller().await?;
    let g = Ground::load(&caller, Verb::Read, ticket, listener).await?;
    let (rule, editing) = if name.is_empty() {
        let taken = |n: &str| g.world.rules.iter().any(|r| r.name_any() == n);
        let fresh = (1..).map(|i| format!("{ticket}-{listener}-{i}")).find(|n| !taken(n)).unwrap_or_default();
        let form = RuleForm {
            ticket: ticket.into(),
            listener: listener.into(),
            name: fresh,
            services: g.listener.services.clone(),
            ..Default::default()
        };
        (form, false)
    } else {
        (form_of(g.rule(name)?), true)
    };
    let me = Owner::Listener { ticket: ticket.into(), listener: listener.into() };
    let priority = priority_of(&g, &rule)?;
    let others =
        g.rules().into_iter().filter(|r| r.name_any() != rule.name).map(|r| (r.name_any(), r.spec.clone())).collect();
    Ok(RuleChoices {
        address: g.summary(),
        listener: g.listener_row(),
        add: g.add_reason(),
        services: address::offered(&g.world, &g.ticket, &me).await?,
        rule,
        editing,
        priority,
        others,
        health: g.health(),
    })
}

/// The priority a form's rule is saved at: its own when editing, after the last otherwise.
fn priority_of(g: &Ground, form: &RuleForm) -> Result<u32, AppError> {
    match &form.version {
        Some(_) => Ok(g.rule(&form.name)?.spec.priority),
        None => Ok(g.rules().last().map_or(STEP, |r| r.spec.priority.saturating_add(STEP))),
    }
}

/// The listener's rules with `spec` as rule `name` (in place of its stored form, if any).
fn with_rule(g: &Ground, name: &str, spec: LbruleSpec) -> Vec<Lbrule> {
    let mut rules: Vec<Lbrule> = g.world.rules_on(&g.ticket).filter(|r| r.name_any() != name).cloned().collect();
    rules.push(Lbrule::new(name, spec));
    rules
}

/// The form's rule checked where it goes, with the Services it names real ones of the
/// namespace and the AS3 declaration it makes valid: the rule, and its stored form when editing.
async fn checked(g: &Ground, form: &RuleForm) -> Result<(LbruleSpec, Option<Lbrule>), AppError> {
    let before = match &form.version {
        Some(_) => Some(g.rule(&form.name)?.clone()),
        None => None,
    };
    let spec = form.spec(priority_of(g, form)?);
    g.check(&form.name, &spec, before.as_ref().map(|b| &b.spec))?;
    if before.is_none()
        && let (Some(project), Some(lb)) = (project_of(&g.ticket), g.world.loadbalancer_of(&g.ticket))
    {
        let lb_name = &g.ticket.spec.loadbalancer;
        let held = Held::of(project, lb_name, &g.world.tickets, &g.world.rules);
        let one_more = Held { rules: held.rules + 1, ..held };
        within_quota(&g.world.limits(project, lb), &held, &one_more, lb_name).map_err(refused)?;
    }
    let offered = address::services(g.world.cluster_of(&g.ticket), &g.ticket.spec.namespace).await?;
    let wanted = spec.services.iter().map(|s| ("services".to_string(), s.service.as_str(), s.port));
    crate::ssr::change::real_ports(&offered, wanted)?;
    if let Err(why) = preview::render(&g.world, &g.ticket, &with_rule(g, &form.name, spec.clone()))?.1 {
        return Err(AppError::Refused(crate::tf!("rules.invalid_as3", why = why)));
    }
    Ok((spec, before))
}

pub async fn preview(form: RuleForm) -> Result<RulePreview, AppError> {
    check_names(&form.ticket, &form.listener, &form.name)?;
    let caller = caller().await?;
    let g = Ground::load(&caller, Verb::Write, &form.ticket, &form.listener).await?;
    let (spec, _) = checked(&g, &form).await?;
    let preview = preview::preview(&g.world, &g.ticket, &with_rule(&g, &form.name, spec)).await?;
    let apps: Option<serde_json::Value> = serde_json::from_str(&preview.declaration).ok();
    let app = names::application(&g.ticket.spec.namespace, g.listener.protocol);
    let irule = names::irule(&names::virtual_server(&form.ticket, g.listener.port));
    let irule = apps.as_ref().and_then(|a| a.get(&app)?.get(&irule)?.get("iRule")?.as_str().map(String::from));
    Ok(RulePreview { preview, irule })
}

pub async fn save(form: RuleForm) -> Result<String, AppError> {
    check_names(&form.ticket, &form.listener, &form.name)?;
    let caller = caller().await?;
    caller.write(|| save_once(&caller, &form)).await
}

async fn save_once(caller: &Caller, form: &RuleForm) -> Result<Written<String>, AppError> {
    let g = Ground::for_change(caller, &form.ticket, &form.listener).await?;
    write(caller, &g, form, if form.version.is_some() { "update" } else { "create" }).await
}

/// Writes the form's rule, checked, as the audited `action`.
async fn write(
    caller: &Caller,
    g: &Ground,
    form: &RuleForm,
    action: &'static str,
) -> Result<Written<String>, AppError> {
    let (spec, before) = checked(g, form).await?;
    let api = caller.api::<Lbrule>(action, project_of(&g.ticket))?;
    let after = match &before {
        Some(b) if b.resource_version() != form.version => return Err(AppError::Conflict(ssr::STALE.into())),
        Some(b) => {
            let mut next = b.clone();
            next.spec = spec;
            api.replace(&form.name, &next).await
        }
        None => api.create(&Lbrule::new(&form.name, spec)).await,
    };
    let after = match after {
        // NB: names are cluster-wide; the answer is the same whoever holds the name.
        Err(kube::Error::Api(s)) if s.code == 409 && before.is_none() => {
            return Err(AppError::invalid("name", crate::tf!("rules.name_taken", name = form.name)));
        }
        other => other.map_err(|e| kube_error("rule", e))?,
    };
    ssr::state()?.caches.seen(&after).await;
    let written =
        Written::change(action, "Lbrule", &form.name, project_of(&g.ticket)).after(&after.spec).stored(&after);
    Ok(match before {
        Some(b) => written.before(&b.spec),
        None => written,
    }
    .answer(form.name.clone()))
}

pub async fn shift(ticket: &str, listener: &str, name: &str, version: &str, second: u32) -> Result<(), AppError> {
    check_names(ticket, listener, name)?;
    if second > 100 {
        return Err(AppError::invalid("second", t("rules.weight_range")));
    }
    let caller = caller().await?;
    caller.write(|| shift_once(&caller, ticket, listener, name, version, second)).await
}

async fn shift_once(
    caller: &Caller,
    ticket: &str,
    listener: &str,
    name: &str,
    version: &str,
    second: u32,
) -> Result<Written<()>, AppError> {
    let g = Ground::for_change(caller, ticket, listener).await?;
    let mut form = form_of(g.rule(name)?);
    let [first, to] = form.services.as_mut_slice() else {
        return Err(AppError::Refused(t("rules.shift.two_services").into()));
    };
    (first.weight, to.weight) = (100 - second, second);
    form.version = Some(version.to_string());
    Ok(write(caller, &g, &form, "shift").await?.answer(()))
}

/// The shift steps of rule `name`, newest first.
async fn history(name: &str) -> Result<Vec<ShiftStep>, AppError> {
    let filter = Filter {
        kind: Some("Lbrule".into()),
        name: Some(name.into()),
        action: Some("shift".into()),
        ..Default::default()
    };
    let page = ssr::state()?.db.audit_page(&Projects::All, &filter, None).await;
    let page = page.map_err(|e| ssr::internal("the audit log", e))?;
    // NB: an entry holds the rule as stored (the embedded API records it with the write), or
    // its spec (a page's entry, written once a cluster's API answered).
    let weights = |after: &str| {
        let after: serde_json::Value = serde_json::from_str(after).unwrap_or_default();
        let spec = after.get("spec").cloned().unwrap_or(after);
        serde_json::from_value::<LbruleSpec>(spec).map(|s| split_label(&s.services)).unwrap_or_default()
    };
    Ok(page
        .records
        .iter()
        .map(|r| ShiftStep { at: r.at_rfc3339(), user: r.user.clone(), weights: weights(&r.after) })
        .collect())
}

pub async fn delete(ticket: &str, listener: &str, name: &str) -> Result<(), AppError> {
    check_names(ticket, listener, name)?;
    let caller = caller().await?;
    caller.write(|| delete_once(&caller, ticket, listener, name)).await
}

async fn delete_once(caller: &Caller, ticket: &str, listener: &str, name: &str) -> Result<Written<()>, AppError> {
    let g = Ground::load(caller, Verb::Write, ticket, listener).await?;
    let r = g.rule(name)?;
    // NB: deletes the rule as read and checked, not one changed or made anew since.
    let preconditions = kube::api::Preconditions { uid: r.uid(), resource_version: r.resource_version() };
    let params = DeleteParams { preconditions: Some(preconditions), ..Default::default() };
    let api = caller.api::<Lbrule>("delete", project_of(&g.ticket))?;
    let deleted = api.delete(name, &params).await.map_err(|e| kube_error("rule", e))?;
    ssr::state()?.caches.seen_deleted(name, &deleted).await;
    let written = Written::change("delete", "Lbrule", name, project_of(&g.ticket)).before(&r.spec);
    // NB: a delete's version is the object's last (the store records it as it was).
    Ok(match &deleted {
        either::Either::Left(kept) => written.stored(kept),
        either::Either::Right(_) => written.stored(r),
    })
}

pub async fn reorder(ticket: &str, listener: &str, name: &str, up: bool) -> Result<(), AppError> {
    check_names(ticket, listener, name)?;
    let caller = caller().await?;
    let g = Ground::load(&caller, Verb::Write, ticket, listener).await?;
    if let Some(why) = g.add_reason() {
        return Err(AppError::Refused(why));
    }
    let mut order: Vec<Lbrule> = g.rules().into_iter().cloned().collect();
    let at = order.iter().position(|r| r.name_any() == name).ok_or_else(no_rule)?;
    let to = if up { at.checked_sub(1) } else { Some(at + 1).filter(|t| *t < order.len()) };
    let Some(to) = to else { return Ok(()) };
    order.swap(at, to);
    // NB: priorities are unique per listener at every step: the rules whose priority changes
    // first move past every priority in use, in their new order, then take 10, 20, 30…; a
    // failure between the two leaves the new order in place, only not renumbered.
    let top = order.iter().map(|r| r.spec.priority).max().unwrap_or_default();
    let wanted: Vec<u32> = (1..=order.len() as u32).map(|i| i * STEP).collect();
    let moving: Vec<(String, u32)> = order
        .iter()
        .zip(&wanted)
        .filter(|(r, want)| r.spec.priority != **want)
        .map(|(r, want)| (r.name_any(), *want))
        .collect();
    let project = project_of(&g.ticket);
    for (k, (name, _)) in moving.iter().enumerate() {
        set_priority(&caller, project, name, top.saturating_add(1 + k as u32)).await?;
    }
    for (name, want) in &moving {
        set_priority(&caller, project, name, *want).await?;
    }
    Ok(())
}

/// Writes rule `name` at `priority`, audited as a move; a lost race reads it again.
async fn set_priority(caller: &Caller, project: Option<&str>, name: &str, priority: u32) -> Result<(), AppError> {
    caller
        .write(|| async move {
            let api = Api::<Lbrule>::all(ssr::mgmt()?);
            let before = api.get_opt(name).await.map_err(|e| kube_error("rule", e))?.ok_or_else(no_rule)?;
            let mut next = before.clone();
            next.spec.priority = priority;
            let after =
                caller.api::<Lbrule>("move", project)?.replace(name, &next).await.map_err(|e| kube_error("rule", e))?;
            ssr::state()?.caches.seen(&after).await;
            Ok(Written::change("move", "Lbrule", name, project).before(&before.spec).after(&after.spec).stored(&after))
        })
        .await
}
