//! The reconciler when things go wrong: a crash after any write step, and a refused connection
//! to the driver. Each ends where a run without the fault does, and says why meanwhile. (The
//! driver's faults, each shown on its request until the driver behaves: `ensure`.)

use super::*;

async fn end_state(
    w: &World,
    lbdesk: &Lbdesk,
) -> (
    Option<Phase>,
    Vec<(String, String, String, BondState)>,
    Option<serde_json::Value>,
    BTreeMap<String, String>,
    Option<String>,
    usize,
) {
    let labels = service_labels(&w.member, DEMO, "web-v1")
        .await
        .into_iter()
        .filter(|(k, _)| k.starts_with("cis.f5.com"))
        .collect();
    let requests: BTreeSet<String> = lbdesk
        .simulator
        .calls()
        .into_iter()
        .filter(|c| c.hook == Hook::RequestNetworkPolicy)
        .map(|c| c.record_id)
        .collect();
    (
        phase(&w.tickets, "web").await,
        pairs(&w.lbs, "demo").await,
        deployed(&w.member, DEMO).await,
        labels,
        namespace_labels(&w.member, DEMO).await.get("zone").cloned(),
        requests.len(),
    )
}

/// Waits until the listener is placed: its declaration written and its Service labelled. NB:
/// both, as a sync labels the Service before it writes the declaration.
async fn placed(w: &World) {
    until("the listener placed", 10, || async {
        let written =
            deployed(&w.member, DEMO).await.is_some_and(|d| d["acp-region01"].get("team-a_http_app").is_some());
        written && service_labels(&w.member, DEMO, "web-v1").await.contains_key("cis.f5.com/as3-pool")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_after_any_write_step_ends_where_a_crash_free_run_does() {
    let mut reference = None;
    for step in [
        None,
        Some(Step::Allocation),
        Some(Step::StatusWrite),
        Some(Step::DriverRequest),
        Some(Step::ConfigMapWrite),
        Some(Step::LabelWrite),
    ] {
        let lbdesk = spawn_lbdesk_with(Backend::Sqlite, Options { reconciler: false, ..options() }).await;
        let w = world(&lbdesk).await;
        w.lbs.create(&PostParams::default(), &loadbalancer("20.1.0.0/24", &[])).await.expect("lb");
        w.tickets.create(&PostParams::default(), &ticket("web", None, true)).await.expect("ticket");
        let crash = step.map(|step| Arc::new(Crash::after(step)));
        let first = start_reconciler(&lbdesk, lbdesk.driver.clone(), crash.clone());
        if let (Some(step), Some(crash)) = (step, crash) {
            eprintln!("crash after {step:?}");
            until(&format!("the crash after {step:?}"), 20, || async { crash.reached() }).await;
            first.abort();
            let second = start_reconciler(&lbdesk, lbdesk.driver.clone(), None);
            wait_phase(&w.tickets, "web", Phase::Enabled).await;
            placed(&w).await;
            let state = end_state(&w, &lbdesk).await;
            second.abort();
            assert_eq!(Some(&state), reference.as_ref(), "after a crash at {step:?}");
        } else {
            wait_phase(&w.tickets, "web", Phase::Enabled).await;
            placed(&w).await;
            let state = end_state(&w, &lbdesk).await;
            assert_eq!(state.5, 1, "one policy request, retried only with its recordID");
            assert!(state.2.is_some());
            reference = Some(state);
            first.abort();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_shows_on_the_ticket_and_heals() {
    let lbdesk = spawn_lbdesk_with(Backend::Sqlite, Options { reconciler: false, ..options() }).await;
    let w = world(&lbdesk).await;
    w.lbs.create(&PostParams::default(), &loadbalancer("20.1.0.0/24", &[])).await.expect("lb");
    w.tickets.create(&PostParams::default(), &ticket("web", None, false)).await.expect("ticket");
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("port");
    let nowhere = format!("http://{}", closed.local_addr().expect("addr"));
    drop(closed);
    let driver = server::driver::DriverClient::new(&nowhere, server::driver::Timeouts::uniform(1)).expect("client");
    let broken = start_reconciler(&lbdesk, driver, None);
    // NB: with its cause, not only "error sending request".
    until("the refused connection on the ticket", 20, || async {
        w.tickets
            .get("web")
            .await
            .ok()
            .and_then(|t| t.status)
            .is_some_and(|s| s.message.contains("could not be reached") && s.message.contains("Connection refused"))
    })
    .await;
    broken.abort();
    let healthy = start_reconciler(&lbdesk, lbdesk.driver.clone(), None);
    wait_phase(&w.tickets, "web", Phase::Enabled).await;
    healthy.abort();
}
