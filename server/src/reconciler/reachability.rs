//! Whether each member cluster answers, shown where operators look: the condition
//! `MemberClusterReachable` on every Loadbalancer of the cluster (the load balancer pages show
//! it, and an address request's page shows it for its load balancer), and the metric. Also
//! the writer of every other per-load-balancer condition (`CisReady`, `RangesDisjoint`).

use app::domain::crd::{CONDITION_REACHABLE, Loadbalancer};
use kube::Api;
use kube::ResourceExt;
use serde_json::json;

use super::Context;
use super::status::set_condition;

/// Writes of a condition tried before the next report.
const ATTEMPTS: usize = 5;

/// Reports what the last sync of `cluster` found: `Ok`, or why it could not be reached. Only
/// a change is written (a condition's status, reason or message).
pub async fn report(ctx: &Context, cluster: &str, reached: Result<(), String>) {
    ctx.metrics.reachable(cluster, reached.is_ok());
    let (reason, message) = match &reached {
        Ok(()) => ("Reached", String::new()),
        Err(why) => ("Unreachable", why.clone()),
    };
    set_on_loadbalancers(ctx, Some(cluster), CONDITION_REACHABLE, |_| (reached.is_ok(), reason, message.clone())).await;
}

/// Sets the condition `type_` on every live Loadbalancer of `cluster` (every one, for `None`)
/// to what `of` says of it: (true or false, reason, message). Only a change is written.
pub(super) async fn set_on_loadbalancers<'r>(
    ctx: &Context,
    cluster: Option<&str>,
    type_: &str,
    of: impl Fn(&Loadbalancer) -> (bool, &'r str, String),
) {
    let lbs: Api<Loadbalancer> = Api::all(ctx.clusters.mgmt().clone());
    let here = |lb: &Loadbalancer| cluster.is_none_or(|c| lb.spec.cluster == c) && super::live(lb);
    for lb in ctx.caches().loadbalancers.state().into_iter().filter(|lb| here(lb)) {
        let (ok, reason, message) = of(&lb);
        // NB: most calls change nothing (a check every second or ten): no copy, no write then.
        let conditions = lb.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
        let status = if ok { "True" } else { "False" };
        let said = |c: &&app::domain::crd::Condition| c.type_ == type_;
        if conditions
            .iter()
            .find(said)
            .is_some_and(|c| (c.status.as_str(), c.reason.as_str(), &c.message) == (status, reason, &message))
        {
            continue;
        }
        let mut lb = (*lb).clone();
        // NB: the counters are written beside, often while pairs are handed out: on a conflict,
        // read the load balancer again and write again, so that the news is not left waiting
        // for the next sync.
        for _ in 0..ATTEMPTS {
            let before = lb.status.as_ref().map(|s| s.conditions.clone()).unwrap_or_default();
            let mut conditions = before.clone();
            set_condition(&mut conditions, type_, ok, reason, &message, None);
            if conditions == before {
                break;
            }
            let read = match super::status::patch_lb_status(ctx, &lb, json!({"conditions": conditions})).await {
                Ok(true) => break,
                Ok(false) => lbs.get_opt(&lb.name_any()).await.map_err(super::Error::from),
                Err(e) => Err(e),
            };
            match read {
                Ok(Some(fresh)) => lb = fresh,
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!(error = %e, loadbalancer = %lb.name_any(), condition = type_, "condition not written");
                    break;
                }
            }
        }
    }
}
