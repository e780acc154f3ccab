//! Screen 1's server side: the bodies of its server functions, for platform admins only. Each
//! goes the guarded path (`ssr::guard`: authorize, the grey-out rule, the write, the audit
//! entry); credentials go to Secrets the browser never reads.

use std::collections::BTreeMap;
use std::net::IpAddr;

use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::{Api, ResourceExt};

use super::{LbChoices, LbDetail, LbForm, LbRow, LbTicket};
use crate::components::list::Page;
use crate::domain::access::{Target, Verb};
use crate::domain::crd::{
    CisSpec, IpPair, LABEL_DO_NOT_DELETE, LABEL_LOADBALANCER, LABEL_SIDE, Lbaddress, Lbticket, Loadbalancer,
    LoadbalancerSpec, LtmSpec, SecretRef, VeSpec,
};
use crate::domain::policy::{
    effective_partition, lb_deletable, lb_unique, lb_update, loadbalancer_use, object_name, shown,
    validate_credentials, validate_lb,
};
use crate::error::AppError;
use crate::i18n::t;
use crate::ssr::guard::{Caller, Written, caller_for};
use crate::ssr::{self, db_error, kube_error, refused};

/// What the guard calls a load balancer (it names none to a caller: the screen is an admin's).
const WHAT: &str = "such load balancer";

/// There is no such load balancer.
fn not_found() -> AppError {
    AppError::NotFound(t("loadbalancers.not_found").into())
}

/// Where the credentials Secrets live.
const SECRETS_NAMESPACE: &str = "lbdesk-system";

fn row(lb: &Loadbalancer, tickets: &[Lbticket]) -> LbRow {
    let name = lb.name_any();
    let capacity = lb.status.as_ref().and_then(|s| s.capacity.clone());
    LbRow {
        name: name.clone(),
        cluster: lb.spec.cluster.clone(),
        ve_addr: lb.spec.ve.addr.clone(),
        ve_cidr: lb.spec.ve.cidr.clone(),
        ltm_url: lb.spec.ltm.url.clone(),
        ltm_cidr: lb.spec.ltm.cidr.clone(),
        pairs_used: capacity.as_ref().map_or(0, |c| c.ve_used),
        pairs_free: capacity.as_ref().map_or(0, |c| c.ve_free.min(c.ltm_free)),
        tickets: loadbalancer_use(lb, tickets.iter().map(|t| (&t.spec, t.status.as_ref()))),
        ready: capacity.is_some(),
        unreachable: lb.unreachable().map(String::from),
        cis_not_ready: lb.cis_not_ready().map(String::from),
        overlap: lb.ranges_overlap().map(String::from),
    }
}

/// Every load balancer and every ticket (to count the ones using each).
async fn all() -> Result<(Vec<Loadbalancer>, Vec<Lbticket>), AppError> {
    let mgmt = ssr::mgmt()?;
    let lbs = Api::<Loadbalancer>::all(mgmt.clone())
        .list(&ListParams::default())
        .await
        .map_err(|e| kube_error("load balancers", e))?;
    let tickets =
        Api::<Lbticket>::all(mgmt).list(&ListParams::default()).await.map_err(|e| kube_error("tickets", e))?;
    Ok((lbs.items, tickets.items))
}

/// Every load balancer whose name or cluster holds `search`, by name.
pub async fn list(search: &str) -> Result<Vec<LbRow>, AppError> {
    caller_for(Verb::Read, Target::Loadbalancers, WHAT).await?;
    if search.len() > 253 {
        return Err(AppError::invalid("search", t("loadbalancers.search_too_long")));
    }
    let (lbs, tickets) = all().await?;
    let needle = search.trim().to_lowercase();
    let mut rows: Vec<LbRow> = lbs
        .iter()
        .map(|lb| row(lb, &tickets))
        .filter(|r| needle.is_empty() || r.name.contains(&needle) || r.cluster.contains(&needle))
        .collect();
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(rows)
}

/// The spec the form asks for.
fn spec_of(form: &LbForm) -> LoadbalancerSpec {
    let secret = |suffix: &str| SecretRef {
        namespace: SECRETS_NAMESPACE.into(),
        name: format!("{}-{suffix}", form.name.trim()),
    };
    LoadbalancerSpec {
        ltm: LtmSpec {
            url: form.ltm_url.trim().into(),
            token_secret_ref: secret("ltm"),
            cidr: form.ltm_cidr.trim().into(),
        },
        ve: VeSpec {
            addr: form.ve_addr.trim().into(),
            credentials_secret_ref: secret("ve"),
            cidr: form.ve_cidr.trim().into(),
            insecure_skip_verify: form.ve_skip_verify,
        },
        cluster: form.cluster.trim().into(),
        nsselector: form
            .nsselector
            .iter()
            .filter(|(k, _)| !k.trim().is_empty())
            .map(|(k, v)| (k.trim().into(), v.trim().into()))
            .collect(),
        partition: Some(form.partition.trim().to_string()).filter(|p| !p.is_empty()),
        cis: CisSpec {
            namespace: if form.cis_namespace.trim().is_empty() {
                CisSpec::default().namespace
            } else {
                form.cis_namespace.trim().into()
            },
            deployment: None,
        },
        scope: form.scope.clone(),
        reserved: form
            .reserved
            .split([',', ' ', '\n', '\r', '\t'])
            .filter(|r| !r.is_empty())
            .map(String::from)
            .collect(),
    }
}

/// The edit form of `lb`, without its secrets.
fn form_of(lb: &Loadbalancer) -> LbForm {
    LbForm {
        name: lb.name_any(),
        ltm_url: lb.spec.ltm.url.clone(),
        ltm_token: None,
        ltm_cidr: lb.spec.ltm.cidr.clone(),
        ve_addr: lb.spec.ve.addr.clone(),
        ve_user: None,
        ve_password: None,
        ve_cidr: lb.spec.ve.cidr.clone(),
        ve_skip_verify: lb.spec.ve.insecure_skip_verify,
        cluster: lb.spec.cluster.clone(),
        nsselector: lb.spec.nsselector.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        partition: lb.spec.partition.clone().unwrap_or_default(),
        cis_namespace: lb.spec.cis.namespace.clone(),
        scope: lb.spec.scope.clone(),
        reserved: lb.spec.reserved.join(", "),
        generation: lb.metadata.generation,
    }
}

async fn put_secret(name: &str, loadbalancer: &str, data: BTreeMap<String, String>) -> Result<(), AppError> {
    let api: Api<Secret> = Api::namespaced(ssr::mgmt()?, SECRETS_NAMESPACE);
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(SECRETS_NAMESPACE.into()),
            labels: Some(BTreeMap::from([(LABEL_LOADBALANCER.into(), loadbalancer.into())])),
            ..Default::default()
        },
        string_data: Some(data),
        ..Default::default()
    };
    match api.get_opt(name).await.map_err(|e| kube_error("credentials", e))? {
        Some(existing) => {
            let mut next = secret;
            next.metadata.resource_version = existing.resource_version();
            next.data = existing.data;
            api.replace(name, &PostParams::default(), &next).await.map_err(|e| kube_error("credentials", e))?;
        }
        None => {
            api.create(&PostParams::default(), &secret).await.map_err(|e| kube_error("credentials", e))?;
        }
    }
    Ok(())
}

async fn has_secret(name: &str, keys: &[&str]) -> bool {
    let Ok(mgmt) = ssr::mgmt() else { return false };
    let api: Api<Secret> = Api::namespaced(mgmt, SECRETS_NAMESPACE);
    matches!(api.get_opt(name).await, Ok(Some(s)) if keys.iter().all(|k| s.data.as_ref().is_some_and(|d| d.contains_key(*k))))
}

/// How many pairs a page of the pair list shows.
const PAIR_PAGE: usize = 50;

/// A page of `name`'s pairs (read from its VE addresses' objects), in address order, after the
/// VE address `after`; only those whose addresses or request hold `search`.
pub async fn pairs(name: &str, search: &str, after: &str) -> Result<Page<IpPair>, AppError> {
    caller_for(Verb::Read, Target::Loadbalancers, WHAT).await?;
    object_name("name", name).map_err(refused)?;
    if search.len() > 253 {
        return Err(AppError::invalid("search", t("loadbalancers.search_too_long")));
    }
    let after: Option<IpAddr> = match after {
        "" => None,
        a => Some(a.parse().map_err(|_| {
            AppError::invalid("after", crate::tf!("loadbalancers.pairs.not_an_address", address = shown(a)))
        })?),
    };
    let selector = format!("{LABEL_LOADBALANCER}={name},{LABEL_SIDE}=ve");
    let addresses = Api::<Lbaddress>::all(ssr::mgmt()?)
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|e| kube_error("addresses", e))?;
    let needle = search.trim().to_lowercase();
    let mut rows: Vec<(IpAddr, IpPair)> = addresses
        .items
        .iter()
        .filter_map(|a| Some((a.spec.ip()?, a.row())))
        .filter(|(ip, _)| after.is_none_or(|after| *ip > after))
        .filter(|(_, p)| [&p.veip, &p.ltmip, &p.ticket].iter().any(|f| f.to_lowercase().contains(&needle)))
        .collect();
    rows.sort_by_key(|(ip, _)| *ip);
    let next = (rows.len() > PAIR_PAGE).then(|| rows[PAIR_PAGE - 1].0.to_string());
    Ok(Page { rows: rows.into_iter().take(PAIR_PAGE).map(|(_, p)| p).collect(), next })
}

/// One load balancer, with its tickets (credentials only as "set" or not).
pub async fn detail(name: &str) -> Result<LbDetail, AppError> {
    caller_for(Verb::Read, Target::Loadbalancers, WHAT).await?;
    object_name("name", name).map_err(refused)?;
    let (lbs, tickets) = all().await?;
    let lb = lbs.iter().find(|l| l.name_any() == name).ok_or_else(not_found)?;
    let using: Vec<LbTicket> = tickets
        .iter()
        .filter(|t| t.spec.loadbalancer == name)
        .map(|t| LbTicket {
            name: t.name_any(),
            namespace: t.spec.namespace.clone(),
            phase: crate::i18n::t(t.status.as_ref().map(|s| s.phase).unwrap_or_default().word_key()).into(),
        })
        .collect();
    let mut detail = LbDetail {
        row: row(lb, &tickets),
        form: form_of(lb),
        token_set: has_secret(&lb.spec.ltm.token_secret_ref.name, &["token"]).await,
        credentials_set: has_secret(&lb.spec.ve.credentials_secret_ref.name, &["user", "password"]).await,
        partition: effective_partition(&lb.spec).into(),
        tickets: using,
        do_not_delete: lb.labels().contains_key(LABEL_DO_NOT_DELETE),
        facts: String::new(),
    };
    detail.facts = super::detail::facts_html(&detail);
    Ok(detail)
}

/// Creates or updates a load balancer (update when `form.generation` is set); returns its name. A
/// write that lost a race is tried again against the load balancer as it now is.
pub async fn save(form: LbForm) -> Result<String, AppError> {
    let caller = caller_for(Verb::Write, Target::Loadbalancers, WHAT).await?;
    caller.write(|| save_once(&caller, form.clone())).await
}

async fn save_once(caller: &Caller, form: LbForm) -> Result<Written<String>, AppError> {
    let by = &caller.user.username;
    let name = form.name.trim().to_string();
    let spec = spec_of(&form);
    validate_lb(&name, &spec).map_err(refused)?;
    let (token, user, password) = (form.ltm_token.as_deref(), form.ve_user.as_deref(), form.ve_password.as_deref());
    validate_credentials(token, user, password, form.generation.is_none()).map_err(refused)?;
    if !ssr::state()?.clusters.members().contains(&spec.cluster) {
        return Err(AppError::invalid(
            "cluster",
            crate::tf!("loadbalancers.form.unknown_cluster", cluster = shown(&spec.cluster)),
        ));
    }
    let (lbs, tickets) = all().await?;
    lb_unique(&name, &spec, lbs.iter().map(|l| (l.metadata.name.as_deref().unwrap_or(""), &l.spec)))
        .map_err(refused)?;
    let existing = lbs.iter().find(|l| l.name_any() == name);
    match (form.generation, existing) {
        (None, Some(_)) => {
            return Err(AppError::invalid("name", crate::tf!("loadbalancers.form.exists", name = name)));
        }
        (Some(_), None) => return Err(not_found()),
        (Some(loaded), Some(old)) => {
            ssr::unchanged_since(loaded, &old.metadata)?;
            let in_use = loadbalancer_use(old, tickets.iter().map(|t| (&t.spec, t.status.as_ref())));
            lb_update(&old.spec, &spec, in_use).map_err(refused)?;
        }
        (None, None) => {}
    }
    let action = if existing.is_some() { "update" } else { "create" };
    let changed = typed_credentials(token, user, password);
    let note = serde_json::json!({"changedCredentials": changed});
    let api = caller.api::<Loadbalancer>(action, None)?.noting(note.clone());
    let mut spec = spec;
    // NB: the form does not show where the CIS Deployment is (set with kubectl); a save keeps it.
    spec.cis.deployment = existing.and_then(|old| old.spec.cis.deployment.clone());
    let mut lb = Loadbalancer::new(&name, spec);
    lb.metadata.annotations = Some(BTreeMap::from([("ebcpaas.io/changed-by".into(), by.clone())]));
    let saved = match existing {
        Some(old) => {
            lb.metadata.resource_version = old.resource_version();
            lb.metadata.labels = old.metadata.labels.clone();
            lb.metadata.finalizers = old.metadata.finalizers.clone();
            api.replace(&name, &lb).await
        }
        None => api.create(&lb).await,
    }
    .map_err(|e| kube_error("load balancer", e))?;
    ssr::state()?.caches.seen(&saved).await;
    // The secrets follow the object, so a refused save leaves no credential behind; a new load
    // balancer whose credentials cannot be written is taken back (and the log says so), so none
    // is left without them.
    if let Err(e) = put_credentials(&lb, token, user, password).await {
        if existing.is_none()
            && let Err(undo) = caller.api::<Loadbalancer>("delete", None)?.delete(&name, &DeleteParams::default()).await
        {
            tracing::error!(loadbalancer = %name, error = %undo, "could not take back a half-saved load balancer");
        }
        return Err(e);
    }
    tracing::info!(loadbalancer = %name, user = %by, "load balancer saved");
    let written = Written::change(action, "Loadbalancer", &name, None);
    let written = match existing {
        Some(old) => written.before(&old.spec),
        None => written,
    };
    Ok(written
        .after(&serde_json::json!({"spec": saved.spec, "changedCredentials": changed}))
        .stored(&saved)
        .answer(name))
}

/// The credentials the form changes (by field name): those typed.
fn typed_credentials(token: Option<&str>, user: Option<&str>, password: Option<&str>) -> Vec<&'static str> {
    let typed = [("ltm.token", token), ("ve.user", user), ("ve.password", password)];
    typed.into_iter().filter(|(_, v)| v.is_some_and(|v| !v.is_empty())).map(|(field, _)| field).collect()
}

/// Writes the credentials typed in the form.
async fn put_credentials(
    lb: &Loadbalancer,
    token: Option<&str>,
    user: Option<&str>,
    password: Option<&str>,
) -> Result<(), AppError> {
    let name = lb.name_any();
    if let Some(token) = token.filter(|t| !t.is_empty()) {
        put_secret(&lb.spec.ltm.token_secret_ref.name, &name, BTreeMap::from([("token".into(), token.into())])).await?;
    }
    let mut credentials = BTreeMap::new();
    for (key, value) in [("user", user), ("password", password)] {
        if let Some(v) = value.filter(|v| !v.is_empty()) {
            credentials.insert(key.to_string(), v.to_string());
        }
    }
    if !credentials.is_empty() {
        put_secret(&lb.spec.ve.credentials_secret_ref.name, &name, credentials).await?;
    }
    Ok(())
}

/// Deletes a load balancer no ticket uses, unless it is marked never to be deleted.
pub async fn delete(name: &str) -> Result<(), AppError> {
    let caller = caller_for(Verb::Write, Target::Loadbalancers, WHAT).await?;
    object_name("name", name).map_err(refused)?;
    caller.write(|| delete_once(&caller, name)).await
}

async fn delete_once(caller: &Caller, name: &str) -> Result<Written<()>, AppError> {
    let (lbs, tickets) = all().await?;
    let lb = lbs.iter().find(|l| l.name_any() == name).ok_or_else(not_found)?;
    let in_use = loadbalancer_use(lb, tickets.iter().map(|t| (&t.spec, t.status.as_ref())));
    lb_deletable(in_use, lb.labels().contains_key(LABEL_DO_NOT_DELETE)).map_err(refused)?;
    let params = DeleteParams {
        preconditions: lb
            .resource_version()
            .map(|rv| kube::api::Preconditions { resource_version: Some(rv), uid: None }),
        ..Default::default()
    };
    let deleted = caller
        .api::<Loadbalancer>("delete", None)?
        .delete(name, &params)
        .await
        .map_err(|e| kube_error("load balancer", e))?;
    ssr::state()?.caches.seen_deleted(name, &deleted).await;
    tracing::info!(loadbalancer = %name, user = %caller.user.username, "load balancer deleted");
    let written = Written::change("delete", "Loadbalancer", name, None).before(&lb.spec);
    Ok(match &deleted {
        either::Either::Left(kept) => written.stored(kept),
        either::Either::Right(_) => written.stored(lb),
    })
}

/// The member clusters and every project, for the form.
pub async fn choices() -> Result<LbChoices, AppError> {
    caller_for(Verb::Read, Target::Loadbalancers, WHAT).await?;
    let state = ssr::state()?;
    let projects: Vec<(String,)> = sqlx::query_as("SELECT name FROM projects ORDER BY name")
        .fetch_all(&state.db.pool)
        .await
        .map_err(|e| db_error("could not list projects", e))?;
    Ok(LbChoices { clusters: state.clusters.members(), projects: projects.into_iter().map(|(p,)| p).collect() })
}
