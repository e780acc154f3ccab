//! The generated iRules run in `tclsh` with stubs of the F5 commands (`harness.tcl`), and must
//! choose the pool [`crate::domain::routing::evaluate`] chooses, for every request; hostile
//! values must neither break nor inject code.

use std::io::Write;
use std::process::{Command, Stdio};

use proptest::prelude::*;

use super::render;
use crate::domain::crd::{
    LbruleSpec, Listener, MatchMode, Operator, Protocol, RuleCondition, RuleType, RuleValue, ServiceRef, Session,
};
use crate::domain::policy::validate_rule;
use crate::domain::routing::{Request, evaluate};

const HARNESS: &str = include_str!("harness.tcl");

fn hex(s: &str) -> String {
    if s.is_empty() { "-".into() } else { s.bytes().map(|b| format!("{b:02x}")).collect() }
}

fn pairs(p: &[(String, String)]) -> String {
    if p.is_empty() {
        "-".into()
    } else {
        p.iter().map(|(k, v)| format!("{}={}", hex(k), hex(v))).collect::<Vec<_>>().join(",")
    }
}

/// One line per request: (pool chosen, injected calls, Tcl error or "-").
fn run_tcl(irules: &[String], requests: &[Request]) -> Vec<(String, usize, String)> {
    static RUN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("lbdesk-irule-{}-{n}.txt", std::process::id()));
    let lines: String = requests
        .iter()
        .map(|r| {
            format!(
                "{} {} {} {} {} {}\n",
                hex(&r.host),
                hex(&r.path),
                hex(&r.query),
                hex(&r.client),
                pairs(&r.headers),
                pairs(&r.cookies)
            )
        })
        .collect();
    std::fs::write(&path, lines).expect("write requests");
    let script = format!("{HARNESS}\n{}\nlbd_run {{{}}}\n", irules.join("\n"), path.display());
    let mut child = Command::new("tclsh")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tclsh is installed (Debian package tcl; `cargo xtask test` installs it)");
    child.stdin.take().expect("stdin").write_all(script.as_bytes()).expect("write script");
    let out = child.wait_with_output().expect("tclsh runs");
    let _ = std::fs::remove_file(&path);
    assert!(out.status.success(), "tclsh failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let mut f = l.splitn(3, ' ');
            let pool = f.next().unwrap_or_default().to_string();
            let pwned = f.next().and_then(|n| n.parse().ok()).unwrap_or(usize::MAX);
            (pool, pwned, f.next().unwrap_or_default().to_string())
        })
        .collect()
}

fn pool_of(s: &ServiceRef) -> String {
    format!("/T/A/{}", s.service)
}

fn write_pool(out: &mut String, s: &ServiceRef) {
    out.push_str(&pool_of(s));
}

fn svc(name: &str, weight: u32) -> ServiceRef {
    ServiceRef { service: name.into(), port: 8080, weight }
}

fn cond(t: RuleType, key: Option<&str>, values: &[(Operator, &str)]) -> RuleCondition {
    RuleCondition {
        type_: t,
        key: key.map(String::from),
        values: values.iter().map(|(o, v)| RuleValue { operator: *o, value: v.to_string() }).collect(),
    }
}

fn rule(priority: u32, match_: MatchMode, rules: Vec<RuleCondition>, services: Vec<ServiceRef>) -> LbruleSpec {
    LbruleSpec { lbticket: "t".into(), listener: "web".into(), priority, match_, services, rules }
}

/// Compares Tcl with the evaluator on every request.
fn assert_parity(listener: &Listener, rules: &[(&str, &LbruleSpec)], requests: &[Request]) {
    let irule = render(listener, rules, &write_pool);
    let got = run_tcl(std::slice::from_ref(&irule), requests);
    assert_eq!(got.len(), requests.len(), "one answer per request");
    for (req, (pool, pwned, err)) in requests.iter().zip(got) {
        let want = evaluate(listener, rules, req).map(|d| pool_of(&d.service)).unwrap_or_else(|| "none".into());
        assert_eq!((pool.as_str(), pwned, err.as_str()), (want.as_str(), 0, "-"), "request {req:?}\niRule:\n{irule}");
    }
}

/// A small deterministic generator, so the corpus is the same on every run.
struct Lcg(u64);
impl Lcg {
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        &items[((self.0 >> 33) as usize) % items.len()]
    }
}

#[test]
fn tcl_and_the_evaluator_choose_the_same_pool_for_a_corpus_of_requests() {
    use Operator::*;
    use RuleType::*;
    let listener = Listener {
        name: "web".into(),
        port: 80,
        protocol: Protocol::Http,
        session: Session::Cookie,
        services: vec![svc("svc01", 60), svc("svc02", 40)],
    };
    let r1 = rule(
        10,
        MatchMode::Any,
        vec![cond(Domain, None, &[(Equal, "Shop.Example.com")]), cond(Url, None, &[(Startwith, "/api/")])],
        vec![svc("shop", 100)],
    );
    let r2 = rule(
        20,
        MatchMode::All,
        vec![cond(Header, Some("X-Canary"), &[(Equal, "on")]), cond(Cookie, Some("grp"), &[(Regexp, "^b[0-9]+$")])],
        vec![svc("canary", 100)],
    );
    let r3 = rule(
        30,
        MatchMode::Any,
        vec![
            cond(Urlparam, Some("v"), &[(Range, "2-5")]),
            cond(Header, Some("Content-Length"), &[(Range, "100-1000"), (Equal, "7")]),
        ],
        vec![svc("v2", 30), svc("v2b", 70)],
    );
    let r4 = rule(
        40,
        MatchMode::Any,
        vec![cond(Ip, None, &[(Equal, "10.1.0.0/16"), (Equal, "fd00:1::/32"), (Equal, "192.168.9.9")])],
        vec![svc("inside", 100)],
    );
    let r5 = rule(
        5,
        MatchMode::Any,
        vec![cond(Url, None, &[(Regexp, "\\.(png|jpg)$")])],
        vec![svc("static-a", 50), svc("static-b", 50)],
    );
    let rules = [("r1", &r1), ("r2", &r2), ("r3", &r3), ("r4", &r4), ("r5", &r5)];
    for (name, r) in rules {
        validate_rule(name, r, Some(Protocol::Http)).expect("the corpus rules are valid");
    }
    let hosts = ["shop.example.com", "SHOP.example.com:8443", "other.example.com", "", "shop.example.com.evil"];
    let paths = ["/", "/api/v1", "/API/v1", "/img/a.png", "/img/a.png.txt", "/apix"];
    let queries = ["", "v=3", "v=6", "v=03", "a=1&v=2", "v", "v=2x"];
    let clients = ["10.1.2.3", "10.2.2.3", "192.168.9.9", "192.168.9.10", "fd00:1::5", "fd00:2::5", "172.16.0.1"];
    let headers: [&[(&str, &str)]; 6] = [
        &[],
        &[("x-canary", "on")],
        &[("X-Canary", "off")],
        &[("Content-Length", "500")],
        &[("content-length", "0500")],
        &[("Content-Length", "7")],
    ];
    let cookies: [&[(&str, &str)]; 4] = [&[], &[("grp", "b12")], &[("GRP", "b12")], &[("grp", "b12x")]];
    let mut rng = Lcg(42);
    let owned = |p: &&[(&str, &str)]| p.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let requests: Vec<Request> = (0..600)
        .map(|_| Request {
            host: rng.pick(&hosts).to_string(),
            path: rng.pick(&paths).to_string(),
            query: rng.pick(&queries).to_string(),
            client: rng.pick(&clients).to_string(),
            headers: owned(rng.pick(&headers[..])),
            cookies: owned(rng.pick(&cookies[..])),
        })
        .collect();
    assert_parity(&listener, &rules, &requests);
    let mut tcp = listener.clone();
    tcp.protocol = Protocol::Tcp;
    tcp.session = Session::SourceAddress;
    assert_parity(&tcp, &[("r4", &r4)], &requests);
}

#[test]
fn weight_splits_over_ten_thousand_clients_are_within_two_points() {
    let services = vec![svc("a", 20), svc("b", 30), svc("c", 50)];
    let listener = Listener {
        name: "web".into(),
        port: 80,
        protocol: Protocol::Http,
        session: Session::None,
        services: services.clone(),
    };
    let requests: Vec<Request> = (0..10_000u32)
        .map(|i| Request {
            client: format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255),
            ..Default::default()
        })
        .collect();
    let got = run_tcl(&[render(&listener, &[], &write_pool)], &requests);
    for s in &services {
        let share = got.iter().filter(|(p, _, _)| *p == pool_of(s)).count() as f64 / 100.0;
        assert!((f64::from(s.weight) - share).abs() <= 2.0, "{}: configured {}%, got {share}%", s.service, s.weight);
    }
}

/// Pieces of hostile input: Tcl metacharacters, AS3 backquotes, canary calls, escapes.
const HOSTILE: [&str; 30] = [
    "[",
    "]",
    "$",
    "\\",
    "\"",
    "{",
    "}",
    ";",
    "#",
    "`",
    "``",
    "\n",
    "\r",
    "\t",
    " ",
    "[lbd_pwned]",
    "$lbd_pwned",
    "\";lbd_pwned;\"",
    "}lbd_pwned{",
    "\\x41",
    "\\u0000",
    "%00",
    "é",
    "中",
    "a",
    "Z",
    "0",
    "-",
    ".",
    "/",
];

fn hostile() -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(HOSTILE.to_vec()), 1..40).prop_map(|parts| parts.concat())
}

/// A regular expression matching exactly the literal text (escaping what regexes read).
fn literal_regex(text: &str) -> String {
    text.chars().map(|c| if "\\.+*?()[]{}|^$".contains(c) { format!("\\{c}") } else { c.to_string() }).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn hostile_values_parse_inject_nothing_and_still_match_literally(
        value in hostile(),
        key in "[A-Za-z0-9!#$%'*+.^_`|~-]{1,20}",
    ) {
        use Operator::*;
        use RuleType::*;
        let value: String = value.chars().take(200).collect();
        let listener = Listener { name: "web".into(), port: 80, protocol: Protocol::Http, session: Session::None, services: vec![svc("default", 100)] };
        let regex = literal_regex(&value);
        let anchored = format!("^{regex}$");
        let specs = [
            ("domain", rule(1, MatchMode::Any, vec![cond(Domain, None, &[(Equal, &value)])], vec![svc("domain", 100)])),
            ("url", rule(2, MatchMode::Any, vec![cond(Url, None, &[(Equal, &value)])], vec![svc("url", 100)])),
            ("header", rule(3, MatchMode::Any, vec![cond(Header, Some(&key), &[(Equal, &value)])], vec![svc("header", 100)])),
            ("cookie", rule(4, MatchMode::Any, vec![cond(Cookie, Some(&key), &[(Startwith, &value)])], vec![svc("cookie", 100)])),
            ("urlparam", rule(5, MatchMode::Any, vec![cond(Urlparam, Some(&key.replace(['&', '='], "k")), &[(Equal, &value)])], vec![svc("urlparam", 100)])),
            ("regexp", rule(6, MatchMode::Any, vec![cond(Header, Some("X-Re"), &[(Regexp, &anchored)])], vec![svc("regexp", 100)])),
        ];
        let rules: Vec<(&str, &LbruleSpec)> = specs.iter().map(|(n, r)| (*n, r)).collect();
        for (name, r) in &rules {
            prop_assert!(validate_rule(name, r, Some(Protocol::Http)).is_ok(), "{name}: {:?}", validate_rule(name, r, Some(Protocol::Http)));
        }
        let base = Request { host: "neutral.example".into(), path: "/neutral".into(), client: "10.0.0.1".into(), ..Default::default() };
        let param_key = key.replace(['&', '='], "k");
        let mut requests = vec![
            base.clone(),
            Request { host: value.clone(), ..base.clone() },
            Request { path: value.clone(), ..base.clone() },
            Request { headers: vec![(key.clone(), value.clone())], ..base.clone() },
            Request { cookies: vec![(key.clone(), format!("{value}tail"))], ..base.clone() },
            Request { headers: vec![("X-Re".into(), value.clone())], ..base.clone() },
        ];
        if !value.contains('&') {
            requests.push(Request { query: format!("{param_key}={value}"), ..base.clone() });
        }
        let irule = render(&listener, &rules, &write_pool);
        let got = run_tcl(std::slice::from_ref(&irule), &requests);
        prop_assert_eq!(got.len(), requests.len());
        for (req, (pool, pwned, err)) in requests.iter().zip(&got) {
            let want = evaluate(&listener, &rules, req).map(|d| pool_of(&d.service)).unwrap_or_default();
            prop_assert_eq!(*pwned, 0, "injected code ran for {:?}\n{}", req, irule);
            prop_assert_eq!(err.as_str(), "-", "Tcl error for {:?}\n{}", req, irule);
            prop_assert_eq!(pool, &want, "Tcl and evaluator disagree on {:?}\n{}", req, irule);
        }
        // Each request carrying the literal value reaches its rule (domain: unless a ':' cuts the host).
        let expect = ["default", "domain", "url", "header", "cookie", "regexp", "urlparam"];
        for (i, (pool, _, _)) in got.iter().enumerate() {
            if i == 1 && value.to_lowercase() != value.to_lowercase().split(':').next().unwrap_or("") { continue; }
            prop_assert_eq!(pool, &pool_of(&svc(expect[i], 100)), "request {} of {:?}", i, value);
        }
    }
}
