//! Where a tenant's AS3 declaration lives in its member cluster and how lbdesk marks what it
//! placed: the ConfigMap (name, namespace, labels, key), and the CIS discovery labels of pool
//! Services. The reconciler writes by these, and an AS3 preview reads the deployed
//! declaration by them, so both name the same objects.

use std::collections::BTreeMap;

use super::PoolLabels;
use crate::domain::crd::LoadbalancerSpec;
use crate::domain::policy::effective_partition;

/// The ConfigMap key holding the AS3 request CIS reads (`data.template`).
pub const TEMPLATE_KEY: &str = "template";
/// CIS's discovery label naming the AS3 tenant of a pool's Service.
pub const CIS_TENANT: &str = "cis.f5.com/as3-tenant";
/// CIS's discovery label naming the AS3 application of a pool's Service.
pub const CIS_APP: &str = "cis.f5.com/as3-app";
/// CIS's discovery label naming the AS3 pool of a Service.
pub const CIS_POOL: &str = "cis.f5.com/as3-pool";
/// lbdesk's mark on the Services it labelled for CIS, so it removes only labels it set.
pub const CIS_MARK: &str = "ebcpaas.io/cis-labels";
/// Every label lbdesk sets on a pool's Service: what it removes when the Service leaves the pools.
pub const SERVICE_LABEL_KEYS: [&str; 4] = [CIS_TENANT, CIS_APP, CIS_POOL, CIS_MARK];

/// Where one tenant's declaration lives: computed once from the Loadbalancer that writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// The AS3 tenant (the Loadbalancer's partition, else its cluster).
    pub tenant: String,
    /// The namespace of the ConfigMap: where the Loadbalancer's CIS reads (`cis.namespace`).
    pub namespace: String,
    /// The ConfigMap's name (see [`configmap_name`]).
    pub configmap: String,
}

impl Placement {
    /// The placement of the tenant `loadbalancer` writes.
    pub fn of(loadbalancer: &LoadbalancerSpec) -> Placement {
        let tenant = effective_partition(loadbalancer);
        Placement {
            tenant: tenant.to_string(),
            namespace: loadbalancer.cis.namespace.clone(),
            configmap: configmap_name(tenant),
        }
    }
}

/// The Loadbalancer, of those of one member cluster, that writes `tenant`.
/// NB: `lb_unique` refuses a second Loadbalancer writing the tenant of a cluster; were one
/// there anyway (written before that rule), the first one listed owns it.
pub fn owner<'a>(
    tenant: &str,
    loadbalancers: impl IntoIterator<Item = &'a LoadbalancerSpec>,
) -> Option<&'a LoadbalancerSpec> {
    loadbalancers.into_iter().find(|lb| effective_partition(lb) == tenant)
}

/// The name of a tenant's ConfigMap: DNS-safe, and unique (a hash is added when the tenant
/// name had to change to fit).
pub fn configmap_name(tenant: &str) -> String {
    let safe: String = tenant
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c.to_ascii_lowercase() } else { '-' })
        .collect();
    let name = format!("lbdesk-as3-{}", safe.trim_matches(|c: char| c == '-' || c == '.'));
    if safe == tenant { name } else { format!("{name}-{:08x}", crate::domain::crc32::hash(tenant.as_bytes())) }
}

/// The labels of a tenant's ConfigMap: what CIS (in `--hubmode`) selects, and lbdesk as owner.
pub fn configmap_labels() -> BTreeMap<String, String> {
    [("f5type", "virtual-server"), ("as3", "true"), ("app.kubernetes.io/managed-by", "lbdesk")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The data of a tenant's ConfigMap: the AS3 request under [`TEMPLATE_KEY`], nothing else.
pub fn configmap_data(template: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(TEMPLATE_KEY.to_string(), template.to_string())])
}

/// The labels a pool's Service carries: CIS's discovery labels and lbdesk's mark.
pub fn service_labels(pool: &PoolLabels) -> BTreeMap<String, String> {
    BTreeMap::from([
        (CIS_TENANT.to_string(), pool.tenant.clone()),
        (CIS_APP.to_string(), pool.app.clone()),
        (CIS_POOL.to_string(), pool.pool.clone()),
        (CIS_MARK.to_string(), "true".to_string()),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configmap_names_are_dns_safe_and_distinct() {
        for (tenant, starts, exact) in [
            ("acp-region01", "lbdesk-as3-acp-region01", true),
            ("Tenant_A", "lbdesk-as3-tenant-a-", false),
            ("_x.", "lbdesk-as3-x-", false),
        ] {
            let name = configmap_name(tenant);
            assert!(name.starts_with(starts), "{tenant}: {name}");
            assert_eq!(name == starts, exact, "{tenant}: a hash only when the name had to change");
        }
        assert_ne!(configmap_name("Tenant_A"), configmap_name("tenant-a"));
    }

    fn lb(cluster: &str, partition: Option<&str>, cis: &str) -> LoadbalancerSpec {
        let mut spec =
            LoadbalancerSpec { cluster: cluster.into(), partition: partition.map(String::from), ..Default::default() };
        spec.cis.namespace = cis.into();
        spec
    }

    #[test]
    fn a_tenant_is_placed_where_its_loadbalancers_cis_reads() {
        for (what, spec, tenant, namespace, configmap) in [
            (
                "the cluster's tenant",
                lb("acp-region01", None, "kube-system"),
                "acp-region01",
                "kube-system",
                "lbdesk-as3-acp-region01",
            ),
            ("a partition", lb("acp-region01", Some("bank"), "cis"), "bank", "cis", "lbdesk-as3-bank"),
            ("an empty partition is none", lb("acp", Some(""), "cis"), "acp", "cis", "lbdesk-as3-acp"),
        ] {
            let want = Placement { tenant: tenant.into(), namespace: namespace.into(), configmap: configmap.into() };
            assert_eq!(Placement::of(&spec), want, "{what}");
        }
    }

    #[test]
    fn the_loadbalancer_writing_a_tenant_owns_it() {
        let lbs = [lb("acp", None, "kube-system"), lb("acp", Some("bank"), "cis")];
        for (tenant, owner_cis) in [("acp", Some("kube-system")), ("bank", Some("cis")), ("other", None)] {
            let found = owner(tenant, &lbs).map(|o| o.cis.namespace.as_str());
            assert_eq!(found, owner_cis, "{tenant}");
        }
    }

    #[test]
    fn a_pool_service_carries_the_cis_labels_and_the_mark() {
        let labels = service_labels(&PoolLabels {
            tenant: "acp".into(),
            app: "default_http_app".into(),
            pool: "svc_80_pool".into(),
        });
        assert_eq!(labels.len(), SERVICE_LABEL_KEYS.len());
        for key in SERVICE_LABEL_KEYS {
            assert!(labels.contains_key(key), "{key}");
        }
        assert_eq!(labels[CIS_POOL], "svc_80_pool");
        assert_eq!(configmap_data("{}")[TEMPLATE_KEY], "{}");
        assert_eq!(configmap_labels()["f5type"], "virtual-server");
    }
}
