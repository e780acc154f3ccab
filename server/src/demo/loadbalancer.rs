//! The demo's load balancer: `shared-lb` on `acp-region01`, offered to both demo projects, so
//! a tenant can request an address as soon as `lbdesk serve --demo` starts. Written through
//! `kube::Client` like every other write (admission checks it), each object only when absent:
//! an admin's edits stay, and a deleted one comes back on the next start.

use std::collections::BTreeMap;

use anyhow::Context;
use app::domain::crd::{CisSpec, LABEL_LOADBALANCER, Loadbalancer, LoadbalancerSpec, LtmSpec, SecretRef, VeSpec};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::PROJECTS;

/// The load balancer's name. NB: no test creates one by this name, and no end-to-end test
/// looks for a name it contains (Playwright matches names by substring).
pub const NAME: &str = "shared-lb";
/// Its member cluster: one where every demo project has namespaces.
pub const CLUSTER: &str = "acp-region01";
/// Its VE range. NB: clear of the simulator's demo refusal (20.1.250.0/24) and of the ranges
/// the tests and the README give their own load balancers (20.1.0.0/16, 20.1–5.0.0/16).
pub const VE_CIDR: &str = "20.9.0.0/24";
/// Its LTM range (the tests use 10.0.0.0/24 and 10.1–5.0.0/16).
pub const LTM_CIDR: &str = "10.9.0.0/24";
/// Its AS3 tenant: the cluster's own name is left to the load balancers the tests create.
pub const PARTITION: &str = "shared";
/// Where its credentials live, as the screens put them.
const SECRETS_NAMESPACE: &str = "lbdesk-system";

/// The load balancer as seeded: every demo project may use it.
pub fn loadbalancer() -> Loadbalancer {
    let secret = |suffix: &str| SecretRef { namespace: SECRETS_NAMESPACE.into(), name: format!("{NAME}-{suffix}") };
    Loadbalancer::new(
        NAME,
        LoadbalancerSpec {
            ltm: LtmSpec { url: "http://100.1.9.1/api".into(), token_secret_ref: secret("ltm"), cidr: LTM_CIDR.into() },
            ve: VeSpec {
                addr: "200.1.9.1".into(),
                credentials_secret_ref: secret("ve"),
                cidr: VE_CIDR.into(),
                ..Default::default()
            },
            cluster: CLUSTER.into(),
            nsselector: BTreeMap::from([("cis".into(), PARTITION.into())]),
            partition: Some(PARTITION.into()),
            cis: CisSpec::default(),
            scope: PROJECTS.iter().map(|(project, _)| project.to_string()).collect(),
            reserved: Vec::new(),
        },
    )
}

/// A credentials Secret of the load balancer, labelled with its name (so deleting the load
/// balancer deletes it too, as for the ones the screens write).
fn credentials(secret: &SecretRef, data: &[(&str, &str)]) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(secret.name.clone()),
            namespace: Some(secret.namespace.clone()),
            labels: Some(BTreeMap::from([(LABEL_LOADBALANCER.into(), NAME.into())])),
            ..Default::default()
        },
        string_data: Some(data.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
        ..Default::default()
    }
}

/// Creates `object` unless one of its name exists.
async fn create_if_absent<K>(api: &Api<K>, object: &K) -> anyhow::Result<()>
where
    K: Resource + Clone + DeserializeOwned + Serialize + std::fmt::Debug,
    K::DynamicType: Default,
{
    let (kind, name) = (K::kind(&K::DynamicType::default()).to_string(), object.name_any());
    if api.get_opt(&name).await.with_context(|| format!("could not read the {kind} {name}"))?.is_none() {
        api.create(&PostParams::default(), object)
            .await
            .with_context(|| format!("could not create the {kind} {name}"))?;
        tracing::info!(%kind, %name, "demo object created");
    }
    Ok(())
}

/// Creates the load balancer and its credentials Secrets in the management cluster, each
/// unless it exists.
pub async fn seed(mgmt: &kube::Client) -> anyhow::Result<()> {
    let lb = loadbalancer();
    create_if_absent(&Api::all(mgmt.clone()), &lb).await?;
    // NB: the Secrets follow the object, as in the screens: a refused load balancer leaves no
    // credential behind.
    let secrets: Api<Secret> = Api::namespaced(mgmt.clone(), SECRETS_NAMESPACE);
    create_if_absent(&secrets, &credentials(&lb.spec.ltm.token_secret_ref, &[("token", "demo-ltm-token")])).await?;
    let ve = credentials(&lb.spec.ve.credentials_secret_ref, &[("user", "admin"), ("password", "demo-ve-password")]);
    create_if_absent(&secrets, &ve).await
}

#[cfg(test)]
mod tests {
    use app::domain::policy::{lb_offered_to, validate_lb};
    use ipnet::IpNet;

    use super::*;
    use crate::driver::sim::Behaviour;

    #[test]
    fn every_demo_project_may_request_addresses_on_the_demo_load_balancer() {
        let lb = loadbalancer();
        assert_eq!(validate_lb(NAME, &lb.spec), Ok(()));
        for (project, namespaces) in PROJECTS {
            assert!(
                namespaces.iter().any(|(cluster, _)| *cluster == CLUSTER),
                "{project} has a namespace in {CLUSTER}"
            );
            assert_eq!(lb_offered_to(&lb.spec, CLUSTER, project), Ok(()), "{project}");
        }
    }

    #[test]
    fn the_demo_load_balancers_ranges_miss_the_simulators_refusal() {
        let refused: Vec<IpNet> =
            Behaviour::demo().deny.iter().filter_map(|d| d.cidr.as_deref()).map(|c| c.parse().expect("CIDR")).collect();
        assert!(!refused.is_empty(), "the demo behaviour refuses a range");
        for range in [VE_CIDR, LTM_CIDR] {
            let range: IpNet = range.parse().expect("CIDR");
            for deny in &refused {
                assert!(!range.contains(deny) && !deny.contains(&range), "{range} overlaps {deny}");
            }
        }
    }
}
