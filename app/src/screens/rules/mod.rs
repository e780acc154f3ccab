//! Screen 4: canary and content rules on the listeners of the user's projects, each an Lbrule
//! naming its address request and listener. The types both halves share and the server
//! functions are here; their server-side bodies are in `server`, the pages beside it.

mod form;
mod list;
mod listener;
mod rule;
#[cfg(feature = "ssr")]
mod server;
mod shift;
mod tester;

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::components::address::{AddressSummary, ServiceChoice};
use crate::components::preview::Preview;
use crate::domain::crd::{LbruleSpec, MatchMode, Operator, RuleCondition, RuleType, ServiceRef};
use crate::error::AppError;
use crate::i18n::t;
use crate::screens::listeners::ListenerRow;

pub use form::RuleFormPage;
pub use list::Rules;
pub use listener::ListenerRulesPage;
pub use rule::RulePage;

crate::lazy_screen!(rules_screen {
    /// The list's route: the screen's pages load in one browser chunk.
    RulesRoute => Rules,
    /// The rules of one listener.
    ListenerRulesRoute => ListenerRulesPage,
    /// A rule's page.
    RuleRoute => RulePage,
});
crate::lazy_screen!(rules_form {
    /// The rule form, new or edit.
    RuleFormRoute => RuleFormPage,
});

/// A rule as the pages show it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RuleRow {
    pub name: String,
    /// Its conditions in one line.
    pub summary: String,
    pub spec: LbruleSpec,
}

/// A listener's rules, in the order they are tried.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RulesOfListener {
    pub address: AddressSummary,
    pub listener: ListenerRow,
    pub rules: Vec<RuleRow>,
    /// Why no rule can be added now; `None` when one can.
    pub add: Option<String>,
    /// The listener's iRule as the member cluster's AS3 ConfigMap holds it, if it does.
    pub deployed: Option<String>,
    /// Per pool of the listener, what BIG-IP last reported of its members ("2 of 3 members
    /// up"), for the request tester.
    pub health: Vec<(String, String)>,
    /// What BIG-IP runs of the listener (its rules are its iRule): HTML the server rendered.
    pub on_bigip: String,
}

/// A rule's page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RuleDetail {
    pub address: AddressSummary,
    pub listener: ListenerRow,
    pub row: RuleRow,
    pub form: RuleForm,
    /// Why it cannot be edited now; `None` when it can.
    pub edit: Option<String>,
    /// Its traffic-shift steps, newest first, from the audit log.
    pub history: Vec<ShiftStep>,
}

/// One step of a traffic shift, as the audit log holds it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShiftStep {
    /// When (RFC 3339, shown in the user's time zone).
    pub at: String,
    pub user: String,
    /// The weights it set, in words.
    pub weights: String,
}

/// What the rule form offers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RuleChoices {
    pub address: AddressSummary,
    pub listener: ListenerRow,
    /// Why no rule can be saved now; `None` when one can.
    pub add: Option<String>,
    /// The namespace's Services the rule may send to (its listener's and the free ones).
    pub services: Vec<ServiceChoice>,
    /// The rule edited, or a new one with a free name.
    pub rule: RuleForm,
    /// Whether `rule` is an existing one.
    pub editing: bool,
    /// The priority it is saved at (its own, or after the last).
    pub priority: u32,
    /// The listener's other rules, for the request tester.
    pub others: Vec<(String, LbruleSpec)>,
    /// Per pool of the listener, what BIG-IP last reported of its members ("2 of 3 members
    /// up"), for the request tester.
    pub health: Vec<(String, String)>,
}

/// The rule form (new, or edit with `version` set).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RuleForm {
    /// The address request and the listener it goes on.
    pub ticket: String,
    pub listener: String,
    pub name: String,
    pub match_: MatchMode,
    pub conditions: Vec<RuleCondition>,
    pub services: Vec<ServiceRef>,
    /// Set when editing: the rule's `resourceVersion` the form was loaded from.
    pub version: Option<String>,
}

impl RuleForm {
    /// The rule the form describes, at `priority`.
    pub fn spec(&self, priority: u32) -> LbruleSpec {
        LbruleSpec {
            lbticket: self.ticket.clone(),
            listener: self.listener.clone(),
            priority,
            match_: self.match_,
            services: self.services.clone(),
            rules: self.conditions.clone(),
        }
    }
}

/// The rules of listener `listener` of `ticket`, in priority order.
#[server(prefix = "/api", endpoint = "rule/listener", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn listener_rules(ticket: String, listener: String) -> Result<RulesOfListener, AppError> {
    crate::ssr::reply(server::listener_rules(&ticket, &listener).await)
}

/// One rule.
#[server(prefix = "/api", endpoint = "rule/get", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn get_rule(ticket: String, listener: String, name: String) -> Result<RuleDetail, AppError> {
    crate::ssr::reply(server::detail(&ticket, &listener, &name).await)
}

/// What the form on listener `listener` of `ticket` offers (`name`: the rule edited, empty
/// for a new one).
#[server(prefix = "/api", endpoint = "rule/choices", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn rule_form_choices(ticket: String, listener: String, name: String) -> Result<RuleChoices, AppError> {
    crate::ssr::reply(server::choices(&ticket, &listener, &name).await)
}

/// The preview of a rule: the AS3 declaration as the form would make it, its diff against the
/// deployed one, and the listener's iRule as it would be.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RulePreview {
    pub preview: Preview,
    pub irule: Option<String>,
}

/// The AS3 declaration (with the listener's iRule) as the form would make it, and its diff
/// against the deployed one.
#[server(prefix = "/api", endpoint = "rule/preview", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn preview_rule(form: RuleForm) -> Result<RulePreview, AppError> {
    crate::ssr::reply(server::preview(form).await)
}

/// Adds or edits a rule (a new one goes last); returns its name.
#[server(prefix = "/api", endpoint = "rule/save", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn save_rule(form: RuleForm) -> Result<String, AppError> {
    crate::ssr::reply(server::save(form).await)
}

/// Deletes a rule.
#[server(prefix = "/api", endpoint = "rule/delete", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn delete_rule(ticket: String, listener: String, name: String) -> Result<(), AppError> {
    crate::ssr::reply(server::delete(&ticket, &listener, &name).await)
}

/// Sets the weights of a rule with two services to `100 - second` / `second` (a step of a
/// traffic shift), against the rule as loaded (`version`); audited as a shift.
#[server(prefix = "/api", endpoint = "rule/shift", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn shift_rule(
    ticket: String,
    listener: String,
    name: String,
    version: String,
    second: u32,
) -> Result<(), AppError> {
    crate::ssr::reply(server::shift(&ticket, &listener, &name, &version, second).await)
}

/// Moves a rule one place earlier (`up`) or later in its listener's order, rewriting the
/// priorities as 10, 20, 30…
#[server(prefix = "/api", endpoint = "rule/move", input = crate::codec::JsonArgs, output = crate::codec::JsonText)]
pub async fn move_rule(ticket: String, listener: String, name: String, up: bool) -> Result<(), AppError> {
    crate::ssr::reply(server::reorder(&ticket, &listener, &name, up).await)
}

/// The form field a refusal's field (a path in the rule's spec) is shown beside: the name, the
/// services editor as one, a condition's own fields as they are.
pub fn form_field(field: &str) -> &str {
    match field {
        "metadata.name" => "name",
        f if f.starts_with("services") => "services",
        f => f,
    }
}

/// A rule's conditions in one line: "Host is a.example.com or header X-Canary matches ^yes$".
pub fn summary(match_: MatchMode, conditions: &[RuleCondition]) -> String {
    let join = match match_ {
        MatchMode::Any => format!(" {} ", t("rules.summary.or")),
        MatchMode::All => format!(" {} ", t("rules.summary.and")),
    };
    conditions.iter().map(condition_text).collect::<Vec<_>>().join(&join)
}

/// One condition in words: "header X-Canary is 1".
fn condition_text(c: &RuleCondition) -> String {
    let key = c.key.as_deref().unwrap_or_default();
    let subject = match c.type_ {
        RuleType::Domain | RuleType::Url | RuleType::Ip => type_label(c.type_).to_string(),
        RuleType::Header => crate::tf!("rules.cond.header", key = key),
        RuleType::Cookie => crate::tf!("rules.cond.cookie", key = key),
        RuleType::Urlparam => crate::tf!("rules.cond.param", key = key),
    };
    format!("{subject} {}", values_text(c))
}

/// A condition's values, each with its operator: "matches ^yes$ or is 1".
fn values_text(c: &RuleCondition) -> String {
    let values: Vec<String> = c.values.iter().map(|v| format!("{} {}", operator_label(v.operator), v.value)).collect();
    values.join(&format!(" {} ", t("rules.summary.or")))
}

/// What a condition type looks at, as the pages say it.
fn type_label(kind: RuleType) -> &'static str {
    match kind {
        RuleType::Domain => t("rules.type.domain"),
        RuleType::Url => t("rules.type.url"),
        RuleType::Ip => t("rules.type.ip"),
        RuleType::Header => t("rules.type.header"),
        RuleType::Cookie => t("rules.type.cookie"),
        RuleType::Urlparam => t("rules.type.urlparam"),
    }
}

/// How an operator reads on the pages.
fn operator_label(o: Operator) -> &'static str {
    match o {
        Operator::Equal => t("rules.op.equal"),
        Operator::Startwith => t("rules.op.startwith"),
        Operator::Regexp => t("rules.op.regexp"),
        Operator::Range => t("rules.op.range"),
    }
}

/// An operator as the form's select names it (its YAML name: the same in every language).
fn operator_value(o: Operator) -> &'static str {
    match o {
        Operator::Equal => "equal",
        Operator::Startwith => "startwith",
        Operator::Regexp => "regexp",
        Operator::Range => "range",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::crd::RuleValue;

    fn cond(type_: RuleType, key: Option<&str>, values: &[(Operator, &str)]) -> RuleCondition {
        RuleCondition {
            type_,
            key: key.map(String::from),
            values: values
                .iter()
                .map(|(operator, value)| RuleValue { operator: *operator, value: value.to_string() })
                .collect(),
        }
    }

    #[test]
    fn a_rule_reads_in_one_line() {
        let conditions = [
            cond(RuleType::Domain, None, &[(Operator::Equal, "a.example.com")]),
            cond(RuleType::Header, Some("X-Canary"), &[(Operator::Regexp, "^yes$"), (Operator::Equal, "1")]),
        ];
        assert_eq!(
            summary(MatchMode::Any, &conditions),
            "Host is a.example.com or header X-Canary matches ^yes$ or is 1"
        );
        let ranges = [
            cond(RuleType::Urlparam, Some("v"), &[(Operator::Range, "1-5")]),
            cond(RuleType::Ip, None, &[(Operator::Equal, "10.0.0.0/8")]),
        ];
        assert_eq!(summary(MatchMode::All, &ranges), "parameter v is in 1-5 and Client IP is 10.0.0.0/8");
    }
}
