//! One project cannot hold back another (issue #26), tried as the hostile tenant of the issue
//! would: alice (project-a) and bob (project-b) share the load balancer `demo` and its AS3
//! tenant. A save that would make the tenant's ConfigMap too large is refused to the one who
//! makes it, measured as it is sent; two saves that each fit but together do not cannot both be
//! accepted; a tenant held back says so on every request of it (never "carried"), and the other
//! tenants of the cluster go on; a request that finds the range full waits for an address, in
//! its turn, instead of failing.

use app::components::address::{AddressSummary, Carried};
use app::components::list::Page;
use app::domain::as3::names;
use app::domain::as3::placement::{TEMPLATE_KEY, configmap_name};
use app::domain::crd::{
    Lbquota, LbquotaSpec, Lbrule, LbruleSpec, Lbticket, MatchMode, Operator, Phase, RuleCondition, RuleType, RuleValue,
    ServiceRef,
};
use app::error::AppError;
use app::screens::listeners::{AddressListeners, ListenerForm};
use app::screens::rules::RuleForm;
use app::screens::tickets::{Action, TicketDetail};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{Lbdesk, lb_form, until};
use crate::user::{User, ok, refused, save_lb, ticket, ticket_form, wait_phase, with_demo_lb};

fn svc(service: &str, port: u16) -> ServiceRef {
    ServiceRef { service: service.into(), port, weight: 100 }
}

/// A rule of `conditions` header conditions × `values` values, each value 255 backslashes and
/// a digit: every backslash weighs 8 bytes in the ConfigMap's write (Tcl, the ADC's JSON, the
/// ConfigMap's JSON).
fn heavy(ticket: &str, listener: &str, name: &str, conditions: usize, values: usize, service: &str) -> RuleForm {
    let value = |i: usize| RuleValue { operator: Operator::Equal, value: format!("{}{}", "\\".repeat(255), i % 10) };
    RuleForm {
        ticket: ticket.into(),
        listener: listener.into(),
        name: name.into(),
        match_: MatchMode::Any,
        conditions: (0..conditions)
            .map(|c| RuleCondition {
                type_: RuleType::Header,
                key: Some(format!("X-H{c}")),
                values: (0..values).map(value).collect(),
            })
            .collect(),
        services: vec![svc(service, 8080)],
        version: None,
    }
}

async fn listener(user: &User, ticket: &str, name: &str, port: u16, service: &str) {
    let form = ListenerForm {
        ticket: ticket.into(),
        name: name.into(),
        port,
        services: vec![svc(service, 8080)],
        ..Default::default()
    };
    assert_eq!(ok::<String>(user.json("listener/save", json!({"form": form})).await).await, name);
}

/// alice's request `a1` (listeners `web` and `web2`) and bob's `b1` (listener `web`), Enabled on
/// the load balancer `demo`, whose tenant is written to acp-region01.
async fn two_projects() -> (Lbdesk, User, User, User) {
    let (lbdesk, admin) = with_demo_lb(crate::helpers::Backend::Sqlite).await;
    let alice = User::sign_in(&lbdesk, "alice").await;
    let bob = User::sign_in(&lbdesk, "bob").await;
    ok::<String>(alice.json("ticket/save", json!({"form": ticket_form("a1", "default", "")})).await).await;
    ok::<String>(bob.json("ticket/save", json!({"form": ticket_form("b1", "team-b", "")})).await).await;
    wait_phase(&alice, "a1", Phase::Enabled).await;
    wait_phase(&bob, "b1", Phase::Enabled).await;
    listener(&alice, "a1", "web", 80, "web-v1").await;
    listener(&alice, "a1", "web2", 81, "api").await;
    listener(&bob, "b1", "web", 80, "web-v1").await;
    (lbdesk, admin, alice, bob)
}

/// The declaration the tenant of `demo` holds in the member cluster.
async fn deployed(lbdesk: &Lbdesk) -> String {
    let configmaps: Api<ConfigMap> = Api::namespaced(lbdesk.client("acp-region01").await, "kube-system");
    let cm = configmaps.get_opt(&configmap_name("acp-region01")).await.expect("read");
    cm.and_then(|c| c.data).and_then(|mut d| d.remove(TEMPLATE_KEY)).unwrap_or_default()
}

/// What the listener page says of `ticket`'s address: carried or not, and why.
async fn carried(user: &User, ticket: &str) -> Carried {
    address(user, ticket).await.carried
}

/// The address request `ticket` as `user`'s listeners page shows it.
async fn address(user: &User, ticket: &str) -> AddressSummary {
    let page: Page<AddressListeners> = ok(user.form("listener/list", &[("project", ""), ("after", "")]).await).await;
    page.rows.into_iter().find(|g| g.address.ticket == ticket).map(|g| g.address).expect("the address")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_save_too_large_for_the_configmap_as_sent_is_refused_to_its_maker_alone() {
    let (lbdesk, _admin, alice, bob) = two_projects().await;
    // 16 × 32 values of 255 backslashes: 131 KB typed, about 1 MB in the ConfigMap's write.
    let huge = heavy("a1", "web", "huge", 16, 32, "web-v1");
    let refusal = refused(alice.json("rule/save", json!({"form": huge})).await, StatusCode::CONFLICT).await;
    let AppError::Refused(message) = &refusal else { panic!("{refusal:?}") };
    assert!(message.contains("KiB in its ConfigMap, over the 900 KiB limit"), "{message}");
    // Nobody else is refused, and the cluster keeps syncing: bob's new listener is deployed.
    listener(&bob, "b1", "api", 8081, "api-canary").await;
    until("bob's listener to be deployed", 20, || async {
        deployed(&lbdesk).await.contains(&names::virtual_server("b1", 8081))
            && carried(&bob, "b1").await == Carried::Yes
    })
    .await;
    assert!(!deployed(&lbdesk).await.contains("X-H15"), "alice's rule was not written");
}

/// Writes project `project`'s quota with the admin token, as `kubectl apply` would.
async fn quota(lbdesk: &Lbdesk, project: &str, spec: LbquotaSpec) {
    let quotas: Api<Lbquota> = Api::all(lbdesk.client("mgmt").await);
    quotas.create(&PostParams::default(), &Lbquota::new(project, spec)).await.expect("the quota");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_saves_that_fit_alone_but_not_together_are_not_both_accepted() {
    let (lbdesk, _admin, alice, _bob) = two_projects().await;
    // alice may take the whole tenant: what is raced for is the tenant's own limit.
    quota(&lbdesk, "project-a", LbquotaSpec { declaration_bytes: Some(4 << 20), ..Default::default() }).await;
    // Each about 525 KB as sent: one fits, both do not.
    let first = heavy("a1", "web", "first", 16, 16, "web-v1");
    let second = heavy("a1", "web2", "second", 16, 16, "api");
    let (a, b) = tokio::join!(
        alice.json("rule/save", json!({"form": first})),
        alice.json("rule/save", json!({"form": second})),
    );
    let statuses = [a.status(), b.status()];
    assert!(statuses.contains(&StatusCode::OK) && statuses.contains(&StatusCode::CONFLICT), "{statuses:?}");
    let (accepted, refusal) = if a.status() == StatusCode::OK { ("first", b) } else { ("second", a) };
    let refusal: AppError = refusal.json().await.expect("a typed error");
    assert!(matches!(&refusal, AppError::Refused(m) if m.contains("over the 900 KiB limit")), "{refusal:?}");
    // The accepted one is deployed: the tenant is not frozen, nobody is held back.
    until("the accepted rule to be deployed", 20, || async {
        let rules: Vec<Lbrule> = Api::<Lbrule>::all(lbdesk.client("mgmt").await)
            .list(&Default::default())
            .await
            .map(|l| l.items)
            .unwrap_or_default();
        rules.iter().any(|r| r.metadata.name.as_deref() == Some(accepted))
            && deployed(&lbdesk).await.contains("X-H15")
            && carried(&alice, "a1").await == Carried::Yes
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_held_back_says_so_on_every_request_and_never_carried() {
    let (lbdesk, _admin, alice, bob) = two_projects().await;
    until("both deployed", 20, || async {
        carried(&alice, "a1").await == Carried::Yes && carried(&bob, "b1").await == Carried::Yes
    })
    .await;
    // Written past the pages (kubectl with the admin token): a rule that makes the tenant too
    // large. The member cluster keeps the last good declaration.
    let spec = LbruleSpec {
        lbticket: "a1".into(),
        listener: "web".into(),
        priority: 10,
        match_: MatchMode::Any,
        rules: heavy("a1", "web", "x", 16, 32, "web-v1").conditions,
        services: vec![svc("web-v1", 8080)],
    };
    let rules: Api<Lbrule> = Api::all(lbdesk.client("mgmt").await);
    rules.create(&PostParams::default(), &Lbrule::new("too-large", spec)).await.expect("admission takes it");
    let held = |c: &Carried| matches!(c, Carried::Refused(why) if why.starts_with("held back") && why.contains("KiB"));
    until("every request of the tenant to say it is held back", 20, || async {
        held(&carried(&alice, "a1").await) && held(&carried(&bob, "b1").await)
    })
    .await;
    // bob deletes his listener: the member cluster still serves it, and his pages say so.
    let bobs = names::virtual_server("b1", 80);
    assert!(deployed(&lbdesk).await.contains(&bobs));
    ok::<()>(bob.form("listener/delete", &[("ticket", "b1"), ("name", "web")]).await).await;
    // NB: the ticket as the API holds it, whose generation counts the delete: a page may still
    // show the one before, held back too. Its condition reports on that generation once the
    // reconciler has synced the tenant with the delete.
    let tickets: Api<Lbticket> = Api::all(lbdesk.client("mgmt").await);
    until("the reconciler to hold bob's change back", 20, || async {
        tickets.get("b1").await.is_ok_and(|t| held(&app::ssr::address::carried(&t)))
    })
    .await;
    assert!(deployed(&lbdesk).await.contains(&bobs), "the last good declaration stays");
    // bob's page, once it shows that generation, says it is held back: never carried.
    let generation = tickets.get("b1").await.expect("b1").metadata.generation.unwrap_or_default();
    until("bob's page to show his change held back", 20, || async {
        let shown = address(&bob, "b1").await;
        shown.generation == generation && held(&shown.carried)
    })
    .await;
    let detail: TicketDetail = ticket(&bob, "b1").await;
    assert!(!detail.row.message.contains("too-large") && !detail.row.message.contains("a1"), "{}", detail.row.message);
    // Once the rule is gone, the tenant is written again, bob's deletion with it.
    rules.delete("too-large", &DeleteParams::default()).await.expect("deleted");
    until("the tenant written again", 20, || async {
        !deployed(&lbdesk).await.contains(&bobs) && carried(&bob, "b1").await == Carried::Yes
    })
    .await;
}

/// lbdesk with the admin's load balancer `name` of VE range `ve_cidr` (its own tenant and
/// LTM range), beside `demo`.
async fn with_lb(name: &str, ve_cidr: &str) -> (Lbdesk, User) {
    let (lbdesk, admin) = with_demo_lb(crate::helpers::Backend::Sqlite).await;
    let octet = ve_cidr.split('.').nth(1).unwrap_or("2");
    let form = app::screens::loadbalancers::LbForm {
        ve_cidr: ve_cidr.into(),
        ltm_cidr: format!("10.{octet}.0.0/24"),
        partition: name.into(),
        nsselector: vec![("zone".into(), name.into())],
        ..lb_form(name)
    };
    ok::<String>(save_lb(&admin, &form).await).await;
    (lbdesk, admin)
}

/// The save of request `name` of `namespace` on load balancer `lb`, as the request form sends it.
fn on(lb: &str, name: &str, namespace: &str) -> serde_json::Value {
    let mut f = ticket_form(name, namespace, "");
    f.loadbalancer = lb.into();
    json!({ "form": f })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_finds_the_range_full_waits_and_takes_an_address_in_its_turn() {
    // Two VE addresses: 20.2.0.0/30 without its network and broadcast addresses.
    let (lbdesk, _admin) = with_lb("tiny", "20.2.0.0/30").await;
    // Two pairs: by default project-a could take one; its quota is raised to take both.
    quota(&lbdesk, "project-a", LbquotaSpec { addresses_per_loadbalancer: Some(5), ..Default::default() }).await;
    let alice = User::sign_in(&lbdesk, "alice").await;
    let bob = User::sign_in(&lbdesk, "bob").await;
    let on_tiny = |name: &str, namespace: &str| on("tiny", name, namespace);
    for name in ["a1", "a2"] {
        ok::<String>(alice.json("ticket/save", on_tiny(name, "default")).await).await;
        wait_phase(&alice, name, Phase::Enabled).await;
    }
    ok::<String>(bob.json("ticket/save", on_tiny("b1", "team-b")).await).await;
    until("bob's request to wait", 20, || async {
        let d = ticket(&bob, "b1").await;
        d.row.message.starts_with("Waiting for a free address") && d.row.phase != Phase::Failed
    })
    .await;
    // NB: creation times are whole seconds (ties go by name): a3 is made a second later.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    ok::<String>(alice.json("ticket/save", on_tiny("a3", "default")).await).await;
    until("alice's later request to wait too", 20, || async {
        ticket(&alice, "a3").await.row.message.starts_with("Waiting for a free address")
    })
    .await;
    // alice gives one back: bob's request, made first, takes it; hers still waits.
    ok::<()>(alice.json("ticket/act", json!({"name": "a1", "action": Action::Disable})).await).await;
    wait_phase(&alice, "a1", Phase::Disabled).await;
    ok::<()>(alice.json("ticket/act", json!({"name": "a1", "action": Action::Delete})).await).await;
    wait_phase(&bob, "b1", Phase::Enabled).await;
    let later = ticket(&alice, "a3").await;
    assert_eq!(later.row.phase, Phase::Created, "{later:?}");
    assert!(later.row.message.starts_with("Waiting for a free address"), "{}", later.row.message);
    let calls = lbdesk.simulator.calls();
    assert!(!calls.iter().any(|c| c.ticket == "a3"), "no network policy is asked for a waiting request");
}

/// The quota a project is refused at, in the words a page shows.
async fn over_quota(res: reqwest::Response) -> String {
    match refused(res, StatusCode::CONFLICT).await {
        AppError::Refused(message) => message,
        other => panic!("refused for its quota, not {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_project_cannot_take_a_whole_range_unless_an_admin_raises_its_quota() {
    // 20.3.0.0/29: six pairs, three for each project by default.
    let (lbdesk, admin) = with_lb("small", "20.3.0.0/29").await;
    let alice = User::sign_in(&lbdesk, "alice").await;
    let bob = User::sign_in(&lbdesk, "bob").await;
    let on_small = |name: &str, namespace: &str| on("small", name, namespace);
    for name in ["a1", "a2", "a3"] {
        ok::<String>(alice.json("ticket/save", on_small(name, "default")).await).await;
    }
    let why = over_quota(alice.json("ticket/save", on_small("a4", "default")).await).await;
    assert!(why.contains("quota is 3 address requests on load balancer small; it has 3 (0 left)"), "{why}");
    // The same words for kubectl (admission), with no request created.
    let tickets: Api<Lbticket> = Api::all(lbdesk.client("mgmt").await);
    let mut t = Lbticket::new(
        "a4",
        app::domain::crd::LbticketSpec {
            loadbalancer: "small".into(),
            namespace: "default".into(),
            ..Default::default()
        },
    );
    t.metadata.labels = Some([("ebcpaas.io/project".to_string(), "project-a".to_string())].into());
    match tickets.create(&PostParams::default(), &t).await {
        Err(kube::Error::Api(e)) => assert!(e.code == 403 && e.message.contains("it has 3 (0 left)"), "{e:?}"),
        other => panic!("admission lets a request past the quota: {other:?}"),
    }
    // bob's project is not held back by alice's.
    ok::<String>(bob.json("ticket/save", on_small("b1", "team-b")).await).await;
    wait_phase(&bob, "b1", Phase::Enabled).await;
    // alice sees what she holds of her quota.
    let lines =
        ok::<app::screens::tickets::TicketList>(alice.json("ticket/list", json!({"project": ""})).await).await.quota;
    assert!(lines.contains(&("Address requests on small".into(), "3 of 3".into())), "{lines:?}");
    // An admin raises it on the Users page: the fourth request is taken, and Enabled.
    let mut forms = ok::<app::screens::users::Accounts>(admin.json("users/list", json!({})).await).await.quotas;
    let mut form = forms.drain(..).find(|f| f.project == "project-a").expect("project-a's quota");
    assert_eq!((form.addresses.as_str(), form.version.as_deref()), ("", None), "the defaults, no object yet");
    form.addresses = "four".into();
    let typo = refused(admin.json("quota/save", json!({"form": form.clone()})).await, StatusCode::BAD_REQUEST).await;
    assert!(typo.for_field("addresses").is_some(), "{typo:?}");
    form.addresses = "4".into();
    ok::<()>(admin.json("quota/save", json!({"form": form})).await).await;
    ok::<String>(alice.json("ticket/save", on_small("a4", "default")).await).await;
    wait_phase(&alice, "a4", Phase::Enabled).await;
    let mine = app::ssr::audit::Projects::Only(vec!["project-a".into()]);
    let filter = app::ssr::audit::Filter { kind: Some("Lbquota".into()), ..Default::default() };
    let log = lbdesk.db.audit_page(&mine, &filter, None).await.expect("the audit log");
    assert_eq!(log.records.len(), 1, "alice's project sees its quota change in the log");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_project_cannot_fill_a_shared_tenant_for_everyone() {
    let (lbdesk, _admin, alice, bob) = two_projects().await;
    // About 525 KB of the tenant as sent: the tenant would fit it, alice's default share (half
    // of 900 KiB) does not.
    let big = heavy("a1", "web", "big", 16, 16, "web-v1");
    let why = over_quota(alice.json("rule/save", json!({"form": big})).await).await;
    assert!(why.contains("quota is 450 KiB of the AS3 declaration on load balancer demo"), "{why}");
    // A rule within her share is taken; bob's change is neither refused nor held back.
    ok::<String>(alice.json("rule/save", json!({"form": heavy("a1", "web", "fits", 16, 8, "web-v1")})).await).await;
    // alice sees her share of the tenant as deployed: about 262 KB of her 450 KiB.
    until("alice's share of the tenant shown", 20, || async {
        let list =
            ok::<app::screens::tickets::TicketList>(alice.json("ticket/list", json!({"project": ""})).await).await;
        list.quota.iter().any(|(what, used)| {
            let kib = used.split(' ').next().and_then(|n| n.parse::<u64>().ok());
            what == "AS3 declaration on demo" && used.ends_with("KiB of 450 KiB") && kib.is_some_and(|k| k > 200)
        })
    })
    .await;
    let form = ListenerForm {
        ticket: "b1".into(),
        name: "web".into(),
        port: 80,
        services: vec![
            ServiceRef { service: "web-v1".into(), port: 8080, weight: 60 },
            ServiceRef { service: "web-v2".into(), port: 8080, weight: 40 },
        ],
        generation: Some(ticket(&bob, "b1").await.generation),
        ..Default::default()
    };
    ok::<String>(bob.json("listener/save", json!({"form": form})).await).await;
    until("bob's weights deployed", 20, || async {
        deployed(&lbdesk).await.contains(&names::pool("web-v2", 8080)) && carried(&bob, "b1").await == Carried::Yes
    })
    .await;
}
