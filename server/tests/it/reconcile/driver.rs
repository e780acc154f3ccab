//! The driver contract (seed `000_…`, LBCF's webhooks) as the bank's network-policy system sees
//! it: a refused revoke is said on the request until the driver revokes; a refused request,
//! edited, is asked again under a new recordID; `minRetryDelayInSeconds` is honoured; each hook
//! has its own timeout. (An answer read only up to its bound: `ensure`'s driver faults.)

use std::collections::BTreeSet;

use app::domain::crd::Condition;
use k8s_openapi::api::apps::v1::Deployment;

use super::*;

/// Requests denied by ticket name: each test's own, in the shared simulator.
fn deny(hook: Hook, ticket: &str, message: &str) -> Deny {
    Deny {
        hook: Some(hook),
        ticket_pattern: Some(format!("^{ticket}$")),
        message: message.into(),
        ..Default::default()
    }
}

async fn status_of(w: &World, name: &str) -> Option<app::domain::crd::LbticketStatus> {
    w.tickets.get(name).await.ok().and_then(|t| t.status)
}

fn condition<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// The recordIDs the simulator was asked to request a policy for, for `ticket`.
fn records(lbdesk: &Lbdesk, ticket: &str) -> BTreeSet<String> {
    let calls = lbdesk.simulator.calls();
    calls
        .into_iter()
        .filter(|c| c.ticket == ticket && c.hook == Hook::RequestNetworkPolicy)
        .map(|c| c.record_id)
        .collect()
}

const REVOKE: Scope = Scope { lb: "revoke", tenant: "revoke", namespace: "revoke", cis: "kube-system" };

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_revoke_is_said_on_the_request_until_the_driver_revokes() {
    const NAME: &str = "revoke-refused";
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let w = world(&lbdesk).await;
    crate::user::own_namespace(&lbdesk, CLUSTER, "project-a", REVOKE.namespace).await;
    w.lbs.create(&PostParams::default(), &own_loadbalancer(REVOKE, "20.77.0.0/24", &[])).await.expect("lb");
    w.tickets.create(&PostParams::default(), &ticket_in(REVOKE, NAME, None, false)).await.expect("ticket");
    wait_phase(&w.tickets, NAME, Phase::Enabled).await;
    set_state(&w.tickets, NAME, "Disabled").await;
    wait_phase(&w.tickets, NAME, Phase::Disabled).await;

    let refusal = "the firewall change window is closed";
    lbdesk.simulator.change_behaviour(|b| b.deny.push(deny(Hook::RevokeNetworkPolicy, NAME, refusal)));
    set_state(&w.tickets, NAME, "Deleted").await;
    let said = format!("the network policy could not be revoked: the driver refused it: {refusal}");
    until("the refusal on the request", 20, || async {
        status_of(&w, NAME).await.is_some_and(|s| {
            let revoked = condition(&s.conditions, "PolicyRevoked");
            s.message == said && revoked.is_some_and(|c| c.status == "False" && c.reason == "Refused")
        })
    })
    .await;
    let held = status_of(&w, NAME).await.expect("a status");
    assert_eq!(held.phase, Phase::Disabled, "not Deleted while the policy stands");
    assert!(!pairs(&w.lbs, REVOKE.lb).await.is_empty(), "the pair stays held while the policy stands");

    lbdesk.simulator.change_behaviour(|b| b.deny.retain(|d| d.ticket_pattern.as_deref() != Some(&format!("^{NAME}$"))));
    wait_phase(&w.tickets, NAME, Phase::Deleted).await;
    let status = status_of(&w, NAME).await.expect("a status");
    assert!(status.message.is_empty(), "{status:?}");
    assert!(condition(&status.conditions, "PolicyRevoked").is_some_and(|c| c.status == "True"), "{status:?}");
    assert!(pairs(&w.lbs, REVOKE.lb).await.is_empty(), "the pair released once revoked");
}

const AGAIN: Scope = Scope { lb: "again", tenant: "again", namespace: "again", cis: "kube-system" };

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_request_edited_is_asked_again_under_a_new_record() {
    const NAME: &str = "refused-again";
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let w = world(&lbdesk).await;
    crate::user::own_namespace(&lbdesk, CLUSTER, "project-a", AGAIN.namespace).await;
    w.lbs.create(&PostParams::default(), &own_loadbalancer(AGAIN, "20.78.0.0/24", &[])).await.expect("lb");
    lbdesk.simulator.change_behaviour(|b| b.deny.push(deny(Hook::RequestNetworkPolicy, NAME, "not this time")));
    w.tickets.create(&PostParams::default(), &ticket_in(AGAIN, NAME, None, false)).await.expect("ticket");
    wait_phase(&w.tickets, NAME, Phase::Failed).await;
    assert_eq!(records(&lbdesk, NAME).len(), 1);

    // The network team lifts the refusal; the user edits the request, keeping its addresses.
    lbdesk.simulator.change_behaviour(|b| b.deny.retain(|d| d.ticket_pattern.as_deref() != Some(&format!("^{NAME}$"))));
    let veip = status_of(&w, NAME).await.and_then(|s| s.veip).expect("the refused request holds its pair");
    let edit = json!({"spec": {"veip": veip}});
    w.tickets.patch(NAME, &PatchParams::default(), &Patch::Merge(&edit)).await.expect("edited");
    wait_phase(&w.tickets, NAME, Phase::Enabled).await;
    let asked = records(&lbdesk, NAME);
    assert_eq!(asked.len(), 2, "asked again under a recordID of its own: {asked:?}");
    assert_eq!(status_of(&w, NAME).await.and_then(|s| s.veip), Some(veip), "the same addresses");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_driver_is_polled_no_sooner_than_it_asks_and_each_hook_has_its_own_timeout() {
    const NAME: &str = "polled";
    let driver = Behaviour { running_seconds: 5, min_retry_delay_seconds: 2, ..Default::default() };
    let options = Options { driver, driver_timeout: 10, driver_revoke_timeout: Some(1), ..Options::default() };
    let lbdesk = spawn_lbdesk_with(Backend::Sqlite, options).await;
    let w = world(&lbdesk).await;
    w.lbs.create(&PostParams::default(), &loadbalancer("20.1.0.0/24", &[])).await.expect("lb");
    w.tickets.create(&PostParams::default(), &ticket(NAME, None, false)).await.expect("ticket");
    wait_phase(&w.tickets, NAME, Phase::Enabled).await;
    let asked: Vec<u64> = lbdesk
        .simulator
        .calls()
        .iter()
        .filter(|c| c.ticket == NAME && c.hook == Hook::RequestNetworkPolicy)
        .map(|c| c.at)
        .collect();
    assert!(asked.len() >= 3, "Running for 5 s, polled every 2 s: {asked:?}");
    let gaps: Vec<u64> = asked.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.iter().all(|&g| g >= 2_000), "every poll waits minRetryDelayInSeconds (2 s): gaps {gaps:?} ms");

    // The revoke has a timeout of its own (1 s), shorter than the request's (10 s).
    set_state(&w.tickets, NAME, "Disabled").await;
    wait_phase(&w.tickets, NAME, Phase::Disabled).await;
    lbdesk.simulator.change_behaviour(|b| b.fault = Some(Fault::Hang));
    set_state(&w.tickets, NAME, "Deleted").await;
    until("the revoke's own timeout on the request", 20, || async {
        status_of(&w, NAME).await.is_some_and(|s| {
            s.message.contains("could not be revoked")
                && s.message.contains("did not answer revokeNetworkPolicy within 1 s")
                && condition(&s.conditions, "PolicyRevoked").is_some_and(|c| c.reason == "DriverError")
        })
    })
    .await;
    lbdesk.simulator.change_behaviour(|b| b.fault = None);
    wait_phase(&w.tickets, NAME, Phase::Deleted).await;
}

/// `CisReady` of a load balancer whose CIS is acp-region01's.
async fn cis_ready(w: &World, lb: &str) -> Option<Condition> {
    let lb = w.lbs.get(lb).await.ok()?;
    lb.status?.conditions.into_iter().find(|c| c.type_ == app::domain::crd::CONDITION_CIS_READY)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cis_ready_follows_the_cis_deployment_with_no_change_of_lbdesks_objects() {
    // NB: lbdesk's own ensure pass comes every 300 s here: only the CIS check can tell.
    let lbdesk = spawn_lbdesk_with(Backend::Sqlite, Options::default()).await;
    let w = world(&lbdesk).await;
    let mut lb = loadbalancer("20.1.0.0/24", &[]);
    lb.spec.nsselector = [("cis".to_string(), "shared".to_string())].into();
    w.lbs.create(&PostParams::default(), &lb).await.expect("lb");
    w.tickets.create(&PostParams::default(), &ticket("cis-follows", None, false)).await.expect("ticket");
    wait_phase(&w.tickets, "cis-follows", Phase::Enabled).await;
    until("CisReady True", 20, || async { cis_ready(&w, "demo").await.is_some_and(|c| c.status == "True") }).await;

    let deployments: Api<Deployment> = Api::namespaced(w.member.clone(), "kube-system");
    let mut cis = deployments.get("k8s-bigip-ctlr").await.expect("the simulated CIS");
    if let Some(pod) = cis.spec.template.spec.as_mut() {
        pod.containers[0].args = Some(
            app::domain::cis::args::README_ARGS
                .iter()
                .map(|a| if a.starts_with("--filter-tenants") { "--filter-tenants=true".into() } else { a.to_string() })
                .collect(),
        );
    }
    deployments.replace("k8s-bigip-ctlr", &PostParams::default(), &cis).await.expect("an operator changes CIS");
    until("CisReady False within seconds", 25, || async {
        cis_ready(&w, "demo").await.is_some_and(|c| c.status == "False" && c.message.contains("--filter-tenants=true"))
    })
    .await;
}
