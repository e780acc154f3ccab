//! Screen 5's server side: each body on the guarded path (`ssr::guard`). An F5 Ingress lives in
//! its request's `spec.ingresses`, so every change is a change of the request
//! (`ssr::address::change`): the caller's project, the grey-out rules, the Services rule, then
//! the write; the reconciler then writes the Ingress to the member cluster.

use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::networking::v1::Ingress;
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use super::{AddressIngresses, Cis, IngressChoices, IngressDetail, IngressForm};
use crate::components::list::Page;
use crate::domain::access::Verb;
use crate::domain::cis_ingress;
use crate::domain::crd::{F5Ingress, LbType, Lbticket, LbticketSpec, Loadbalancer};
use crate::domain::policy::{Owner, effective_partition, ingress_creatable, reason, shown, ticket_cluster};
use crate::error::AppError;
use crate::ssr::address::{self, project_of};
use crate::ssr::guard::{Caller, Written, caller, not_found};
use crate::ssr::{self, kube_error};

/// What the pages call an F5 Ingress.
const WHAT: &str = "F5 Ingress";
/// The type of a Secret holding a certificate and its key.
const TLS_SECRET_TYPE: &str = "kubernetes.io/tls";

/// The ingress class CIS watches (`--ingress-class`), which the reconciler gives the Ingresses.
fn class() -> Result<String, AppError> {
    Ok(ssr::state()?.ingress_class)
}

/// Why no F5 Ingress can be added to (or changed on) `t` now.
fn add_reason(t: &Lbticket) -> Option<String> {
    let phase = t.status.as_ref().map(|s| s.phase).unwrap_or_default();
    reason(&ingress_creatable(phase, t.spec.lbtype))
}

/// The F5 Ingress `name` of `t`.
fn find<'a>(t: &'a Lbticket, name: &str) -> Result<&'a F5Ingress, AppError> {
    t.spec.ingresses.iter().find(|i| i.name == name).ok_or_else(|| not_found(&format!("such {WHAT}")))
}

/// The load balancer of `t`, if it still exists.
async fn loadbalancer(t: &Lbticket) -> Result<Option<Loadbalancer>, AppError> {
    let api: Api<Loadbalancer> = Api::all(ssr::mgmt()?);
    api.get_opt(&t.spec.loadbalancer).await.map_err(|e| kube_error("load balancer", e))
}

/// `t`'s member cluster and the CIS side of its Ingresses: the annotations the reconciler gives
/// them, from `t`'s VE address and its load balancer's AS3 tenant.
fn placed(t: &Lbticket, lb: Option<&Loadbalancer>) -> Result<(String, Cis), AppError> {
    let cluster = ticket_cluster(t, lb.map(std::slice::from_ref).unwrap_or_default()).unwrap_or_default().to_string();
    let tenant = lb.map(|lb| effective_partition(&lb.spec)).unwrap_or_default();
    let veip = t.status.as_ref().and_then(|s| s.veip.as_deref()).unwrap_or_default();
    let class = class()?;
    let lines = |tls| {
        let annotations = cis_ingress::annotations(veip, tenant, tls, &class);
        annotations.iter().map(|(k, v)| format!("{k}: {v}")).collect::<Vec<_>>().join("\n")
    };
    let annotations = [lines(false), lines(true)];
    Ok((cluster, Cis { class, annotations }))
}

pub async fn list(project: &str, after: &str) -> Result<Page<AddressIngresses>, AppError> {
    let caller = caller().await?;
    let page = address::addresses(&caller, project, LbType::Ingress, after).await?;
    let rows = page
        .rows
        .iter()
        .map(|t| AddressIngresses {
            address: address::summary(t, ticket_cluster(t, &[]).unwrap_or_default()),
            add: add_reason(t),
            ingresses: t.spec.ingresses.clone(),
        })
        .collect();
    Ok(Page { rows, next: page.next })
}

pub async fn detail(ticket: &str, name: &str) -> Result<IngressDetail, AppError> {
    address::check_names(ticket, name)?;
    let caller = caller().await?;
    let t = address::ticket(&caller, Verb::Read, ticket).await?;
    let ingress = find(&t, name)?.clone();
    let (cluster, cis) = placed(&t, loadbalancer(&t).await?.as_ref())?;
    Ok(IngressDetail {
        deployed: deployed(&cluster, &t.spec.namespace, name).await?,
        address: address::summary(&t, &cluster),
        ingress,
        edit: add_reason(&t),
        cis,
    })
}

/// The Ingress `name` of `namespace` as member cluster `cluster` holds it now: what CIS reads
/// of it besides its routes, as pretty JSON.
async fn deployed(cluster: &str, namespace: &str, name: &str) -> Result<Option<String>, AppError> {
    let api: Api<Ingress> = Api::namespaced(address::member(cluster)?, namespace);
    let found = api.get_opt(name).await.map_err(|e| kube_error("Ingress", e))?;
    Ok(found.map(|ingress| {
        let shown = json!({
            "annotations": ingress.metadata.annotations,
            "ingressClassName": ingress.spec.and_then(|s| s.ingress_class_name),
            "labels": ingress.metadata.labels,
        });
        serde_json::to_string_pretty(&shown).unwrap_or_default()
    }))
}

/// The names of the TLS Secrets of `namespace` in `cluster` (their data stays on the server).
async fn tls_secrets(cluster: &str, namespace: &str) -> Result<Vec<String>, AppError> {
    let api: Api<Secret> = Api::namespaced(address::member(cluster)?, namespace);
    let list = api.list(&ListParams::default()).await.map_err(|e| kube_error("Secrets", e))?;
    let mut names: Vec<String> =
        list.items.iter().filter(|s| s.type_.as_deref() == Some(TLS_SECRET_TYPE)).map(|s| s.name_any()).collect();
    names.sort();
    Ok(names)
}

pub async fn choices(ticket: &str, name: &str) -> Result<IngressChoices, AppError> {
    address::check_names(ticket, name)?;
    let caller = caller().await?;
    let t = address::ticket(&caller, Verb::Write, ticket).await?;
    let ingress = if name.is_empty() { None } else { Some(find(&t, name)?.clone()) };
    let world = address::World::load().await?;
    let (cluster, cis) = placed(&t, world.loadbalancer_of(&t))?;
    Ok(IngressChoices {
        address: address::summary(&t, &cluster),
        add: add_reason(&t),
        services: address::offered(&world, &t, &Owner::Ingress(name.to_string())).await?,
        secrets: tls_secrets(&cluster, &t.spec.namespace).await?,
        cis,
        ingress,
    })
}

pub async fn save(form: IngressForm) -> Result<String, AppError> {
    address::check_names(&form.ticket, form.name.trim())?;
    let caller = caller().await?;
    caller.write(|| save_once(&caller, &form)).await
}

/// The TLS Secrets `ingress` may name, when it names one: those of the request's namespace.
async fn secrets_for(caller: &Caller, ticket: &str, ingress: &F5Ingress) -> Result<Option<Vec<String>>, AppError> {
    if ingress.tls_secret.is_none() {
        return Ok(None);
    }
    let t = address::ticket(caller, Verb::Write, ticket).await?;
    let (cluster, _) = placed(&t, loadbalancer(&t).await?.as_ref())?;
    Ok(Some(tls_secrets(&cluster, &t.spec.namespace).await?))
}

async fn save_once(caller: &Caller, form: &IngressForm) -> Result<Written<String>, AppError> {
    let ingress = form.ingress();
    let name = ingress.name.clone();
    let secrets = secrets_for(caller, &form.ticket, &ingress).await?;
    // NB: where the edit put the Ingress, to say its errors of the form's fields.
    let index = AtomicUsize::new(usize::MAX);
    let changed = address::change(
        caller,
        &form.ticket,
        form.generation,
        |spec| {
            let editing = form.generation.is_some();
            let at = address::put_named(&mut spec.ingresses, ingress.clone(), &name, |i| &i.name, editing, WHAT)?;
            index.store(at, Ordering::Relaxed);
            Ok(())
        },
        |_, after| match (find(after, &name).map(|i| i.tls_secret.as_deref()), &secrets) {
            (Ok(Some(secret)), Some(secrets)) if !secrets.iter().any(|s| s == secret) => Err(AppError::invalid(
                "tlsSecret",
                format!("There is no TLS Secret {} in namespace {}.", shown(secret), after.spec.namespace),
            )),
            _ => Ok(()),
        },
    )
    .await;
    let prefixes: Vec<String> = Some(index.load(Ordering::Relaxed))
        .filter(|i| *i != usize::MAX)
        .map(|i| format!("ingresses[{i}]."))
        .into_iter()
        .collect();
    let (before, after) = changed.map_err(|e| address::within(e, &prefixes))?;
    let action = if form.generation.is_some() { "update F5 Ingress" } else { "add F5 Ingress" };
    Ok(Written::change(action, "Lbticket", &form.ticket, project_of(&after))
        .before(&ingress_of(&before.spec, &name))
        .after(&ingress_of(&after.spec, &name))
        .answer(name))
}

/// The F5 Ingress `name` of `spec`, as JSON for the audit log (null when it has none).
fn ingress_of(spec: &LbticketSpec, name: &str) -> Value {
    spec.ingresses.iter().find(|i| i.name == name).map_or(Value::Null, |i| serde_json::to_value(i).unwrap_or_default())
}

pub async fn delete(ticket: &str, name: &str) -> Result<(), AppError> {
    address::check_names(ticket, name)?;
    let caller = caller().await?;
    caller.write(|| delete_once(&caller, ticket, name)).await
}

async fn delete_once(caller: &Caller, ticket: &str, name: &str) -> Result<Written<()>, AppError> {
    let remove = |spec: &mut LbticketSpec| {
        let before = spec.ingresses.len();
        spec.ingresses.retain(|i| i.name != name);
        if spec.ingresses.len() == before { Err(not_found(&format!("such {WHAT}"))) } else { Ok(()) }
    };
    let (before, after) = address::change(caller, ticket, None, remove, |_, _| Ok(())).await?;
    Ok(Written::change("delete F5 Ingress", "Lbticket", ticket, project_of(&after))
        .before(&ingress_of(&before.spec, name)))
}
