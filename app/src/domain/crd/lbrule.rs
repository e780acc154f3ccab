//! The Lbrule resource: a canary / content rule on one listener of a ticket.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Condition, ServiceRef};

/// How the conditions of a rule combine.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MatchMode {
    /// Any condition matching is enough (the seed's OR).
    #[default]
    Any,
    /// Every condition must match.
    All,
}

/// What part of the request a condition looks at.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RuleType {
    Domain,
    Url,
    Ip,
    Header,
    Cookie,
    Urlparam,
}

/// How a condition value is compared.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Operator {
    Equal,
    Range,
    Startwith,
    Regexp,
}

/// One value of a condition; the values of a condition are OR'ed.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub struct RuleValue {
    pub operator: Operator,
    pub value: String,
}

/// One condition of a rule.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub struct RuleCondition {
    #[serde(rename = "type")]
    pub type_: RuleType,
    /// Header, cookie or query-parameter name; empty for domain, url and ip.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    pub values: Vec<RuleValue>,
}

/// A canary / content rule on one listener of a ticket.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash, Default, JsonSchema)]
#[kube(
    group = "ebcpaas.io",
    version = "v1",
    kind = "Lbrule",
    status = "LbruleStatus",
    shortname = "lbr",
    printcolumn = r#"{"name":"Lbticket","type":"string","jsonPath":".spec.lbticket"}"#,
    printcolumn = r#"{"name":"Listener","type":"string","jsonPath":".spec.listener"}"#,
    printcolumn = r#"{"name":"Priority","type":"integer","jsonPath":".spec.priority"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
pub struct LbruleSpec {
    pub lbticket: String,
    pub listener: String,
    /// Lower runs first; the listener's own weights are the lowest-priority default.
    #[serde(default)]
    pub priority: u32,
    #[serde(default, rename = "match")]
    pub match_: MatchMode,
    pub services: Vec<ServiceRef>,
    pub rules: Vec<RuleCondition>,
}

/// Observed state of a rule.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LbruleStatus {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}
