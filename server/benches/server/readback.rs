//! One read-back of what BIG-IP runs, for a tenant of 500 listeners (50 address requests of 10
//! listeners, one pool of two members each): lbdesk's own work in a cycle, BIG-IP's excluded.
//! The answers BIG-IP would send are made once as bytes (the tenant's declaration, its task
//! list, 500 pools' member statistics); each cycle parses them as the client does, judges every
//! listener against what CIS posts, reads every pool's members and builds each ticket's status.
//! Run: `cargo bench -p server --bench server -- readback`.

use std::time::{Duration, Instant};

use anyhow::{Context, ensure};

use app::domain::as3::{self, TicketInput};
use app::domain::bigip::{judge, members_of, rejection, tenant_of};
use app::domain::cis::members::{Endpoint, fill, is_discovered};
use app::domain::crd::{BigipStatus, LbticketSpec, Listener, ListenerOnBigip, PoolMember, Protocol, ServiceRef};
use serde_json::{Value, json};

const TENANT: &str = "bench";
const TICKETS: usize = 50;
const LISTENERS: usize = 10;
const CYCLES: usize = 30;

fn spec(t: usize) -> LbticketSpec {
    let listener = |l: usize| Listener {
        name: format!("l{l}"),
        port: 8000 + l as u16,
        protocol: Protocol::Http,
        session: Default::default(),
        services: vec![ServiceRef { service: format!("svc-{t}-{l}"), port: 8080, weight: 100 }],
    };
    LbticketSpec { namespace: "team-a".into(), listeners: (0..LISTENERS).map(listener).collect(), ..Default::default() }
}

/// The tenant as CIS posts it: rendered, each pool filled with two endpoints.
fn posted(specs: &[(String, LbticketSpec)]) -> anyhow::Result<Value> {
    let inputs: Vec<TicketInput> =
        specs.iter().map(|(name, spec)| TicketInput { name, spec, veip: "20.8.0.10" }).collect();
    let rendered = as3::render("acp-region01", TENANT, &inputs, &[]).map_err(|f| anyhow::anyhow!("render: {f}"))?;
    let mut request: Value = serde_json::from_str(&rendered.template())?;
    let endpoints: Vec<Endpoint> = ["10.2.0.5", "10.2.0.6"]
        .map(|address| Endpoint {
            address: address.into(),
            port: 8080,
            service_port: 8080,
            priority_group: 0,
            admin_state: Some("enable"),
        })
        .into();
    let tenant = request["declaration"][TENANT].as_object_mut().context("no tenant rendered")?;
    for app in tenant.values_mut().filter_map(Value::as_object_mut) {
        for pool in app.values_mut().filter_map(Value::as_object_mut) {
            if pool.get("class").and_then(Value::as_str) == Some("Pool") && is_discovered(pool) {
                fill(pool, &endpoints);
            }
        }
    }
    Ok(request["declaration"][TENANT].clone())
}

/// A pool's member statistics as BIG-IP answers them.
fn stats(pool: &str) -> serde_json::Result<Vec<u8>> {
    let mut entries = serde_json::Map::new();
    for address in ["10.2.0.5", "10.2.0.6"] {
        let key = format!(
            "https://localhost/mgmt/tm/ltm/pool/~{TENANT}~team-a_http_app~{pool}/members/~{TENANT}~{address}:8080/stats"
        );
        entries.insert(
            key,
            json!({"nestedStats": {"entries": {
                "addr": {"description": address}, "port": {"value": 8080},
                "status.availabilityState": {"description": "available"},
                "status.enabledState": {"description": "enabled"},
            }}}),
        );
    }
    serde_json::to_vec(&json!({"kind": "tm:ltm:pool:members:memberscollectionstats", "entries": entries}))
}

pub fn run() -> anyhow::Result<()> {
    let specs: Vec<(String, LbticketSpec)> = (0..TICKETS).map(|t| (format!("t{t}"), spec(t))).collect();
    let expected = posted(&specs)?;
    let declaration =
        serde_json::to_vec(&json!({"class": "ADC", "schemaVersion": "3.52.0", "id": "x", TENANT: expected}))?;
    let tasks =
        serde_json::to_vec(&json!({"items": [{"results": [{"tenant": TENANT, "code": 200, "message": "success"}]}]}))?;
    let pools: Vec<Vec<u8>> = specs
        .iter()
        .flat_map(|(_, s)| s.listeners.iter().map(|l| stats(&format!("{}_8080_pool", l.services[0].service))))
        .collect::<Result<_, _>>()?;
    println!(
        "a tenant of {} listeners: declaration {} KiB, {} pools' statistics",
        TICKETS * LISTENERS,
        declaration.len() / 1024,
        pools.len()
    );

    let mut took: Vec<Duration> = Vec::new();
    let mut live = 0;
    for _ in 0..CYCLES {
        let started = Instant::now();
        let answer: Value = serde_json::from_slice(&declaration)?;
        let on_bigip = tenant_of(&answer, TENANT).map_err(anyhow::Error::msg)?;
        let tasks: Value = serde_json::from_slice(&tasks)?;
        let rejected = rejection(&tasks, TENANT).map_err(anyhow::Error::msg)?;
        let mut answers = pools.iter();
        let mut statuses = Vec::new();
        live = 0;
        for (name, spec) in &specs {
            let mut listeners = Vec::new();
            for judged in judge(name, spec, TENANT, Some(&expected), on_bigip.as_ref(), rejected.as_ref()) {
                let (state, reason, differs) = judged.state.recorded();
                live += usize::from(state == app::domain::crd::OnBigip::Live);
                let mut members = Vec::new();
                for (_, pool) in &judged.pools {
                    let bytes = answers.next().context("a pool's statistics")?;
                    let stats: Value = serde_json::from_slice(bytes)?;
                    for m in members_of(&stats).map_err(anyhow::Error::msg)? {
                        members.push(PoolMember {
                            pool: pool.clone(),
                            address: m.address,
                            port: m.port,
                            state: m.state,
                        });
                    }
                }
                listeners.push(ListenerOnBigip {
                    name: judged.listener,
                    state,
                    since: String::new(),
                    reason,
                    differs,
                    members,
                });
            }
            statuses.push(BigipStatus { listeners, ..Default::default() });
        }
        std::hint::black_box(&statuses);
        took.push(started.elapsed());
    }
    ensure!(live == TICKETS * LISTENERS, "{live} listeners judged live, not every one");
    took.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "read-back cycle, lbdesk's time ({CYCLES} cycles): p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms (target < 200 ms)",
        ms(took[CYCLES / 2]),
        ms(took[CYCLES * 95 / 100]),
        ms(took[CYCLES - 1])
    );
    Ok(())
}
