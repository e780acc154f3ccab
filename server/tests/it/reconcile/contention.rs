//! Contention on a load balancer is no refusal: requests whose pair writes keep losing to each
//! other wait, and each gets its pair in turn.

use std::collections::BTreeSet;

use app::domain::crd::Phase;
use kube::ResourceExt;
use kube::api::PostParams;

use super::{LBDESK, own_loadbalancer, ticket_on, tickets_on, world};
use crate::helpers::{Backend, until};

/// Requests created at once on one load balancer with room for all.
const REQUESTS: usize = 200;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_created_at_once_on_one_load_balancer_all_get_a_pair() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let w = world(&lbdesk).await;
    w.lbs.create(&PostParams::default(), &own_loadbalancer("crowd", "20.60.0.0/23", &[])).await.expect("lb");
    let creations: Vec<_> = (0..REQUESTS)
        .map(|i| {
            let api = w.tickets.clone();
            let t = ticket_on("crowd", &format!("crowd-{i:03}"), None, false);
            tokio::spawn(async move { api.create(&PostParams::default(), &t).await })
        })
        .collect();
    for c in creations {
        c.await.expect("task").expect("create");
    }
    until("every request Enabled, or one Failed", 120, || async {
        let all = tickets_on(&w.tickets, "crowd").await;
        let phases: Vec<Phase> = all.iter().filter_map(|t| t.status.as_ref().map(|s| s.phase)).collect();
        phases.contains(&Phase::Failed) || (phases.len() == REQUESTS && phases.iter().all(|p| *p == Phase::Enabled))
    })
    .await;
    let all = tickets_on(&w.tickets, "crowd").await;
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
