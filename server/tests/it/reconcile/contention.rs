//! Contention on a load balancer is no refusal: requests whose pair writes keep losing to each
//! other wait, and each gets its pair in turn; requests past its free pairs wait for one,
//! asking no policy meanwhile.

use std::collections::BTreeSet;

use app::domain::crd::{BondState, Lbticket, Phase};
use app::domain::ipam::queue;
use kube::ResourceExt;
use kube::api::PostParams;

use super::{LBDESK, Scope, own_loadbalancer, pairs, ticket_in, tickets_in, world};
use crate::helpers::{Backend, until};

/// Requests created at once on one load balancer with room for all.
const REQUESTS: usize = 200;

/// The load balancer with room for all of them.
const CROWD: Scope = Scope { lb: "crowd", tenant: "crowd", namespace: "team-a", cis: "kube-system" };

/// The load balancer with ten free pairs.
const TENFREE: Scope = Scope { lb: "tenfree", tenant: "tenfree", namespace: "team-a", cis: "kube-system" };

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_created_at_once_on_one_load_balancer_all_get_a_pair() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let w = world(&lbdesk).await;
    w.lbs.create(&PostParams::default(), &own_loadbalancer(CROWD, "20.60.0.0/23", &[])).await.expect("lb");
    let creations: Vec<_> = (0..REQUESTS)
        .map(|i| {
            let api = w.tickets.clone();
            let t = ticket_in(CROWD, &format!("crowd-{i:03}"), None, false);
            tokio::spawn(async move { api.create(&PostParams::default(), &t).await })
        })
        .collect();
    for c in creations {
        c.await.expect("task").expect("create");
    }
    until("every request Enabled, or one Failed", 120, || async {
        let all = tickets_in(&w.tickets, CROWD).await;
        let phases: Vec<Phase> = all.iter().filter_map(|t| t.status.as_ref().map(|s| s.phase)).collect();
        phases.contains(&Phase::Failed) || (phases.len() == REQUESTS && phases.iter().all(|p| *p == Phase::Enabled))
    })
    .await;
    let all = tickets_in(&w.tickets, CROWD).await;
    let failed: Vec<String> = all
        .iter()
        .filter_map(|t| {
            t.status.as_ref().filter(|s| s.phase == Phase::Failed).map(|s| format!("{}: {}", t.name_any(), s.message))
        })
        .collect();
    assert!(failed.is_empty(), "contention failed requests: {failed:?}");
    let addresses: BTreeSet<String> =
        all.iter().filter_map(|t| t.status.as_ref().and_then(|s| s.veip.clone())).collect();
    assert_eq!(addresses.len(), REQUESTS, "no address handed out twice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_requests_for_ten_free_pairs_get_exactly_ten() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let w = world(&lbdesk).await;
    // A /28 has 14 usable addresses; 4 reserved leave 10.
    let reserved = ["20.61.0.1", "20.61.0.2", "20.61.0.3", "20.61.0.4"];
    w.lbs.create(&PostParams::default(), &own_loadbalancer(TENFREE, "20.61.0.0/28", &reserved)).await.expect("lb");
    let mut creations = Vec::new();
    for i in 0..100 {
        let api = w.tickets.clone();
        creations.push(tokio::spawn(async move {
            api.create(&PostParams::default(), &ticket_in(TENFREE, &format!("ten-{i:03}"), None, false)).await
        }));
    }
    for c in creations {
        c.await.expect("task").expect("create");
    }
    // The other 90 wait for an address (issue #26): not Failed, and no policy asked for them.
    let enabled = |t: &Lbticket| t.status.as_ref().is_some_and(|s| s.phase == Phase::Enabled);
    until("every ticket settled", 60, || async {
        let all = tickets_in(&w.tickets, TENFREE).await;
        all.len() == 100 && all.iter().all(|t| enabled(t) || queue::waiting(t))
    })
    .await;
    let all = tickets_in(&w.tickets, TENFREE).await;
    let (enabled, waiting): (Vec<&Lbticket>, Vec<&Lbticket>) = all.iter().partition(|t| enabled(t));
    assert_eq!((enabled.len(), waiting.len()), (10, 90));
    assert!(
        waiting.iter().all(|t| t.status.as_ref().is_some_and(|s| s.message.starts_with("Waiting for a free address"))),
        "{:?}",
        waiting[0].status
    );
    let asked: BTreeSet<String> =
        lbdesk.simulator.calls().into_iter().map(|c| c.ticket).filter(|t| t.starts_with("ten-")).collect();
    assert_eq!(asked.len(), 10, "the network policy is asked for the ten holding a pair only");
    let addresses: BTreeSet<String> =
        enabled.iter().filter_map(|t| t.status.as_ref().and_then(|s| s.veip.clone())).collect();
    assert_eq!(addresses.len(), 10, "no address handed out twice");
    let recorded = pairs(&w.lbs, TENFREE.lb).await;
    assert_eq!(recorded.len(), 10, "the address objects are exact");
    let owners: BTreeSet<String> = recorded.iter().map(|p| p.0.clone()).collect();
    let winners: BTreeSet<String> = enabled.iter().map(|t| t.name_any()).collect();
    assert_eq!(owners, winners);
    assert!(recorded.iter().all(|p| p.3 == BondState::Bond));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_waiting_past_a_lowered_quota_get_exactly_the_quota_in_parallel_reconciles() {
    use app::domain::crd::{LABEL_PROJECT, Lbquota, LbquotaSpec};
    use kube::Api;
    use kube::api::{Patch, PatchParams};

    const WAITING: usize = 30;
    let lbdesk = crate::helpers::spawn_lbdesk_with(
        Backend::Sqlite,
        crate::helpers::Options { reconciler: false, ..super::options() },
    )
    .await;
    let w = world(&lbdesk).await;
    w.lbs.create(&PostParams::default(), &super::loadbalancer("20.1.0.0/24", &[])).await.expect("lb");
    let quotas: Api<Lbquota> = Api::all(w.mgmt.clone());
    let roomy = LbquotaSpec { addresses_per_loadbalancer: Some(100), ..Default::default() };
    quotas.create(&PostParams::default(), &Lbquota::new("project-a", roomy)).await.expect("quota");
    for i in 0..WAITING {
        let mut t = super::ticket(&format!("waits-{i:02}"), None, false);
        t.metadata.labels = Some([(LABEL_PROJECT.to_string(), "project-a".to_string())].into());
        w.tickets.create(&PostParams::default(), &t).await.expect("create");
    }
    // The admins lower the quota before the reconciler hands anything out.
    let lowered = serde_json::json!({"spec": {"addressesPerLoadbalancer": 5}});
    quotas.patch("project-a", &PatchParams::default(), &Patch::Merge(&lowered)).await.expect("lowered");
    let run = super::start_reconciler(&lbdesk, lbdesk.driver.clone(), None);
    until("five requests Enabled, the others waiting for the quota", 60, || async {
        let all = tickets_in(&w.tickets, super::DEMO).await;
        let enabled = all.iter().filter(|t| t.status.as_ref().is_some_and(|s| s.phase == Phase::Enabled)).count();
        let waiting = all
            .iter()
            .filter(|t| t.status.as_ref().is_some_and(|s| s.message.contains("holds its quota of 5 addresses")))
            .count();
        enabled == 5 && waiting == WAITING - 5
    })
    .await;
    assert_eq!(pairs(&w.lbs, "demo").await.len(), 5, "exactly the quota's pairs are held");
    run.abort();
}
