//! Loadbalancers: the tenant (written empty while no ticket uses it), and a
//! delete that removes the tenant's ConfigMap — never for one labelled do-not-delete.

use std::sync::Arc;

use app::domain::as3::placement::Placement;
use app::domain::crd::{LABEL_DO_NOT_DELETE, LABEL_LOADBALANCER, Loadbalancer};
use k8s_openapi::api::core::v1::Secret;
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{Event as Finalizer, finalizer};
use kube::{Api, ResourceExt};

use super::{Context, Error, FINALIZER, Result, measured, tenant};

/// The reconciler's entry point for a Loadbalancer.
pub async fn reconcile(lb: Arc<Loadbalancer>, ctx: Arc<Context>) -> Result<Action> {
    measured(&ctx, "loadbalancer", reconcile_loadbalancer(lb, &ctx)).await
}

async fn reconcile_loadbalancer(lb: Arc<Loadbalancer>, ctx: &Arc<Context>) -> Result<Action> {
    let api: Api<Loadbalancer> = Api::all(ctx.clusters.mgmt().clone());
    let name = lb.name_any();
    let action = finalizer(&api, FINALIZER, lb, |event| async {
        match event {
            // NB: the syncers see the Loadbalancer's changes in their cache, and its capacity
            // counters follow the ledger (`addresses::count`).
            Finalizer::Apply(_) => Ok(Action::requeue(ctx.config.ensure_every)),
            Finalizer::Cleanup(lb) => {
                if lb.labels().contains_key(LABEL_DO_NOT_DELETE) {
                    return Err(Error::Invalid(format!(
                        "load balancer {} is labelled {LABEL_DO_NOT_DELETE}; it stays",
                        lb.name_any()
                    )));
                }
                if ctx.ledger().count(&name) > 0 || lb.status.as_ref().is_some_and(|s| !s.ips.is_empty()) {
                    return Err(Error::Invalid(format!(
                        "load balancer {} still holds addresses; it stays until they are released",
                        lb.name_any()
                    )));
                }
                tenant::delete_configmap(ctx, &lb.spec.cluster, &Placement::of(&lb.spec)).await?;
                delete_credentials(ctx, &lb).await?;
                Ok(Action::await_change())
            }
        }
    })
    .await?;
    Ok(action)
}

/// Deletes the credential Secrets lbdesk wrote for `lb` (labelled with its name); Secrets an
/// admin made and referenced by hand are theirs to keep.
async fn delete_credentials(ctx: &Context, lb: &Loadbalancer) -> Result<()> {
    let name = lb.name_any();
    for secret in [&lb.spec.ltm.token_secret_ref, &lb.spec.ve.credentials_secret_ref] {
        let api: Api<Secret> = Api::namespaced(ctx.clusters.mgmt().clone(), &secret.namespace);
        let Some(found) = api.get_opt(&secret.name).await? else { continue };
        if found.labels().get(LABEL_LOADBALANCER) == Some(&name) {
            match api.delete(&secret.name, &Default::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(())
}
