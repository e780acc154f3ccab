//! Pages a browser leaves before they end (it goes on to another page, the tab closes): each is
//! rendered to its end all the same, so nothing its render started runs on without it.

use std::time::Duration;

use crate::helpers::{Backend, signed_in, spawn_lbdesk};
use crate::log_capture::Capture;
use crate::on_sqlite;

on_sqlite!(a_page_left_half_way_leaves_nothing_running_without_its_request);

/// Pages whose renders call server functions from resources and draw links and forms.
const PAGES: [&str; 8] = ["/", "/tickets", "/tickets/new", "/listeners", "/rules", "/ingresses", "/audit", "/users"];

/// What a render logs when a server function it started runs after its request was dropped.
const WITHOUT_REQUEST: [&str; 2] = ["server state is missing", "session unavailable"];

/// alice opens each page many times and leaves each after 1 to 40 ms, most of them half-way.
/// Before the pages were rendered apart from their connections, a run of this logged about a
/// hundred server functions that found no request, and now and then a worker panicked (which
/// fails the test when lbdesk is dropped).
async fn a_page_left_half_way_leaves_nothing_running_without_its_request(backend: Backend) {
    let lbdesk = spawn_lbdesk(backend).await;
    let alice = signed_in(&lbdesk, "alice").await;
    let capture = Capture::start();
    let mut left = Vec::new();
    for round in 0..12u64 {
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
