//! A refusal in an AS3 tenant that two projects share: BIG-IP names every virtual server of
//! the tenant, and each project is told only of its own.
//!
//! The simulated CIS posts a cluster's tenants in one declaration, as CIS does with
//! `--filter-tenants=false`: while BIG-IP refuses the demo's tenant, nothing else of
//! acp-region01 deploys. So this module's lbdesk serves this test alone.

use app::domain::crd::Lbticket;
use serde_json::json;

use crate::bigip::on_bigip;
use crate::helpers::{Backend, until};
use crate::shared::Shared;
use crate::user::{User, ok, ticket_form, wait_phase};

static LBDESK: Shared = Shared::new();

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_in_a_shared_tenant_tells_each_project_only_of_its_own_request() {
    use app::domain::crd::{OnBigip, Phase, ServiceRef};
    use app::screens::listeners::ListenerForm;
    use server::demo::loadbalancer::{CLUSTER, NAME, PARTITION};
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let tickets: kube::Api<Lbticket> = kube::Api::all(lbdesk.client("mgmt").await);
    // Alice (project-a, team-a) and bob (project-b, team-b) on the demo's load balancer: one
    // AS3 tenant.
    for (user, ticket, namespace) in [("alice", "alices", "team-a"), ("bob", "bobsecret", "team-b")] {
        let who = User::sign_in(&lbdesk, user).await;
        let form = app::screens::tickets::TicketForm {
            loadbalancer: NAME.into(),
            cluster: CLUSTER.into(),
            ..ticket_form(ticket, namespace, "")
        };
        ok::<String>(who.json("ticket/save", json!({"form": form})).await).await;
        wait_phase(&who, ticket, Phase::Enabled).await;
        let services = vec![ServiceRef { service: "web-v1".into(), port: 8080, weight: 100 }];
        let listener =
            ListenerForm { ticket: ticket.into(), name: "web".into(), port: 80, services, ..Default::default() };
        ok::<String>(who.json("listener/save", json!({"form": listener})).await).await;
        until("live on BIG-IP", 20, || async {
            on_bigip(&tickets, ticket).await.is_some_and(|(l, _)| l.state == OnBigip::Live)
        })
        .await;
    }
    // BIG-IP refuses the tenant's next declaration, naming every virtual server in it; bob's
    // change makes it.
    let (sim, _) = &lbdesk.bigip;
    sim.change_behaviour(|b| b.reject_tenants.push(PARTITION.into()));
    let bob = User::sign_in(&lbdesk, "bob").await;
    let services = vec![ServiceRef { service: "web-v2".into(), port: 8080, weight: 100 }];
    let generation = Some(2);
    let listener = ListenerForm {
        ticket: "bobsecret".into(),
        name: "web".into(),
        port: 80,
        services,
        generation,
        ..Default::default()
    };
    ok::<String>(bob.json("listener/save", json!({"form": listener})).await).await;
    until("bob's listener rejected", 20, || async {
        on_bigip(&tickets, "bobsecret").await.is_some_and(|(l, _)| l.state == OnBigip::Rejected)
    })
    .await;
    let (bobs, _) = on_bigip(&tickets, "bobsecret").await.expect("read back");
    assert!(bobs.reason.contains("vs_bobsecret_80") && !bobs.reason.contains("alices"), "{bobs:?}");
    // Alice's listener is unchanged on BIG-IP: live, and nothing of bob's reaches her ticket.
    let (alices, _) = on_bigip(&tickets, "alices").await.expect("read back");
    assert_eq!(alices.state, OnBigip::Live, "{alices:?}");
    // Alice changes hers too: refused as well, told of her own virtual server, bob's counted.
    let alice = User::sign_in(&lbdesk, "alice").await;
    let services = vec![ServiceRef { service: "web-v2".into(), port: 8080, weight: 100 }];
    let listener = ListenerForm {
        ticket: "alices".into(),
        name: "web".into(),
        port: 80,
        services,
        generation,
        ..Default::default()
    };
    ok::<String>(alice.json("listener/save", json!({"form": listener})).await).await;
    until("alice's listener rejected", 20, || async {
        on_bigip(&tickets, "alices").await.is_some_and(|(l, _)| l.state == OnBigip::Rejected)
    })
    .await;
    let (alices, _) = on_bigip(&tickets, "alices").await.expect("read back");
    assert!(alices.reason.contains("vs_alices_80"), "{alices:?}");
    assert!(alices.reason.contains("more in other requests sharing the AS3 tenant"), "{alices:?}");
    let said = serde_json::to_string(&tickets.get("alices").await.expect("alice's").status).expect("JSON");
    for secret in ["bobsecret", "team-b"] {
        assert!(!said.contains(secret), "{secret} in alice's status: {said}");
    }
    // And her listener's page (its HTML) says nothing of bob's either.
    let page: app::screens::listeners::ListenerDetail =
        ok(alice.form("listener/get", &[("ticket", "alices"), ("name", "web")]).await).await;
    assert!(page.body.contains("Rejected by BIG-IP") && !page.body.contains("bobsecret"), "{}", page.body);
}
