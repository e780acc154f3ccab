//! Screen 2's data: address requests (tickets) of the user's projects.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use server_fn::codec::Json;

use crate::domain::crd::{Condition, DesiredState, HistoryEntry, LbType, Phase};
use crate::domain::ipam::Side;
use crate::error::AppError;

/// A row of the list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TicketRow {
    pub name: String,
    pub project: String,
    pub loadbalancer: String,
    pub cluster: String,
    pub namespace: String,
    pub veip: String,
    pub ltmip: String,
    pub lbtype: LbType,
    pub phase: Phase,
    pub state: DesiredState,
    /// RFC 3339 creation time.
    pub created: String,
    /// The last error, if any.
    pub message: String,
}

impl TicketRow {
    /// Whether the list's search `query` finds this row (name, load balancer, cluster or
    /// namespace; case-insensitive; an empty query finds every row). These are Kubernetes
    /// names, ASCII only, so ASCII case folding is exact (and keeps Unicode tables out of the
    /// browser bundle).
    pub fn matches(&self, query: &str) -> bool {
        let query = query.trim().to_ascii_lowercase();
        [&self.name, &self.loadbalancer, &self.cluster, &self.namespace]
            .iter()
            .any(|f| f.to_ascii_lowercase().contains(&query))
    }
}

/// The detail page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TicketDetail {
    pub row: TicketRow,
    pub claimer: String,
    pub requested_veip: String,
    pub requested_ltmip: String,
    pub listeners: usize,
    pub history: Vec<HistoryEntry>,
    pub conditions: Vec<Condition>,
    pub generation: i64,
}

/// The request form (also the edit form, with `generation` set).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TicketForm {
    pub name: String,
    pub cluster: String,
    pub namespace: String,
    pub loadbalancer: String,
    pub lbtype: LbType,
    pub veip: String,
    pub ltmip: String,
    pub generation: Option<i64>,
}

/// A load balancer the user may choose.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LbChoice {
    pub name: String,
    pub cluster: String,
    pub ve_cidr: String,
    pub ltm_cidr: String,
}

/// What the form offers in the current project.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TicketChoices {
    pub project: String,
    /// (cluster, namespace) pairs of the project.
    pub namespaces: Vec<(String, String)>,
    pub loadbalancers: Vec<LbChoice>,
}

/// What a user may do to a ticket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Action {
    Disable,
    Enable,
    Delete,
}

#[cfg(feature = "ssr")]
pub mod ssr {
    use std::collections::BTreeMap;

    use kube::api::{ListParams, Patch, PatchParams, PostParams};
    use kube::{Api, ResourceExt};
    use serde_json::json;

    use super::*;
    use crate::auth::CurrentUser;
    use crate::domain::crd::{LABEL_CLUSTER, LABEL_NAMESPACE, LABEL_PROJECT, Lbticket, LbticketSpec, Loadbalancer};
    use crate::domain::ipam::PairAllocator;
    use crate::domain::policy::{
        lb_offered_to, object_name, ticket_deletable, ticket_disableable, ticket_editable, ticket_enableable,
        validate_ticket,
    };
    use crate::ssr::{self, internal, kube_error, refused};

    pub fn row(t: &Lbticket) -> TicketRow {
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
            message: status.message,
        }
    }

    fn visible(user: &CurrentUser, t: &Lbticket) -> bool {
        user.is_admin() || t.labels().get(LABEL_PROJECT).is_some_and(|p| user.projects.contains(p))
    }

    /// The ticket, if the user may see it (else "not found": its existence is not told).
    pub async fn fetch(user: &CurrentUser, name: &str) -> Result<Lbticket, AppError> {
        let api: Api<Lbticket> = Api::all(ssr::mgmt()?);
        let missing = || AppError::NotFound(format!("There is no address request {name} in your projects."));
        let t = api.get_opt(name).await.map_err(|e| kube_error("address request", e))?.ok_or_else(missing)?;
        if visible(user, &t) { Ok(t) } else { Err(missing()) }
    }

    pub async fn list(user: &CurrentUser, project: &str) -> Result<Vec<TicketRow>, AppError> {
        let api: Api<Lbticket> = Api::all(ssr::mgmt()?);
        let wanted = if user.is_admin() { project.to_string() } else { user.project.clone().unwrap_or_default() };
        let params = if wanted.is_empty() {
            ListParams::default()
        } else {
            ListParams::default().labels(&format!("{LABEL_PROJECT}={wanted}"))
        };
        let mut rows: Vec<TicketRow> = api
            .list(&params)
            .await
            .map_err(|e| kube_error("address requests", e))?
            .items
            .iter()
            .filter(|t| visible(user, t))
            .map(row)
            .collect();
        rows.sort_by(|a, b| b.created.cmp(&a.created).then(a.name.cmp(&b.name)));
        Ok(rows)
    }

    pub async fn detail(user: &CurrentUser, name: &str) -> Result<TicketDetail, AppError> {
        let t = fetch(user, name).await?;
        let status = t.status.clone().unwrap_or_default();
        Ok(TicketDetail {
            row: row(&t),
            claimer: t.spec.claimer.clone(),
            requested_veip: t.spec.veip.clone().unwrap_or_default(),
            requested_ltmip: t.spec.ltmip.clone().unwrap_or_default(),
            listeners: t.spec.listeners.len(),
            history: status.history,
            conditions: status.conditions,
            generation: t.metadata.generation.unwrap_or_default(),
        })
    }

    pub async fn choices(user: &CurrentUser) -> Result<TicketChoices, AppError> {
        let project = user.project.clone().ok_or_else(|| AppError::Forbidden("Choose a project first.".into()))?;
        let scope =
            ssr::state()?.db.project_scope(&project).await.map_err(|e| internal("could not load the project", e))?;
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

    async fn loadbalancer(name: &str) -> Result<Loadbalancer, AppError> {
        Api::<Loadbalancer>::all(ssr::mgmt()?)
            .get_opt(name)
            .await
            .map_err(|e| kube_error("load balancer", e))?
            .ok_or_else(|| AppError::invalid("loadbalancer", format!("There is no load balancer {name}.")))
    }

    /// The load balancer, when the user's current project may request addresses on it (an
    /// admin: any). Else "not found", so a tenant learns nothing about other projects' ones.
    pub async fn offered(user: &CurrentUser, name: &str) -> Result<Loadbalancer, AppError> {
        let lb = loadbalancer(name).await?;
        if user.is_admin() {
            return Ok(lb);
        }
        let project = user.project.clone().unwrap_or_default();
        let scope =
            ssr::state()?.db.project_scope(&project).await.map_err(|e| internal("could not load the project", e))?;
        let in_cluster = scope.namespaces.iter().any(|(c, _)| *c == lb.spec.cluster);
        if in_cluster && lb_offered_to(&lb.spec, &lb.spec.cluster, &project).is_ok() {
            Ok(lb)
        } else {
            Err(AppError::invalid("loadbalancer", format!("There is no load balancer {name}.")))
        }
    }

    /// Whether `addr` can be requested on `side` of `lb` by `ticket`.
    pub fn check(lb: &Loadbalancer, side: Side, addr: &str, ticket: &str) -> Result<(), AppError> {
        if addr.trim().is_empty() {
            return Ok(());
        }
        let ips = lb.status.as_ref().map(|s| s.ips.clone()).unwrap_or_default();
        let alloc = PairAllocator::new(&lb.spec, &ips).map_err(|(f, m)| AppError::invalid(f, m))?;
        let pool = if side == Side::Ve { &alloc.ve } else { &alloc.ltm };
        let ip = pool.parse(addr).map_err(|e| AppError::invalid(side.field(), e.to_string()))?;
        pool.check(ip, ticket).map_err(|e| AppError::invalid(side.field(), e.to_string()))
    }

    pub async fn save(user: &CurrentUser, form: TicketForm) -> Result<String, AppError> {
        let name = form.name.trim().to_string();
        object_name("name", &name).map_err(refused)?;
        let api: Api<Lbticket> = Api::all(ssr::mgmt()?);
        let opt = |s: &str| Some(s.trim().to_string()).filter(|s| !s.is_empty());
        if let Some(loaded) = form.generation {
            // Edit: only the addresses, only while Created or Failed.
            let current = fetch(user, &name).await?;
            ssr::unchanged_since(loaded, &current.metadata)?;
            let phase = current.status.as_ref().map(|s| s.phase).unwrap_or_default();
            ticket_editable(phase).map_err(refused)?;
            let lb = loadbalancer(&current.spec.loadbalancer).await?;
            for (side, addr) in [(Side::Ve, &form.veip), (Side::Ltm, &form.ltmip)] {
                check(&lb, side, addr, &name)?;
            }
            let patch = json!({
                "metadata": {"resourceVersion": current.resource_version(), "annotations": {"ebcpaas.io/changed-by": user.username}},
                "spec": {"veip": opt(&form.veip), "ltmip": opt(&form.ltmip)}
            });
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(|e| kube_error("address request", e))?;
            return Ok(name);
        }
        let project = user.project.clone().ok_or_else(|| AppError::Forbidden("Choose a project first.".into()))?;
        let scope =
            ssr::state()?.db.project_scope(&project).await.map_err(|e| internal("could not load the project", e))?;
        if !scope.namespaces.contains(&(form.cluster.clone(), form.namespace.clone())) {
            return Err(AppError::invalid(
                "namespace",
                format!("{}/{} is not a namespace of project {project}.", form.cluster, form.namespace),
            ));
        }
        let lb = loadbalancer(&form.loadbalancer).await?;
        lb_offered_to(&lb.spec, &form.cluster, &project).map_err(refused)?;
        for (side, addr) in [(Side::Ve, &form.veip), (Side::Ltm, &form.ltmip)] {
            check(&lb, side, addr, &name)?;
        }
        let spec = LbticketSpec {
            // NB: the claimer is the signed-in user, never a form field.
            claimer: user.username.clone(),
            loadbalancer: form.loadbalancer.clone(),
            namespace: form.namespace.clone(),
            veip: opt(&form.veip),
            ltmip: opt(&form.ltmip),
            lbtype: form.lbtype,
            ..Default::default()
        };
        validate_ticket(&name, &spec).map_err(refused)?;
        let mut ticket = Lbticket::new(&name, spec);
        ticket.metadata.labels = Some(BTreeMap::from([
            (LABEL_PROJECT.into(), project),
            (LABEL_CLUSTER.into(), form.cluster.clone()),
            (LABEL_NAMESPACE.into(), form.namespace.clone()),
        ]));
        ticket.metadata.annotations = Some(BTreeMap::from([("ebcpaas.io/changed-by".into(), user.username.clone())]));
        match api.create(&PostParams::default(), &ticket).await {
            Err(kube::Error::Api(s)) if s.code == 409 => {
                Err(AppError::invalid("name", format!("An address request named {name} already exists.")))
            }
            other => other.map(|_| name).map_err(|e| kube_error("address request", e)),
        }
    }

    pub async fn act(user: &CurrentUser, name: &str, action: Action) -> Result<(), AppError> {
        let t = fetch(user, name).await?;
        let phase = t.status.as_ref().map(|s| s.phase).unwrap_or_default();
        let (verdict, state) = match action {
            Action::Disable => (ticket_disableable(phase, t.spec.listeners.len(), 0), DesiredState::Disabled),
            Action::Enable => (ticket_enableable(phase), DesiredState::Active),
            Action::Delete => (ticket_deletable(phase), DesiredState::Deleted),
        };
        verdict.map_err(refused)?;
        let patch = json!({
            "metadata": {"resourceVersion": t.resource_version(), "annotations": {"ebcpaas.io/changed-by": user.username}},
            "spec": {"state": state}
        });
        Api::<Lbticket>::all(ssr::mgmt()?)
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| kube_error("address request", e))?;
        tracing::info!(ticket = %name, user = %user.username, ?action, "ticket action");
        Ok(())
    }
}

/// The address requests of the current project (an admin: of `project`, or all when empty).
#[server(prefix = "/api", endpoint = "ticket/list", output = crate::codec::JsonText)]
pub async fn list_tickets(project: String) -> Result<Vec<TicketRow>, AppError> {
    crate::ssr::reply(
        async {
            let user = crate::ssr::user().await?;
            ssr::list(&user, &project).await
        }
        .await,
    )
}

/// One address request with its timeline.
#[server(prefix = "/api", endpoint = "ticket/get", output = crate::codec::JsonText)]
pub async fn get_ticket(name: String) -> Result<TicketDetail, AppError> {
    crate::ssr::reply(
        async {
            let user = crate::ssr::user().await?;
            ssr::detail(&user, &name).await
        }
        .await,
    )
}

/// Namespaces and load balancers the current project may use.
#[server(prefix = "/api", endpoint = "ticket/choices", output = crate::codec::JsonText)]
pub async fn ticket_form_choices() -> Result<TicketChoices, AppError> {
    crate::ssr::reply(
        async {
            let user = crate::ssr::user().await?;
            ssr::choices(&user).await
        }
        .await,
    )
}

/// Whether an address can be requested (as the user types).
#[server(prefix = "/api", endpoint = "ticket/check-address", output = crate::codec::JsonText)]
pub async fn check_address(loadbalancer: String, side: Side, address: String, ticket: String) -> Result<(), AppError> {
    crate::ssr::reply(
        async {
            let user = crate::ssr::user().await?;
            let lb = ssr::offered(&user, &loadbalancer).await?;
            ssr::check(&lb, side, &address, &ticket)
        }
        .await,
    )
}

/// Requests an address (or edits a Created or Failed request).
#[server(prefix = "/api", endpoint = "ticket/save", input = Json, output = crate::codec::JsonText)]
pub async fn save_ticket(form: TicketForm) -> Result<String, AppError> {
    crate::ssr::reply(
        async {
            let user = crate::ssr::user().await?;
            crate::ssr::retrying(|| ssr::save(&user, form.clone())).await
        }
        .await,
    )
}

/// Disables, enables or deletes a request.
#[server(prefix = "/api", endpoint = "ticket/act", output = crate::codec::JsonText)]
pub async fn act_on_ticket(name: String, action: Action) -> Result<(), AppError> {
    crate::ssr::reply(
        async {
            let user = crate::ssr::user().await?;
            crate::ssr::retrying(|| ssr::act(&user, &name, action)).await
        }
        .await,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, loadbalancer: &str, namespace: &str) -> TicketRow {
        TicketRow {
            name: name.into(),
            project: "project-a".into(),
            loadbalancer: loadbalancer.into(),
            cluster: "acp-region01".into(),
            namespace: namespace.into(),
            veip: String::new(),
            ltmip: String::new(),
            lbtype: LbType::Listener,
            phase: Phase::Enabled,
            state: DesiredState::Active,
            created: String::new(),
            message: String::new(),
        }
    }

    #[test]
    fn the_search_finds_name_load_balancer_cluster_and_namespace() {
        let r = row("shop-web", "region01-dmz", "team-a");
        for query in ["", "  ", "SHOP", "dmz", "region01", "team-a"] {
            assert!(r.matches(query), "{query:?}");
        }
        assert!(!r.matches("intranet"));
    }
}
