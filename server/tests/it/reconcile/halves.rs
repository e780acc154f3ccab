//! A crash between the two creates of a pair leaves half a pair: the next run gives it back and
//! the ticket gets a whole pair, with nothing left over.

use std::sync::Arc;

use app::domain::crd::{BondState, Lbaddress, Phase, address_name};
use app::domain::ipam::{Device, Side};
use kube::api::{Api, PostParams};
use server::reconciler;

use super::{config, loadbalancer, options, pairs, ticket, wait_phase, world};
use crate::helpers::{Backend, Options, spawn_lbdesk_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_a_pair_is_given_back_and_the_ticket_gets_a_whole_one() {
    let lbdesk = spawn_lbdesk_with(Backend::Sqlite, Options { reconciler: false, ..options() }).await;
    let w = world(&lbdesk).await;
    w.lbs.create(&PostParams::default(), &loadbalancer("20.1.0.0/24", &[])).await.expect("lb");
    w.tickets.create(&PostParams::default(), &ticket("half", None, false)).await.expect("ticket");
    // What a reconciler that died after the VE create left (written as lbdesk itself).
    let own: Api<Lbaddress> = Api::all(lbdesk.clusters.mgmt().clone());
    let (ve, ltm) = ("20.1.0.5".parse().expect("ip"), "10.0.0.5".parse().expect("ip"));
    let device = Device::of(&loadbalancer("20.1.0.0/24", &[]).spec, Side::Ve);
    own.create(&PostParams::default(), &Lbaddress::held("demo", &device, ve, ltm, "half", BondState::Pending))
        .await
        .expect("half a pair");

    let ctx = Arc::new(reconciler::Context::new(lbdesk.clusters.clone(), lbdesk.driver.clone(), config(&lbdesk)));
    let run = tokio::spawn(reconciler::controllers::run(ctx, std::future::pending()));
    wait_phase(&w.tickets, "half", Phase::Enabled).await;
    assert_eq!(
        pairs(&w.lbs, "demo").await,
        [("half".into(), "20.1.0.1".into(), "10.0.0.1".into(), BondState::Bond)],
        "a whole pair, the lowest free"
    );
    assert!(own.get_opt(&address_name(&device, ve)).await.expect("get").is_none(), "the half is gone");
    run.abort();
}
