//! The custom resources of lbdesk (group `ebcpaas.io`, version `v1`, cluster-scoped).
//!
//! Field names are the seed's with its typos fixed (`listners` → `listeners`,
//! `protocal` → `protocol`). Enumerations are Rust enums, so an unknown value is refused
//! when the object is read; addresses and CIDRs are strings, checked by
//! [`crate::domain::validate`] with a message that names the field, so that one bad object
//! written by hand never breaks a whole list.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

mod lbaddress;
mod lbquota;
mod lbrule;
mod lbticket;
mod reachability;

pub use lbaddress::{LABEL_DEVICE, LABEL_SIDE, Lbaddress, LbaddressSpec, Side, address_name, legacy_address_name};
pub use lbquota::{Charge, Lbquota, LbquotaSpec, LbquotaStatus, Used};
pub use lbrule::{Lbrule, LbruleSpec, LbruleStatus, MatchMode, Operator, RuleCondition, RuleType, RuleValue};
pub use lbticket::{
    ANNOTATION_READ_BIGIP, BigipStatus, CONDITION_LIVE_ON_BIGIP, DesiredState, DriverState, F5Ingress, HistoryEntry,
    IngressRule, LbType, Lbticket, LbticketSpec, LbticketStatus, Listener, ListenerOnBigip, MemberState, OnBigip,
    Phase, PolicyStatus, PoolMember, Protocol, ServiceRef, Session, project_of,
};
pub use reachability::{CONDITION_CIS_READY, CONDITION_RANGES_DISJOINT, CONDITION_REACHABLE};

/// Largest declaration written, measured as sent (`as3::validate::sent_bytes`): a real API server takes at
/// most 1 MiB of ConfigMap data, lbdesk's embedded one a request body of 1 MiB; the rest is left
/// for the ConfigMap's metadata.
pub const MAX_DECLARATION_BYTES: usize = 900 * 1024;

/// The API group of every lbdesk resource.
pub const GROUP: &str = "ebcpaas.io";
/// The API version of every lbdesk resource.
pub const VERSION: &str = "v1";
/// Label carrying the project a ticket or rule belongs to.
pub const LABEL_PROJECT: &str = "ebcpaas.io/project";
/// Label carrying the member cluster of a ticket or rule.
pub const LABEL_CLUSTER: &str = "ebcpaas.io/cluster";
/// Label carrying the namespace (in the member cluster) of a ticket or rule.
pub const LABEL_NAMESPACE: &str = "ebcpaas.io/namespace";
/// Label on generated objects naming the ticket that caused them.
pub const LABEL_LBTICKET: &str = "ebcpaas.io/lbticket";
/// Label on the credential Secrets lbdesk wrote for a Loadbalancer; they go with it.
pub const LABEL_LOADBALANCER: &str = "ebcpaas.io/loadbalancer";
/// A Loadbalancer carrying this label is never deleted.
pub const LABEL_DO_NOT_DELETE: &str = "ebcpaas.io/do-not-delete";

/// A reference to a Secret in the management cluster.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash, Default, JsonSchema)]
pub struct SecretRef {
    pub namespace: String,
    pub name: String,
}

/// Tier-1 LTM: the bank-facing address range and how to reach the device.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LtmSpec {
    pub url: String,
    pub token_secret_ref: SecretRef,
    pub cidr: String,
}

/// Tier-2 BIG-IP VE: the virtual-server address range and how to reach the device.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VeSpec {
    pub addr: String,
    pub credentials_secret_ref: SecretRef,
    pub cidr: String,
    /// Accept any management certificate when reading BIG-IP back (they are often
    /// self-signed); the load balancer's page says so while set. Else the certificate is
    /// checked against the credentials Secret's `ca.crt` (PEM), or the system's roots.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure_skip_verify: bool,
}

/// Where this Loadbalancer's CIS reads its AS3 ConfigMap, and where its Deployment is.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub struct CisSpec {
    pub namespace: String,
    /// The CIS Deployment as `namespace/name`; when absent, the Deployment in `namespace`
    /// whose container runs `k8s-bigip-ctlr`. lbdesk reads its arguments (`CisReady`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment: Option<String>,
}

impl Default for CisSpec {
    fn default() -> Self {
        Self { namespace: "kube-system".into(), deployment: None }
    }
}

/// An abstract load balancer: tier-1 LTM + tier-2 VE + the CIS of one member cluster.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash, Default, JsonSchema)]
#[kube(
    group = "ebcpaas.io",
    version = "v1",
    kind = "Loadbalancer",
    status = "LoadbalancerStatus",
    shortname = "lb",
    printcolumn = r#"{"name":"Cluster","type":"string","jsonPath":".spec.cluster"}"#,
    printcolumn = r#"{"name":"VE-CIDR","type":"string","jsonPath":".spec.ve.cidr"}"#,
    printcolumn = r#"{"name":"LTM-CIDR","type":"string","jsonPath":".spec.ltm.cidr"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
pub struct LoadbalancerSpec {
    pub ltm: LtmSpec,
    pub ve: VeSpec,
    /// Member cluster whose CIS serves this Loadbalancer.
    pub cluster: String,
    /// CIS namespace label selector; namespaces that get listeners are labelled with it.
    #[serde(default)]
    pub nsselector: BTreeMap<String, String>,
    /// The AS3 tenant; the cluster name when absent. Unique per cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    #[serde(default)]
    pub cis: CisSpec,
    /// Projects allowed to use it; empty means every project of the cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scope: Vec<String>,
    /// Addresses or CIDRs (of either range) never handed out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reserved: Vec<String>,
}

/// State of one allocated address pair.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum BondState {
    /// Allocated, network policy not yet approved.
    Pending,
    /// Network policy approved; the pair is in use.
    Bond,
    /// Being released (policy revocation under way).
    Releasing,
}

impl BondState {
    /// The name used in YAML and shown in the pair list.
    pub fn as_str(self) -> &'static str {
        match self {
            BondState::Pending => "pending",
            BondState::Bond => "bond",
            BondState::Releasing => "releasing",
        }
    }
}

/// One allocated (VE, LTM) address pair, as the seed and earlier versions recorded it in
/// `status.ips`; now the pair list's row, read from the pair's [`Lbaddress`] objects.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct IpPair {
    pub veip: String,
    pub ltmip: String,
    pub ticket: String,
    pub status: BondState,
}

/// Address capacity of a Loadbalancer, for the screens.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Capacity {
    pub ve_total: u64,
    pub ve_used: u64,
    #[serde(default)]
    pub ve_free: u64,
    pub ltm_total: u64,
    pub ltm_used: u64,
    #[serde(default)]
    pub ltm_free: u64,
}

/// Observed state of a Loadbalancer.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoadbalancerStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Pairs recorded by versions before [`Lbaddress`]: read once, adopted into objects, then
    /// emptied. NB: a list here grows with every pair and is rewritten with each; see DESIGN §2.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ips: Vec<IpPair>,
    /// Counters of the addresses held, from the Lbaddress objects, written coalesced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<Capacity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// A Kubernetes-style condition. Times are RFC 3339 strings so the domain stays free of clocks.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub last_transition_time: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: &str = include_str!("testdata/seed-objects.yaml");

    fn documents() -> Vec<serde_yaml::Value> {
        SEED.split("\n---\n").map(|d| serde_yaml::from_str(d).expect("seed YAML parses")).collect()
    }

    #[test]
    fn the_seed_examples_round_trip_through_the_types() {
        let docs = documents();
        assert_eq!(docs.len(), 3);
        let lb: Loadbalancer = serde_yaml::from_value(docs[0].clone()).expect("Loadbalancer");
        assert_eq!(lb.spec.ve.cidr, "20.1.0.0/16");
        assert_eq!(lb.spec.nsselector.get("zuu").map(String::as_str), Some("baz"));
        let ticket: Lbticket = serde_yaml::from_value(docs[1].clone()).expect("Lbticket");
        assert_eq!(ticket.spec.listeners.len(), 2);
        assert_eq!(ticket.spec.listeners[1].protocol, Protocol::Tcp);
        assert_eq!(ticket.spec.listeners[1].session, Session::SourceAddress);
        let rule: Lbrule = serde_yaml::from_value(docs[2].clone()).expect("Lbrule");
        assert_eq!(rule.spec.rules[1].values[1].operator, Operator::Range);
        for (doc, again) in [
            (&docs[0], serde_yaml::to_value(&lb).expect("lb")),
            (&docs[1], serde_yaml::to_value(&ticket).expect("ticket")),
            (&docs[2], serde_yaml::to_value(&rule).expect("rule")),
        ] {
            assert_eq!(doc, &again, "serialising gives back the document");
        }
    }

    #[test]
    fn an_f5_ingress_is_kept_with_its_ticket() {
        let yaml = "loadbalancer: demo\nnamespace: default\nlbtype: ingress\ningresses:\n- name: web\n  tlsSecret: web-tls\n  rules:\n  - {host: a.example.com, service: svc01, port: 8080}\n";
        let spec: LbticketSpec = serde_yaml::from_str(yaml).expect("ticket with an ingress");
        let ingress = &spec.ingresses[0];
        assert_eq!(ingress.tls_secret.as_deref(), Some("web-tls"));
        assert_eq!(ingress.rules[0].path, "/", "the path defaults to every path");
        let again = serde_yaml::to_string(&spec).expect("yaml");
        assert!(again.contains("tlsSecret: web-tls"), "{again}");
        let plain = LbticketSpec { loadbalancer: "demo".into(), ..Default::default() };
        assert!(!serde_yaml::to_string(&plain).expect("yaml").contains("ingresses"), "no ingresses, no field");
    }

    #[test]
    fn an_unknown_enum_value_is_refused_with_its_name() {
        let bad = SEED.split("\n---\n").nth(1).expect("ticket").replace("protocol: tcp", "protocol: sctp");
        let err = serde_yaml::from_str::<Lbticket>(&bad).expect_err("sctp is no protocol");
        assert!(err.to_string().contains("sctp"), "{err}");
    }

    #[test]
    fn the_seed_typos_are_not_accepted_silently() {
        let bad = SEED.split("\n---\n").nth(1).expect("ticket").replace("protocol: http", "protocal: http");
        assert!(serde_yaml::from_str::<Lbticket>(&bad).is_err(), "a listener without protocol is refused");
    }
}
