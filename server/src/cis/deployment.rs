//! Where the CIS Deployment of a load balancer is (`spec.cis.deployment`, else the one in
//! `spec.cis.namespace` whose container runs `k8s-bigip-ctlr`) and the arguments it runs with.

use app::domain::cis::args::CisArgs;
use app::domain::crd::CisSpec;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Container;
use kube::Api;
use kube::api::ListParams;

/// The container of a Deployment that runs CIS: its image or command names `k8s-bigip-ctlr`.
fn cis_container(deployment: &Deployment) -> Option<&Container> {
    let containers = deployment.spec.template.spec.as_ref().map(|p| p.containers.as_slice()).unwrap_or_default();
    containers.iter().find(|c| {
        c.image.as_deref().is_some_and(|i| i.contains("k8s-bigip-ctlr"))
            || c.command.iter().flatten().any(|w| w.contains("k8s-bigip-ctlr"))
    })
}

/// The arguments of the CIS container of a Deployment: its command and args, in order.
pub fn arguments(deployment: &Deployment) -> Result<CisArgs, String> {
    let container = cis_container(deployment).ok_or("it has no k8s-bigip-ctlr container")?;
    let words = container.command.iter().flatten().chain(container.args.iter().flatten());
    CisArgs::parse(words.map(String::as_str))
}

/// The CIS Deployment `cis` points at in `cluster`, or why none can be read (`Err` of the
/// inner result: not found, ambiguous, badly named).
pub async fn find(client: &kube::Client, cluster: &str, cis: &CisSpec) -> kube::Result<Result<Deployment, String>> {
    if let Some(at) = &cis.deployment {
        let Some((namespace, name)) = at.split_once('/') else {
            return Ok(Err(format!("spec.cis.deployment {at:?} is not namespace/name")));
        };
        let api: Api<Deployment> = Api::namespaced(client.clone(), namespace);
        return Ok(api.get_opt(name).await?.ok_or_else(|| format!("no CIS Deployment {at} in {cluster}")));
    }
    let namespace = &cis.namespace;
    let api: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    let mut found: Vec<Deployment> =
        api.list(&ListParams::default()).await?.items.into_iter().filter(|d| cis_container(d).is_some()).collect();
    Ok(match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(format!(
            "no CIS Deployment found in {cluster}: none in namespace {namespace} runs k8s-bigip-ctlr (set spec.cis.deployment)"
        )),
        n => Err(format!("{n} CIS Deployments in {namespace} of {cluster}: name one in spec.cis.deployment")),
    })
}

/// The arguments of the CIS `cis` points at, or why they cannot be had.
pub async fn args_of(client: &kube::Client, cluster: &str, cis: &CisSpec) -> Result<CisArgs, String> {
    let deployment = find(client, cluster, cis)
        .await
        .map_err(|e| format!("could not read the CIS Deployment in {cluster}: {e}"))??;
    let name = deployment.metadata.name.clone().unwrap_or_default();
    arguments(&deployment).map_err(|e| format!("CIS Deployment {name} in {cluster}: {e}"))
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
        let args = arguments(&by_image).expect("reads");
        assert!(args.hubmode && args.filter_tenants);
        let by_command =
            deployment("bank/cis:1", &["/app/bin/k8s-bigip-ctlr", "--hubmode=false"], &["--ingress-class=x"]);
        let args = arguments(&by_command).expect("reads");
        assert!(!args.hubmode);
        assert_eq!(args.ingress_class, "x");
        assert!(cis_container(&deployment("nginx", &["nginx"], &[])).is_none());
        assert!(arguments(&deployment("nginx", &[], &[])).is_err());
    }
}
