//! Whether the CIS of each load balancer posts everything lbdesk writes: its Deployment in the
//! member cluster is read (`crate::cis::deployment`), its arguments checked by the domain
//! (`cis::args::check`), and the answer written as the `CisReady` condition and the metric.

use std::collections::HashMap;

use app::domain::cis::args::{CisArgs, Needs, check};
use app::domain::crd::{CONDITION_CIS_READY, CisSpec, Loadbalancer};
use app::domain::policy::effective_partition;
use kube::ResourceExt;

use super::Context;
use super::reachability::set_on_loadbalancers;
use crate::cis::deployment::args_of;

/// Checks the CIS of every load balancer of `cluster` and writes what it finds. NB: never
/// fails the sync: a Deployment that cannot be read is itself the reason shown.
pub async fn report(ctx: &Context, client: &kube::Client, cluster: &str) {
    let lbs = ctx.caches().loadbalancers.state();
    let here: Vec<&Loadbalancer> = lbs.iter().map(|lb| &**lb).filter(|lb| lb.spec.cluster == cluster).collect();
    let verdicts = verdicts(client, cluster, &here, &ctx.config.ingress_class).await;
    for (lb, verdict) in &verdicts {
        ctx.metrics.cis_ready(lb, verdict.is_ok());
    }
    set_on_loadbalancers(ctx, Some(cluster), CONDITION_CIS_READY, |lb| match verdicts.get(&lb.name_any()) {
        Some(Err(why)) => {
            (false, if why.starts_with("no CIS") { "CisNotFound" } else { "CisMisconfigured" }, why.clone())
        }
        _ => (true, "Checked", String::new()),
    })
    .await;
}

/// Whether the CIS of each of `lbs` (in `cluster`) posts what lbdesk writes, by load balancer.
/// NB: each CIS is read once: the load balancers of a cluster usually share its one CIS, and a
/// sync runs after every change.
async fn verdicts(
    client: &kube::Client,
    cluster: &str,
    lbs: &[&Loadbalancer],
    ingress_class: &str,
) -> HashMap<String, Result<(), String>> {
    let mut read: HashMap<&CisSpec, Result<CisArgs, String>> = HashMap::new();
    let mut verdicts = HashMap::new();
    for lb in lbs {
        let args = match read.get(&lb.spec.cis) {
            Some(args) => args.clone(),
            None => {
                let args = args_of(client, cluster, &lb.spec.cis).await;
                read.insert(&lb.spec.cis, args.clone());
                args
            }
        };
        let needs =
            Needs { cluster, nsselector: &lb.spec.nsselector, tenant: effective_partition(&lb.spec), ingress_class };
        verdicts.insert(lb.name_any(), args.and_then(|args| check(&args, &needs)));
    }
    verdicts
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{Call, Scenario};
    use super::*;
    use app::domain::crd::LoadbalancerSpec;
    use http::Method;
    use serde_json::json;

    fn lb(name: &str, deployment: Option<&str>) -> Loadbalancer {
        let cis = CisSpec { namespace: "kube-system".into(), deployment: deployment.map(String::from) };
        Loadbalancer::new(name, LoadbalancerSpec { cluster: "c1".into(), cis, ..Default::default() })
    }

    #[tokio::test]
    async fn each_cis_is_read_once_and_judged_for_every_load_balancer_on_it() {
        let running = |agent: &str| {
            json!({"metadata": {"name": "cis", "namespace": "kube-system"},
                   "spec": {"selector": {}, "template": {"spec": {"containers": [
                       {"name": "cis", "image": "f5networks/k8s-bigip-ctlr:2.20.2", "args": [format!("--agent={agent}")]}]}}}})
        };
        let list =
            json!({"apiVersion": "apps/v1", "kind": "DeploymentList", "metadata": {}, "items": [running("cccl")]});
        let gone =
            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404});
        let (client, scenario) = Scenario::client(vec![
            Call::new(Method::GET, "/apis/apps/v1/namespaces/kube-system/deployments?", 200, list),
            Call::new(Method::GET, "/apis/apps/v1/namespaces/other/deployments/cis", 404, gone),
        ]);
        let (a, b, c) = (lb("a", None), lb("b", None), lb("c", Some("other/cis")));
        let (verdicts, _) = scenario.run(verdicts(&client, "c1", &[&a, &b, &c], "f5")).await;
        for shared in ["a", "b"] {
            let why = verdicts[shared].as_ref().expect_err("CIS runs with the wrong agent");
            assert!(why.contains("--agent=cccl"), "{shared}: {why}");
        }
        let why = verdicts["c"].as_ref().expect_err("its own CIS is missing");
        assert!(why.contains("no CIS Deployment other/cis"), "{why}");
    }
}
