//! Upgrading from the version that recorded pairs in `Loadbalancer.status.ips`: every pair it
//! recorded becomes two Lbaddress objects before anything is allocated, the list is emptied,
//! and no recorded address is handed out again. And address objects are lbdesk's own: one
//! written by hand is refused.

use std::net::IpAddr;
use std::sync::Arc;

use app::domain::crd::{
    BondState, IpPair, Lbaddress, Lbticket, LbticketStatus, Loadbalancer, LoadbalancerStatus, Phase, address_name,
};
use app::domain::ipam::{Device, Side};
use kube::api::{Api, PostParams};
use serde_json::json;
use server::reconciler;

use super::{config, loadbalancer, options, pairs, ticket, wait_phase, world};
use crate::helpers::{Backend, Options, spawn_lbdesk_with, until};

/// What the earlier version left: (ticket, VE, LTM, state).
const RECORDED: [(&str, &str, &str, BondState); 3] = [
    ("old-a", "20.1.0.1", "10.0.0.1", BondState::Bond),
    ("old-b", "20.1.0.2", "10.0.0.3", BondState::Bond),
    ("old-c", "20.1.0.4", "10.0.0.2", BondState::Pending),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pairs_of_status_ips_are_adopted_and_none_is_handed_out_twice() {
    let lbdesk = spawn_lbdesk_with(Backend::Sqlite, Options { reconciler: false, ..options() }).await;
    let w = world(&lbdesk).await;
    // NB: statuses are lbdesk's to write: the earlier version's are written as lbdesk.
    let own_tickets: Api<Lbticket> = Api::all(lbdesk.clusters.mgmt().clone());
    let own_lbs: Api<Loadbalancer> = Api::all(lbdesk.clusters.mgmt().clone());
    // The management cluster as the earlier version left it: tickets holding pairs, and the
    // pairs in the Loadbalancer's status.
    let lb = w.lbs.create(&PostParams::default(), &loadbalancer("20.1.0.0/24", &[])).await.expect("lb");
    for (name, veip, ltmip, state) in RECORDED {
        let created = w.tickets.create(&PostParams::default(), &ticket(name, None, false)).await.expect("ticket");
        let phase = if state == BondState::Bond { Phase::Enabled } else { Phase::Requested };
        let mut t = created.clone();
        t.status = Some(LbticketStatus {
            phase,
            veip: Some(veip.into()),
            ltmip: Some(ltmip.into()),
            observed_generation: created.metadata.generation,
            ..Default::default()
        });
        own_tickets.replace_status(name, &PostParams::default(), &t).await.expect("ticket status");
    }
    let ips = RECORDED
        .iter()
        .map(|(t, v, l, s)| IpPair { veip: v.to_string(), ltmip: l.to_string(), ticket: t.to_string(), status: *s })
        .collect();
    let mut old = lb.clone();
    old.status = Some(LoadbalancerStatus { ips, ..Default::default() });
    own_lbs.replace_status("demo", &PostParams::default(), &old).await.expect("status.ips");

    // The new version starts, and a new request arrives at once.
    let ctx = Arc::new(reconciler::Context::new(lbdesk.clusters.clone(), lbdesk.driver.clone(), config(&lbdesk)));
    let (_stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(reconciler::controllers::run(ctx, async move {
        let _ = stopped.await;
    }));
    w.tickets.create(&PostParams::default(), &ticket("new", None, false)).await.expect("ticket");
    wait_phase(&w.tickets, "new", Phase::Enabled).await;
    // The pending one's request is answered, with the pair it held.
    wait_phase(&w.tickets, "old-c", Phase::Enabled).await;

    let mut want: Vec<_> =
        RECORDED.iter().map(|(t, v, l, _)| (t.to_string(), v.to_string(), l.to_string(), BondState::Bond)).collect();
    want.push(("new".into(), "20.1.0.3".into(), "10.0.0.4".into(), BondState::Bond));
    want.sort();
    assert_eq!(
        pairs(&w.lbs, "demo").await,
        want,
        "every recorded pair survives, and the new one is the lowest free of each range"
    );
    let status = w.lbs.get("demo").await.expect("lb").status.unwrap_or_default();
    assert!(status.ips.is_empty(), "the list is emptied once adopted");
    until("the counters follow the objects", 10, || async {
        let capacity = w.lbs.get("demo").await.ok().and_then(|lb| lb.status).and_then(|s| s.capacity);
        capacity.is_some_and(|c| (c.ve_used, c.ltm_used, c.ve_free) == (4, 4, 254 - 4))
    })
    .await;
    run.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_address_object_written_by_hand_is_refused() {
    let lbdesk = super::LBDESK.get(Backend::Sqlite).await;
    let w = world(&lbdesk).await;
    let forge = super::Scope { lb: "forge", tenant: "forge", namespace: "team-a", cis: "kube-system" };
    w.lbs.create(&PostParams::default(), &super::own_loadbalancer(forge, "20.62.0.0/24", &[])).await.expect("lb");
    w.tickets
        .create(&PostParams::default(), &super::ticket_in(forge, "forge-held", None, false))
        .await
        .expect("ticket");
    wait_phase(&w.tickets, "forge-held", Phase::Enabled).await;
    let addresses: Api<Lbaddress> = Api::all(w.mgmt.clone());
    let ip: IpAddr = "20.62.0.9".parse().expect("ip");
    let ve = Device::of(&super::own_loadbalancer(forge, "20.62.0.0/24", &[]).spec, Side::Ve);
    let forged = Lbaddress::held("forge", &ve, ip, "10.0.0.9".parse().expect("ip"), "forge-held", BondState::Bond);
    let refused = addresses.create(&PostParams::default(), &forged).await.expect_err("refused");
    assert!(
        matches!(&refused, kube::Error::Api(e) if e.code == 403 && e.message.contains("change the address request instead")),
        "{refused:?}"
    );
    assert!(addresses.get_opt(&address_name(&ve, ip)).await.expect("get").is_none());
    let held = address_name(&ve, "20.62.0.1".parse().expect("ip"));
    let patch = json!({"spec": {"ticket": "someone-else"}});
    let refused =
        addresses.patch(&held, &Default::default(), &kube::api::Patch::Merge(&patch)).await.expect_err("refused");
    assert!(matches!(&refused, kube::Error::Api(e) if e.code == 403), "{refused:?}");
    let refused = addresses.delete(&held, &Default::default()).await.expect_err("refused");
    assert!(matches!(&refused, kube::Error::Api(e) if e.code == 403), "{refused:?}");
}

/// What the version before issue #24 wrote: pool members without `shareNodes` (CIS then
/// posts `null`), and no label on the ConfigMap's namespace (CIS then never reads it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_configmap_and_labels_of_the_earlier_version_are_corrected_without_a_flap() {
    use futures::StreamExt;
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
    use kube::runtime::watcher;

    let lbdesk = spawn_lbdesk_with(Backend::Sqlite, Options { ensure_interval: 1, ..options() }).await;
    let w = world(&lbdesk).await;
    w.lbs.create(&PostParams::default(), &loadbalancer("20.1.0.0/24", &[])).await.expect("lb");
    w.tickets.create(&PostParams::default(), &ticket("web", None, true)).await.expect("ticket");
    wait_phase(&w.tickets, "web", Phase::Enabled).await;
    // NB: the listener's, not merely a ConfigMap: on a busy machine the first sync can write the
    // tenant before the listener is in it.
    until("the ConfigMap carrying the listener", 10, || async {
        super::deployed(&w.member, super::DEMO).await.is_some_and(|d| d.to_string().contains(r#""vs_web_80""#))
    })
    .await;
    let configmaps: Api<ConfigMap> = Api::namespaced(w.member.clone(), "kube-system");
    let namespaces: Api<Namespace> = Api::all(w.member.clone());

    // Everything seen of the ConfigMap and of kube-system's labels from now on.
    let seen = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let record = seen.clone();
    let cms = configmaps.clone();
    let watching = tokio::spawn(async move {
        let mut events =
            watcher(cms, watcher::Config::default().fields("metadata.name=lbdesk-as3-acp-region01")).boxed();
        while let Some(Ok(event)) = events.next().await {
            let line = match event {
                watcher::Event::Apply(cm) | watcher::Event::InitApply(cm) => {
                    cm.data.and_then(|d| d.get("template").cloned()).unwrap_or_default()
                }
                watcher::Event::Delete(_) => "deleted".into(),
                _ => continue,
            };
            record.lock().expect("lock").push(line);
        }
    });

    // The earlier version's state: a template without shareNodes, kube-system unlabelled.
    let mut cm = configmaps.get("lbdesk-as3-acp-region01").await.expect("cm");
    let template = cm.data.as_ref().and_then(|d| d.get("template")).cloned().expect("a template");
    assert!(template.contains(r#""shareNodes":true"#));
    let old = template.replace(r#","shareNodes":true"#, "");
    cm.data = Some([("template".to_string(), old.clone())].into());
    configmaps.replace("lbdesk-as3-acp-region01", &PostParams::default(), &cm).await.expect("old template");
    let unlabel = json!({"metadata": {"labels": {"zone": null}}});
    namespaces.patch("kube-system", &Default::default(), &kube::api::Patch::Merge(&unlabel)).await.expect("unlabel");

    // The next sync corrects both.
    until("the template corrected", 20, || async {
        super::deployed(&w.member, super::DEMO).await.is_some_and(|d| d.to_string().contains(r#""shareNodes":true"#))
    })
    .await;
    until("kube-system labelled", 20, || async {
        namespaces
            .get("kube-system")
            .await
            .ok()
            .is_some_and(|ns| ns.metadata.labels.unwrap_or_default().get("zone").map(String::as_str) == Some("f5"))
    })
    .await;
    let cis = crate::cis::readme_args(&[("zone".to_string(), "f5".to_string())].into());
    let posted = crate::cis::posted(&w.member, &cis).await;
    let pools = ["web-v1_8080_pool", "web-v2_8080_pool"];
    assert!(crate::cis::carries_listener(&posted, "acp-region01", "team-a_http_app", "vs_web_80", &pools));
    watching.abort();
    // Nothing deployed flapped: the ConfigMap was never deleted and every version of it held
    // the listener's virtual server.
    let seen = seen.lock().expect("lock").clone();
    assert!(seen.contains(&old), "the old template was seen");
    for template in &seen {
        assert_ne!(template, "deleted", "the ConfigMap was never deleted");
        assert!(template.contains(r#""vs_web_80""#), "every version carries the listener: {template}");
    }
}
