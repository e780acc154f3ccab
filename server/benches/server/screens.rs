//! Server-side render of the address-request list with 1,000 requests in the project: the
//! whole `/tickets` page (session, the list from the embedded API, HTML) as a browser gets it,
//! against the server function alone (the same list as JSON) and a bare list through kube-rs.
//! Run: `cargo bench -p server --bench server -- screens`.

use crate::common;

use std::time::Duration;

use anyhow::{Context, ensure};
use app::domain::crd::{LABEL_CLUSTER, LABEL_NAMESPACE, LABEL_PROJECT, Lbticket, LbticketSpec, LbticketStatus, Phase};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

const TICKETS: usize = 1_000;

#[tokio::main]
pub async fn run() -> anyhow::Result<()> {
    let dir = tempfile::tempdir().context("no temporary directory")?;
    let common::Started { url, kubeconfig, clusters, .. } = common::start(common::args(dir.path())?).await?;
    // NB: statuses are lbdesk's alone to write: the requests' are written as lbdesk.
    let own: Api<Lbticket> = Api::all(clusters.mgmt().clone());
    let mgmt = common::client(&kubeconfig, "mgmt").await?;

    // 1,000 Enabled requests of project-a, each with its addresses and a short timeline.
    let tickets: Api<Lbticket> = Api::all(mgmt.clone());
    for i in 0..TICKETS {
        let name = format!("web-{i:04}");
        let mut t = Lbticket::new(
            &name,
            LbticketSpec {
                claimer: "alice".into(),
                loadbalancer: "demo".into(),
                namespace: "team-a".into(),
                ..Default::default()
            },
        );
        t.metadata.labels = Some(
            [(LABEL_PROJECT, "project-a"), (LABEL_CLUSTER, "acp-region01"), (LABEL_NAMESPACE, "team-a")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        tickets.create(&PostParams::default(), &t).await.with_context(|| format!("create {name}"))?;
        let status = LbticketStatus {
            phase: Phase::Enabled,
            veip: Some(format!("20.1.{}.{}", i / 250, i % 250 + 1)),
            ltmip: Some(format!("10.0.{}.{}", i / 250, i % 250 + 1)),
            ..Default::default()
        };
        own.patch_status(&name, &PatchParams::default(), &Patch::Merge(json!({"status": status})))
            .await
            .with_context(|| format!("status of {name}"))?;
    }

    let browser = common::signed_in(&url, "alice").await?;

    println!("{TICKETS} address requests in project-a, {} rounds each:", common::ROUNDS);
    let page = common::measure("GET /tickets (whole server-side rendered page)", "bytes", || async {
        let html = browser.get(format!("{url}/tickets")).send().await?.text().await?;
        ensure!(html.contains("web-0999"), "the page does not list the requests");
        Ok(html.len())
    })
    .await?;
    let function = common::measure("POST /api/ticket/list (the page's data as JSON)", "bytes", || async {
        let body = browser
            .post(format!("{url}/api/ticket/list"))
            .json(&serde_json::json!({"project": ""}))
            .send()
            .await?
            .text()
            .await?;
        Ok(body.len())
    })
    .await?;
    let list = common::measure("kube-rs list of the 1,000 Lbtickets (no session, no HTML)", "bytes", || async {
        Ok(tickets.list(&ListParams::default()).await?.items.len())
    })
    .await?;
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "rendering adds {:.2} ms to the server function, which adds {:.2} ms to the bare list (target: page p50 < 30 ms)",
        ms(page.saturating_sub(function)),
        ms(function.saturating_sub(list))
    );
    Ok(())
}
