//! Whether the CIS of each load balancer posts everything lbdesk writes: its Deployment in the
//! member cluster is read (`crate::cis::deployment`), its arguments checked by the domain
//! (`cis::args::check`), and the answer written as the `CisReady` condition and the metric.

use app::domain::cis::args::{Needs, check};
use app::domain::crd::CONDITION_CIS_READY;
use app::domain::policy::effective_partition;
use kube::ResourceExt;

use super::Context;
use super::reachability::set_on_loadbalancers;
use crate::cis::deployment::args_of;

/// Checks the CIS of every load balancer of `cluster` and writes what it finds. NB: never
/// fails the sync: a Deployment that cannot be read is itself the reason shown.
pub async fn report(ctx: &Context, client: &kube::Client, cluster: &str) {
    let mut verdicts = std::collections::HashMap::new();
    for lb in ctx.caches().loadbalancers.state().iter().filter(|lb| lb.spec.cluster == cluster) {
        let needs = Needs {
            cluster,
            nsselector: &lb.spec.nsselector,
            tenant: effective_partition(&lb.spec),
            ingress_class: &ctx.config.ingress_class,
        };
        let verdict = args_of(client, cluster, &lb.spec.cis).await.and_then(|args| check(&args, &needs));
        ctx.metrics.cis_ready(&lb.name_any(), verdict.is_ok());
        verdicts.insert(lb.name_any(), verdict);
    }
    set_on_loadbalancers(ctx, cluster, CONDITION_CIS_READY, |lb| match verdicts.get(&lb.name_any()) {
        Some(Err(why)) => {
            (false, if why.starts_with("no CIS") { "CisNotFound" } else { "CisMisconfigured" }, why.clone())
        }
        _ => (true, "Checked", String::new()),
    })
    .await;
}
