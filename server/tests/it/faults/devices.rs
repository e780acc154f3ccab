//! One address, one holder, per device: two load balancers whose ranges overlap on one BIG-IP
//! VE or one LTM are refused at save (page and kubectl), naming the other and its range; the
//! overlapping ones an earlier version let an admin save are reported (the admin's page, the
//! `RangesDisjoint` condition), and no address already held on the device is handed out again.

use std::collections::BTreeMap;

use app::domain::crd::{CONDITION_RANGES_DISJOINT, Lbaddress, Lbticket, Loadbalancer, Phase, legacy_address_name};
use app::domain::ipam::{Device, Side};
use app::screens::loadbalancers::{LbForm, LbRow};
use kube::Api;
use kube::api::{ListParams, PostParams};
use reqwest::StatusCode;
use serde_json::{Value, json};
use server::api::store::{Change, Key, Store};

use crate::helpers::{Backend, Options, TestDb, lb_form, spawn_lbdesk_with, start_on, until};
use crate::on_sqlite;
use crate::shared::Shared;
use crate::user::{User, ok, refused, save_lb};

static LBDESK: Shared = Shared::new();

on_sqlite!(overlapping_load_balancers_are_refused_on_the_page_and_through_kubectl);

/// A load balancer beside the demo's `shared-lb` (VE 200.1.9.1 with 20.9.0.0/24, LTM
/// http://100.1.9.1/api with 10.9.0.0/24), its own elsewhere.
fn beside(name: &str, ve_addr: &str, ve_cidr: &str, ltm_url: &str, ltm_cidr: &str) -> LbForm {
    LbForm {
        ve_addr: ve_addr.into(),
        ve_cidr: ve_cidr.into(),
        ltm_url: ltm_url.into(),
        ltm_cidr: ltm_cidr.into(),
        partition: name.into(),
        ..lb_form(name)
    }
}

async fn overlapping_load_balancers_are_refused_on_the_page_and_through_kubectl(backend: Backend) {
    let lbdesk = LBDESK.get(backend).await;
    let admin = User::sign_in(&lbdesk, "admin").await;
    // (the form, the field refused, the other's range named)
    let refusals = [
        (
            beside("half-ve", "200.1.9.1", "20.9.0.128/25", "http://100.1.90.1/api", "10.90.0.0/24"),
            "ve.cidr",
            "20.9.0.0/24",
        ),
        (
            beside("wider-ve", "200.1.9.1", "20.0.0.0/8", "http://100.1.91.1/api", "10.91.0.0/24"),
            "ve.cidr",
            "20.9.0.0/24",
        ),
        (
            beside("in-ltm", "200.1.92.1", "20.92.0.0/24", "http://100.1.9.1/api", "10.9.0.64/26"),
            "ltm.cidr",
            "10.9.0.0/24",
        ),
    ];
    let mgmt: Api<Loadbalancer> = Api::all(lbdesk.client("mgmt").await);
    for (form, field, range) in &refusals {
        let page = refused(save_lb(&admin, form).await, StatusCode::BAD_REQUEST).await;
        let said = page.for_field(field).unwrap_or_else(|| panic!("{}: refused beside {field}: {page:?}", form.name));
        assert!(said.contains("shared-lb") && said.contains(range), "{}: {said}", form.name);

        // kubectl: the same load balancer written to the API, as an admin's kubectl does.
        let lb: Loadbalancer = serde_json::from_value(json!({
            "apiVersion": "ebcpaas.io/v1", "kind": "Loadbalancer", "metadata": {"name": form.name},
            "spec": {
                "ltm": {"url": form.ltm_url, "tokenSecretRef": {"namespace": "lbdesk-system", "name": "x-ltm"}, "cidr": form.ltm_cidr},
                "ve": {"addr": form.ve_addr, "credentialsSecretRef": {"namespace": "lbdesk-system", "name": "x-ve"}, "cidr": form.ve_cidr},
                "cluster": "acp-region01", "partition": form.partition, "cis": {"namespace": "kube-system"}
            }
        }))
        .expect("a load balancer");
        match mgmt.create(&PostParams::default(), &lb).await {
            Err(kube::Error::Api(e)) => {
                assert!(e.message.contains("shared-lb") && e.message.contains(range), "{}: {}", form.name, e.message);
                let cause = e.details.as_ref().and_then(|d| d.causes.first()).map(|c| c.field.clone());
                assert_eq!(cause.as_deref(), Some(format!("spec.{field}").as_str()), "{}", form.name);
            }
            other => panic!("{}: admitted through the API: {other:?}", form.name),
        }
    }
    // Beside it on the same VE and LTM, with ranges apart: saved.
    let apart = beside("apart", "200.1.9.1", "20.9.1.0/24", "http://100.1.9.1/api", "10.9.1.0/24");
    ok::<String>(save_lb(&admin, &apart).await).await;
}

/// The management cluster's objects as an earlier version left them in the store, written
/// while lbdesk is stopped: what its admission would now refuse.
async fn write_as_earlier_version(db: &TestDb, resource: &str, mut object: Value) {
    let store = Store::new(db.connect().await, 10_000);
    let name = object["metadata"]["name"].as_str().expect("a name").to_string();
    let plural = resource.split('.').next().expect("a plural");
    let kind = server::api::resources::find("ebcpaas.io", "v1", plural, true).expect("lbdesk's kind");
    let status = object.get("status").cloned();
    server::api::prepare_new(kind, &mut object, "", &name);
    if let Some(status) = status {
        object["status"] = status;
    }
    let key = Key { cluster: "mgmt", resource, namespace: "", name: &name };
    store.write(&key, |_| Ok(Change::Put(object))).await.expect("written");
}

fn loadbalancer(name: &str, ve_cidr: &str, ltm: &str, ltm_cidr: &str) -> Value {
    json!({
        "apiVersion": "ebcpaas.io/v1", "kind": "Loadbalancer", "metadata": {"name": name},
        "spec": {
            "ltm": {"url": ltm, "tokenSecretRef": {"namespace": "lbdesk-system", "name": format!("{name}-ltm")}, "cidr": ltm_cidr},
            "ve": {"addr": "200.1.50.1", "credentialsSecretRef": {"namespace": "lbdesk-system", "name": format!("{name}-ve")}, "cidr": ve_cidr},
            "cluster": "acp-region01", "nsselector": {"zone": "f5"}, "partition": name, "cis": {"namespace": "kube-system"}
        }
    })
}

fn request(name: &str, lb: &str, veip: Option<&str>) -> Value {
    json!({
        "apiVersion": "ebcpaas.io/v1", "kind": "Lbticket",
        "metadata": {"name": name, "labels": {"ebcpaas.io/project": "project-a", "ebcpaas.io/cluster": "acp-region01", "ebcpaas.io/namespace": "team-a"}},
        "spec": {"claimer": "alice", "loadbalancer": lb, "namespace": "team-a", "veip": veip},
    })
}

/// A request an earlier version enabled with the pair (veip, ltmip), and its two address
/// objects, named after its load balancer.
async fn held_by_earlier_version(db: &TestDb, ticket: &str, lb: &str, veip: &str, ltmip: &str) {
    let mut t = request(ticket, lb, None);
    t["status"] = json!({"phase": "Enabled", "veip": veip, "ltmip": ltmip, "observedGeneration": 1,
        "policy": {"recordID": format!("{ticket}-1"), "state": "Succ"}});
    write_as_earlier_version(db, "lbtickets.ebcpaas.io", t).await;
    for (side, ip, partner) in [(Side::Ve, veip, ltmip), (Side::Ltm, ltmip, veip)] {
        let name = legacy_address_name(lb, side, ip.parse().expect("ip"));
        let address = json!({
            "apiVersion": "ebcpaas.io/v1", "kind": "Lbaddress",
            "metadata": {"name": name, "labels": {"ebcpaas.io/loadbalancer": lb, "ebcpaas.io/side": side.key()}},
            "spec": {"loadbalancer": lb, "side": side.key(), "address": ip, "partner": partner, "ticket": ticket, "state": "bond"},
        });
        write_as_earlier_version(db, "lbaddresses.ebcpaas.io", address).await;
    }
}

async fn phase(tickets: &Api<Lbticket>, name: &str) -> Option<Phase> {
    tickets.get(name).await.ok().and_then(|t| t.status).map(|s| s.phase)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlapping_load_balancers_of_an_earlier_version_are_reported_and_no_held_address_is_handed_out_again() {
    let lbdesk = spawn_lbdesk_with(Backend::Sqlite, Options { reconciler: false, ..Options::default() }).await;
    let db = lbdesk.stop().await;
    // Two load balancers on VE 200.1.50.1 whose ranges overlap, each with its own LTM; the
    // earlier version handed 20.50.0.200 out on both.
    write_as_earlier_version(
        &db,
        "loadbalancers.ebcpaas.io",
        loadbalancer("wide", "20.50.0.0/24", "http://100.1.50.1/api", "10.50.0.0/24"),
    )
    .await;
    write_as_earlier_version(
        &db,
        "loadbalancers.ebcpaas.io",
        loadbalancer("narrow", "20.50.0.128/25", "http://100.1.50.2/api", "10.51.0.0/24"),
    )
    .await;
    held_by_earlier_version(&db, "w1", "wide", "20.50.0.200", "10.50.0.1").await;
    held_by_earlier_version(&db, "w2", "wide", "20.50.0.130", "10.50.0.2").await;
    held_by_earlier_version(&db, "n1", "narrow", "20.50.0.200", "10.51.0.1").await;

    let lbdesk = start_on(db, Options::default()).await;
    let mgmt = lbdesk.client("mgmt").await;
    let (lbs, tickets, addresses): (Api<Loadbalancer>, Api<Lbticket>, Api<Lbaddress>) =
        (Api::all(mgmt.clone()), Api::all(mgmt.clone()), Api::all(mgmt.clone()));
    let ve = Device::ve("200.1.50.1");
    let named = |ip: &str| app::domain::crd::address_name(&ve, ip.parse().expect("ip"));
    until("every address object named by its device, or knowing it", 30, || async {
        let renamed = addresses.get_opt(&named("20.50.0.130")).await.ok().flatten();
        let legacy =
            addresses.get_opt(&legacy_address_name("wide", Side::Ve, "20.50.0.130".parse().expect("ip"))).await;
        let all = addresses.list(&ListParams::default()).await.map(|l| l.items).unwrap_or_default();
        renamed.is_some_and(|a| a.spec.ticket == "w2")
            && legacy.is_ok_and(|l| l.is_none())
            && all.iter().all(|a| !a.spec.device.is_empty())
    })
    .await;
    // The address held twice: one object under the device's name, the other kept (its device
    // recorded), so both requests keep it.
    let all = addresses.list(&ListParams::default()).await.expect("addresses").items;
    let twice: Vec<&Lbaddress> = all.iter().filter(|a| a.spec.address == "20.50.0.200").collect();
    assert_eq!(twice.len(), 2, "{twice:?}");
    assert!(twice.iter().all(|a| a.spec.device == "200.1.50.1"), "{twice:?}");

    for lb in ["wide", "narrow"] {
        until(&format!("{lb}'s overlap reported"), 20, || async {
            let lb = lbs.get(lb).await.expect("lb");
            lb.status.unwrap_or_default().conditions.iter().any(|c| {
                c.type_ == CONDITION_RANGES_DISJOINT
                    && c.status == "False"
                    && c.message.contains("overlaps")
                    && c.message.contains("20.50.0.200 is held twice on BIG-IP VE 200.1.50.1")
            })
        })
        .await;
    }
    let admin = User::sign_in(&lbdesk, "admin").await;
    let rows: Vec<LbRow> = ok(admin.form("lb/list", &[("search", "")]).await).await;
    let shown: BTreeMap<&str, bool> = rows.iter().map(|r| (r.name.as_str(), r.overlap.is_some())).collect();
    assert_eq!(
        (shown.get("wide"), shown.get("narrow"), shown.get("shared-lb")),
        (Some(&true), Some(&true), Some(&false))
    );

    // New requests on both: none gets an address the device holds.
    let create = |t: Value| {
        let tickets = tickets.clone();
        async move {
            let t: Lbticket = serde_json::from_value(t).expect("a request");
            tickets.create(&PostParams::default(), &t).await.expect("created");
        }
    };
    for i in 0..4 {
        create(request(&format!("n-new-{i}"), "narrow", None)).await;
    }
    for i in 0..4 {
        until(&format!("n-new-{i} Enabled"), 30, || async {
            phase(&tickets, &format!("n-new-{i}")).await == Some(Phase::Enabled)
        })
        .await;
    }
    let n0 = tickets.get("n-new-0").await.expect("n-new-0").status.and_then(|s| s.veip).expect("a VE address");
    // Asked by name on the other load balancer: refused, never Enabled twice.
    create(request("w-asks-n", "wide", Some(&n0))).await;
    create(request("n-asks-w", "narrow", Some("20.50.0.130"))).await;
    for name in ["w-asks-n", "n-asks-w"] {
        until(&format!("{name} refused"), 30, || async { phase(&tickets, name).await == Some(Phase::Failed) }).await;
    }
    let all = addresses.list(&ListParams::default()).await.expect("addresses").items;
    let mut holders: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for a in all.iter().filter(|a| a.spec.side == Side::Ve) {
        holders.entry(a.spec.address.as_str()).or_default().push(a.spec.ticket.as_str());
    }
    let held_twice: Vec<(&&str, &Vec<&str>)> = holders.iter().filter(|(_, t)| t.len() > 1).collect();
    assert_eq!(held_twice.len(), 1, "only the address the earlier version gave twice: {held_twice:?}");
    for i in 0..4 {
        let veip = tickets.get(&format!("n-new-{i}")).await.expect("ticket").status.and_then(|s| s.veip).expect("veip");
        assert!(!["20.50.0.130", "20.50.0.200"].contains(&veip.as_str()), "n-new-{i} got {veip}, held on the device");
    }
}
