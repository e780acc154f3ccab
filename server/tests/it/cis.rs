//! What the member cluster's CIS will post, computed by the CIS model (`domain::cis`) from
//! what the cluster holds, and checked as BIG-IP would take it: valid under CIS's own AS3
//! schema, every Enabled listener's virtual server with members, every F5 Ingress there.

use std::collections::BTreeMap;

use app::domain::cis::args::CisArgs;
use app::domain::cis::post::Posted;
use kube::Client;
use serde_json::Value;

use crate::shared::Shared;

/// The module's lbdesk. Its one test judges everything CIS will post for acp-region01:
/// another test here would have to post nothing there.
static LBDESK: Shared = Shared::new();

/// CIS as README "Running in a cluster" configures it for a load balancer whose namespace
/// selector is `nsselector` (the embedded clusters' CIS runs with these arguments for the demo's).
pub fn readme_args(nsselector: &BTreeMap<String, String>) -> CisArgs {
    let label: Vec<String> = nsselector.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let label = format!("--namespace-label={}", label.join(","));
    let words = app::domain::cis::args::README_ARGS
        .iter()
        .map(|w| if w.starts_with("--namespace-label=") { label.as_str() } else { w });
    CisArgs::parse(words).expect("the README's arguments parse")
}

/// What CIS with `args` posts for the member cluster `member` now; panics naming what CIS's
/// validation refused.
pub async fn posted(member: &Client, args: &CisArgs) -> Posted {
    let posted = server::cis::posts::posted(member, args).await.expect("the member cluster reads");
    let (report, ok) = server::cis::posts::report(&posted);
    assert!(ok, "CIS would refuse or hold back something: {report:#}");
    posted
}

/// The virtual server `vs` of application `app` in tenant `tenant`, as posted.
pub fn virtual_server<'p>(posted: &'p Posted, tenant: &str, app: &str, vs: &str) -> Option<&'p Value> {
    posted.tenant(tenant)?.get(app)?.get(vs)
}

/// The members CIS put in pool `pool` of `tenant`/`app`: their addresses.
pub fn members(posted: &Posted, tenant: &str, app: &str, pool: &str) -> Vec<String> {
    let members =
        posted.tenant(tenant).and_then(|t| t.get(app)).and_then(|a| a.get(pool)).and_then(|p| p.get("members"));
    members
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|m| m["serverAddresses"].as_array().cloned().unwrap_or_default())
        .filter_map(|a| a.as_str().map(String::from))
        .collect()
}

/// Whether what CIS posts carries an Enabled listener: its virtual server, and a member in
/// each of its pools.
pub fn carries_listener(posted: &Posted, tenant: &str, app: &str, vs: &str, pools: &[&str]) -> bool {
    virtual_server(posted, tenant, app, vs).is_some()
        && pools.iter().all(|p| !members(posted, tenant, app, p).is_empty())
}

/// Whether what CIS posts carries an F5 Ingress on `ip` port 80 in `partition`, with members.
pub fn carries_ingress(posted: &Posted, partition: &str, ip: &str) -> bool {
    let vs = app::domain::cis::ingress::virtual_server_name(ip, 80).replace(['.', '-'], "_");
    let Some(shared) = posted.tenant(partition).and_then(|t| t.get("Shared")) else { return false };
    let pools = shared.as_object().into_iter().flatten().filter(|(_, v)| v["class"] == "Pool");
    shared.get(&vs).is_some() && pools.into_iter().all(|(_, p)| p["members"].as_array().is_some_and(|m| !m.is_empty()))
}

/// `lbdesk cis-post` against the embedded member cluster: (success, printed JSON, error text).
fn cis_post(kubeconfig: &std::path::Path, extra: &[&str]) -> (bool, Value, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lbdesk"))
        .args(["cis-post", "--kubeconfig"])
        .arg(kubeconfig)
        .args(["--context", "acp-region01"])
        .args(extra)
        .output()
        .expect("lbdesk runs");
    let printed = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.success(), printed, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lbdesk_cis_post_prints_what_the_clusters_cis_will_post_and_fails_on_what_it_would_refuse() {
    use crate::user::{User, ok, ticket_form, wait_phase};
    use app::domain::crd::Phase;

    let lbdesk = LBDESK.get(crate::helpers::Backend::Sqlite).await;
    let alice = User::sign_in(&lbdesk, "alice").await;
    // The demo's load balancer `shared-lb`: the embedded CIS is configured for it.
    let mut form = ticket_form("shop", "default", "");
    form.loadbalancer = "shared-lb".into();
    ok::<String>(alice.json("ticket/save", serde_json::json!({"form": form})).await).await;
    wait_phase(&alice, "shop", Phase::Enabled).await;
    let listener = app::screens::listeners::ListenerForm {
        ticket: "shop".into(),
        name: "web".into(),
        port: 80,
        services: vec![app::domain::crd::ServiceRef { service: "web-v1".into(), port: 8080, weight: 100 }],
        ..Default::default()
    };
    ok::<String>(alice.json("listener/save", serde_json::json!({"form": listener})).await).await;

    let dir = tempfile::tempdir().expect("a directory");
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, serde_json::to_vec(&lbdesk.kubeconfig).expect("json")).expect("write");
    let mut printed = Value::Null;
    crate::helpers::until("cis-post to show the listener with members", 20, || {
        let (done, out, err) = cis_post(&kubeconfig, &[]);
        let vs = &out["posts"][0]["body"]["declaration"]["shared"]["default_http_app"];
        let members = vs["web-v1_8080_pool"]["members"].as_array().map_or(0, Vec::len);
        let found = done && vs.get("vs_shop_80").is_some() && members > 0;
        if found {
            printed = out;
        } else {
            eprintln!("not yet: {err}");
        }
        async move { found }
    })
    .await;
    assert_eq!(printed["posts"][0]["path"], "/mgmt/shared/appsvcs/declare");
    assert_eq!(printed["posts"][0]["valid"], true);

    // A CIS that does not exist is said so, and the command fails.
    let (done, _, err) = cis_post(&kubeconfig, &["--deployment", "kube-system/missing"]);
    assert!(!done && err.contains("no CIS Deployment kube-system/missing in acp-region01"), "{err}");
}
