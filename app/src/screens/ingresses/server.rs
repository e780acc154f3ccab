//! Screen 5's server side: each body on the guarded path (`ssr::guard`). An F5 Ingress lives in
//! its request's `spec.ingresses`, so every change is a change of the request, saved in one
//! call (`ssr::change`); the reconciler then writes the Ingress to the member cluster.

use k8s_openapi::api::networking::v1::Ingress;
use kube::Api;
use serde_json::json;

use super::{AddressIngresses, Cis, IngressChoices, IngressDetail, IngressForm};
use crate::components::list::Page;
use crate::domain::access::Verb;
use crate::domain::cis_ingress;
use crate::domain::crd::{F5Ingress, LbType, Lbticket, Loadbalancer};
use crate::domain::policy::{Owner, effective_partition, ingress_creatable, reason, ticket_cluster};
use crate::error::AppError;
use crate::ssr::address;
use crate::ssr::change::{Edit, change};
use crate::ssr::guard::{caller, not_found};
use crate::ssr::{self, kube_error};

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
    t.spec.ingresses.iter().find(|i| i.name == name).ok_or_else(|| not_found(crate::i18n::t("errors.what.ingress")))
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
    let mut detail = IngressDetail {
        deployed: deployed(&cluster, &t.spec.namespace, name).await?,
        address: address::summary(&t, &cluster),
        ingress,
        edit: add_reason(&t),
        cis,
        body: String::new(),
    };
    detail.body = super::detail::body_html(&detail, crate::components::bigip::section(&t, name, true));
    Ok(detail)
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
        secrets: address::tls_secrets(&cluster, &t.spec.namespace).await?,
        cis,
        ingress,
    })
}

pub async fn save(form: IngressForm) -> Result<String, AppError> {
    change(&form.ticket, form.generation, form.edit()).await
}

pub async fn delete(ticket: &str, name: &str) -> Result<(), AppError> {
    change(ticket, None, Edit::RemoveIngress(name.to_string())).await.map(|_| ())
}
