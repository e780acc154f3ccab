//! `--demo`: the load balancer both demo projects may use, written through the API on every
//! start, once.

use app::domain::crd::{LABEL_CLUSTER, LABEL_LOADBALANCER, LABEL_PROJECT, Lbticket, LbticketSpec, Loadbalancer, Phase};
use ipnet::IpNet;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use server::demo::loadbalancer::{CLUSTER, NAME, VE_CIDR, loadbalancer};

use crate::helpers::{Backend, Options, spawn_lbdesk, start_on, until};
use crate::on_both_databases;

on_both_databases!(the_demo_load_balancer_serves_both_projects_and_is_seeded_once_however_often_lbdesk_starts);

/// A ticket of `project` in `namespace` on the demo load balancer, labelled as the screens
/// label it (so admission checks the load balancer is offered to the project).
fn ticket(name: &str, project: &str, namespace: &str) -> Lbticket {
    let mut ticket = Lbticket::new(
        name,
        LbticketSpec {
            claimer: "someone".into(),
            loadbalancer: NAME.into(),
            namespace: namespace.into(),
            ..Default::default()
        },
    );
    ticket.metadata.labels =
        Some([(LABEL_PROJECT.into(), project.into()), (LABEL_CLUSTER.into(), CLUSTER.into())].into());
    ticket
}

async fn the_demo_load_balancer_serves_both_projects_and_is_seeded_once_however_often_lbdesk_starts(backend: Backend) {
    let lbdesk = spawn_lbdesk(backend).await;
    let mgmt = lbdesk.client("mgmt").await;
    let lbs: Api<Loadbalancer> = Api::all(mgmt.clone());
    assert_eq!(lbs.get(NAME).await.expect("seeded").spec, loadbalancer().spec);
    let secrets: Api<Secret> = Api::namespaced(mgmt.clone(), "lbdesk-system");
    for secret in [format!("{NAME}-ltm"), format!("{NAME}-ve")] {
        let found = secrets.get(&secret).await.unwrap_or_else(|e| panic!("{secret}: {e}"));
        assert_eq!(found.metadata.labels.unwrap_or_default().get(LABEL_LOADBALANCER).map(String::as_str), Some(NAME));
    }

    // Each project gets an address in its range.
    let tickets: Api<Lbticket> = Api::all(mgmt.clone());
    for (name, project, namespace) in [("a-1", "project-a", "team-a"), ("b-1", "project-b", "team-b")] {
        tickets.create(&PostParams::default(), &ticket(name, project, namespace)).await.expect(project);
    }
    let range: IpNet = VE_CIDR.parse().expect("CIDR");
    for name in ["a-1", "b-1"] {
        until(&format!("{name} to be Enabled"), 20, || async {
            tickets.get(name).await.ok().and_then(|t| t.status).is_some_and(|s| s.phase == Phase::Enabled)
        })
        .await;
        let veip = tickets.get(name).await.expect("ticket").status.and_then(|s| s.veip).expect("an address");
        assert!(range.contains(&veip.parse::<std::net::IpAddr>().expect("IP")), "{veip} in {VE_CIDR}");
    }

    // An admin's edit survives a restart, and the restart adds nothing.
    let edit = serde_json::json!({"spec": {"reserved": ["20.9.0.200"]}});
    lbs.patch(NAME, &PatchParams::default(), &Patch::Merge(&edit)).await.expect("an admin's edit");
    let again = start_on(lbdesk.stop().await, Options::default()).await;
    let lbs: Api<Loadbalancer> = Api::all(again.client("mgmt").await);
    let all = lbs.list(&ListParams::default()).await.expect("list").items;
    assert_eq!(all.iter().filter(|lb| lb.metadata.name.as_deref() == Some(NAME)).count(), 1);
    assert_eq!(lbs.get(NAME).await.expect("kept").spec.reserved, ["20.9.0.200"]);
}
