//! Whether the CIS of each load balancer posts everything lbdesk writes: its Deployment in the
//! member cluster is read (named by `spec.cis.deployment`, else the one in `spec.cis.namespace`
//! whose container runs `k8s-bigip-ctlr`), its arguments checked by the domain
//! (`cis::args::check`), and the answer written as the `CisReady` condition and the metric.

use app::domain::cis::args::{CisArgs, Needs, check};
use app::domain::crd::{CONDITION_CIS_READY, Loadbalancer};
use app::domain::policy::effective_partition;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Container;
use kube::api::ListParams;
use kube::{Api, ResourceExt};

use super::reachability::set_on_loadbalancers;
use super::{Context, Result};

/// The container of a Deployment that runs CIS: its image or command names `k8s-bigip-ctlr`.
fn cis_container(deployment: &Deployment) -> Option<&Container> {
    let containers = deployment.spec.template.spec.as_ref().map(|p| p.containers.as_slice()).unwrap_or_default();
    containers.iter().find(|c| {
        c.image.as_deref().is_some_and(|i| i.contains("k8s-bigip-ctlr"))
            || c.command.iter().flatten().any(|w| w.contains("k8s-bigip-ctlr"))
    })
}

fn runs_cis(deployment: &Deployment) -> bool {
    cis_container(deployment).is_some()
}

/// The arguments of the CIS container of a Deployment: its command and args, in order.
fn arguments(deployment: &Deployment) -> Result<CisArgs, String> {
    let container = cis_container(deployment).ok_or("it has no k8s-bigip-ctlr container")?;
    let words = container.command.iter().flatten().chain(container.args.iter().flatten());
    CisArgs::parse(words.map(String::as_str))
}

/// The CIS Deployment serving `lb`, or why none can be read.
async fn find(client: &kube::Client, lb: &Loadbalancer) -> Result<Result<Deployment, String>> {
    let cluster = &lb.spec.cluster;
    if let Some(at) = &lb.spec.cis.deployment {
        let Some((namespace, name)) = at.split_once('/') else {
            return Ok(Err(format!("spec.cis.deployment {at:?} is not namespace/name")));
        };
        let api: Api<Deployment> = Api::namespaced(client.clone(), namespace);
        return Ok(api.get_opt(name).await?.ok_or_else(|| format!("no CIS Deployment {at} in {cluster}")));
    }
    let namespace = &lb.spec.cis.namespace;
    let api: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    let mut found: Vec<Deployment> =
        api.list(&ListParams::default()).await?.items.into_iter().filter(runs_cis).collect();
    Ok(match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(format!(
            "no CIS Deployment found in {cluster}: none in namespace {namespace} runs k8s-bigip-ctlr (set spec.cis.deployment)"
        )),
        n => Err(format!("{n} CIS Deployments in {namespace} of {cluster}: name one in spec.cis.deployment")),
    })
}

/// Checks the CIS of every load balancer of `cluster` and writes what it finds. NB: never
/// fails the sync: a Deployment that cannot be read is itself the reason shown.
pub async fn report(ctx: &Context, client: &kube::Client, cluster: &str) {
    let mut verdicts = std::collections::HashMap::new();
    for lb in ctx.caches().loadbalancers.state().iter().filter(|lb| lb.spec.cluster == cluster) {
        let verdict = match find(client, lb).await {
            Err(e) => Err(format!("could not read the CIS Deployment in {cluster}: {e}")),
            Ok(Err(why)) => Err(why),
            Ok(Ok(deployment)) => arguments(&deployment)
                .map_err(|e| format!("CIS Deployment {} in {cluster}: {e}", deployment.name_any()))
                .and_then(|args| {
                    let needs = Needs {
                        cluster,
                        nsselector: &lb.spec.nsselector,
                        tenant: effective_partition(&lb.spec),
                        ingress_class: &ctx.config.ingress_class,
                    };
                    check(&args, &needs)
                }),
        };
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

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(image: &str, command: &[&str], args: &[&str]) -> Deployment {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "cis", "namespace": "kube-system"},
            "spec": {"selector": {}, "template": {"spec": {"containers": [
                {"name": "sidecar", "image": "busybox"},
                {"name": "cis", "image": image, "command": command, "args": args},
            ]}}},
        }))
        .expect("a Deployment")
    }

    #[test]
    fn the_cis_container_is_found_by_image_or_command_and_read_command_then_args() {
        let by_image =
            deployment("registry.bank/f5/k8s-bigip-ctlr:2.20.2", &[], &["--hubmode", "--filter-tenants=true"]);
        assert!(runs_cis(&by_image));
        let args = arguments(&by_image).expect("reads");
        assert!(args.hubmode && args.filter_tenants);
        let by_command =
            deployment("bank/cis:1", &["/app/bin/k8s-bigip-ctlr", "--hubmode=false"], &["--ingress-class=x"]);
        assert!(runs_cis(&by_command));
        let args = arguments(&by_command).expect("reads");
        assert!(!args.hubmode);
        assert_eq!(args.ingress_class, "x");
        assert!(!runs_cis(&deployment("nginx", &["nginx"], &[])));
        assert!(arguments(&deployment("nginx", &[], &[])).is_err());
    }
}
