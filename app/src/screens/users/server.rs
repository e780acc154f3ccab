//! The accounts' and quotas' server side, on the guarded path: platform admins only; ending
//! sessions and setting a quota are audited like any other change.

use kube::Api;

use super::{Accounts, QuotaForm, UserRow};
use crate::domain::access::{Target, Verb};
use crate::domain::crd::{Lbquota, LbquotaSpec};
use crate::domain::policy::{dns_label, limit};
use crate::error::AppError;
use crate::i18n::t;
use crate::ssr::guard::{Written, caller_for};
use crate::ssr::{STALE, db_error, kube_error, mgmt, now_micros, refused, rfc3339_of_micros, state};

/// Longest user name accepted.
const LONGEST: usize = 253;

pub async fn list() -> Result<Accounts, AppError> {
    caller_for(Verb::Read, Target::Accounts, "accounts").await?;
    Ok(Accounts { users: users().await?, quotas: quotas().await? })
}

async fn users() -> Result<Vec<UserRow>, AppError> {
    let accounts = state()?.db.accounts().await.map_err(|e| db_error("could not read the accounts", e))?;
    Ok(accounts
        .into_iter()
        .map(|(account, projects, since, directory)| UserRow {
            username: account.username,
            display_name: account.display_name,
            directory,
            role: crate::i18n::t(account.role.word_key()).to_string(),
            projects,
            sessions_ended: if since > 0 { rfc3339_of_micros(since) } else { String::new() },
        })
        .collect())
}

pub async fn end_sessions(username: &str) -> Result<(), AppError> {
    let caller = caller_for(Verb::Write, Target::Accounts, "accounts").await?;
    if username.is_empty() || username.len() > LONGEST {
        return Err(AppError::invalid("username", crate::tf!("users.username_length", longest = LONGEST)));
    }
    let db = &state()?.db;
    let known = db.account(username).await.map_err(|e| db_error("could not read the accounts", e))?;
    if known.is_none() {
        return Err(AppError::invalid("username", t("users.no_such_user")));
    }
    caller
        .write(|| async {
            db.end_sessions(username, now_micros()).await.map_err(|e| db_error("could not end the sessions", e))?;
            Ok(Written::change("end sessions", "User", username, None))
        })
        .await
}

async fn quotas() -> Result<Vec<QuotaForm>, AppError> {
    let projects = state()?.db.projects().await.map_err(|e| db_error("could not read the projects", e))?;
    let stored = Api::<Lbquota>::all(mgmt()?).list(&Default::default()).await;
    let stored = stored.map_err(|e| kube_error("project quotas", e))?.items;
    Ok(projects
        .into_iter()
        .map(|project| {
            let quota = stored.iter().find(|q| q.metadata.name.as_deref() == Some(project.as_str()));
            form_of(project, quota)
        })
        .collect())
}

/// A project's quota as the form shows it: each limit, empty for the default.
fn form_of(project: String, quota: Option<&Lbquota>) -> QuotaForm {
    let text = |v: Option<u64>| v.map(|n| n.to_string()).unwrap_or_default();
    let spec = quota.map(|q| q.spec.clone()).unwrap_or_default();
    QuotaForm {
        project,
        addresses: text(spec.addresses_per_loadbalancer),
        listeners: text(spec.listeners),
        rules: text(spec.rules),
        ingresses: text(spec.ingresses),
        declaration_kib: text(spec.declaration_bytes.map(|b| b / 1024)),
        version: version_of(quota),
    }
}

/// What a quota's form is checked against when saved: the generation of its limits (not its
/// `resourceVersion`: admission charges each write to its status), none for the defaults.
fn version_of(quota: Option<&Lbquota>) -> Option<String> {
    let own = quota.filter(|q| q.spec != LbquotaSpec::default());
    own.and_then(|q| q.metadata.generation).map(|g| g.to_string())
}

pub async fn save_quota(form: QuotaForm) -> Result<(), AppError> {
    let caller = caller_for(Verb::Write, Target::Accounts, "quotas").await?;
    dns_label("project", &form.project).map_err(refused)?;
    let projects = state()?.db.projects().await.map_err(|e| db_error("could not read the projects", e))?;
    if !projects.contains(&form.project) {
        return Err(AppError::invalid("project", t("users.quotas.no_such_project")));
    }
    let spec = LbquotaSpec {
        addresses_per_loadbalancer: limit("addresses", &form.addresses).map_err(refused)?,
        listeners: limit("listeners", &form.listeners).map_err(refused)?,
        rules: limit("rules", &form.rules).map_err(refused)?,
        ingresses: limit("ingresses", &form.ingresses).map_err(refused)?,
        declaration_bytes: limit("declaration_kib", &form.declaration_kib).map_err(refused)?.map(|k| k * 1024),
    };
    let project = form.project.as_str();
    caller
        .write(|| async {
            let api = Api::<Lbquota>::all(mgmt()?);
            let current = api.get_opt(project).await.map_err(|e| kube_error("project quota", e))?;
            if version_of(current.as_ref()) != form.version {
                return Err(AppError::Conflict(STALE.into()));
            }
            let written = Written::change("set quota", "Lbquota", project, Some(project)).after(&spec);
            let audited = caller.api::<Lbquota>("set quota", Some(project))?;
            Ok(match current {
                Some(mut quota) => {
                    let before = std::mem::replace(&mut quota.spec, spec.clone());
                    let stored = audited.replace(project, &quota).await.map_err(|e| kube_error("project quota", e))?;
                    state()?.caches.seen(&stored).await;
                    written.before(&before).stored(&stored)
                }
                None => {
                    let quota = Lbquota::new(project, spec.clone());
                    let stored = audited.create(&quota).await.map_err(|e| kube_error("project quota", e))?;
                    state()?.caches.seen(&stored).await;
                    written.stored(&stored)
                }
            })
        })
        .await
}
