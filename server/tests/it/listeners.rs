//! Screen 3's server functions called as a crafted client would, and kubectl writes of a
//! request's listeners: a listener reaches the member cluster's AS3 ConfigMap, the preview
//! shows it first, and every rule the page greys out is refused here and in admission.

use app::components::address::Carried;
use app::components::list::Page;
use app::components::preview::{DiffLine, Preview};
use app::domain::as3::names;
use app::domain::as3::placement::{TEMPLATE_KEY, configmap_name};
use app::domain::crd::{
    LbType, Lbrule, LbruleSpec, Lbticket, Operator, Phase, Protocol, RuleCondition, RuleType, RuleValue, ServiceRef,
};
use app::error::AppError;
use app::screens::listeners::{AddressListeners, ListenerChoices, ListenerDetail, ListenerForm};
use app::screens::tickets::TicketForm;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{Backend, Lbdesk, own_lb, until};
use crate::on_sqlite;
use crate::shared::{Lease, Shared};
use crate::user::{User, ok, own_namespace, refused, save_lb, ticket_form, wait_phase};

on_sqlite!(a_listener_is_previewed_saved_and_carried_by_the_member_cluster);

/// The AS3 tenant of the preview test's load balancer.
const TENANT: &str = "preview";

fn svc(service: &str, port: u16, weight: u32) -> ServiceRef {
    ServiceRef { service: service.into(), port, weight }
}

fn form(ticket: &str, name: &str, port: u16, services: Vec<ServiceRef>) -> ListenerForm {
    ListenerForm { ticket: ticket.into(), name: name.into(), port, services, ..Default::default() }
}

/// Shared by the tests here, each in namespaces of its own (one uses team-a, alice's). The one
/// that edits an AS3 tenant's ConfigMap, which all requests on its load balancer share,
/// registers a load balancer of its own.
static LBDESK: Shared = Shared::with_demo_lb();

/// The module's lbdesk with alice's Enabled listener address `ticket` in her new namespace
/// `namespace`, and alice signed in.
async fn with_address(backend: Backend, ticket: &str, namespace: &str) -> (Lease, User) {
    let lbdesk = LBDESK.get(backend).await;
    let alice = address_on(&lbdesk, ticket, namespace).await;
    (lbdesk, alice)
}

/// alice's Enabled listener address `ticket` in her new namespace `namespace` of `lbdesk`;
/// alice, signed in.
async fn address_on(lbdesk: &Lbdesk, ticket: &str, namespace: &str) -> User {
    address_as(lbdesk, ticket_form(ticket, namespace, "")).await
}

/// The same, on the load balancer `ticket` names.
async fn address_as(lbdesk: &Lbdesk, ticket: TicketForm) -> User {
    own_namespace(lbdesk, "acp-region01", "project-a", &ticket.namespace).await;
    let alice = User::sign_in(lbdesk, "alice").await;
    let name = ticket.name.clone();
    ok::<String>(alice.json("ticket/save", json!({"form": ticket})).await).await;
    wait_phase(&alice, &name, Phase::Enabled).await;
    alice
}

async fn choices(user: &User, ticket: &str, name: &str) -> ListenerChoices {
    ok(user.form("listener/choices", &[("ticket", ticket), ("name", name)]).await).await
}

async fn detail(user: &User, ticket: &str, name: &str) -> ListenerDetail {
    ok(user.form("listener/get", &[("ticket", ticket), ("name", name)]).await).await
}

async fn a_listener_is_previewed_saved_and_carried_by_the_member_cluster(backend: Backend) {
    let (lbdesk, alice) = with_address(backend, "shop", "carried").await;
    let offered = choices(&alice, "shop", "").await;
    assert_eq!(offered.add, None, "an Enabled listener address takes listeners");
    let names_offered: Vec<&str> = offered.services.iter().map(|s| s.name.as_str()).collect();
    assert!(names_offered.contains(&"web-v1") && names_offered.contains(&"web-v2"), "{names_offered:?}");
    let web = form("shop", "web", 80, vec![svc("web-v1", 8080, 60), svc("web-v2", 8080, 40)]);

    let preview: Preview = ok(alice.json("listener/preview", json!({"form": web})).await).await;
    assert_eq!(preview.refused, None);
    let added: Vec<&str> =
        preview.diff.iter().filter_map(|l| if let DiffLine::Added(t) = l { Some(t.as_str()) } else { None }).collect();
    for item in [names::virtual_server("shop", 80), names::pool("web-v1", 8080), names::pool("web-v2", 8080)] {
        assert!(added.iter().any(|l| l.contains(&item)), "the diff adds {item}: {added:?}");
    }
    assert!(preview.declaration.contains(&names::virtual_server("shop", 80)), "{}", preview.declaration);
    // The preview wrote nothing.
    let list =
        ok::<Page<AddressListeners>>(alice.form("listener/list", &[("project", ""), ("after", "")]).await).await.rows;
    assert!(list.iter().any(|g| g.address.ticket == "shop" && g.listeners.is_empty()), "{list:?}");
    // A page starts after its cursor.
    let after =
        ok::<Page<AddressListeners>>(alice.form("listener/list", &[("project", ""), ("after", "shop")]).await).await;
    assert!(after.rows.iter().all(|g| g.address.ticket.as_str() > "shop"), "{after:?}");

    assert_eq!(ok::<String>(alice.json("listener/save", json!({"form": web})).await).await, "web");
    until("the member cluster to carry the listener", 20, || async {
        let d = detail(&alice, "shop", "web").await;
        d.address.carried == Carried::Yes && d.deployed.is_some()
    })
    .await;
    let d = detail(&alice, "shop", "web").await;
    assert_eq!(d.listener.services, web.services);
    assert!(d.deployed.as_deref().is_some_and(|vs| vs.contains("20.1.0.")), "{:?}", d.deployed);
    let configmaps: Api<ConfigMap> = Api::namespaced(lbdesk.client("acp-region01").await, "kube-system");
    let cm = configmaps.get(&configmap_name("acp-region01")).await.expect("the tenant's ConfigMap");
    let template = cm.data.unwrap_or_default().remove(TEMPLATE_KEY).unwrap_or_default();
    assert!(template.contains(&names::virtual_server("shop", 80)), "{template}");
    assert!(template.contains(&names::pool("web-v2", 8080)), "{template}");

    // A listener of every other protocol; what the member cluster's CIS will post (issue #24)
    // carries each virtual server, its pools filled from the Endpoints, valid under CIS's schema.
    for (name, port, protocol, service, service_port) in [
        ("secure", 443, Protocol::Https, "api-canary", 8080),
        ("ssh", 22, Protocol::Tcp, "ssh-gw", 2222),
        ("dns", 53, Protocol::Udp, "dns", 8053),
    ] {
        let listener = ListenerForm { protocol, ..form("shop", name, port, vec![svc(service, service_port, 100)]) };
        assert_eq!(ok::<String>(alice.json("listener/save", json!({"form": listener})).await).await, name);
    }
    let member = lbdesk.client("acp-region01").await;
    let cis = crate::cis::readme_args(&[("zone".to_string(), "f5".to_string())].into());
    until("CIS to post every listener with members", 20, || async {
        let posted = crate::cis::posted(&member, &cis).await;
        [
            ("carried_http_app", 80, &["web-v1", "web-v2"][..], 8080),
            ("carried_https_app", 443, &["api-canary"], 8080),
            ("carried_tcp_app", 22, &["ssh-gw"], 2222),
            ("carried_udp_app", 53, &["dns"], 8053),
        ]
        .into_iter()
        .all(|(app, port, services, service_port)| {
            let pools: Vec<String> = services.iter().map(|s| names::pool(s, service_port)).collect();
            let pools: Vec<&str> = pools.iter().map(String::as_str).collect();
            crate::cis::carries_listener(&posted, "acp-region01", app, &names::virtual_server("shop", port), &pools)
        })
    })
    .await;

    // Its Services are no longer offered to another listener, but are to itself.
    let others = choices(&alice, "shop", "").await;
    assert!(others.services.iter().all(|s| !s.name.starts_with("web-v")), "{:?}", others.services);
    let itself = choices(&alice, "shop", "web").await;
    assert!(itself.services.iter().any(|s| s.name == "web-v1"), "{:?}", itself.services);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listener_refusals_reach_their_fields_and_a_ruled_listener_stays() {
    let (lbdesk, alice) = with_address(Backend::Sqlite, "refusing", "refusing").await;
    let save = |f: ListenerForm| alice.json("listener/save", json!({"form": f}));
    ok::<String>(save(form("refusing", "web", 80, vec![svc("web-v1", 8080, 100)])).await).await;
    // NB: every refusal's field, row by row, is `ssr::change`'s table test; here, one refusal
    // of the one check admission also makes and one of what only the member cluster can tell
    // travel the server function to their form fields.
    for (what, f, field) in [
        ("a port taken on the address", form("refusing", "api", 80, vec![svc("api", 8080, 100)]), "port"),
        (
            "a port the Service does not have",
            form("refusing", "api", 81, vec![svc("api", 9999, 100)]),
            "services[0].port",
        ),
    ] {
        let error = refused(save(f).await, StatusCode::BAD_REQUEST).await;
        assert!(error.for_field(field).is_some(), "{what}: {error:?}");
    }

    // Not on an address for F5 Ingresses: the page says why before anyone tries.
    let ingress = TicketForm { lbtype: LbType::Ingress, ..ticket_form("gate", "team-a", "") };
    ok::<String>(alice.json("ticket/save", json!({"form": ingress})).await).await;
    wait_phase(&alice, "gate", Phase::Enabled).await;
    assert!(choices(&alice, "gate", "").await.add.is_some_and(|r| r.contains("F5 Ingress")));

    // Not deleted while a rule is on it; the page says why before anyone tries.
    let rules: Api<Lbrule> = Api::all(lbdesk.client("mgmt").await);
    let rule = LbruleSpec {
        lbticket: "refusing".into(),
        listener: "web".into(),
        priority: 10,
        services: vec![svc("web-v1", 8080, 100)],
        rules: vec![RuleCondition {
            type_: RuleType::Header,
            key: Some("X-Canary".into()),
            values: vec![RuleValue { operator: Operator::Equal, value: "1".into() }],
        }],
        ..Default::default()
    };
    rules.create(&PostParams::default(), &Lbrule::new("canary", rule)).await.expect("a rule");
    // NB: the pages read the API's watch: they see a write through it a moment later.
    let says = |why: Option<&'static str>| {
        let alice = &alice;
        async move { detail(alice, "refusing", "web").await.delete.as_deref() == why }
    };
    until("the page to say why it stays", 10, || says(Some("This listener has 1 rule; delete it first."))).await;
    let delete = || alice.form("listener/delete", &[("ticket", "refusing"), ("name", "web")]);
    let error = refused(delete().await, StatusCode::BAD_REQUEST).await;
    let said = error.for_field("listeners");
    assert_eq!(said.as_deref(), Some("Listener web: This listener has 1 rule; delete it first."), "{error:?}");
    rules.delete("canary", &Default::default()).await.expect("the rule goes");
    until("the page to see the rule gone", 10, || says(None)).await;
    ok::<()>(delete().await).await;
    let gone =
        refused(alice.form("listener/get", &[("ticket", "refusing"), ("name", "web")]).await, StatusCode::NOT_FOUND)
            .await;
    assert_eq!(gone, AppError::NotFound("There is no such listener in your projects.".into()));

    // Another project's tenant learns nothing: the answer of a request that does not exist.
    let bob = User::sign_in(&lbdesk, "bob").await;
    for ticket in ["refusing", "no-such-request"] {
        let error =
            refused(bob.form("listener/choices", &[("ticket", ticket), ("name", "")]).await, StatusCode::NOT_FOUND)
                .await;
        assert_eq!(error, AppError::NotFound("There is no such address request in your projects.".into()), "{ticket}");
    }
    let bobs =
        ok::<Page<AddressListeners>>(bob.form("listener/list", &[("project", "project-a"), ("after", "")]).await)
            .await
            .rows;
    // NB: his own project's requests may be listed (the module's other tests make some).
    assert!(bobs.iter().all(|g| g.address.project == "project-b"), "nothing of project-a: {bobs:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_writes_of_listeners_meet_the_same_rules() {
    let (lbdesk, alice) = with_address(Backend::Sqlite, "kshop", "kubectl").await;
    ok::<String>(
        alice.json("listener/save", json!({"form": form("kshop", "web", 80, vec![svc("web-v1", 8080, 100)])})).await,
    )
    .await;
    ok::<String>(alice.json("ticket/save", json!({"form": ticket_form("blog", "kubectl", "")})).await).await;
    wait_phase(&alice, "blog", Phase::Enabled).await;
    let tickets: Api<Lbticket> = Api::all(lbdesk.client("mgmt").await);
    let put = |listeners: serde_json::Value| {
        let tickets = tickets.clone();
        async move {
            let patch = json!({"spec": {"listeners": listeners}});
            tickets.patch("blog", &PatchParams::default(), &Patch::Merge(&patch)).await
        }
    };
    let listener = |port: u16, service: &str, weight: u32| json!([{"name": "web", "port": port, "protocol": "http", "services": [{"service": service, "port": 8080, "weight": weight}]}]);
    // NB: the field travels as the Status's cause, the field and reason apart, as the save
    // path reads it; kubectl's message shows both.
    for (what, listeners, code, field, says) in [
        (
            "a Service another request's listener uses",
            listener(80, "web-v1", 100),
            403,
            "spec.listeners[0].services[0].service",
            "already used by listener web of kshop",
        ),
        ("weights adding up to 50", listener(80, "web-v2", 50), 400, "spec.listeners[0].services", "add up to 50"),
    ] {
        match put(listeners).await {
            Err(kube::Error::Api(e)) => {
                assert_eq!(e.code, code, "{what}: {e:?}");
                assert!(e.message.contains(&format!("{field}: ")) && e.message.contains(says), "{what}: {}", e.message);
                let cause = e.details.as_ref().and_then(|d| d.causes.first()).expect("a cause");
                assert_eq!(cause.field, field, "{what}: {e:?}");
                assert!(cause.message.contains(says) && !cause.message.contains("spec."), "{what}: {e:?}");
            }
            other => panic!("{what}: admitted: {other:?}"),
        }
    }
    put(listener(80, "web-v2", 100)).await.expect("a free Service is admitted");
    let changed = put(listener(81, "web-v2", 100)).await;
    assert!(matches!(&changed, Err(kube::Error::Api(e)) if e.code == 403 && e.message.contains("port")), "{changed:?}");
}

/// Every line of a preview, as the page shows it.
fn lines(preview: &Preview) -> Vec<String> {
    preview.diff.iter().cloned().map(String::from).chain(preview.declaration.lines().map(String::from)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preview_shows_nothing_of_another_project_sharing_the_tenant() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    // A load balancer of the test's own: its AS3 tenant `preview`, in a ConfigMap of its own.
    let admin = User::sign_in(&lbdesk, "admin").await;
    ok::<String>(save_lb(&admin, &own_lb(TENANT, 16)).await).await;
    let on_preview =
        |name: &str, namespace: &str| TicketForm { loadbalancer: TENANT.into(), ..ticket_form(name, namespace, "") };
    let alice = address_as(&lbdesk, on_preview("previewed", "preview")).await;
    // bob (project-b) has a listener on the same load balancer, so in the same AS3 tenant.
    let bob = User::sign_in(&lbdesk, "bob").await;
    ok::<String>(bob.json("ticket/save", json!({"form": on_preview("bobsecret", "team-b")})).await).await;
    wait_phase(&bob, "bobsecret", Phase::Enabled).await;
    let hidden = form("bobsecret", "bobhidden", 80, vec![svc("api-canary", 8080, 100)]);
    assert_eq!(ok::<String>(bob.json("listener/save", json!({"form": hidden})).await).await, "bobhidden");
    until("bob's listener in the member cluster", 20, || async {
        detail(&bob, "bobsecret", "bobhidden").await.address.carried == Carried::Yes
    })
    .await;
    let web = form("previewed", "web", 80, vec![svc("web-v1", 8080, 60), svc("web-v2", 8080, 40)]);
    let leaks = |p: &Preview| -> Vec<String> {
        lines(p)
            .into_iter()
            .filter(|l| l.contains("bobsecret") || l.contains("team-b") || l.contains("api-canary"))
            .collect()
    };
    let deployed: Preview = ok(alice.json("listener/preview", json!({"form": web})).await).await;
    assert_eq!(deployed.refused, None);
    assert!(leaks(&deployed).is_empty(), "nothing of bob's, even as context: {:?}", leaks(&deployed));

    // bob's change not yet in the member cluster (his application taken out of the ConfigMap):
    // alice's preview is the same, line for line, so nothing is shown or counted of bob's.
    let configmaps: Api<ConfigMap> = Api::namespaced(lbdesk.client("acp-region01").await, "kube-system");
    let mut cm = configmaps.get(&configmap_name(TENANT)).await.expect("the tenant's ConfigMap");
    let mut template: serde_json::Value =
        serde_json::from_str(&cm.data.clone().unwrap_or_default()[TEMPLATE_KEY]).expect("JSON");
    let removed = template["declaration"][TENANT].as_object_mut().and_then(|t| t.remove("team-b_http_app"));
    assert!(removed.is_some(), "bob's application was deployed");
    cm.data = Some([(TEMPLATE_KEY.to_string(), template.to_string())].into());
    configmaps.replace(&configmap_name(TENANT), &PostParams::default(), &cm).await.expect("replace");
    let pending: Preview = ok(alice.json("listener/preview", json!({"form": web})).await).await;
    assert!(leaks(&pending).is_empty(), "nothing of bob's pending change: {:?}", leaks(&pending));
    assert_eq!(pending.diff, deployed.diff, "what is hidden changes nothing alice sees");
}
