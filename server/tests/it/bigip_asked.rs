//! Reading BIG-IP on demand, and one BIG-IP's failure kept to its own load balancer: a read
//! asked from a page (or with kubectl's annotation) is answered at once, not at the next
//! period, and only by a reader of the request; a load balancer whose BIG-IP cannot be read
//! marks its own requests only.

use app::domain::bigip::MemberState;
use app::domain::crd::{ANNOTATION_READ_BIGIP, BigipStatus, Lbticket, OnBigip, Phase, ServiceRef};
use app::error::AppError;
use app::screens::listeners::ListenerForm;
use reqwest::StatusCode;
use serde_json::json;
use server::bigip::sim::Fault;
use server::demo::loadbalancer::NAME;

use crate::helpers::{Backend, Lbdesk, Options, own_lb, until};
use crate::shared::Shared;
use crate::user::{User, ok, own_namespace, own_tenant, save_lb, ticket_form, wait_phase};

/// Shared by the tests here, with an hour between reads: only an asked read can show what
/// changes on BIG-IP. Each changes only its own part of BIG-IP's behaviour: a member of its
/// own down, its own tenant failing.
static LBDESK: Shared = Shared::with(|| Options { bigip_poll_seconds: 3600, ..Default::default() }, false);

/// `user`'s request `name` in `namespace` of `cluster`, on load balancer `lb`, with the
/// listener `web` on port 80 to `service`.
async fn placed(user: &User, (lb, cluster, namespace): (&str, &str, &str), name: &str, service: &str) {
    let form = app::screens::tickets::TicketForm {
        loadbalancer: lb.into(),
        cluster: cluster.into(),
        ..ticket_form(name, namespace, "")
    };
    ok::<String>(user.json("ticket/save", json!({"form": form})).await).await;
    wait_phase(user, name, Phase::Enabled).await;
    let web = ServiceRef { service: service.into(), port: 8080, weight: 100 };
    let listener =
        ListenerForm { ticket: name.into(), name: "web".into(), port: 80, services: vec![web], ..Default::default() };
    ok::<String>(user.json("listener/save", json!({"form": listener})).await).await;
}

async fn bigip_of(lbdesk: &Lbdesk, name: &str) -> Option<BigipStatus> {
    let tickets: kube::Api<Lbticket> = kube::Api::all(lbdesk.client("mgmt").await);
    tickets.get(name).await.ok()?.status?.bigip
}

/// How many of the first listener's members are up, if it is live.
async fn live_up(lbdesk: &Lbdesk, name: &str) -> Option<usize> {
    let bigip = bigip_of(lbdesk, name).await?;
    let l = bigip.listeners.first().filter(|l| l.state == OnBigip::Live)?;
    Some(l.members.iter().filter(|m| m.state == MemberState::Up).count())
}

/// Asks, as a page's plain form does, for the request `ticket`'s BIG-IP to be read now.
async fn ask(user: &User, ticket: &str, referer: &str) -> reqwest::Response {
    let url = format!("{}/api/bigip/read", user.url);
    let res = user.client.post(url).header("accept", "text/html").header("referer", referer);
    res.form(&[("ticket", ticket)]).send().await.expect("request")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_asked_from_a_page_is_answered_at_once_and_only_for_a_reader_of_the_request() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let alice = User::sign_in(&lbdesk, "alice").await;
    placed(&alice, (NAME, "acp-region01", "team-a"), "shop", "web-v1").await;
    let page = format!("{}/listeners/shop/web", lbdesk.url);
    // The first read comes once the listener is placed, maybe before the simulated CIS posted
    // it; asked again, it is read live.
    until("the listener live with two members up", 30, || async {
        ask(&alice, "shop", &page).await;
        live_up(&lbdesk, "shop").await == Some(2)
    })
    .await;

    let (sim, _) = &lbdesk.bigip;
    let members = bigip_of(&lbdesk, "shop").await.and_then(|b| b.listeners.first().cloned()).expect("read back");
    sim.change_behaviour(|b| b.members_down.push(members.members[0].address.clone()));
    let res = ask(&alice, "shop", &page).await;
    assert_eq!(res.status(), StatusCode::FOUND, "the plain form is sent back to its page");
    let back = res.headers().get("location").and_then(|v| v.to_str().ok()).unwrap_or_default();
    assert!(back.starts_with(&page), "sent back to {back}");
    // Answered before the answer came: the member down is already in the status.
    let bigip = bigip_of(&lbdesk, "shop").await.expect("read back");
    assert_eq!(live_up(&lbdesk, "shop").await, Some(1), "{bigip:?}");
    let tickets: kube::Api<Lbticket> = kube::Api::all(lbdesk.client("mgmt").await);
    let asked = tickets.get("shop").await.expect("ticket").metadata.annotations.unwrap_or_default();
    assert_eq!(asked.get(ANNOTATION_READ_BIGIP), Some(&bigip.answered), "kubectl sees the ask answered");
    let shown = alice.client.get(&page).send().await.expect("page").text().await.expect("text");
    assert!(shown.contains("Last read on request at") && shown.contains("Read BIG-IP now"), "{shown}");

    // A tenant of another project is told nothing of the request, and asks nothing.
    let bob = User::sign_in(&lbdesk, "bob").await;
    let res = bob.client.post(format!("{}/api/bigip/read", bob.url)).form(&[("ticket", "shop")]).send().await;
    let res = res.expect("request");
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let after = tickets.get("shop").await.expect("ticket").metadata.annotations.unwrap_or_default();
    assert_eq!(after.get(ANNOTATION_READ_BIGIP), asked.get(ANNOTATION_READ_BIGIP), "bob's ask wrote nothing");

    // A request with nothing on BIG-IP has nothing to read: said, not waited for.
    let form = app::screens::tickets::TicketForm { loadbalancer: NAME.into(), ..ticket_form("bare", "team-a", "") };
    ok::<String>(alice.json("ticket/save", json!({"form": form})).await).await;
    let res = alice.client.post(format!("{}/api/bigip/read", alice.url)).form(&[("ticket", "bare")]).send().await;
    let res = res.expect("request");
    assert_eq!(res.status(), StatusCode::CONFLICT);
    let error: AppError = serde_json::from_str(&res.text().await.expect("body")).expect("an AppError");
    assert!(matches!(&error, AppError::Refused(m) if m.contains("Nothing of this address is on BIG-IP")), "{error:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_balancer_whose_bigip_cannot_be_read_marks_only_its_own_requests() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let admin = User::sign_in(&lbdesk, "admin").await;
    // A second load balancer, its own tenant and ranges, on acp-region02: the simulated CIS
    // posts a cluster's tenants together, and this one's BIG-IP is about to fail.
    let form = app::screens::loadbalancers::LbForm {
        cluster: "acp-region02".into(),
        nsselector: vec![],
        ..own_lb("other", 22)
    };
    ok::<String>(save_lb(&admin, &form).await).await;
    // Alice's on the demo load balancer (on a Service the other test here leaves alone), and
    // one of a tenant of its own on the other.
    let alice = User::sign_in(&lbdesk, "alice").await;
    placed(&alice, (NAME, "acp-region01", "team-a"), "kept", "web-v2").await;
    let carol = own_tenant(&lbdesk, "asked-carol", "asked-p").await;
    own_namespace(&lbdesk, "acp-region02", "asked-p", "asked-b").await;
    placed(&carol, ("other", "acp-region02", "asked-b"), "side", "web-v2").await;
    let page = format!("{}/listeners", lbdesk.url);
    until("both requests read back", 30, || async {
        ask(&alice, "kept", &page).await;
        ask(&carol, "side", &page).await;
        live_up(&lbdesk, "kept").await == Some(2) && bigip_of(&lbdesk, "side").await.is_some()
    })
    .await;

    // The other load balancer's BIG-IP now fails every request about its tenant.
    let (sim, _) = &lbdesk.bigip;
    sim.change_behaviour(|b| {
        b.fault = Some(Fault::Unavailable);
        b.fault_tenants.push("other".into());
    });
    until("the other load balancer's request marked unreadable", 20, || async {
        ask(&carol, "side", &page).await;
        bigip_of(&lbdesk, "side").await.is_some_and(|b| b.unreachable.contains("503"))
    })
    .await;
    ask(&alice, "kept", &page).await;
    let kept = bigip_of(&lbdesk, "kept").await.expect("read back");
    assert_eq!(kept.unreachable, "", "the demo load balancer's BIG-IP was read: {kept:?}");
    assert_eq!(live_up(&lbdesk, "kept").await, Some(2), "{kept:?}");
}
