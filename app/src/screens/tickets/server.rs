//! Screen 2's server side: the bodies of its server functions, each on the guarded path
//! (`ssr::guard`): the caller may act only on their projects' requests (another project's is
//! "not found", in the same words as a missing one), then the grey-out rule, then the write.

use std::collections::BTreeMap;

use kube::api::{ListParams, Patch};
use kube::{Api, ResourceExt};
use serde_json::json;

use super::{Action, LbChoice, TicketChoices, TicketDetail, TicketForm, TicketList, TicketRow};
use crate::components::bigip::rollup_words;
use crate::domain::access::{Target, Verb};
use crate::domain::as3::placement::Placement;
use crate::domain::as3::validate::share_bytes;
use crate::domain::bigip::rollup;
use crate::domain::crd::MAX_DECLARATION_BYTES;
use crate::domain::crd::{
    CONDITION_CIS_READY, CONDITION_REACHABLE, Condition, DesiredState, LABEL_CLUSTER, LABEL_NAMESPACE, LABEL_PROJECT,
    Lbaddress, Lbrule, Lbticket, LbticketSpec, Loadbalancer, address_name,
};
use crate::domain::ipam::{Device, PairAllocator, Side};
use crate::domain::policy::{
    Held, Limits, TicketUse, check_change, lb_offered_to, object_name, shown, ticket_deletable, ticket_disableable,
    ticket_editable, ticket_enableable,
};
use crate::error::AppError;
use crate::i18n::t;
use crate::ssr::address::{self, project_of, ticket as fetch};
use crate::ssr::guard::{Caller, Written, caller};
use crate::ssr::{self, db_error, kube_error, refused};

fn row(t: &Lbticket) -> TicketRow {
    let status = t.status.clone().unwrap_or_default();
    let label = |k: &str| t.labels().get(k).cloned().unwrap_or_default();
    TicketRow {
        name: t.name_any(),
        project: label(LABEL_PROJECT),
        loadbalancer: t.spec.loadbalancer.clone(),
        cluster: label(LABEL_CLUSTER),
        namespace: t.spec.namespace.clone(),
        veip: status.veip.unwrap_or_default(),
        ltmip: status.ltmip.unwrap_or_default(),
        lbtype: t.spec.lbtype,
        phase: status.phase,
        state: t.spec.state,
        created: t.metadata.creation_timestamp.as_ref().map(|c| c.0.to_string()).unwrap_or_default(),
        on_bigip: status.bigip.as_ref().map(|b| rollup_words(&rollup(b))).unwrap_or_default(),
        message: status.message,
    }
}

/// What uses `t`: its listeners, the Lbrules on them, its F5 Ingresses.
async fn usage(t: &Lbticket) -> Result<TicketUse, AppError> {
    // NB: Lbrules carry no label naming their ticket, so counting them lists them all. Rules
    // are only ever asked about for a listener the ticket has: without listeners, no list.
    if t.spec.listeners.is_empty() {
        return Ok(TicketUse::of(t, []));
    }
    let rules =
        Api::<Lbrule>::all(ssr::mgmt()?).list(&ListParams::default()).await.map_err(|e| kube_error("rules", e))?;
    Ok(TicketUse::of(t, &rules.items))
}

/// The requests the user may see, newest first: their current project's (an admin's:
/// `project`'s, or every project's when it is empty).
pub async fn list(project: &str) -> Result<TicketList, AppError> {
    let caller = caller().await?;
    let mut rows: Vec<TicketRow> = ssr::address::visible(&caller, project).await?.iter().map(row).collect();
    rows.sort_by(|a, b| b.created.cmp(&a.created).then(a.name.cmp(&b.name)));
    Ok(TicketList { rows, quota: quota(&caller).await? })
}

/// What the caller's current project holds of its quota, a line per limit.
async fn quota(caller: &Caller) -> Result<Vec<(String, String)>, AppError> {
    if caller.may(Verb::Read, Target::AllProjects, "").is_ok() {
        return Ok(Vec::new());
    }
    let Some(project) = caller.user.project.clone() else { return Ok(Vec::new()) };
    caller.may(Verb::Read, Target::Project(&project), t("tickets.such_project"))?;
    let world = address::World::load().await?;
    let of = |used: u64, limit: Option<u64>| match limit {
        Some(limit) => crate::tf!("tickets.quota.of", used = used, limit = limit),
        None => crate::tf!("tickets.quota.no_limit", used = used),
    };
    let mut lbs: Vec<&str> = world
        .tickets
        .iter()
        .filter(|t| project_of(t) == Some(project.as_str()))
        .map(|t| t.spec.loadbalancer.as_str())
        .collect();
    lbs.sort_unstable();
    lbs.dedup();
    let mut lines = Vec::new();
    for lb in world.loadbalancers.iter().filter(|l| l.metadata.name.as_deref().is_some_and(|n| lbs.contains(&n))) {
        let name = lb.name_any();
        let held = Held::of(&project, &name, &world.tickets, &world.rules);
        let limits = world.limits(&project, lb);
        lines.push((crate::tf!("tickets.quota.addresses_on", name = name), of(held.addresses, Some(limits.addresses))));
        // NB: the share of the tenant as the member cluster holds it now (what is deployed).
        let namespaces = world
            .tickets
            .iter()
            .filter(|t| project_of(t) == Some(project.as_str()) && t.spec.loadbalancer == name)
            .map(|t| t.spec.namespace.as_str())
            .collect();
        let place = Placement::of(&lb.spec);
        let Ok(deployed) = ssr::preview::deployed(lb, &place).await else { continue };
        let used = deployed.map_or(0, |adc| share_bytes(&adc, &place.tenant, &namespaces) as u64);
        // NB: "KiB" is a unit, written as is in both languages.
        let kib = crate::tf!(
            "tickets.quota.of",
            used = format!("{} KiB", used.div_ceil(1024)),
            limit = format!("{} KiB", limits.declaration_bytes / 1024)
        );
        lines.push((crate::tf!("tickets.quota.declaration_on", name = name), kib));
    }
    let held = Held::of(&project, "", &world.tickets, &world.rules);
    let limits = Limits::for_project(&world.quotas, &project, &Default::default(), MAX_DECLARATION_BYTES as u64);
    lines.push((t("tickets.quota.listeners").into(), of(held.listeners, limits.listeners)));
    lines.push((t("tickets.quota.rules").into(), of(held.rules, limits.rules)));
    lines.push((t("tickets.quota.ingresses").into(), of(held.ingresses, limits.ingresses)));
    Ok(lines)
}

/// One request the user may see, with its timeline.
pub async fn detail(name: &str) -> Result<TicketDetail, AppError> {
    let t = fetch(&caller().await?, Verb::Read, name).await?;
    let mut status = t.status.clone().unwrap_or_default();
    // NB: the load balancer's word on its cluster, without the error's details (addresses of
    // the bank's infrastructure are not a tenant's to read).
    let lb = Api::<Loadbalancer>::all(ssr::mgmt()?).get_opt(&t.spec.loadbalancer).await;
    let lb = lb.ok().flatten();
    if let Some(why) = lb.as_ref().and_then(|lb| lb.cis_not_ready()) {
        // NB: the reason names CIS's flags and the cluster, nothing of another project.
        status.conditions.push(Condition {
            type_: CONDITION_CIS_READY.into(),
            status: "False".into(),
            reason: "CisMisconfigured".into(),
            message: crate::tf!("tickets.detail.cis_not_ready", why = why),
            ..Default::default()
        });
    }
    if let Some(lb) = lb.filter(|lb| lb.unreachable().is_some()) {
        status.conditions.push(Condition {
            type_: CONDITION_REACHABLE.into(),
            status: "False".into(),
            reason: "Unreachable".into(),
            message: crate::tf!("tickets.detail.cluster_unreachable", cluster = lb.spec.cluster),
            ..Default::default()
        });
    }
    Ok(TicketDetail {
        row: row(&t),
        claimer: t.spec.claimer.clone(),
        requested_veip: t.spec.veip.clone().unwrap_or_default(),
        requested_ltmip: t.spec.ltmip.clone().unwrap_or_default(),
        usage: usage(&t).await?,
        history: status.history,
        conditions: status.conditions,
        generation: t.metadata.generation.unwrap_or_default(),
    })
}

/// The namespaces of the user's current project, and the load balancers offered to it.
pub async fn choices() -> Result<TicketChoices, AppError> {
    let caller = caller().await?;
    let project = caller.user.project.clone().ok_or_else(|| AppError::Forbidden(t("tickets.choose_project").into()))?;
    let scope =
        ssr::state()?.db.project_scope(&project).await.map_err(|e| db_error("could not load the project", e))?;
    let lbs = Api::<Loadbalancer>::all(ssr::mgmt()?)
        .list(&ListParams::default())
        .await
        .map_err(|e| kube_error("load balancers", e))?;
    let clusters: Vec<&String> = scope.namespaces.iter().map(|(c, _)| c).collect();
    let loadbalancers = lbs
        .items
        .iter()
        .filter(|lb| clusters.iter().any(|c| lb_offered_to(&lb.spec, c, &project).is_ok()))
        .map(|lb| LbChoice {
            name: lb.name_any(),
            cluster: lb.spec.cluster.clone(),
            ve_cidr: lb.spec.ve.cidr.clone(),
            ltm_cidr: lb.spec.ltm.cidr.clone(),
        })
        .collect();
    Ok(TicketChoices { project, namespaces: scope.namespaces, loadbalancers })
}

/// The answer for a load balancer that does not exist or is not offered: the same words.
fn no_loadbalancer() -> AppError {
    AppError::invalid("loadbalancer", t("tickets.no_such_loadbalancer"))
}

async fn loadbalancer(name: &str) -> Result<Loadbalancer, AppError> {
    object_name("loadbalancer", name).map_err(refused)?;
    Api::<Loadbalancer>::all(ssr::mgmt()?)
        .get_opt(name)
        .await
        .map_err(|e| kube_error("load balancer", e))?
        .ok_or_else(no_loadbalancer)
}

/// The load balancer, when the caller's current project may request addresses on it (an
/// admin: any). Else "not found", so a tenant learns nothing about other projects' ones.
async fn offered(caller: &Caller, name: &str) -> Result<Loadbalancer, AppError> {
    let lb = loadbalancer(name).await?;
    if caller.may(Verb::Read, Target::Loadbalancers, "").is_ok() {
        return Ok(lb);
    }
    caller.may(Verb::Read, Target::LoadbalancerChoices, "")?;
    let project = caller.user.project.clone().unwrap_or_default();
    let scope =
        ssr::state()?.db.project_scope(&project).await.map_err(|e| db_error("could not load the project", e))?;
    let in_cluster = scope.namespaces.iter().any(|(c, _)| *c == lb.spec.cluster);
    if in_cluster && lb_offered_to(&lb.spec, &lb.spec.cluster, &project).is_ok() {
        Ok(lb)
    } else {
        Err(no_loadbalancer())
    }
}

/// Whether `addr` can be requested on `side` of `lb` by `ticket`: inside the range, not
/// reserved, and held by no other ticket on its device (its Lbaddress object, read by name).
async fn check(lb: &Loadbalancer, side: Side, addr: &str, ticket: &str) -> Result<(), AppError> {
    if addr.trim().is_empty() {
        return Ok(());
    }
    let mut alloc = PairAllocator::new(&lb.spec, &[]).map_err(refused)?;
    let pool = if side == Side::Ve { &mut alloc.ve } else { &mut alloc.ltm };
    let ip = pool.parse(addr).map_err(refused)?;
    let name = address_name(&Device::of(&lb.spec, side), ip);
    let held = Api::<Lbaddress>::all(ssr::mgmt()?).get_opt(&name).await.map_err(|e| kube_error("addresses", e))?;
    if let Some(held) = held {
        pool.take(ip, &held.spec.ticket).map_err(refused)?;
    }
    pool.check(ip, ticket).map_err(refused)
}

/// Whether `address` can be requested on `side` of a load balancer offered to the user.
pub async fn check_address(loadbalancer: &str, side: Side, address: &str, ticket: &str) -> Result<(), AppError> {
    let caller = caller().await?;
    let lb = offered(&caller, loadbalancer).await?;
    // NB: an address is "yours" only for a request the caller may see; else anyone could learn
    // which request holds an address by naming it.
    let own = !ticket.is_empty() && fetch(&caller, Verb::Read, ticket).await.is_ok();
    check(&lb, side, address, if own { ticket } else { "" }).await
}

/// Requests an address, or edits a Created or Failed request (`form.generation` set); returns
/// its name. A write that lost a race is tried again against the request as it now is.
pub async fn save(form: TicketForm) -> Result<String, AppError> {
    let caller = caller().await?;
    caller.write(|| save_once(&caller, form.clone())).await
}

async fn save_once(caller: &Caller, form: TicketForm) -> Result<Written<String>, AppError> {
    let name = form.name.trim().to_string();
    object_name("name", &name).map_err(refused)?;
    let by = &caller.user.username;
    let opt = |s: &str| Some(s.trim().to_string()).filter(|s| !s.is_empty());
    if let Some(loaded) = form.generation {
        // Edit: only the addresses, only while Created or Failed.
        let current = fetch(caller, Verb::Write, &name).await?;
        ssr::unchanged_since(loaded, &current.metadata)?;
        let phase = current.status.as_ref().map(|s| s.phase).unwrap_or_default();
        ticket_editable(phase).map_err(refused)?;
        let lb = loadbalancer(&current.spec.loadbalancer).await?;
        for side in [Side::Ve, Side::Ltm] {
            check(&lb, side, form.address(side), &name).await?;
        }
        let patch = json!({
            "metadata": {"resourceVersion": current.resource_version(), "annotations": {"ebcpaas.io/changed-by": by}},
            "spec": {"veip": opt(&form.veip), "ltmip": opt(&form.ltmip)}
        });
        let after = caller
            .api::<Lbticket>("update", project_of(&current))?
            .patch(&name, &Patch::Merge(&patch))
            .await
            .map_err(|e| kube_error("address request", e))?;
        ssr::state()?.caches.seen(&after).await;
        return Ok(Written::change("update", "Lbticket", &name, project_of(&current))
            .before(&current.spec)
            .after(&after.spec)
            .stored(&after)
            .answer(name));
    }
    let project = caller.user.project.clone().ok_or_else(|| AppError::Forbidden(t("tickets.choose_project").into()))?;
    caller.may(Verb::Write, Target::Project(&project), t("tickets.such_project"))?;
    let scope =
        ssr::state()?.db.project_scope(&project).await.map_err(|e| db_error("could not load the project", e))?;
    if !scope.namespaces.contains(&(form.cluster.clone(), form.namespace.clone())) {
        return Err(AppError::invalid(
            "namespace",
            crate::tf!(
                "tickets.form.not_a_namespace",
                namespace = shown(&format!("{}/{}", form.cluster, form.namespace)),
                project = project
            ),
        ));
    }
    let lb = loadbalancer(&form.loadbalancer).await?;
    lb_offered_to(&lb.spec, &form.cluster, &project).map_err(|_| no_loadbalancer())?;
    // NB: counted and created under the load balancer's lock: requests made at once cannot
    // together pass the project's quota.
    let _tenant = ssr::state()?.saves.lock(&form.loadbalancer).await;
    for side in [Side::Ve, Side::Ltm] {
        // A new request holds no address yet, whatever its name.
        check(&lb, side, form.address(side), "").await?;
    }
    let spec = LbticketSpec {
        // NB: the claimer is the signed-in user, never a form field.
        claimer: by.clone(),
        loadbalancer: form.loadbalancer.clone(),
        namespace: form.namespace.clone(),
        veip: opt(&form.veip),
        ltmip: opt(&form.ltmip),
        lbtype: form.lbtype,
        ..Default::default()
    };
    let mut ticket = Lbticket::new(&name, spec);
    ticket.metadata.labels = Some(BTreeMap::from([
        (LABEL_PROJECT.into(), project.clone()),
        (LABEL_CLUSTER.into(), form.cluster.clone()),
        (LABEL_NAMESPACE.into(), form.namespace.clone()),
    ]));
    ticket.metadata.annotations = Some(BTreeMap::from([("ebcpaas.io/changed-by".into(), by.clone())]));
    check_change(&name, None, &ticket, &address::World::load().await?.view()).map_err(refused)?;
    match caller.api::<Lbticket>("create", Some(&project))?.create(&ticket).await {
        // NB: names are cluster-wide; the answer is the same whoever holds the name.
        Err(kube::Error::Api(s)) if s.code == 409 => {
            Err(AppError::invalid("name", crate::tf!("tickets.form.name_taken", name = name)))
        }
        Err(e) => Err(kube_error("address request", e)),
        Ok(created) => {
            ssr::state()?.caches.seen(&created).await;
            Ok(Written::change("create", "Lbticket", &name, Some(&project))
                .after(&created.spec)
                .stored(&created)
                .answer(name))
        }
    }
}

/// Disables, enables or deletes a request, when its phase allows it. A write that lost a race
/// is tried again against the request as it now is.
pub async fn act(name: &str, action: Action) -> Result<(), AppError> {
    let caller = caller().await?;
    caller.write(|| act_once(&caller, name, action)).await
}

async fn act_once(caller: &Caller, name: &str, action: Action) -> Result<Written<()>, AppError> {
    let t = fetch(caller, Verb::Write, name).await?;
    let phase = t.status.as_ref().map(|s| s.phase).unwrap_or_default();
    let (verdict, state, verb) = match action {
        Action::Disable => (ticket_disableable(phase, &usage(&t).await?), DesiredState::Disabled, "disable"),
        Action::Enable => (ticket_enableable(phase), DesiredState::Active, "enable"),
        Action::Delete => (ticket_deletable(phase), DesiredState::Deleted, "delete"),
    };
    verdict.map_err(refused)?;
    let patch = json!({
        "metadata": {"resourceVersion": t.resource_version(), "annotations": {"ebcpaas.io/changed-by": caller.user.username}},
        "spec": {"state": state}
    });
    let after = caller
        .api::<Lbticket>(verb, project_of(&t))?
        .patch(name, &Patch::Merge(&patch))
        .await
        .map_err(|e| kube_error("address request", e))?;
    ssr::state()?.caches.seen(&after).await;
    tracing::info!(ticket = %name, user = %caller.user.username, ?action, "ticket action");
    Ok(Written::change(verb, "Lbticket", name, project_of(&t)).before(&t.spec).after(&after.spec).stored(&after))
}
