//! The Lbticket resource: a request for a load-balancer address pair in one namespace, what
//! it carries (listeners or F5 Ingresses) and the lifecycle the reconciler records in its status.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Condition, LABEL_PROJECT};

/// The project a ticket belongs to (its [`LABEL_PROJECT`]).
pub fn project_of(t: &Lbticket) -> Option<&str> {
    t.metadata.labels.as_ref().and_then(|l| l.get(LABEL_PROJECT)).map(String::as_str)
}

/// What a ticket's address is for.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LbType {
    /// Listeners (AS3 virtual servers) are put on it.
    #[default]
    Listener,
    /// An F5 Ingress uses it.
    Ingress,
}

/// The user's intent for a ticket.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default, JsonSchema)]
pub enum DesiredState {
    #[default]
    Active,
    Disabled,
    Deleted,
}

/// Listener protocol; it picks the AS3 Service class, the monitor and the iRule event.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    #[default]
    Http,
    Https,
    Tcp,
    Udp,
}

impl Protocol {
    /// All protocols, in display order.
    pub const ALL: [Protocol; 4] = [Protocol::Http, Protocol::Https, Protocol::Tcp, Protocol::Udp];

    /// The lower-case name used in YAML and in AS3 application names.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Http => "http",
            Protocol::Https => "https",
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
        }
    }

    /// Whether HTTP data (host, path, headers, cookies) is visible to rules.
    pub fn is_http(self) -> bool {
        matches!(self, Protocol::Http | Protocol::Https)
    }
}

/// Session persistence of a listener.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Session {
    Cookie,
    SourceAddress,
    #[default]
    None,
}

/// A weighted backend: a Service port of the ticket's namespace.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub struct ServiceRef {
    pub service: String,
    pub port: u16,
    pub weight: u32,
}

/// A virtual server on the ticket's VE address.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub struct Listener {
    pub name: String,
    pub port: u16,
    pub protocol: Protocol,
    #[serde(default)]
    pub session: Session,
    pub services: Vec<ServiceRef>,
}

/// One route of an F5 Ingress: requests for `host` whose path starts with `path` go to a
/// Service port of the ticket's namespace.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub struct IngressRule {
    /// The host matched (`*.` may lead); every host when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The path prefix matched.
    #[serde(default = "root_path")]
    pub path: String,
    /// The Service the requests go to.
    pub service: String,
    /// Its port.
    pub port: u16,
}

fn root_path() -> String {
    "/".into()
}

/// An F5 Ingress's desired form, kept with its ticket so that disabling, enabling and deleting
/// the ticket withdraws, restores and removes it: lbdesk writes it as a Kubernetes Ingress in
/// the ticket's namespace of the member cluster, with the CIS annotations (VE address,
/// partition) taken from the ticket. Only on tickets of lbtype `ingress`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct F5Ingress {
    /// The Ingress's name in the member cluster.
    pub name: String,
    /// Its routes.
    pub rules: Vec<IngressRule>,
    /// A TLS Secret of the ticket's namespace; plain HTTP when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_secret: Option<String>,
}

/// A load-balancer address request.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash, Default, JsonSchema)]
#[kube(
    group = "ebcpaas.io",
    version = "v1",
    kind = "Lbticket",
    status = "LbticketStatus",
    shortname = "lbt",
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"VEIP","type":"string","jsonPath":".status.veip"}"#,
    printcolumn = r#"{"name":"LTMIP","type":"string","jsonPath":".status.ltmip"}"#,
    printcolumn = r#"{"name":"Loadbalancer","type":"string","jsonPath":".spec.loadbalancer"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
pub struct LbticketSpec {
    /// Set by the server from the session user, never from a form.
    #[serde(default)]
    pub claimer: String,
    pub loadbalancer: String,
    /// Namespace in the Loadbalancer's member cluster.
    pub namespace: String,
    /// Requested VE address; allocated automatically when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub veip: Option<String>,
    /// Requested LTM address; allocated automatically when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ltmip: Option<String>,
    #[serde(default)]
    pub lbtype: LbType,
    #[serde(default)]
    pub state: DesiredState,
    /// Virtual servers on the address; only for lbtype `listener`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub listeners: Vec<Listener>,
    /// F5 Ingresses on the address; only for lbtype `ingress`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ingresses: Vec<F5Ingress>,
}

/// Ticket lifecycle phase (DESIGN §3).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default, JsonSchema)]
pub enum Phase {
    #[default]
    Created,
    Requested,
    Enabled,
    Failed,
    Disabled,
    Deleted,
}

impl Phase {
    /// The key of its words in the console's dictionaries (the seed's: 已创建, 已申请, …).
    pub fn word_key(self) -> &'static str {
        match self {
            Phase::Created => "common.phase.created",
            Phase::Requested => "common.phase.requested",
            Phase::Enabled => "common.phase.enabled",
            Phase::Failed => "common.phase.failed",
            Phase::Disabled => "common.phase.disabled",
            Phase::Deleted => "common.phase.deleted",
        }
    }

    /// The name shown in badges and YAML.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Created => "Created",
            Phase::Requested => "Requested",
            Phase::Enabled => "Enabled",
            Phase::Failed => "Failed",
            Phase::Disabled => "Disabled",
            Phase::Deleted => "Deleted",
        }
    }
}

/// Driver answer state, as in the LBCF contract.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum DriverState {
    Succ,
    Fail,
    Running,
}

impl DriverState {
    /// The answer's name in metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            DriverState::Succ => "succ",
            DriverState::Fail => "fail",
            DriverState::Running => "running",
        }
    }
}

/// The network-policy request of a ticket.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyStatus {
    #[serde(rename = "recordID")]
    pub record_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<DriverState>,
    /// Not before this time (RFC 3339) is the driver asked again for this record: its
    /// `minRetryDelayInSeconds` after a `Running` answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_call_at: Option<String>,
}

impl PolicyStatus {
    /// A record not asked for yet.
    pub fn new(record_id: String) -> PolicyStatus {
        PolicyStatus { record_id, state: None, next_call_at: None }
    }
}

/// One entry of a ticket's timeline.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct HistoryEntry {
    pub phase: Phase,
    /// RFC 3339 time of the transition.
    pub at: String,
    #[serde(default)]
    pub message: String,
    /// Who caused it: a user name, or `lbdesk` for the reconciler.
    #[serde(default)]
    pub by: String,
}

/// Observed state of a ticket.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LbticketStatus {
    #[serde(default)]
    pub phase: Phase,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub veip: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ltmip: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<PolicyStatus>,
    /// The last error, empty when none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<HistoryEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// What BIG-IP runs of the ticket's listeners, as lbdesk last read it back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bigip: Option<BigipStatus>,
}

/// The condition saying whether every listener of a ticket is live on BIG-IP.
pub const CONDITION_LIVE_ON_BIGIP: &str = "LiveOnBigip";

/// The annotation asking lbdesk to read the ticket's BIG-IP now, not at its next period: any
/// new value (a page writes the time it was asked); `status.bigip.answered` takes that value
/// once a read has answered it.
pub const ANNOTATION_READ_BIGIP: &str = "ebcpaas.io/read-bigip";

/// What BIG-IP runs of a ticket's listeners, as lbdesk last read it back.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BigipStatus {
    /// Why BIG-IP could not be read at the last attempt (the listeners say what was seen before).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub unreachable: String,
    /// When the last attempt to read it failed (RFC 3339).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub unreachable_since: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub listeners: Vec<ListenerOnBigip>,
    /// The F5 Ingresses of an address of lbtype `ingress`, the same way.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ingresses: Vec<ListenerOnBigip>,
    /// The last value of the annotation `ebcpaas.io/read-bigip` that a read of BIG-IP answered.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub answered: String,
}

/// Where one listener stands on BIG-IP.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default, JsonSchema)]
pub enum OnBigip {
    /// BIG-IP runs exactly what lbdesk expects CIS to post for it.
    Live,
    /// Not (yet) as expected on BIG-IP, and BIG-IP refused nothing of its tenant.
    #[default]
    Waiting,
    /// BIG-IP refused its tenant's last declaration and keeps an older version.
    Rejected,
}

/// One listener (or F5 Ingress) on BIG-IP: its state since when, why, and its pools' members.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListenerOnBigip {
    pub name: String,
    pub state: OnBigip,
    /// When it was first seen in this state (RFC 3339).
    pub since: String,
    /// BIG-IP's reason, when rejected.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// What differs from what is expected, one line per AS3 object.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub differs: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<PoolMember>,
}

/// A member of one of a listener's pools, as BIG-IP reports it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct PoolMember {
    pub pool: String,
    pub address: String,
    pub port: u16,
    pub state: MemberState,
}

/// A pool member's state on BIG-IP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
pub enum MemberState {
    Up,
    Down,
    /// Administratively disabled (traffic is not sent to it).
    Disabled,
    /// Not monitored, or BIG-IP does not know yet.
    Unknown,
}
