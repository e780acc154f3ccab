//! The Lbquota resource: what one project may hold, set by platform admins on the Users page or
//! with `kubectl`. Its name is the project's. A limit left out takes its default, which keeps
//! one project from taking a shared range or tenant: half of each load balancer's address pairs,
//! half of what an AS3 tenant's ConfigMap holds; listeners, rules and F5 Ingresses are unlimited.

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
