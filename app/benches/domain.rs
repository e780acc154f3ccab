//! Domain benchmarks (divan prints fastest / slowest / median / mean per benchmark; the median
//! is the p50 the targets in docs/perf.md refer to). Run: `cargo bench -p app --bench domain`.

use app::domain::as3::{self, RuleInput, TicketInput};
use app::domain::crd::{
    LbruleSpec, LbticketSpec, Listener, LoadbalancerSpec, MatchMode, Operator, Protocol, RuleCondition, RuleType,
    RuleValue, ServiceRef, Session,
};
use app::domain::ipam::PairAllocator;
use app::domain::routing::{Request, Router};
use divan::Bencher;

fn main() {
    divan::main();
}

const TAKEN: usize = 65_000;

fn nearly_full() -> PairAllocator {
    let mut spec = LoadbalancerSpec::default();
    spec.ve.cidr = "20.1.0.0/16".into();
    spec.ltm.cidr = "10.0.0.0/16".into();
    let mut alloc = PairAllocator::new(&spec, &[]).expect("valid ranges");
    for i in 0..TAKEN {
        alloc.allocate(&format!("t{i}"), None, None).expect("free");
    }
    alloc
}

/// The next pair of a /16 with 65,000 addresses taken (allocate, then release to keep the state).
#[divan::bench]
fn allocate_next_pair_in_a_nearly_full_slash_16(bencher: Bencher) {
    let mut alloc = nearly_full();
    bencher.bench_local(|| {
        let pair = alloc.allocate("bench", None, None).expect("a free pair");
        alloc.release(pair);
        pair
    });
}

/// Baseline: first clear bit of a 65,536-bit bitmap with the same 65,000 addresses set.
#[divan::bench]
fn baseline_first_free_bit_of_a_65536_bit_bitmap(bencher: Bencher) {
    let mut bitmap = vec![0u64; 1024];
    for i in 0..=TAKEN {
        bitmap[i / 64] |= 1 << (i % 64);
    }
    bencher.bench_local(|| first_free_bit(divan::black_box(&bitmap)));
}

#[inline(never)]
fn first_free_bit(words: &[u64]) -> Option<usize> {
    words.iter().enumerate().find(|(_, w)| **w != u64::MAX).map(|(i, w)| i * 64 + w.trailing_ones() as usize)
}

fn svc(name: String, port: u16, weight: u32) -> ServiceRef {
    ServiceRef { service: name, port, weight }
}

/// (name, spec, VE address) of each ticket, and (name, spec) of each rule.
type Tenant = (Vec<(String, LbticketSpec, String)>, Vec<(String, LbruleSpec)>);

/// 50 tickets × 10 listeners, each with 4 rules of 2 conditions.
fn big_tenant() -> Tenant {
    let mut tickets = Vec::new();
    let mut rules = Vec::new();
    for t in 0..50 {
        let name = format!("ticket-{t}");
        let listeners: Vec<Listener> = (0..10u16)
            .map(|l| Listener {
                name: format!("l{l}"),
                port: 8000 + l,
                protocol: if l % 2 == 0 { Protocol::Http } else { Protocol::Https },
                session: Session::Cookie,
                services: vec![svc(format!("s{t}-{l}-a"), 8080, 60), svc(format!("s{t}-{l}-b"), 8080, 40)],
            })
            .collect();
        for l in &listeners {
            for r in 0..4u32 {
                rules.push((
                    format!("{name}-{}-r{r}", l.name),
                    LbruleSpec {
                        lbticket: name.clone(),
                        listener: l.name.clone(),
                        priority: r,
                        match_: MatchMode::Any,
                        services: vec![svc(format!("s{t}-{}-r{r}", l.name), 8080, 100)],
                        rules: vec![
                            RuleCondition {
                                type_: RuleType::Header,
                                key: Some("X-Canary".into()),
                                values: vec![RuleValue { operator: Operator::Equal, value: format!("group-{r}") }],
                            },
                            RuleCondition {
                                type_: RuleType::Url,
                                key: None,
                                values: vec![RuleValue { operator: Operator::Startwith, value: format!("/v{r}/") }],
                            },
                        ],
                    },
                ));
            }
        }
        let spec = LbticketSpec { namespace: format!("ns-{}", t % 10), listeners, ..Default::default() };
        tickets.push((name, spec, format!("20.1.{}.{}", t / 200, t % 200 + 1)));
    }
    (tickets, rules)
}

/// Render a tenant of 500 listeners × 4 rules (build + serialise).
#[divan::bench]
fn render_a_tenant_of_500_listeners_with_4_rules_each(bencher: Bencher) {
    let (tickets, rules) = big_tenant();
    let tickets: Vec<TicketInput> = tickets.iter().map(|(n, s, v)| TicketInput { name: n, spec: s, veip: v }).collect();
    let rules: Vec<RuleInput> = rules.iter().map(|(n, s)| RuleInput { name: n, spec: s }).collect();
    bencher.bench_local(|| as3::render("acp-region01", "acp-region01", &tickets, &rules).expect("renders").adc.len());
}

/// Baseline: `serde_json::to_vec` of the same declaration, already built.
#[divan::bench]
fn baseline_serde_json_to_vec_of_the_same_declaration(bencher: Bencher) {
    let (tickets, rules) = big_tenant();
    let tickets: Vec<TicketInput> = tickets.iter().map(|(n, s, v)| TicketInput { name: n, spec: s, veip: v }).collect();
    let rules: Vec<RuleInput> = rules.iter().map(|(n, s)| RuleInput { name: n, spec: s }).collect();
    let adc = as3::render("acp-region01", "acp-region01", &tickets, &rules).expect("renders").adc;
    let value: serde_json::Value = serde_json::from_str(&adc).expect("JSON");
    bencher.bench_local(|| to_vec(divan::black_box(&value)));
}

// NB: not inlined, so an instruction profile (valgrind) can find it beside `as3::render`.
#[inline(never)]
fn to_vec(value: &serde_json::Value) -> usize {
    serde_json::to_vec(value).expect("serialises").len()
}

/// One request through a listener with 100 rules, matching none (every rule is tried).
#[divan::bench]
fn evaluate_a_request_against_100_rules(bencher: Bencher) {
    let listener = Listener {
        name: "web".into(),
        port: 80,
        protocol: Protocol::Http,
        session: Session::None,
        services: vec![svc("a".into(), 8080, 50), svc("b".into(), 8080, 50)],
    };
    let specs: Vec<(String, LbruleSpec)> = (0..100u32)
        .map(|i| {
            let (type_, key, operator, value) = match i % 4 {
                0 => (RuleType::Header, Some("X-Group"), Operator::Equal, format!("g{i}")),
                1 => (RuleType::Url, None, Operator::Startwith, format!("/p{i}/")),
                2 => (RuleType::Urlparam, Some("v"), Operator::Range, format!("{}-{}", i * 10, i * 10 + 5)),
                _ => (RuleType::Cookie, Some("c"), Operator::Regexp, format!("^x{i}[0-9]+$")),
            };
            let cond = RuleCondition { type_, key: key.map(String::from), values: vec![RuleValue { operator, value }] };
            let spec = LbruleSpec {
                lbticket: "t".into(),
                listener: "web".into(),
                priority: i,
                match_: MatchMode::Any,
                services: vec![svc(format!("r{i}"), 8080, 100)],
                rules: vec![cond],
            };
            (format!("r{i}"), spec)
        })
        .collect();
    let rules: Vec<(&str, &LbruleSpec)> = specs.iter().map(|(n, s)| (n.as_str(), s)).collect();
    let router = Router::new(&listener, &rules);
    let request = Request {
        host: "shop.example.com".into(),
        path: "/checkout/cart".into(),
        query: "v=7&x=1".into(),
        client: "10.20.30.40".into(),
        headers: vec![("X-Group".into(), "none".into()), ("Accept".into(), "*/*".into())],
        cookies: vec![("c".into(), "y123".into())],
    };
    bencher.bench_local(|| router.route(divan::black_box(&request)).expect("a pool").bucket);
}
