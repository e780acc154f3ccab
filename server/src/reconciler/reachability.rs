//! Whether each member cluster answers, shown where operators look: the condition
//! `MemberClusterReachable` on every Loadbalancer of the cluster (the load balancer pages show
//! it, and an address request's page shows it for its load balancer), and the metric.

use app::domain::crd::CONDITION_REACHABLE;
use kube::ResourceExt;
use serde_json::json;

use super::status::set_condition;
use super::{Context, loadbalancer, tenant};

/// Reports what the last sync of `cluster` found: `Ok`, or why it could not be reached. Only
/// a change is written (a condition's status, reason or message).
pub async fn report(ctx: &Context, cluster: &str, reached: Result<(), String>) {
    ctx.metrics.reachable(cluster, reached.is_ok());
    let (reason, message) = match &reached {
        Ok(()) => ("Reached", String::new()),
        Err(why) => ("Unreachable", why.clone()),
    };
    for lb in
        ctx.caches().loadbalancers.state().into_iter().filter(|lb| lb.spec.cluster == cluster && tenant::live(&**lb))
    {
        let before = lb.status.as_ref().map(|s| s.conditions.clone()).unwrap_or_default();
        let mut conditions = before.clone();
        set_condition(&mut conditions, CONDITION_REACHABLE, reached.is_ok(), reason, &message, None);
        if conditions == before {
            continue;
        }
        // NB: a conflict is left to the next report (a sync that fails is retried, and reports again).
        if let Err(e) = loadbalancer::patch_status(ctx, &lb, json!({"conditions": conditions})).await {
            tracing::debug!(error = %e, loadbalancer = %lb.name_any(), "reachability not written");
        }
    }
}
