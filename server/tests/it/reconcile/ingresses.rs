//! The Ingresses of F5 Ingresses in the member cluster, tested as the ConfigMaps are: written
//! once the ticket is Enabled, with the CIS annotations, the class and the label; changed,
//! repaired, withdrawn and removed with their ticket; no other Ingress ever touched.

use app::domain::cis_ingress;
use app::domain::crd::{F5Ingress, IngressRule, LABEL_LBTICKET, LbType};
use k8s_openapi::api::networking::v1::Ingress;

use super::*;

pub(super) fn f5(name: &str, path: &str, service: &str) -> F5Ingress {
    let route =
        IngressRule { host: Some("shop.example.com".into()), path: path.into(), service: service.into(), port: 8080 };
    F5Ingress { name: name.into(), rules: vec![route], tls_secret: None }
}

pub(super) fn ingress_ticket(scope: Scope, name: &str, ingresses: &[F5Ingress]) -> Lbticket {
    let mut t = ticket_in(scope, name, None, false);
    t.spec.lbtype = LbType::Ingress;
    t.spec.ingresses = ingresses.to_vec();
    t
}

/// The load balancer `demo` with AS3 tenant `payments`, on a fresh lbdesk, and the requests in
/// team-a.
const PAYMENTS: Scope = Scope { lb: "demo", tenant: "payments", namespace: "team-a", cis: "kube-system" };

/// A load balancer of the test's own and its requests in a namespace of their own, on the
/// shared lbdesk.
const PAY: Scope = Scope { lb: "pay", tenant: "pay", namespace: "pay", cis: "kube-system" };

/// The load balancer of `PAYMENTS`.
fn payments_lb() -> Loadbalancer {
    let mut lb = loadbalancer("20.1.0.0/24", &[]);
    lb.spec.partition = Some("payments".into());
    lb
}

pub(super) async fn ingress_of(member: &Client, scope: Scope, name: &str) -> Option<Ingress> {
    Api::<Ingress>::namespaced(member.clone(), scope.namespace).get_opt(name).await.expect("get the Ingress")
}

/// lbdesk's Ingresses in the member cluster (every namespace), as `namespace/name`.
async fn ours(member: &Client) -> Vec<String> {
    let api = Api::<Ingress>::all(member.clone());
    let all = api.list(&ListParams::default().labels(LABEL_LBTICKET)).await.expect("list the Ingresses");
    let mut names: Vec<String> =
        all.items.iter().map(|i| format!("{}/{}", i.namespace().unwrap_or_default(), i.name_any())).collect();
    names.sort();
    names
}

async fn set_ingresses(tickets: &Api<Lbticket>, name: &str, ingresses: &[F5Ingress]) {
    let patch = json!({"spec": {"ingresses": ingresses}});
    tickets.patch(name, &PatchParams::default(), &Patch::Merge(patch)).await.expect("the F5 Ingresses");
}

/// Writes the ticket's phase as lbdesk would (the status subresource is lbdesk's alone).
async fn force_phase(tickets: &Api<Lbticket>, name: &str, phase: Phase) {
    let patch = json!({"status": {"phase": phase}});
    tickets.patch_status(name, &PatchParams::default(), &Patch::Merge(patch)).await.expect("the phase");
}

/// The ticket's `Rendered` condition (status, message), when it reports on the ticket's
/// current generation.
async fn report(tickets: &Api<Lbticket>, name: &str) -> Option<(String, String)> {
    let t = tickets.get(name).await.expect("the ticket");
    let conditions = t.status.map(|s| s.conditions).unwrap_or_default();
    let c = conditions.into_iter().find(|c| c.type_ == "Rendered" && c.observed_generation == t.metadata.generation)?;
    Some((c.status, c.message))
}

pub(super) async fn written(tickets: &Api<Lbticket>, name: &str) -> bool {
    report(tickets, name).await == Some(("True".into(), String::new()))
}

pub(super) async fn veip(tickets: &Api<Lbticket>, name: &str) -> String {
    tickets.get(name).await.expect("the ticket").status.and_then(|s| s.veip).expect("an address")
}

/// Whether the Ingress of `f5` is there as lbdesk writes it for ticket `ticket` on `veip`.
pub(super) async fn carries(member: &Client, scope: Scope, ticket: &str, f5: &F5Ingress, veip: &str) -> bool {
    let Some(found) = ingress_of(member, scope, &f5.name).await else { return false };
    let want = cis_ingress::desired(ticket, scope.namespace, f5, veip, scope.tenant, "f5");
    found.labels().get(LABEL_LBTICKET).map(String::as_str) == Some(ticket)
        && want.annotations().iter().all(|(k, v)| found.annotations().get(k) == Some(v))
        && found.spec == want.spec
}

/// A user's own Ingress in the namespace of `scope`: not labelled, so never lbdesk's.
pub(super) async fn users_ingress(member: &Client, scope: Scope, name: &str) -> Ingress {
    let ingress: Ingress = serde_json::from_value(json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {
            "name": name, "namespace": scope.namespace,
            "annotations": {"virtual-server.f5.com/ip": "20.1.0.99"},
        },
        "spec": {"ingressClassName": "f5", "rules": [{"host": "own.example.com", "http": {"paths": [
            {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "api-canary", "port": {"number": 8080}}}}
        ]}}]}
    }))
    .expect("an Ingress");
    let api = Api::<Ingress>::namespaced(member.clone(), scope.namespace);
    api.create(&PostParams::default(), &ingress).await.expect("the user's Ingress")
}

/// Fails unless the user's Ingress is as it was created.
pub(super) async fn untouched(member: &Client, scope: Scope, theirs: &Ingress) {
    let now = ingress_of(member, scope, &theirs.name_any()).await.expect("the user's Ingress stays");
    assert_eq!(now.metadata.resource_version, theirs.metadata.resource_version, "{} untouched", theirs.name_any());
    assert!(!now.labels().contains_key(LABEL_LBTICKET));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_f5_ingress_is_written_changed_and_removed_with_its_ticket() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let w = world(&lbdesk).await;
    crate::user::own_namespace(&lbdesk, "acp-region01", "project-a", PAY.namespace).await;
    w.lbs.create(&PostParams::default(), &own_loadbalancer(PAY, "20.64.0.0/24", &[])).await.expect("lb");
    let own = users_ingress(&w.member, PAY, "own").await;
    let legacy = users_ingress(&w.member, PAY, "legacy").await;
    w.tickets.create(&PostParams::default(), &ingress_ticket(PAY, "pay", &[])).await.expect("ticket");
    wait_phase(&w.tickets, "pay", Phase::Enabled).await;
    let veip = veip(&w.tickets, "pay").await;

    // An F5 Ingress on the Enabled ticket: the Ingress, its CIS annotations, class and label.
    let shop = f5("shop", "/", "web-v1");
    set_ingresses(&w.tickets, "pay", std::slice::from_ref(&shop)).await;
    until("the Ingress", 10, || async { ingress_of(&w.member, PAY, "shop").await.is_some() }).await;
    let found = ingress_of(&w.member, PAY, "shop").await.expect("the Ingress");
    for (key, value) in [
        ("virtual-server.f5.com/ip", veip.as_str()),
        ("virtual-server.f5.com/partition", "pay_ingress"),
        ("kubernetes.io/ingress.class", "f5"),
    ] {
        assert_eq!(found.annotations().get(key).map(String::as_str), Some(value), "{key}");
    }
    assert_eq!(found.labels().get(LABEL_LBTICKET).map(String::as_str), Some("pay"));
    assert_eq!(found.spec.as_ref().and_then(|s| s.ingress_class_name.as_deref()), Some("f5"));
    assert!(carries(&w.member, PAY, "pay", &shop, &veip).await);
    until("the ticket to say its generation is written", 10, || written(&w.tickets, "pay")).await;
    // What CIS will post (issue #24): the Ingress's namespace is watched (labelled though it
    // holds no listener), its virtual server and pool are there, the pool has members.
    let cis = crate::cis::readme_args(&BTreeMap::from([("zone".to_string(), "f5".to_string())]));
    until("CIS to post the F5 Ingress with its members", 10, || async {
        crate::cis::carries_ingress(&crate::cis::posted(&w.member, &cis).await, "pay_ingress", &veip)
    })
    .await;

    // Edited, and a second one: both follow; the first removed goes.
    let (moved, cart) = (f5("shop", "/v2", "web-v1"), f5("cart", "/cart", "web-v2"));
    set_ingresses(&w.tickets, "pay", &[moved.clone(), cart.clone()]).await;
    until("the edit and the second Ingress", 10, || async {
        carries(&w.member, PAY, "pay", &moved, &veip).await && carries(&w.member, PAY, "pay", &cart, &veip).await
    })
    .await;
    set_ingresses(&w.tickets, "pay", std::slice::from_ref(&cart)).await;
    until("the removed F5 Ingress's Ingress deleted", 10, || async { ours(&w.member).await == ["pay/cart"] }).await;

    // A name a user's Ingress has: theirs is left alone, and the ticket says why.
    set_ingresses(&w.tickets, "pay", &[cart.clone(), f5("legacy", "/old", "api")]).await;
    until("the refusal on the ticket", 10, || async {
        report(&w.tickets, "pay").await.is_some_and(|(ok, why)| ok == "False" && why.contains("not lbdesk's"))
    })
    .await;
    untouched(&w.member, PAY, &legacy).await;
    set_ingresses(&w.tickets, "pay", std::slice::from_ref(&cart)).await;
    until("the refusal cleared", 10, || written(&w.tickets, "pay")).await;

    // Disabled (admission wants the F5 Ingresses removed first), Active again, one back.
    set_ingresses(&w.tickets, "pay", &[]).await;
    until("every Ingress withdrawn", 10, || async { ours(&w.member).await.is_empty() }).await;
    set_state(&w.tickets, "pay", "Disabled").await;
    wait_phase(&w.tickets, "pay", Phase::Disabled).await;
    set_state(&w.tickets, "pay", "Active").await;
    wait_phase(&w.tickets, "pay", Phase::Enabled).await;
    set_ingresses(&w.tickets, "pay", std::slice::from_ref(&cart)).await;
    until("restored", 10, || carries(&w.member, PAY, "pay", &cart, &veip)).await;

    // Deleted: nothing of it stays; the user's Ingresses never changed.
    set_ingresses(&w.tickets, "pay", &[]).await;
    set_state(&w.tickets, "pay", "Disabled").await;
    wait_phase(&w.tickets, "pay", Phase::Disabled).await;
    set_state(&w.tickets, "pay", "Deleted").await;
    wait_phase(&w.tickets, "pay", Phase::Deleted).await;
    assert!(ours(&w.member).await.is_empty(), "no Ingress outlives its ticket");
    let posted = crate::cis::posted(&w.member, &cis).await;
    assert!(!crate::cis::carries_ingress(&posted, "pay_ingress", &veip), "nothing of it is posted");
    untouched(&w.member, PAY, &own).await;
    untouched(&w.member, PAY, &legacy).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ticket_that_stops_being_live_loses_its_ingresses_and_a_real_delete_leaves_none() {
    let lbdesk = spawn_lbdesk_with(Backend::Sqlite, Options { reconciler: false, ..options() }).await;
    let w = world(&lbdesk).await;
    w.lbs.create(&PostParams::default(), &payments_lb()).await.expect("lb");
    let (shop, cart) = (f5("shop", "/", "web-v1"), f5("cart", "/cart", "web-v2"));
    w.tickets
        .create(&PostParams::default(), &ingress_ticket(PAYMENTS, "pay", &[shop.clone(), cart.clone()]))
        .await
        .expect("ticket");

    // A crash right after the first Ingress written: the next run writes the rest.
    let crash = Arc::new(Crash::after(Step::IngressWrite));
    let first = start_reconciler(&lbdesk, lbdesk.driver.clone(), Some(crash.clone()));
    until("the crash after an Ingress write", 20, || async { crash.reached() }).await;
    first.abort();
    assert_eq!(ours(&w.member).await.len(), 1, "halted after one of the two");
    let second = start_reconciler(&lbdesk, lbdesk.driver.clone(), None);
    let veip = veip(&w.tickets, "pay").await;
    let both = || async {
        carries(&w.member, PAYMENTS, "pay", &shop, &veip).await
            && carries(&w.member, PAYMENTS, "pay", &cart, &veip).await
    };
    until("both Ingresses", 10, both).await;
    until("the report", 10, || written(&w.tickets, "pay")).await;

    // Admission keeps a ticket with F5 Ingresses from being disabled; a phase written by hand
    // makes one not live with its F5 Ingresses kept: withdrawn, then restored.
    let own: Api<Lbticket> = Api::all(lbdesk.clusters.mgmt().clone());
    force_phase(&own, "pay", Phase::Failed).await;
    until("withdrawn while not live", 10, || async { ours(&w.member).await.is_empty() }).await;
    force_phase(&own, "pay", Phase::Enabled).await;
    until("restored once live again", 10, both).await;

    // A real delete, taken up by a reconciler started afterwards: once the ticket is gone, so
    // are its Ingresses (the finalizer removes them before it lets the ticket go).
    second.abort();
    force_phase(&own, "pay", Phase::Failed).await;
    w.tickets.delete("pay", &DeleteParams::default()).await.expect("delete");
    assert_eq!(ours(&w.member).await.len(), 2, "no reconciler yet");
    let third = start_reconciler(&lbdesk, lbdesk.driver.clone(), None);
    until("the ticket gone", 20, || async { w.tickets.get_opt("pay").await.expect("get").is_none() }).await;
    assert!(ours(&w.member).await.is_empty(), "no Ingress outlives its ticket");
    assert!(pairs(&w.lbs, "demo").await.is_empty(), "the pair is released");
    third.abort();
}
