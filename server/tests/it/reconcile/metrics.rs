//! `/metrics` during a ticket's life: what Prometheus scrapes counts what happened.

use app::domain::crd::Phase;
use kube::api::PostParams;
use server::driver::Hook;

use super::{loadbalancer, ticket, wait_phase, world};
use crate::helpers::{Backend, until};
use crate::shared::Shared;

/// The module's lbdesk. Its one test judges the counters of the whole reconciler: another test
/// here would have to reconcile nothing.
static LBDESK: Shared = Shared::new();

/// The value of the sample `line` starts (its name and labels) in the scraped `text`.
pub(super) fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

pub(super) async fn scrape(url: &str) -> String {
    let res = reqwest::get(format!("{url}/metrics")).await.expect("scrape");
    assert!(res.status().is_success(), "{}", res.status());
    let kind = res.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    assert!(kind.starts_with("application/openmetrics-text"), "{kind}");
    res.text().await.expect("body")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metrics_count_a_tickets_life() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    let w = world(&lbdesk).await;
    // NB: not `/readyz`: a replica whose reconciler has not begun its run yet is ready with its
    // pages (as one that does not lead is), and on a busy machine that moment can be scraped.
    until("the reconciler running, as the leader", 10, || async {
        sample(&scrape(&lbdesk.metrics_url).await, "lbdesk_leader") == Some(1.0)
    })
    .await;
    let before = scrape(&lbdesk.metrics_url).await;
    let calls = |text: &str| sample(text, r#"lbdesk_driver_calls_total{hook="request",status="succ"}"#).unwrap_or(0.0);
    let reconciles =
        |text: &str| sample(text, r#"lbdesk_reconciles_total{kind="lbticket",result="ok"}"#).unwrap_or(0.0);

    w.lbs.create(&PostParams::default(), &loadbalancer("20.1.0.0/24", &[])).await.expect("lb");
    for name in ["m1", "m2"] {
        w.tickets.create(&PostParams::default(), &ticket(name, None, false)).await.expect("ticket");
    }
    for name in ["m1", "m2"] {
        wait_phase(&w.tickets, name, Phase::Enabled).await;
    }
    until("the pairs counted", 10, || async {
        let text = scrape(&lbdesk.metrics_url).await;
        sample(&text, r#"lbdesk_pairs{loadbalancer="demo",state="used"}"#) == Some(2.0)
    })
    .await;
    let after = scrape(&lbdesk.metrics_url).await;
    // The driver calls counted are the ones the driver saw (the demo's requests among them).
    let seen = lbdesk.simulator.calls();
    for name in ["m1", "m2"] {
        // NB: a retry of the same request (its recordID) is idempotent, and counted too.
        let records: std::collections::BTreeSet<&str> = seen
            .iter()
            .filter(|c| c.ticket == name && c.hook == Hook::RequestNetworkPolicy)
            .map(|c| c.record_id.as_str())
            .collect();
        assert_eq!(records.len(), 1, "one request for {name}: {seen:?}");
    }
    until("every call the driver saw is counted", 10, || async {
        let requests = lbdesk.simulator.calls().iter().filter(|c| c.hook == Hook::RequestNetworkPolicy).count();
        calls(&scrape(&lbdesk.metrics_url).await) == requests as f64
    })
    .await;
    assert!(reconciles(&after) - reconciles(&before) >= 2.0, "{after}");
    assert_eq!(sample(&after, r#"lbdesk_pairs{loadbalancer="demo",state="free"}"#), Some(252.0), "{after}");
    assert!(
        sample(&after, r#"lbdesk_reconcile_duration_seconds_count{kind="lbticket"}"#).is_some_and(|n| n >= 2.0),
        "{after}"
    );
    assert_eq!(sample(&after, r#"lbdesk_member_cluster_reachable{cluster="acp-region01"}"#), Some(1.0), "{after}");
    assert!(after.lines().any(|l| l.starts_with(r#"lbdesk_reconcile_queue_depth{kind="lbticket"}"#)), "{after}");
}
