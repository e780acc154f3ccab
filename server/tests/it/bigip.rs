//! The read-only BIG-IP client against the BIG-IP simulator: a declaration posted as CIS posts
//! it turns a virtual server live with its members' health; a refused one leaves BIG-IP on
//! the older version and says why; every bad answer becomes a reason, never a panic. And
//! embedded mode's loop: a saved listener reaches the simulated BIG-IP through the simulated
//! CIS.

use std::time::Duration;

use app::domain::as3::{self, TicketInput};
use app::domain::bigip::{MemberState, State, objects_of, state};
use app::domain::cis::members::{Endpoint, fill, is_discovered};
use app::domain::crd::{Lbticket, ListenerOnBigip, Loadbalancer};
use serde_json::{Value, json};
use server::bigip::sim::{Behaviour, Fault, Simulator};
use server::bigip::{Access, BigIp, ReadError};

use crate::helpers::{Backend, own_lb, until};
use crate::shared::Shared;
use crate::user::{User, ok, own_namespace, own_tenant, save_lb, ticket_form, wait_phase};

/// Shared by the tests here. Each changes only its own part of BIG-IP's behaviour: a member
/// of its own marked down (by its address, a pod of a Service no other test here reads), its
/// own tenant refused or failing. A test whose refused tenant others share is in
/// `bigip_refusal`.
static LBDESK: Shared = Shared::new();

const TENANT: &str = "acp-region01";
const APP: &str = "default_http_app";
const VS: &str = "vs_test_80";

/// The AS3 request CIS posts for the seed's ticket (its TCP listener on Services of its own),
/// each discovered pool filled with two endpoints, `10.2.0.5` and `10.2.0.6`; the HTTP pool
/// listener `lsnr1` sending `weight` % to `svc01`.
fn posted(weight: u64) -> Value {
    let docs: Vec<&str> = include_str!("../../../app/src/domain/testdata/seed-objects.yaml").split("\n---\n").collect();
    let lb: Loadbalancer = serde_yaml::from_str(docs[0]).expect("lb");
    let mut ticket: Lbticket = serde_yaml::from_str(docs[1]).expect("ticket");
    ticket.spec.listeners[1].services[0].service = "svc05".into();
    ticket.spec.listeners[1].services[1].service = "svc06".into();
    ticket.spec.listeners[0].services[0].weight = weight as u32;
    ticket.spec.listeners[0].services[1].weight = 100 - weight as u32;
    let input = [TicketInput { name: "test", spec: &ticket.spec, veip: "20.1.0.10" }];
    assert_eq!(app::domain::policy::effective_partition(&lb.spec), TENANT);
    let rendered = as3::render(TENANT, TENANT, &input, &[]).expect("renders");
    let mut request: Value = serde_json::from_str(&rendered.template()).expect("JSON");
    let endpoints = |port: i32| {
        ["10.2.0.5", "10.2.0.6"].map(|address| Endpoint {
            address: address.into(),
            port,
            service_port: port,
            priority_group: 0,
            admin_state: Some("enable"),
        })
    };
    let tenant = request["declaration"][TENANT].as_object_mut().expect("the tenant");
    for app in tenant.values_mut().filter_map(Value::as_object_mut) {
        for pool in app.values_mut().filter_map(Value::as_object_mut) {
            if pool.get("class").and_then(Value::as_str) == Some("Pool") && is_discovered(pool) {
                let port = pool["members"][0]["servicePort"].as_i64().expect("a port") as i32;
                fill(pool, &endpoints(port));
            }
        }
    }
    request
}

/// The simulator on a port of its own, checking `admin`/`s3cret`, with `behaviour` otherwise.
async fn simulator(behaviour: Behaviour) -> (Simulator, String) {
    let behaviour = Behaviour { username: Some("admin".into()), password: Some("s3cret".into()), ..behaviour };
    let sim = Simulator::new(behaviour);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(sim.clone().serve(listener));
    (sim, url)
}

fn client(url: &str, password: &str) -> BigIp {
    client_waiting(url, password, Duration::from_secs(1))
}

/// A client whose requests give up after `timeout`.
fn client_waiting(url: &str, password: &str, timeout: Duration) -> BigIp {
    let access =
        Access { url: url.into(), username: "admin".into(), password: password.into(), timeout, ..Default::default() };
    BigIp::new(&access).expect("a client")
}

/// Posts `request` for the tenant as CIS does; the answer's status and body.
async fn post(url: &str, request: &Value) -> (u16, Value) {
    let answer = reqwest::Client::new()
        .post(format!("{url}/mgmt/shared/appsvcs/declare/{TENANT}"))
        .basic_auth("admin", Some("s3cret"))
        .json(request)
        .send()
        .await
        .expect("an answer");
    (answer.status().as_u16(), answer.json().await.expect("JSON"))
}

#[tokio::test]
async fn a_posted_declaration_turns_live_with_its_members_and_a_refused_one_says_why() {
    let (sim, url) = simulator(Behaviour { members_down: vec!["10.2.0.6".into()], ..Default::default() }).await;
    let bigip = client(&url, "s3cret");
    let expected = |weight| objects_of(&posted(weight)["declaration"][TENANT], APP, VS);
    let on_bigip = |tenant: Option<Value>| tenant.map(|t| objects_of(&t, APP, VS)).unwrap_or_default();

    // Nothing posted yet: waiting for CIS.
    assert_eq!(bigip.tenant(TENANT).await, Ok(None));
    let now = on_bigip(bigip.tenant(TENANT).await.expect("read"));
    assert!(matches!(state(&expected(60), &now, None), State::Waiting { .. }));

    // CIS posts it: live, with each member's health.
    let (code, answer) = post(&url, &posted(60)).await;
    assert_eq!(code, 200, "{answer}");
    let now = on_bigip(bigip.tenant(TENANT).await.expect("read"));
    assert_eq!(bigip.rejection(TENANT).await, Ok(None), "BIG-IP took it");
    assert_eq!(state(&expected(60), &now, None), State::Live);
    let members = bigip.members(TENANT, APP, "svc01_8080_pool").await.expect("members");
    let seen: Vec<(&str, u16, MemberState)> = members.iter().map(|m| (m.address.as_str(), m.port, m.state)).collect();
    assert_eq!(seen, [("10.2.0.5", 8080, MemberState::Up), ("10.2.0.6", 8080, MemberState::Down)]);

    // A change BIG-IP refuses: it keeps the older version, and the reason is read back.
    sim.set_behaviour(Behaviour {
        username: Some("admin".into()),
        password: Some("s3cret".into()),
        reject_tenants: vec![TENANT.into()],
        ..Default::default()
    });
    let (code, answer) = post(&url, &posted(70)).await;
    assert_eq!(
        (code, answer["code"].as_u64(), answer["message"].as_str()),
        (422, Some(422), Some("declaration is invalid"))
    );
    let now = on_bigip(bigip.tenant(TENANT).await.expect("read"));
    let rejected = bigip.rejection(TENANT).await.expect("tasks").expect("refused");
    let told = rejected.told(TENANT, expected(70).keys());
    match state(&expected(70), &now, Some(&told)) {
        State::Rejected { reason, differs } => {
            assert!(reason.contains("rejected by the simulator"), "{reason}");
            // NB: the weights live in the iRule's weighted choice.
            assert_eq!(differs, [format!("{APP}/{VS}_irule: BIG-IP holds another version")]);
        }
        other => panic!("not rejected: {other:?}"),
    }

    // A declaration the AS3 schema refuses (its formats registered): 422, nothing kept.
    let mut bad = posted(80);
    bad["declaration"][TENANT][APP][VS]["virtualAddresses"] = json!(["20.1.0.300"]);
    let (code, answer) = post(&url, &bad).await;
    assert_eq!(code, 422, "{answer}");
    assert!(answer["errors"][0].as_str().is_some_and(|e| e.contains("20.1.0.300")), "{answer}");
    assert_eq!(on_bigip(bigip.tenant(TENANT).await.expect("read")), expected(60), "BIG-IP keeps the last good one");
}

#[tokio::test]
async fn every_bad_answer_is_a_reason_and_never_a_panic() {
    let (sim, url) = simulator(Behaviour::default()).await;
    assert_eq!(client(&url, "wrong").tenant(TENANT).await, Err(ReadError::Unauthorized(401)));
    let bigip = client(&url, "s3cret");
    let missing = bigip.members(TENANT, APP, "nope_1_pool").await;
    assert!(
        matches!(&missing, Err(ReadError::Bad(why)) if why.contains("404") && why.contains("was not found")),
        "{missing:?}"
    );
    // (the fault, what the client says)
    for (fault, says) in [
        (Fault::Unavailable, "BIG-IP unreachable: 503 Service Unavailable"),
        (Fault::Garbage, "BIG-IP answered something other than JSON"),
        (Fault::Hang, "BIG-IP unreachable: timed out"),
        (Fault::Huge, "BIG-IP answered more than 16 MiB"),
    ] {
        sim.set_behaviour(Behaviour {
            username: Some("admin".into()),
            password: Some("s3cret".into()),
            fault: Some(fault),
            ..Default::default()
        });
        // NB: 16 MiB read in a debug build beside other tests can outlast 1 s: only the hang
        // waits for the timeout, the others are told apart with time to spare.
        let patient = client_waiting(&url, "s3cret", Duration::from_secs(20));
        let bigip = if fault == Fault::Hang { &bigip } else { &patient };
        let error = bigip.tenant(TENANT).await.expect_err("a fault");
        assert!(error.to_string().starts_with(says), "{fault:?}: {error}");
    }
    // A fault limited to other tenants leaves this one's reads and posts alone; limited to this
    // one, it fails them.
    sim.set_behaviour(Behaviour {
        username: Some("admin".into()),
        password: Some("s3cret".into()),
        fault: Some(Fault::Unavailable),
        fault_tenants: vec!["another".into()],
        ..Default::default()
    });
    assert_eq!(bigip.tenant(TENANT).await, Ok(None));
    assert_eq!(post(&url, &posted(60)).await.0, 200);
    assert!(bigip.members(TENANT, APP, "svc01_8080_pool").await.is_ok());
    sim.change_behaviour(|b| b.fault_tenants = vec![TENANT.into()]);
    for error in [
        bigip.tenant(TENANT).await.map(drop).expect_err("its tenant"),
        bigip.members(TENANT, APP, "svc01_8080_pool").await.map(drop).expect_err("its pool"),
    ] {
        assert!(error.to_string().starts_with("BIG-IP unreachable: 503"), "{error}");
    }
    let refused = reqwest::Client::new()
        .post(format!("{url}/mgmt/shared/appsvcs/declare"))
        .basic_auth("admin", Some("s3cret"))
        .json(&posted(70))
        .send()
        .await
        .expect("an answer");
    assert_eq!(refused.status(), reqwest::StatusCode::SERVICE_UNAVAILABLE);
    assert!(bigip.rejection(TENANT).await.is_ok(), "BIG-IP's task list names no one tenant");
    // Nobody listening.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let closed = format!("http://{}", listener.local_addr().expect("address"));
    drop(listener);
    let error = client(&closed, "s3cret").tenant(TENANT).await.expect_err("closed");
    assert!(error.to_string().starts_with("BIG-IP unreachable: could not connect"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_embedded_mode_a_saved_listener_turns_live_on_the_simulated_bigip_with_its_members() {
    use app::domain::as3::names;
    use app::domain::crd::{CisSpec, Phase, ServiceRef};
    use app::screens::listeners::ListenerForm;
    use server::demo::loadbalancer::{CLUSTER, NAME, PARTITION};
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let alice = User::sign_in(&lbdesk, "alice").await;
    let form = app::screens::tickets::TicketForm { loadbalancer: NAME.into(), ..ticket_form("shop", "team-a", "") };
    ok::<String>(alice.json("ticket/save", json!({"form": form})).await).await;
    wait_phase(&alice, "shop", Phase::Enabled).await;
    let web = ServiceRef { service: "web-v1".into(), port: 8080, weight: 100 };
    let listener =
        ListenerForm { ticket: "shop".into(), name: "web".into(), port: 80, services: vec![web], ..Default::default() };
    ok::<String>(alice.json("listener/save", json!({"form": listener})).await).await;

    // What CIS posts now, by the model, is what the simulated BIG-IP runs.
    let member = lbdesk.client(CLUSTER).await;
    let args = server::cis::deployment::args_of(&member, CLUSTER, &CisSpec::default()).await.expect("CIS's arguments");
    let (sim, url) = &lbdesk.bigip;
    let bigip = client(url, "any");
    let app = names::application("team-a", app::domain::crd::Protocol::Http);
    let live = || async {
        let posted = server::cis::posts::posted(&member, &args).await.expect("the model");
        let expected = posted.tenant(PARTITION).map(|t| objects_of(t, &app, "vs_shop_80")).unwrap_or_default();
        let on_bigip = bigip.tenant(PARTITION).await.expect("read").map(|t| objects_of(&t, &app, "vs_shop_80"));
        !expected.is_empty() && state(&expected, &on_bigip.unwrap_or_default(), None) == State::Live
    };
    until("the listener live on the simulated BIG-IP", 20, live).await;
    // NB: a sync labels the pool's Services before it writes the declaration naming the pool
    // (`reconciler::labels::Pass`), so the first pool CIS posts already has its members.
    let pool = names::pool("web-v1", 8080);
    let members = bigip.members(PARTITION, &app, &pool).await.expect("members");
    assert_eq!(members.len(), 2, "the demo Service's two pods, from the first post: {members:?}");
    assert!(members.iter().all(|m| m.state == MemberState::Up && m.port == 8080), "{members:?}");

    // A member marked down in the simulator reads down.
    let down = members[0].address.clone();
    sim.change_behaviour(|b| b.members_down.push(down.clone()));
    let members = bigip.members(PARTITION, &app, &pool).await.expect("members");
    let states: Vec<(&str, MemberState)> = members.iter().map(|m| (m.address.as_str(), m.state)).collect();
    assert_eq!(states, [(down.as_str(), MemberState::Down), (members[1].address.as_str(), MemberState::Up)]);
}

/// What the ticket `name`'s status says of its first listener on BIG-IP, and of BIG-IP.
pub(crate) async fn on_bigip(tickets: &kube::Api<Lbticket>, name: &str) -> Option<(ListenerOnBigip, String)> {
    let bigip = tickets.get(name).await.ok()?.status?.bigip?;
    Some((bigip.listeners.first()?.clone(), bigip.unreachable))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ticket_says_what_bigip_runs_live_members_rejected_and_unreachable() {
    use app::domain::crd::{OnBigip, Phase, ServiceRef};
    use app::screens::listeners::ListenerForm;
    // Its own load balancer and AS3 tenant (`said`), on the cluster no other test here uses:
    // the simulated CIS posts a cluster's tenants together, so BIG-IP refusing this one holds
    // back only this cluster's; the fault is limited to this tenant.
    const NAME: &str = "said";
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let admin = User::sign_in(&lbdesk, "admin").await;
    // NB: the namespace label the simulated CIS watches (`cis=shared`, as the demo's).
    let lb = app::screens::loadbalancers::LbForm {
        cluster: "acp-region02".into(),
        nsselector: vec![("cis".into(), "shared".into())],
        ..own_lb(NAME, 21)
    };
    ok::<String>(save_lb(&admin, &lb).await).await;
    let alice = own_tenant(&lbdesk, "said-alice", "said-p").await;
    own_namespace(&lbdesk, "acp-region02", "said-p", "said-ns").await;
    let form = app::screens::tickets::TicketForm {
        loadbalancer: NAME.into(),
        cluster: "acp-region02".into(),
        ..ticket_form("said-shop", "said-ns", "")
    };
    ok::<String>(alice.json("ticket/save", json!({"form": form})).await).await;
    wait_phase(&alice, "said-shop", Phase::Enabled).await;
    let save = |weight: u32| {
        let services = vec![
            ServiceRef { service: "web-v1".into(), port: 8080, weight },
            ServiceRef { service: "web-v2".into(), port: 8080, weight: 100 - weight },
        ];
        let generation = (weight != 100).then_some(2);
        let listener = ListenerForm {
            ticket: "said-shop".into(),
            name: "web".into(),
            port: 80,
            services,
            generation,
            ..Default::default()
        };
        alice.json("listener/save", json!({"form": listener}))
    };
    ok::<String>(save(100).await).await;
    let tickets: kube::Api<Lbticket> = kube::Api::all(lbdesk.client("mgmt").await);

    // Live, with the pool's two members up.
    let live = |state: OnBigip, up: usize| {
        let tickets = tickets.clone();
        async move {
            on_bigip(&tickets, "said-shop").await.is_some_and(|(l, _)| {
                l.state == state && l.members.iter().filter(|m| m.state == MemberState::Up).count() == up
            })
        }
    };
    until("the listener live on BIG-IP with two members up", 20, || live(OnBigip::Live, 2)).await;
    let (listener, unreachable) = on_bigip(&tickets, "said-shop").await.expect("read back");
    assert_eq!((listener.name.as_str(), unreachable.as_str()), ("web", ""));
    let condition = || async {
        let status = tickets.get("said-shop").await.ok()?.status?;
        let c = status.conditions.into_iter().find(|c| c.type_ == app::domain::crd::CONDITION_LIVE_ON_BIGIP)?;
        Some((c.status, c.reason))
    };
    until("kubectl's condition says live", 10, || async {
        condition().await == Some(("True".to_string(), "Live".to_string()))
    })
    .await;
    let metrics = reqwest::get(format!("{}/metrics", lbdesk.metrics_url)).await.expect("metrics");
    let metrics = metrics.text().await.expect("text");
    for line in [
        format!("lbdesk_bigip_live{{loadbalancer=\"{NAME}\"}} 1"),
        format!("lbdesk_bigip_members{{loadbalancer=\"{NAME}\",state=\"up\"}} 2"),
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in:\n{metrics}");
    }
    assert!(listener.members.iter().all(|m| m.pool == "web-v1_8080_pool" && m.port == 8080), "{listener:?}");

    // A member marked down in BIG-IP reads down within the polling period.
    let (sim, _) = &lbdesk.bigip;
    let down = listener.members[0].address.clone();
    sim.change_behaviour(|b| b.members_down.push(down.clone()));
    until("a member down", 10, || live(OnBigip::Live, 1)).await;

    // BIG-IP refuses the tenant's next declaration: rejected, with BIG-IP's reason.
    sim.change_behaviour(|b| b.reject_tenants.push(NAME.into()));
    ok::<String>(save(60).await).await;
    let rejected =
        || async { on_bigip(&tickets, "said-shop").await.is_some_and(|(l, _)| l.state == OnBigip::Rejected) };
    until("the listener rejected", 20, rejected).await;
    let (listener, _) = on_bigip(&tickets, "said-shop").await.expect("read back");
    assert!(listener.reason.contains("rejected by the simulator"), "{listener:?}");
    assert!(!listener.differs.is_empty(), "what differs is said: {listener:?}");
    until("kubectl's condition says rejected", 10, || async {
        condition().await == Some(("False".to_string(), "Rejected".to_string()))
    })
    .await;

    // BIG-IP unreachable: said, with why; what was seen before stays.
    sim.change_behaviour(|b| {
        b.fault = Some(Fault::Unavailable);
        b.fault_tenants.push(NAME.into());
    });
    let unreachable = || async { on_bigip(&tickets, "said-shop").await.is_some_and(|(_, why)| why.contains("503")) };
    until("BIG-IP unreachable", 20, unreachable).await;
    let (listener, _) = on_bigip(&tickets, "said-shop").await.expect("read back");
    assert_eq!(listener.state, OnBigip::Rejected, "the last state seen stays beside the reason");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_f5_ingress_turns_live_on_bigip_with_its_members() {
    use app::domain::crd::{IngressRule, LbType, OnBigip, Phase};
    use app::screens::ingresses::IngressForm;
    use server::demo::loadbalancer::NAME;
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let alice = User::sign_in(&lbdesk, "alice").await;
    let form = app::screens::tickets::TicketForm {
        loadbalancer: NAME.into(),
        lbtype: LbType::Ingress,
        ..ticket_form("gate", "team-a", "")
    };
    ok::<String>(alice.json("ticket/save", json!({"form": form})).await).await;
    wait_phase(&alice, "gate", Phase::Enabled).await;
    let route =
        IngressRule { host: Some("shop.example.com".into()), path: "/".into(), service: "api".into(), port: 8080 };
    let shop = IngressForm { ticket: "gate".into(), name: "shop".into(), rules: vec![route], ..Default::default() };
    ok::<String>(alice.json("ingress/save", json!({"form": shop})).await).await;
    let tickets: kube::Api<Lbticket> = kube::Api::all(lbdesk.client("mgmt").await);
    let shop_on_bigip = || async {
        let status = tickets.get("gate").await.ok()?.status?.bigip?;
        status.ingresses.first().cloned()
    };
    until("the F5 Ingress live on BIG-IP with its two members up", 30, || async {
        shop_on_bigip().await.is_some_and(|i| {
            i.state == OnBigip::Live && i.members.iter().filter(|m| m.state == MemberState::Up).count() == 2
        })
    })
    .await;
    let shop = shop_on_bigip().await.expect("read back");
    assert_eq!(shop.name, "shop");
    until("kubectl's condition says live", 10, || async {
        let Some(status) = tickets.get("gate").await.ok().and_then(|t| t.status) else { return false };
        let live = status.conditions.iter().find(|c| c.type_ == app::domain::crd::CONDITION_LIVE_ON_BIGIP);
        live.is_some_and(|c| c.status == "True" && c.reason == "Live")
    })
    .await;
    assert!(shop.members.iter().all(|m| m.pool.starts_with("ingress_team_a_shop_api_8080")), "{shop:?}");
    // Its page says so.
    let page: app::screens::ingresses::IngressDetail =
        ok(alice.form("ingress/get", &[("ticket", "gate"), ("name", "shop")]).await).await;
    assert!(page.body.contains("Live on BIG-IP") && page.body.contains("2 of 2 members up"), "{}", page.body);
}
