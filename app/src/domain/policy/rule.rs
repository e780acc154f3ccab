//! Rules of screen 4: canary and content rules on a listener.

use std::net::IpAddr;

use ipnet::IpNet;

use super::{MAX_CONDITIONS, MAX_KEY_LEN, MAX_VALUE_LEN, MAX_VALUES, Refusal, Verdict, escaped, object_name, weights};
use crate::domain::crd::{LbType, LbruleSpec, Operator, Phase, Protocol, RuleCondition, RuleType};
use crate::i18n::Msg;

/// Whether a rule may be put on `listener` of a ticket in `phase`.
pub fn rule_creatable(phase: Phase, lbtype: LbType, listener_exists: bool) -> Verdict {
    if lbtype != LbType::Listener || phase != Phase::Enabled {
        return Err(Refusal::field("lbticket", crate::msg!("refusals.rule.needs_enabled")));
    }
    if !listener_exists {
        return Err(Refusal::field("listener", crate::msg!("refusals.rule.no_listener")));
    }
    Ok(())
}

/// Priorities are unique per listener.
pub fn priority_unique<'a>(
    name: &str,
    spec: &LbruleSpec,
    others: impl IntoIterator<Item = (&'a str, &'a LbruleSpec)>,
) -> Verdict {
    for (other_name, other) in others {
        if other_name != name
            && other.lbticket == spec.lbticket
            && other.listener == spec.listener
            && other.priority == spec.priority
        {
            return Err(Refusal::field(
                "priority",
                crate::msg!("refusals.rule.priority_taken", other = other_name, priority = spec.priority),
            ));
        }
    }
    Ok(())
}

/// Which operators a condition type takes.
pub fn operators_for(t: RuleType) -> &'static [Operator] {
    match t {
        RuleType::Ip => &[Operator::Equal],
        RuleType::Domain | RuleType::Url => &[Operator::Equal, Operator::Startwith, Operator::Regexp],
        RuleType::Header | RuleType::Cookie | RuleType::Urlparam => {
            &[Operator::Equal, Operator::Startwith, Operator::Regexp, Operator::Range]
        }
    }
}

/// Whether the condition type needs a key (a header, cookie or query-parameter name).
pub fn needs_key(t: RuleType) -> bool {
    matches!(t, RuleType::Header | RuleType::Cookie | RuleType::Urlparam)
}

/// Largest bound of a `range`.
pub const RANGE_MAX: u32 = 999_999_999;

/// Parses `lo-hi` (inclusive, integers up to [`RANGE_MAX`]).
pub fn parse_range(value: &str) -> Result<(u32, u32), Msg> {
    let (lo, hi) = value.split_once('-').ok_or_else(|| crate::msg!("refusals.rule.range_form"))?;
    let bound = |s: &str| -> Result<u32, Msg> {
        let s = s.trim();
        if s.is_empty() || s.len() > 9 || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(crate::msg!("refusals.rule.range_bound", value = escaped(s), max = RANGE_MAX));
        }
        s.parse().map_err(|_| crate::msg!("refusals.rule.range_whole", value = escaped(s)))
    };
    let (lo, hi) = (bound(lo)?, bound(hi)?);
    if lo > hi {
        return Err(crate::msg!("refusals.rule.range_empty", lo = lo, hi = hi));
    }
    Ok((lo, hi))
}

/// Regular expressions must compile and stay inside the syntax that Tcl (on BIG-IP) and the
/// request tester read the same way: no `(?…)` groups and only these escapes.
pub fn regexp(field: &str, pattern: &str) -> Verdict {
    const ESCAPES: &str = "dDsSwW.\\/-+*?()[]{}|^$nt";
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(e) if ESCAPES.contains(e) => {}
                Some(e) => return Err(Refusal::field(field, crate::msg!("refusals.rule.pattern_escape", escape = e))),
                None => return Err(Refusal::field(field, crate::msg!("refusals.rule.pattern_lone_backslash"))),
            }
        }
    }
    if pattern.contains("(?") {
        return Err(Refusal::field(field, crate::msg!("refusals.rule.pattern_group")));
    }
    regex_lite::Regex::new(pattern).map(|_| ()).map_err(|e| {
        let at = error_position(pattern, &e.to_string());
        Refusal::field(field, crate::msg!("refusals.rule.pattern_compile", at = at, detail = e))
    })
}

/// Where (1-based, in characters) a pattern that does not compile goes wrong: a group or class
/// left open is blamed on its opening, a `)` that closes nothing on itself; any other error on
/// the end of the shortest prefix that already fails the same way.
fn error_position(pattern: &str, error: &str) -> usize {
    let chars: Vec<char> = pattern.chars().collect();
    let mut open: Vec<usize> = Vec::new();
    let (mut i, mut class) = (0, None::<usize>);
    while i < chars.len() {
        match (chars[i], class) {
            ('\\', _) => i += 1,
            (']', Some(start)) if i > start + 1 && !(i == start + 2 && chars[start + 1] == '^') => class = None,
            (_, Some(_)) => {}
            ('[', None) => class = Some(i),
            ('(', None) => open.push(i),
            (')', None) if open.pop().is_none() => return i + 1,
            _ => {}
        }
        i += 1;
    }
    if let Some(start) = class.or(open.last().copied()) {
        return start + 1;
    }
    (1..=chars.len())
        .find(|&k| {
            let prefix: String = chars[..k].iter().collect();
            regex_lite::Regex::new(&prefix).err().is_some_and(|e| e.to_string() == error)
        })
        .unwrap_or(chars.len())
}

/// A value may hold any character but NUL, up to [`MAX_VALUE_LEN`]; characters beyond the
/// Basic Multilingual Plane are refused because BIG-IP's Tcl 8.4 cannot escape them.
fn value_text(field: &str, value: &str) -> Verdict {
    if value.is_empty() {
        return Err(Refusal::field(field, crate::msg!("refusals.value.required")));
    }
    if value.chars().count() > MAX_VALUE_LEN {
        return Err(Refusal::field(field, crate::msg!("refusals.value.too_long", max = MAX_VALUE_LEN)));
    }
    if value.contains('\0') {
        return Err(Refusal::field(field, crate::msg!("refusals.rule.value_nul")));
    }
    if value.chars().any(|c| u32::from(c) > 0xFFFF) {
        return Err(Refusal::field(field, crate::msg!("refusals.rule.value_beyond_bmp")));
    }
    Ok(())
}

fn condition(c: &RuleCondition, at: &str) -> Verdict {
    let key = c.key.as_deref().unwrap_or("");
    if needs_key(c.type_) {
        let ok = !key.is_empty()
            && key.len() <= MAX_KEY_LEN
            && key.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+.^_`|~-".contains(&b));
        if !ok {
            return Err(Refusal::field(format!("{at}.key"), crate::msg!("refusals.rule.key_name", max = MAX_KEY_LEN)));
        }
    } else if !key.is_empty() {
        return Err(Refusal::field(format!("{at}.key"), crate::msg!("refusals.rule.no_key")));
    }
    if c.values.is_empty() || c.values.len() > MAX_VALUES {
        return Err(Refusal::field(format!("{at}.values"), crate::msg!("refusals.rule.values", max = MAX_VALUES)));
    }
    for (j, v) in c.values.iter().enumerate() {
        let field = format!("{at}.values[{j}].value");
        if !operators_for(c.type_).contains(&v.operator) {
            return Err(Refusal::field(format!("{at}.values[{j}].operator"), crate::msg!("refusals.rule.operator")));
        }
        value_text(&field, &v.value)?;
        match (c.type_, v.operator) {
            (RuleType::Ip, _) if v.value.parse::<IpAddr>().is_err() && v.value.parse::<IpNet>().is_err() => {
                return Err(Refusal::field(
                    field,
                    crate::msg!("refusals.value.not_ip_or_cidr", value = escaped(&v.value)),
                ));
            }
            (RuleType::Ip, _) => {}
            (_, Operator::Range) => parse_range(&v.value).map(|_| ()).map_err(|e| Refusal::field(&field, e))?,
            (_, Operator::Regexp) => regexp(&field, &v.value)?,
            _ => {}
        }
    }
    Ok(())
}

/// Field checks of a rule; `protocol` is its listener's, when known.
pub fn validate_rule(name: &str, spec: &LbruleSpec, protocol: Option<Protocol>) -> Verdict {
    object_name("metadata.name", name)?;
    object_name("lbticket", &spec.lbticket)?;
    super::dns_label("listener", &spec.listener)?;
    weights(&spec.services)?;
    if spec.rules.is_empty() || spec.rules.len() > MAX_CONDITIONS {
        return Err(Refusal::field("rules", crate::msg!("refusals.rule.conditions", max = MAX_CONDITIONS)));
    }
    for (i, c) in spec.rules.iter().enumerate() {
        let at = format!("rules[{i}]");
        if protocol.is_some_and(|p| !p.is_http()) && c.type_ != RuleType::Ip {
            return Err(Refusal::field(format!("{at}.type"), crate::msg!("refusals.rule.ip_only")));
        }
        condition(c, &at)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::crd::{Lbrule, MatchMode, RuleValue, ServiceRef};

    fn seed_rule() -> LbruleSpec {
        let docs = include_str!("../testdata/seed-objects.yaml");
        let rule: Lbrule = serde_yaml::from_str(docs.split("\n---\n").nth(2).expect("rule")).expect("rule");
        rule.spec
    }

    fn cond(t: RuleType, key: Option<&str>, op: Operator, value: &str) -> RuleCondition {
        RuleCondition {
            type_: t,
            key: key.map(String::from),
            values: vec![RuleValue { operator: op, value: value.into() }],
        }
    }

    #[test]
    fn the_seed_rule_is_valid_on_http_only() {
        assert!(validate_rule("smpl", &seed_rule(), Some(Protocol::Http)).is_ok());
        let r = validate_rule("smpl", &seed_rule(), Some(Protocol::Tcp)).expect_err("tcp");
        assert_eq!(r.field.as_deref(), Some("rules[0].type"));
    }

    #[test]
    fn conditions_are_checked_value_by_value() {
        use Operator::*;
        use RuleType::*;
        for (c, field) in [
            (cond(Header, None, Equal, "x"), Some("rules[0].key")),
            (cond(Header, Some("Bad Key"), Equal, "x"), Some("rules[0].key")),
            (cond(Domain, Some("x"), Equal, "a.com"), Some("rules[0].key")),
            (cond(Ip, None, Startwith, "10."), Some("rules[0].values[0].operator")),
            (cond(Ip, None, Equal, "10.0.0.0/33"), Some("rules[0].values[0].value")),
            (cond(Url, None, Range, "1-2"), Some("rules[0].values[0].operator")),
            (cond(Header, Some("X-N"), Range, "9-1"), Some("rules[0].values[0].value")),
            (cond(Cookie, Some("c"), Regexp, "(unclosed"), Some("rules[0].values[0].value")),
            (cond(Url, None, Regexp, "\\bword"), Some("rules[0].values[0].value")),
            (cond(Url, None, Regexp, "(?i)x"), Some("rules[0].values[0].value")),
            (cond(Url, None, Equal, &"x".repeat(257)), Some("rules[0].values[0].value")),
            (cond(Url, None, Equal, "nul\0"), Some("rules[0].values[0].value")),
            (cond(Url, None, Equal, "🎉"), Some("rules[0].values[0].value")),
            (cond(Ip, None, Equal, "10.1.0.0/16"), None),
            (cond(Ip, None, Equal, "fd00::1"), None),
            (cond(Urlparam, Some("v"), Range, "100-1000"), None),
            (cond(Url, None, Regexp, "^/api/v[0-9]+/"), None),
            (cond(Domain, None, Equal, "[$x]{\"`;#\\"), None),
        ] {
            let mut spec = seed_rule();
            spec.rules = vec![c];
            let got = validate_rule("r", &spec, Some(Protocol::Http)).err().and_then(|r| r.field);
            assert_eq!(got.as_deref(), field, "{:?}", spec.rules[0]);
        }
    }

    #[test]
    fn a_pattern_that_does_not_compile_is_refused_with_where() {
        let at = |p: &str| regexp("v", p).expect_err(p).reason.to_string();
        assert!(at("^/api/(v1").contains("at character 7"), "{}", at("^/api/(v1"));
        assert!(at("(a)(b").contains("at character 4"), "{}", at("(a)(b"));
        assert!(at("a)b").contains("at character 2"), "{}", at("a)b"));
        assert!(at("x[a-").contains("at character 2"), "{}", at("x[a-"));
        assert!(at("ab{2,1}c").contains("at character 7"), "{}", at("ab{2,1}c"));
        assert!(regexp("v", "[]a]").is_ok() && regexp("v", "[^]a]").is_ok() && regexp("v", "\\(x").is_ok());
    }

    #[test]
    fn ranges_are_inclusive_whole_numbers() {
        assert_eq!(parse_range("100-1000"), Ok((100, 1000)));
        assert_eq!(parse_range("5-5"), Ok((5, 5)));
        assert!(parse_range("-5").is_err());
        assert!(parse_range("1-1000000000").is_err());
        assert!(parse_range("a-b").is_err());
        assert!(parse_range("+1-2").is_err());
    }

    #[test]
    fn priorities_are_unique_per_listener() {
        let a = seed_rule();
        let mut b = a.clone();
        assert_eq!(priority_unique("b", &b, [("a", &a)]).expect_err("same").field.as_deref(), Some("priority"));
        assert!(priority_unique("a", &a, [("a", &a)]).is_ok(), "itself");
        b.listener = "other".into();
        assert!(priority_unique("b", &b, [("a", &a)]).is_ok(), "another listener");
        b.listener = a.listener.clone();
        b.priority = 11;
        assert!(priority_unique("b", &b, [("a", &a)]).is_ok());
    }

    #[test]
    fn rules_need_an_enabled_listener() {
        assert!(rule_creatable(Phase::Enabled, LbType::Listener, true).is_ok());
        assert!(rule_creatable(Phase::Enabled, LbType::Listener, false).is_err());
        assert!(rule_creatable(Phase::Disabled, LbType::Listener, true).is_err());
        assert!(rule_creatable(Phase::Enabled, LbType::Ingress, true).is_err());
        let spec = LbruleSpec {
            services: vec![ServiceRef { service: "a".into(), port: 1, weight: 100 }],
            match_: MatchMode::All,
            ..seed_rule()
        };
        assert!(validate_rule("r", &spec, None).is_ok());
    }
}
