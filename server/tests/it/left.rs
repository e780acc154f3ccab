//! Requests a browser leaves before their answer (it goes on to another page, the tab closes):
//! each is served to its end all the same, so a save is made whole and nothing a page's render
//! started runs on without it.

use std::time::Duration;

use app::ssr::audit::{Filter, Projects};
use kube::Api;
use kube::api::ListParams;

use crate::helpers::{Backend, signed_in, until};
use crate::log_capture::Capture;
use crate::shared::Shared;
use crate::user::ticket_form;
use crate::{on_both_databases, on_sqlite};

/// Shared: the saves here make requests of their own names, and the log is searched for lines
/// any lbdesk of the binary writes.
static LBDESK: Shared = Shared::with_demo_lb();

on_sqlite!(a_page_left_half_way_leaves_nothing_running_without_its_request);
on_both_databases!(a_save_left_half_way_is_made_whole_with_its_audit_row);

/// Pages whose renders call server functions from resources and draw links and forms.
const PAGES: [&str; 8] = ["/", "/tickets", "/tickets/new", "/listeners", "/rules", "/ingresses", "/audit", "/users"];

/// What a render logs when a server function it started runs after its request was dropped.
const WITHOUT_REQUEST: [&str; 2] = ["server state is missing", "session unavailable"];

/// alice opens each page many times and leaves each after 1 to 40 ms, most of them half-way.
/// Before the pages were rendered apart from their connections, a run of this logged about a
/// hundred server functions that found no request, and now and then a worker panicked (which
/// fails the test when lbdesk is dropped).
async fn a_page_left_half_way_leaves_nothing_running_without_its_request(backend: Backend) {
    let lbdesk = LBDESK.get(backend).await;
    let alice = signed_in(&lbdesk, "alice").await;
    let capture = Capture::start();
    let mut left = Vec::new();
    for round in 0..20u64 {
        for (n, path) in PAGES.iter().enumerate() {
            let (alice, url) = (alice.clone(), format!("{}{path}", lbdesk.url));
            let after = Duration::from_millis(1 + (round * 7 + n as u64 * 5) % 40);
            left.push(tokio::spawn(async move {
                let read = async { alice.get(url).send().await?.bytes().await };
                let _ = tokio::time::timeout(after, read).await;
            }));
        }
    }
    for browser in left {
        browser.await.expect("a browser's task");
    }
    // Each page read whole once more: the renders left behind end meanwhile.
    for path in PAGES {
        let page = alice.get(format!("{}{path}", lbdesk.url)).send().await.expect("request");
        // NB: `/users` is refused to a tenant (403), a page all the same.
        assert!(!page.status().is_server_error(), "{path}: {}", page.status());
        page.text().await.expect("the whole page");
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let logged = capture.text();
    let orphans: Vec<&str> = logged.lines().filter(|l| WITHOUT_REQUEST.iter().any(|w| l.contains(w))).collect();
    assert!(orphans.is_empty(), "server functions ran without their request:\n{}", orphans.join("\n"));
}

/// alice saves forty requests, leaving each save after 1 to 40 ms, one after the other. A save
/// the server began is made whole: each request made has the audit row of its making. Before
/// the requests were served apart from their connections, a save left between its write and
/// its audit row was made without a row.
async fn a_save_left_half_way_is_made_whole_with_its_audit_row(backend: Backend) {
    let lbdesk = LBDESK.get(backend).await;
    let alice = signed_in(&lbdesk, "alice").await;
    for n in 0..40u64 {
        let form = ticket_form(&format!("left-{n:02}"), "default", "");
        let save = alice.post(format!("{}/api/ticket/save", lbdesk.url)).json(&serde_json::json!({ "form": form }));
        let _ = tokio::time::timeout(Duration::from_millis(1 + n), save.send()).await;
    }
    let tickets: Api<app::domain::crd::Lbticket> = Api::all(lbdesk.client("mgmt").await);
    let made = || async {
        let listed = tickets.list(&ListParams::default()).await.expect("the requests");
        listed.items.into_iter().filter_map(|t| t.metadata.name).filter(|n| n.starts_with("left-")).collect::<Vec<_>>()
    };
    let audited = |name: String| {
        let db = lbdesk.db.clone();
        async move {
            let filter = Filter { name: Some(name), kind: Some("Lbticket".into()), ..Default::default() };
            let page = db.audit_page(&Projects::All, &filter, None).await.expect("the audit log");
            page.records.iter().any(|r| r.action == "create")
        }
    };
    // NB: a save the server began goes on after its client left: some are made a moment later.
    until("some saves made", 20, || async { !made().await.is_empty() }).await;
    until("every request made to have the audit row of its making", 20, || async {
        for name in made().await {
            if !audited(name).await {
                return false;
            }
        }
        true
    })
    .await;
    assert!(!made().await.is_empty(), "some saves were made: the test shows nothing otherwise");
}
