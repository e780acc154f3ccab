//! One project cannot hold back another (issue #26), tried as the hostile tenant of the issue
//! would: alice and bob, each of a project of their own, share a load balancer and its AS3
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

use crate::helpers::{Backend, Lbdesk, own_lb, until};
use crate::shared::{Lease, Shared};
use crate::user::{User, ok, own_namespace, own_tenant, refused, save_lb, ticket, ticket_form, wait_phase};

/// Shared by the tests here. Quotas are per project and a tenant's size per load balancer, so
/// each test has its own (`Two`): two projects with a tenant and a namespace each, and a load
/// balancer, all named after the test.
static LBDESK: Shared = Shared::new();

/// A test's own on the module's lbdesk, named after its `tag`: alice (`<tag>-alice`, project
/// `<tag>-pa`, namespace `<tag>-a` of acp-region01) and bob (`<tag>-bob`, `<tag>-pb`,
/// `<tag>-b`), tenants both, signed in; the load balancer `<tag>` once `lb` registers it.
struct Two {
    lbdesk: Lease,
    tag: &'static str,
    admin: User,
    alice: User,
    bob: User,
}

impl Two {
    async fn new(tag: &'static str) -> Two {
        let lbdesk = LBDESK.get(Backend::Sqlite).await;
        let admin = User::sign_in(&lbdesk, "admin").await;
        let alice = own_tenant(&lbdesk, &format!("{tag}-alice"), &format!("{tag}-pa")).await;
        let bob = own_tenant(&lbdesk, &format!("{tag}-bob"), &format!("{tag}-pb")).await;
        own_namespace(&lbdesk, "acp-region01", &format!("{tag}-pa"), &format!("{tag}-a")).await;
        own_namespace(&lbdesk, "acp-region01", &format!("{tag}-pb"), &format!("{tag}-b")).await;
        Two { lbdesk, tag, admin, alice, bob }
    }

    /// The test's name `n`: of a request, or a rule.
    fn name(&self, n: &str) -> String {
        format!("{}-{n}", self.tag)
    }

    /// alice's project.
    fn project_a(&self) -> String {
        self.name("pa")
    }

    /// Registers the load balancer `<tag>` of VE range `ve_cidr` (a /24 or smaller of 20.x),
    /// its own LTM URL and range, AS3 tenant and namespace label.
    async fn lb(&self, ve_cidr: &str) {
        let octet = ve_cidr.split('.').nth(1).and_then(|o| o.parse().ok()).expect("a range of 20.x");
        let form = app::screens::loadbalancers::LbForm {
            ve_cidr: ve_cidr.into(),
            nsselector: vec![("zone".into(), self.tag.into())],
            ..own_lb(self.tag, octet)
        };
        ok::<String>(save_lb(&self.admin, &form).await).await;
    }

    /// The save of request `n` in alice's namespace (`b`: bob's) on the test's load balancer,
    /// as the request form sends it.
    fn request(&self, n: &str, of_bob: bool) -> serde_json::Value {
        let namespace = self.name(if of_bob { "b" } else { "a" });
        let mut f = ticket_form(&self.name(n), &namespace, "");
        f.loadbalancer = self.tag.into();
        json!({ "form": f })
    }

    /// The declaration the test's AS3 tenant holds in the member cluster.
    async fn deployed(&self) -> String {
        let configmaps: Api<ConfigMap> = Api::namespaced(self.lbdesk.client("acp-region01").await, "kube-system");
        let cm = configmaps.get_opt(&configmap_name(self.tag)).await.expect("read");
        cm.and_then(|c| c.data).and_then(|mut d| d.remove(TEMPLATE_KEY)).unwrap_or_default()
    }
}

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

/// The test's load balancer (VE range `ve_cidr`) with alice's request `a1` (listeners `web` and
/// `web2`) and bob's `b1` (listener `web`) on it, Enabled.
async fn two_projects(tag: &'static str, ve_cidr: &str) -> Two {
    let two = Two::new(tag).await;
    two.lb(ve_cidr).await;
    let (alice, bob) = (&two.alice, &two.bob);
    ok::<String>(alice.json("ticket/save", two.request("a1", false)).await).await;
    ok::<String>(bob.json("ticket/save", two.request("b1", true)).await).await;
    let (a1, b1) = (two.name("a1"), two.name("b1"));
    wait_phase(alice, &a1, Phase::Enabled).await;
    wait_phase(bob, &b1, Phase::Enabled).await;
    listener(alice, &a1, "web", 80, "web-v1").await;
    listener(alice, &a1, "web2", 81, "api").await;
    listener(bob, &b1, "web", 80, "web-v1").await;
    two
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
    let two = two_projects("sent", "20.21.0.0/24").await;
    let (a1, b1) = (two.name("a1"), two.name("b1"));
    // 16 × 32 values of 255 backslashes: 131 KB typed, about 1 MB in the ConfigMap's write.
    let huge = heavy(&a1, "web", &two.name("huge"), 16, 32, "web-v1");
    let refusal = refused(two.alice.json("rule/save", json!({"form": huge})).await, StatusCode::CONFLICT).await;
    let AppError::Refused(message) = &refusal else { panic!("{refusal:?}") };
    assert!(message.contains("KiB in its ConfigMap, over the 900 KiB limit"), "{message}");
    // Nobody else is refused, and the cluster keeps syncing: bob's new listener is deployed.
    listener(&two.bob, &b1, "api", 8081, "api-canary").await;
    until("bob's listener to be deployed", 20, || async {
        two.deployed().await.contains(&names::virtual_server(&b1, 8081)) && carried(&two.bob, &b1).await == Carried::Yes
    })
    .await;
    assert!(!two.deployed().await.contains("X-H15"), "alice's rule was not written");
}

/// Writes project `project`'s quota with the admin token, as `kubectl apply` would (admission
/// made one, with the default limits, when the project's first request was charged to it).
async fn quota(lbdesk: &Lbdesk, project: &str, spec: LbquotaSpec) {
    let quotas: Api<Lbquota> = Api::all(lbdesk.client("mgmt").await);
    let limits = serde_json::json!({"spec": spec});
    let applied = quotas.patch(project, &kube::api::PatchParams::default(), &kube::api::Patch::Merge(&limits)).await;
    if let Err(kube::Error::Api(e)) = &applied
        && e.code == 404
    {
        quotas.create(&PostParams::default(), &Lbquota::new(project, spec)).await.expect("the quota");
        return;
    }
    applied.expect("the quota");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_saves_that_fit_alone_but_not_together_are_not_both_accepted() {
    let two = two_projects("race", "20.22.0.0/24").await;
    let a1 = two.name("a1");
    // alice may take the whole tenant: what is raced for is the tenant's own limit.
    quota(&two.lbdesk, &two.project_a(), LbquotaSpec { declaration_bytes: Some(4 << 20), ..Default::default() }).await;
    // Each about 525 KB as sent: one fits, both do not.
    let (first, second) = (two.name("first"), two.name("second"));
    let (a, b) = tokio::join!(
        two.alice.json("rule/save", json!({"form": heavy(&a1, "web", &first, 16, 16, "web-v1")})),
        two.alice.json("rule/save", json!({"form": heavy(&a1, "web2", &second, 16, 16, "api")})),
    );
    let statuses = [a.status(), b.status()];
    assert!(statuses.contains(&StatusCode::OK) && statuses.contains(&StatusCode::CONFLICT), "{statuses:?}");
    let (accepted, refusal) = if a.status() == StatusCode::OK { (first, b) } else { (second, a) };
    let refusal: AppError = refusal.json().await.expect("a typed error");
    assert!(matches!(&refusal, AppError::Refused(m) if m.contains("over the 900 KiB limit")), "{refusal:?}");
    // The accepted one is deployed: the tenant is not frozen, nobody is held back.
    until("the accepted rule to be deployed", 20, || async {
        let rules: Vec<Lbrule> = Api::<Lbrule>::all(two.lbdesk.client("mgmt").await)
            .list(&Default::default())
            .await
            .map(|l| l.items)
            .unwrap_or_default();
        rules.iter().any(|r| r.metadata.name.as_deref() == Some(accepted.as_str()))
            && two.deployed().await.contains("X-H15")
            && carried(&two.alice, &a1).await == Carried::Yes
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_held_back_says_so_on_every_request_and_never_carried() {
    let two = two_projects("held", "20.23.0.0/24").await;
    let (alice, bob, a1, b1) = (&two.alice, &two.bob, two.name("a1"), two.name("b1"));
    until("both deployed", 20, || async {
        carried(alice, &a1).await == Carried::Yes && carried(bob, &b1).await == Carried::Yes
    })
    .await;
    // Written past the pages (kubectl with the admin token): a rule that makes the tenant too
    // large, within a share alice's project was given. The member cluster keeps the last good
    // declaration.
    quota(&two.lbdesk, &two.project_a(), LbquotaSpec { declaration_bytes: Some(4 << 20), ..Default::default() }).await;
    let spec = LbruleSpec {
        lbticket: a1.clone(),
        listener: "web".into(),
        priority: 10,
        match_: MatchMode::Any,
        rules: heavy(&a1, "web", "x", 16, 32, "web-v1").conditions,
        services: vec![svc("web-v1", 8080)],
    };
    let too_large = two.name("too-large");
    let rules: Api<Lbrule> = Api::all(two.lbdesk.client("mgmt").await);
    rules.create(&PostParams::default(), &Lbrule::new(&too_large, spec)).await.expect("admission takes it");
    let held = |c: &Carried| matches!(c, Carried::Refused(why) if why.starts_with("held back") && why.contains("KiB"));
    until("every request of the tenant to say it is held back", 20, || async {
        held(&carried(alice, &a1).await) && held(&carried(bob, &b1).await)
    })
    .await;
    // bob deletes his listener: the member cluster still serves it, and his pages say so.
    let bobs = names::virtual_server(&b1, 80);
    assert!(two.deployed().await.contains(&bobs));
    ok::<()>(bob.form("listener/delete", &[("ticket", &b1), ("name", "web")]).await).await;
    // NB: the ticket as the API holds it, whose generation counts the delete: a page may still
    // show the one before, held back too. Its condition reports on that generation once the
    // reconciler has synced the tenant with the delete.
    let tickets: Api<Lbticket> = Api::all(two.lbdesk.client("mgmt").await);
    until("the reconciler to hold bob's change back", 20, || async {
        tickets.get(&b1).await.is_ok_and(|t| held(&app::ssr::address::carried(&t)))
    })
    .await;
    assert!(two.deployed().await.contains(&bobs), "the last good declaration stays");
    // bob's page, once it shows that generation, says it is held back: never carried.
    let generation = tickets.get(&b1).await.expect("b1").metadata.generation.unwrap_or_default();
    until("bob's page to show his change held back", 20, || async {
        let shown = address(bob, &b1).await;
        shown.generation == generation && held(&shown.carried)
    })
    .await;
    let detail: TicketDetail = ticket(bob, &b1).await;
    let message = &detail.row.message;
    assert!(!message.contains(&too_large) && !message.contains(&a1), "{message}");
    // Once the rule is gone, the tenant is written again, bob's deletion with it.
    rules.delete(&too_large, &DeleteParams::default()).await.expect("deleted");
    until("the tenant written again", 20, || async {
        !two.deployed().await.contains(&bobs) && carried(bob, &b1).await == Carried::Yes
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_finds_the_range_full_waits_and_takes_an_address_in_its_turn() {
    let two = Two::new("tiny").await;
    // Two VE addresses: 20.2.0.0/30 without its network and broadcast addresses.
    two.lb("20.2.0.0/30").await;
    // Two pairs: by default alice's project could take one; its quota is raised to take both.
    let raised = LbquotaSpec { addresses_per_loadbalancer: Some(5), ..Default::default() };
    quota(&two.lbdesk, &two.project_a(), raised).await;
    let (alice, bob) = (&two.alice, &two.bob);
    for n in ["a1", "a2"] {
        ok::<String>(alice.json("ticket/save", two.request(n, false)).await).await;
        wait_phase(alice, &two.name(n), Phase::Enabled).await;
    }
    let (a1, a3, b1) = (two.name("a1"), two.name("a3"), two.name("b1"));
    ok::<String>(bob.json("ticket/save", two.request("b1", true)).await).await;
    until("bob's request to wait", 20, || async {
        let d = ticket(bob, &b1).await;
        d.row.message.starts_with("Waiting for a free address") && d.row.phase != Phase::Failed
    })
    .await;
    // NB: creation times are whole seconds (ties go by name): a3 is made a second later.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    ok::<String>(alice.json("ticket/save", two.request("a3", false)).await).await;
    until("alice's later request to wait too", 20, || async {
        ticket(alice, &a3).await.row.message.starts_with("Waiting for a free address")
    })
    .await;
    // alice gives one back: bob's request, made first, takes it; hers still waits.
    ok::<()>(alice.json("ticket/act", json!({"name": a1, "action": Action::Disable})).await).await;
    wait_phase(alice, &a1, Phase::Disabled).await;
    ok::<()>(alice.json("ticket/act", json!({"name": a1, "action": Action::Delete})).await).await;
    wait_phase(bob, &b1, Phase::Enabled).await;
    let later = ticket(alice, &a3).await;
    assert_eq!(later.row.phase, Phase::Created, "{later:?}");
    assert!(later.row.message.starts_with("Waiting for a free address"), "{}", later.row.message);
    let calls = two.lbdesk.simulator.calls();
    assert!(!calls.iter().any(|c| c.ticket == a3), "no network policy is asked for a waiting request");
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
    let two = Two::new("small").await;
    // 20.3.0.0/29: six pairs, three for each project by default.
    two.lb("20.3.0.0/29").await;
    let (admin, alice, bob) = (&two.admin, &two.alice, &two.bob);
    for n in ["a1", "a2", "a3"] {
        ok::<String>(alice.json("ticket/save", two.request(n, false)).await).await;
    }
    let why = over_quota(alice.json("ticket/save", two.request("a4", false)).await).await;
    assert!(why.contains("quota is 3 address requests on load balancer small; it has 3 (0 left)"), "{why}");
    // The same words for kubectl (admission), with no request created.
    let tickets: Api<Lbticket> = Api::all(two.lbdesk.client("mgmt").await);
    let mut t = Lbticket::new(
        &two.name("a4"),
        app::domain::crd::LbticketSpec { loadbalancer: "small".into(), namespace: two.name("a"), ..Default::default() },
    );
    t.metadata.labels = Some([("ebcpaas.io/project".to_string(), two.project_a())].into());
    match tickets.create(&PostParams::default(), &t).await {
        Err(kube::Error::Api(e)) => assert!(e.code == 403 && e.message.contains("it has 3 (0 left)"), "{e:?}"),
        other => panic!("admission lets a request past the quota: {other:?}"),
    }
    // bob's project is not held back by alice's.
    ok::<String>(bob.json("ticket/save", two.request("b1", true)).await).await;
    wait_phase(bob, &two.name("b1"), Phase::Enabled).await;
    // alice sees what she holds of her quota.
    let lines =
        ok::<app::screens::tickets::TicketList>(alice.json("ticket/list", json!({"project": ""})).await).await.quota;
    assert!(lines.contains(&("Address requests on small".into(), "3 of 3".into())), "{lines:?}");
    // An admin raises it on the Users page: the fourth request is taken, and Enabled.
    let mut forms = ok::<app::screens::users::Accounts>(admin.json("users/list", json!({})).await).await.quotas;
    let mut form = forms.drain(..).find(|f| f.project == two.project_a()).expect("alice's project's quota");
    assert_eq!((form.addresses.as_str(), form.version.as_deref()), ("", None), "the defaults, no object yet");
    form.addresses = "four".into();
    let typo = refused(admin.json("quota/save", json!({"form": form.clone()})).await, StatusCode::BAD_REQUEST).await;
    assert!(typo.for_field("addresses").is_some(), "{typo:?}");
    form.addresses = "4".into();
    ok::<()>(admin.json("quota/save", json!({"form": form})).await).await;
    ok::<String>(alice.json("ticket/save", two.request("a4", false)).await).await;
    wait_phase(alice, &two.name("a4"), Phase::Enabled).await;
    let mine = app::ssr::audit::Projects::Only(vec![two.project_a()]);
    let filter = app::ssr::audit::Filter { kind: Some("Lbquota".into()), ..Default::default() };
    let log = two.lbdesk.db.audit_page(&mine, &filter, None).await.expect("the audit log");
    assert_eq!(log.records.len(), 1, "alice's project sees its quota change in the log");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_project_cannot_fill_a_shared_tenant_for_everyone() {
    let two = two_projects("share", "20.24.0.0/24").await;
    let (alice, bob, a1, b1) = (&two.alice, &two.bob, two.name("a1"), two.name("b1"));
    // About 525 KB of the tenant as sent: the tenant would fit it, alice's default share (half
    // of 900 KiB) does not.
    let big = heavy(&a1, "web", &two.name("big"), 16, 16, "web-v1");
    let why = over_quota(alice.json("rule/save", json!({"form": big})).await).await;
    assert!(why.contains("quota is 450 KiB of the AS3 declaration on load balancer share"), "{why}");
    // A rule within her share is taken; bob's change is neither refused nor held back.
    let fits = heavy(&a1, "web", &two.name("fits"), 16, 8, "web-v1");
    ok::<String>(alice.json("rule/save", json!({"form": fits})).await).await;
    // alice sees her share of the tenant as deployed: about 262 KB of her 450 KiB.
    until("alice's share of the tenant shown", 20, || async {
        let list =
            ok::<app::screens::tickets::TicketList>(alice.json("ticket/list", json!({"project": ""})).await).await;
        list.quota.iter().any(|(what, used)| {
            let kib = used.split(' ').next().and_then(|n| n.parse::<u64>().ok());
            what == "AS3 declaration on share" && used.ends_with("KiB of 450 KiB") && kib.is_some_and(|k| k > 200)
        })
    })
    .await;
    let form = ListenerForm {
        ticket: b1.clone(),
        name: "web".into(),
        port: 80,
        services: vec![
            ServiceRef { service: "web-v1".into(), port: 8080, weight: 60 },
            ServiceRef { service: "web-v2".into(), port: 8080, weight: 40 },
        ],
        generation: Some(ticket(bob, &b1).await.generation),
        ..Default::default()
    };
    ok::<String>(bob.json("listener/save", json!({"form": form})).await).await;
    until("bob's weights deployed", 20, || async {
        two.deployed().await.contains(&names::pool("web-v2", 8080)) && carried(bob, &b1).await == Carried::Yes
    })
    .await;
}
