//! Request evaluation: which rule a request matches on a listener, and which pool it reaches.
//!
//! The semantics are exactly those of the generated iRule ([`crate::domain::irule`]): rules in
//! priority order, the first match wins, the listener's weights when none matches, and a weighted
//! choice sticky per client (`crc32(client address) % 100` against cumulative weights). The
//! request tester on the rule screen runs this function; the iRule tests run both and compare.

use std::net::IpAddr;

use ipnet::IpNet;
use serde::{Deserialize, Serialize};

use super::crd::{LbruleSpec, Listener, MatchMode, Operator, RuleCondition, RuleType, ServiceRef};
use super::policy::parse_range;

/// A sample request, as the request tester's form gives it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// The Host header, as sent (may carry `:port`, any case).
    pub host: String,
    /// The path, without the query string.
    pub path: String,
    /// The query string, without the `?`.
    pub query: String,
    /// The client address.
    pub client: String,
    /// Header (name, value) pairs; names match case-insensitively, the first wins.
    pub headers: Vec<(String, String)>,
    /// Cookie (name, value) pairs; the first wins.
    pub cookies: Vec<(String, String)>,
}

/// Where a request goes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    /// The matching rule, or `None` for the listener's own weights.
    pub rule: Option<String>,
    /// `crc32(client address) % 100`.
    pub bucket: u32,
    /// The backend chosen.
    pub service: ServiceRef,
}

/// The crc32 bucket (0–99) of a client address, as the iRule computes it.
pub fn bucket(client: &str) -> u32 {
    super::crc32::hash(client.as_bytes()) % 100
}

/// The backend a bucket falls into: cumulative weights in listed order, zero weights skipped.
pub fn weighted(services: &[ServiceRef], bucket: u32) -> Option<&ServiceRef> {
    let mut upto = 0;
    let chosen = services.iter().filter(|s| s.weight > 0).find(|s| {
        upto += s.weight;
        bucket < upto
    });
    chosen.or_else(|| services.iter().rfind(|s| s.weight > 0))
}

/// The rules of a listener in the order the iRule tries them: priority, then name.
pub fn ordered<'a>(rules: &[(&'a str, &'a LbruleSpec)]) -> Vec<(&'a str, &'a LbruleSpec)> {
    let mut sorted = rules.to_vec();
    sorted.sort_by(|a, b| (a.1.priority, a.0).cmp(&(b.1.priority, b.0)));
    sorted
}

/// A listener and its rules, prepared once (ordered, patterns compiled) to route many requests.
pub struct Router<'a> {
    listener: &'a Listener,
    rules: Vec<Prepared<'a>>,
}

struct Prepared<'a> {
    name: &'a str,
    spec: &'a LbruleSpec,
    /// Per condition, per value: the compiled pattern of a `regexp` value.
    patterns: Vec<Vec<Option<regex_lite::Regex>>>,
}

impl<'a> Router<'a> {
    /// Prepares `listener` with its `rules` (any order).
    pub fn new(listener: &'a Listener, rules: &[(&'a str, &'a LbruleSpec)]) -> Router<'a> {
        let rules = ordered(rules)
            .into_iter()
            .map(|(name, spec)| Prepared {
                name,
                spec,
                patterns: spec
                    .rules
                    .iter()
                    .map(|c| {
                        c.values
                            .iter()
                            .map(|v| {
                                // NB: Tcl's regexp lets `.` match a newline; `(?s)` does the same here.
                                (v.operator == Operator::Regexp)
                                    .then(|| regex_lite::Regex::new(&format!("(?s){}", v.value)).ok())
                                    .flatten()
                            })
                            .collect()
                    })
                    .collect(),
            })
            .collect();
        Router { listener, rules }
    }

    /// Where `req` goes.
    pub fn route(&self, req: &Request) -> Option<Decision> {
        let bucket = bucket(&req.client);
        let http = self.listener.protocol.is_http();
        for rule in &self.rules {
            if rule.matches(req, http) {
                return weighted(&rule.spec.services, bucket).map(|s| Decision {
                    rule: Some(rule.name.to_string()),
                    bucket,
                    service: s.clone(),
                });
            }
        }
        weighted(&self.listener.services, bucket).map(|s| Decision { rule: None, bucket, service: s.clone() })
    }

    /// Each rule tried for `req`, in order, up to and including the one that matches: for a
    /// rule that did not, the condition (by index) that failed first — with "every condition",
    /// the first that does not hold; with "any condition", the first, since none held.
    pub fn explain(&self, req: &Request) -> Vec<Tried<'a>> {
        let http = self.listener.protocol.is_http();
        let mut tried = Vec::new();
        for rule in &self.rules {
            let held: Vec<bool> =
                rule.spec.rules.iter().zip(&rule.patterns).map(|(c, p)| condition(c, p, req, http)).collect();
            let failed = match rule.spec.match_ {
                MatchMode::Any => (!held.iter().any(|h| *h)).then_some(0),
                MatchMode::All => held.iter().position(|h| !h),
            };
            tried.push(Tried { rule: rule.name, failed });
            if failed.is_none() {
                break;
            }
        }
        tried
    }
}

/// A rule tried for a request: `failed` is the condition that failed first, `None` when the
/// rule matched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tried<'a> {
    pub rule: &'a str,
    pub failed: Option<usize>,
}

impl Prepared<'_> {
    /// Whether the rule matches; on TCP/UDP only `ip` conditions are evaluated (the others never match).
    fn matches(&self, req: &Request, http: bool) -> bool {
        let mut results = self.spec.rules.iter().zip(&self.patterns).map(|(c, p)| condition(c, p, req, http));
        match self.spec.match_ {
            MatchMode::Any => results.any(|m| m),
            MatchMode::All => results.all(|m| m),
        }
    }
}

/// Where `req` goes on `listener` given its `rules` (any order).
pub fn evaluate(listener: &Listener, rules: &[(&str, &LbruleSpec)], req: &Request) -> Option<Decision> {
    Router::new(listener, rules).route(req)
}

fn condition(c: &RuleCondition, patterns: &[Option<regex_lite::Regex>], req: &Request, http: bool) -> bool {
    let key = c.key.as_deref().unwrap_or("");
    let subject = match c.type_ {
        RuleType::Ip => return c.values.iter().any(|v| ip_equals(&req.client, &v.value)),
        _ if !http => return false,
        RuleType::Domain => host_only(&req.host),
        RuleType::Url => req.path.clone(),
        RuleType::Header => first(&req.headers, key, true),
        RuleType::Cookie => first(&req.cookies, key, false),
        RuleType::Urlparam => query_param(&req.query, key),
    };
    c.values.iter().zip(patterns).any(|(v, pattern)| {
        let value = if c.type_ == RuleType::Domain { v.value.to_lowercase() } else { v.value.clone() };
        compare(&subject, v.operator, &value, pattern.as_ref())
    })
}

/// The Host header lower-cased, up to the first `:` (as `getfield [HTTP::host] ":" 1`).
pub fn host_only(host: &str) -> String {
    host.split(':').next().unwrap_or("").to_lowercase()
}

fn first(pairs: &[(String, String)], key: &str, case_insensitive: bool) -> String {
    pairs
        .iter()
        .find(|(k, _)| if case_insensitive { k.eq_ignore_ascii_case(key) } else { k == key })
        .map(|(_, v)| v.clone())
        .unwrap_or_default()
}

/// The raw value of the first `key=` parameter of a query string (as `URI::query`), "" if absent.
pub fn query_param(query: &str, key: &str) -> String {
    query
        .split('&')
        .find_map(|part| match part.split_once('=') {
            Some((k, v)) if k == key => Some(v.to_string()),
            None if part == key => Some(String::new()),
            _ => None,
        })
        .unwrap_or_default()
}

/// One value test; a `regexp` value comes compiled (`None` when it does not compile).
fn compare(subject: &str, op: Operator, value: &str, pattern: Option<&regex_lite::Regex>) -> bool {
    match op {
        Operator::Equal => subject == value,
        Operator::Startwith => subject.starts_with(value),
        Operator::Regexp => pattern.is_some_and(|re| re.is_match(subject)),
        Operator::Range => {
            let numeric = !subject.is_empty() && subject.len() <= 9 && subject.bytes().all(|b| b.is_ascii_digit());
            match (numeric, parse_range(value)) {
                (true, Ok((lo, hi))) => subject.parse::<u32>().is_ok_and(|n| lo <= n && n <= hi),
                _ => false,
            }
        }
    }
}

/// `IP::addr <client> equals <address or CIDR>`.
pub fn ip_equals(client: &str, value: &str) -> bool {
    let Ok(addr) = client.trim().parse::<IpAddr>() else {
        return false;
    };
    match value.parse::<IpNet>() {
        Ok(net) => net.contains(&addr),
        Err(_) => value.parse::<IpAddr>().is_ok_and(|v| v == addr),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::crd::{Protocol, RuleValue, Session};

    fn svc(service: &str, weight: u32) -> ServiceRef {
        ServiceRef { service: service.into(), port: 8080, weight }
    }

    fn listener() -> Listener {
        Listener {
            name: "web".into(),
            port: 80,
            protocol: Protocol::Http,
            session: Session::None,
            services: vec![svc("svc01", 60), svc("svc02", 40)],
        }
    }

    fn rule(
        priority: u32,
        match_: MatchMode,
        conds: Vec<(RuleType, Option<&str>, Operator, &str)>,
        to: &str,
    ) -> LbruleSpec {
        LbruleSpec {
            lbticket: "t".into(),
            listener: "web".into(),
            priority,
            match_,
            services: vec![svc(to, 100)],
            rules: conds
                .into_iter()
                .map(|(t, k, op, v)| RuleCondition {
                    type_: t,
                    key: k.map(String::from),
                    values: vec![RuleValue { operator: op, value: v.into() }],
                })
                .collect(),
        }
    }

    fn req(host: &str, path: &str, query: &str, client: &str) -> Request {
        Request {
            host: host.into(),
            path: path.into(),
            query: query.into(),
            client: client.into(),
            ..Default::default()
        }
    }

    #[test]
    fn explain_names_the_condition_each_rule_failed_on_until_one_matches() {
        use Operator::*;
        use RuleType::*;
        let all =
            rule(5, MatchMode::All, vec![(Domain, None, Equal, "a.example.com"), (Url, None, Startwith, "/v2/")], "v2");
        let any = rule(
            10,
            MatchMode::Any,
            vec![(Header, Some("X-Canary"), Equal, "1"), (Cookie, Some("c"), Equal, "1")],
            "c",
        );
        let api = rule(20, MatchMode::Any, vec![(Url, None, Startwith, "/api/")], "api");
        let last = rule(30, MatchMode::Any, vec![(Url, None, Startwith, "/")], "last");
        let rules = [("all", &all), ("any", &any), ("api", &api), ("last", &last)];
        let l = listener();
        let router = Router::new(&l, &rules);
        let tried = router.explain(&req("a.example.com", "/api/x", "", "10.0.0.1"));
        let want = [
            Tried { rule: "all", failed: Some(1) },
            Tried { rule: "any", failed: Some(0) },
            Tried { rule: "api", failed: None },
        ];
        assert_eq!(tried, want, "stops at the match");
        let r = req("b.example.com", "/x", "", "10.0.0.1");
        assert_eq!(router.explain(&r).last(), Some(&Tried { rule: "last", failed: None }));
        assert_eq!(router.route(&r).and_then(|d| d.rule).as_deref(), Some("last"), "the same choice as route");
    }

    #[test]
    fn the_first_matching_rule_in_priority_order_wins() {
        use Operator::*;
        use RuleType::*;
        let canary = rule(10, MatchMode::Any, vec![(Header, Some("X-Canary"), Equal, "1")], "canary");
        let api = rule(20, MatchMode::Any, vec![(Url, None, Startwith, "/api/")], "api");
        let both = rule(
            5,
            MatchMode::All,
            vec![(Domain, None, Equal, "A.Example.com"), (Urlparam, Some("v"), Range, "2-3")],
            "v2",
        );
        let rules = [("canary", &canary), ("api", &api), ("both", &both)];
        let l = listener();
        let mut r = req("a.example.COM:8080", "/api/x", "v=2&w=1", "10.0.0.1");
        r.headers.push(("x-canary".into(), "1".into()));
        let cases = [
            (r.clone(), Some("both")),
            (Request { query: "v=4".into(), ..r.clone() }, Some("canary")),
            (Request { query: "v=4".into(), headers: vec![], ..r.clone() }, Some("api")),
            (Request { query: "v=04".into(), headers: vec![], path: "/web".into(), ..r.clone() }, None),
            (Request { query: "v=03".into(), headers: vec![], path: "/web".into(), ..r.clone() }, Some("both")),
        ];
        for (request, want) in cases {
            let got = evaluate(&l, &rules, &request).expect("a pool");
            assert_eq!(got.rule.as_deref(), want, "{request:?}");
        }
    }

    #[test]
    fn weights_split_by_the_client_bucket() {
        let l = listener();
        let mut seen = [0u32; 2];
        for i in 0..10_000u32 {
            let client = format!("10.{}.{}.{}", i >> 16 & 255, i >> 8 & 255, i & 255);
            let d = evaluate(&l, &[], &req("h", "/", "", &client)).expect("a pool");
            assert_eq!(d.service.service, if d.bucket < 60 { "svc01" } else { "svc02" });
            seen[usize::from(d.service.service == "svc02")] += 1;
        }
        let share = f64::from(seen[0]) / 100.0;
        assert!((58.0..=62.0).contains(&share), "svc01 got {share}%");
    }

    #[test]
    fn zero_weights_are_never_chosen() {
        let services = [svc("a", 0), svc("b", 100)];
        for b in 0..100 {
            assert_eq!(weighted(&services, b).expect("one").service, "b");
        }
    }

    #[test]
    fn subjects_follow_the_irule_commands() {
        assert_eq!(host_only("WWW.Example.com:8443"), "www.example.com");
        assert_eq!(query_param("a=1&b=2&a=3", "a"), "1");
        assert_eq!(query_param("flag&b=2", "flag"), "");
        assert_eq!(query_param("b=2", "a"), "");
        assert!(ip_equals("10.1.2.3", "10.0.0.0/8"));
        assert!(ip_equals("10.1.2.3", "10.1.2.3"));
        assert!(!ip_equals("10.1.2.3", "10.1.2.4"));
        assert!(ip_equals("fd00::5", "fd00::/64"));
        assert!(!ip_equals("not-an-ip", "10.0.0.0/8"));
        assert!(compare("123", Operator::Range, "100-200", None));
        assert!(!compare(" 123", Operator::Range, "100-200", None));
        assert!(!compare("", Operator::Range, "0-200", None));
        let re = |p: &str| regex_lite::Regex::new(&format!("(?s){p}")).expect("pattern");
        assert!(compare("a\nb", Operator::Regexp, "a.b", Some(&re("a.b"))));
        assert!(compare("/v2/x", Operator::Regexp, "v[0-9]", Some(&re("v[0-9]"))), "unanchored");
        assert!(!compare("x", Operator::Regexp, "(", None), "a pattern that does not compile matches nothing");
    }

    #[test]
    fn tcp_listeners_only_see_addresses() {
        let mut l = listener();
        l.protocol = Protocol::Tcp;
        let by_ip = rule(1, MatchMode::Any, vec![(RuleType::Ip, None, Operator::Equal, "10.0.0.0/8")], "inside");
        let by_host = rule(0, MatchMode::Any, vec![(RuleType::Domain, None, Operator::Equal, "h")], "never");
        let rules = [("ip", &by_ip), ("host", &by_host)];
        assert_eq!(evaluate(&l, &rules, &req("h", "/", "", "10.9.9.9")).expect("pool").rule.as_deref(), Some("ip"));
        assert_eq!(evaluate(&l, &rules, &req("h", "/", "", "11.9.9.9")).expect("pool").rule, None);
    }
}
