//! The Lbquota resource: what one project may hold, set by platform admins on the Users page or
//! with `kubectl`. Its name is the project's. A limit left out takes its default, which keeps
//! one project from taking a shared range or tenant: half of each load balancer's address pairs,
//! half of what an AS3 tenant's ConfigMap holds; listeners, rules and F5 Ingresses are unlimited.
//!
//! Its status is admission's record, as Kubernetes' ResourceQuota keeps one: what the project
//! used when a write was last charged, and the writes charged in the last minute, written
//! with a compare-and-swap in the same admission that admits the write. So any number of
//! parallel writers and replicas never take a project past its quota.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a project may hold.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, JsonSchema)]
#[kube(
    group = "ebcpaas.io",
    version = "v1",
    kind = "Lbquota",
    plural = "lbquotas",
    derive = "PartialEq",
    derive = "Default",
    status = "LbquotaStatus",
    shortname = "lbq",
    printcolumn = r#"{"name":"Addresses","type":"integer","jsonPath":".spec.addressesPerLoadbalancer"}"#,
    printcolumn = r#"{"name":"Listeners","type":"integer","jsonPath":".spec.listeners"}"#,
    printcolumn = r#"{"name":"Rules","type":"integer","jsonPath":".spec.rules"}"#,
    printcolumn = r#"{"name":"Ingresses","type":"integer","jsonPath":".spec.ingresses"}"#,
    printcolumn = r#"{"name":"Declaration","type":"integer","jsonPath":".spec.declarationBytes"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct LbquotaSpec {
    /// Address pairs the project may hold on each load balancer (requests not Failed or
    /// Deleted); none: half of the load balancer's pairs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addresses_per_loadbalancer: Option<u64>,
    /// Listeners on all the project's requests; none: unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listeners: Option<u64>,
    /// Rules on all the project's listeners; none: unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<u64>,
    /// F5 Ingresses on all the project's requests; none: unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingresses: Option<u64>,
    /// Bytes the project's applications may take of each AS3 tenant's declaration, as its
    /// ConfigMap's write carries them; none: half of what one ConfigMap holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declaration_bytes: Option<u64>,
}

/// Admission's record of what a project holds.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LbquotaStatus {
    /// What the project held once the last charged write was admitted.
    #[serde(default)]
    pub used: Used,
    /// The shares of the writes admitted in the last minute: a write admitted a moment ago
    /// counts, however the caches lag (each object counts once).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub charges: Vec<Charge>,
}

/// What a project holds: address requests by load balancer, listeners, rules and F5 Ingresses.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Used {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub addresses: BTreeMap<String, u64>,
    #[serde(default)]
    pub listeners: u64,
    #[serde(default)]
    pub rules: u64,
    #[serde(default)]
    pub ingresses: u64,
    /// Bytes of each load balancer's AS3 tenant, as last charged.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub declaration_bytes: BTreeMap<String, u64>,
}

/// One admitted object's share of its project's quota.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Charge {
    /// `Lbticket/<name>` or `Lbrule/<name>`.
    pub object: String,
    /// The load balancer whose address it holds (an address request's) and whose AS3 tenant
    /// its bytes are of.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub loadbalancer: String,
    #[serde(default)]
    pub addresses: u64,
    #[serde(default)]
    pub listeners: u64,
    #[serde(default)]
    pub rules: u64,
    #[serde(default)]
    pub ingresses: u64,
    /// Bytes the write added to the project's share of the load balancer's AS3 tenant, as its
    /// writer rendered the tenant.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub declaration_bytes: u64,
    /// The digest of the spec written (`policy::spec_digest`): the caches that show the object
    /// with it count its bytes already.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub spec_digest: String,
    /// When it was charged (RFC 3339).
    pub at: String,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
