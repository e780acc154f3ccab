//! A store that fails and comes back: SQLite on a disk that fills up and is emptied again (a
//! small tmpfs of the test's own), PostgreSQL whose connections are cut and refused as a
//! restart does (a TCP proxy of the test's own in front of the test server). While it fails,
//! writes answer 507/503 naming the cause (never a false OK, never a 500), `/readyz` says so,
//! and a page says "lbdesk cannot save right now"; once it is back, writes work again within
//! seconds, with no restart; every write acknowledged is there after a restart.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ListParams, PostParams};
use reqwest::StatusCode;
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::helpers::{Backend, Lbdesk, Options, TestDb, start_on, until};
use crate::user::{User, ticket_form};
use app::screens::tickets::TicketForm;

/// A tmpfs of `size` mounted on a directory of its own, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Tmpfs {
        let dir = tempfile::tempdir().expect("a directory to mount on");
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .expect("mount runs");
        assert!(
            status.success(),
            "mounting a tmpfs needs root (or CAP_SYS_ADMIN), as `cargo xtask test` runs: {status}"
        );
        Tmpfs { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg("-l").arg(self.dir.path()).status();
    }
}

/// Fills the file system of `dir` to its last byte, with a file that `free` removes.
fn fill(dir: &Path) -> PathBuf {
    use std::io::Write;
    let path = dir.join("filler");
    let mut file = std::fs::File::create(&path).expect("the filler");
    let chunk = vec![0u8; 64 * 1024];
    // NB: the last chunks find less room than they need: written in ever smaller pieces.
    let mut size = chunk.len();
    while size > 0 {
        match file.write(&chunk[..size]) {
            Ok(0) | Err(_) => size /= 2,
            Ok(_) => {}
        }
    }
    let _ = file.flush();
    path
}

fn config_map(name: &str, bytes: usize) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "data": {"payload": "x".repeat(bytes)},
    }))
    .expect("a ConfigMap")
}

/// What a write came to: acknowledged, or refused with an answer that says why.
enum Outcome {
    Stored,
    /// A storage fault: its status and message.
    Refused(u16, String),
}

async fn write(api: &Api<ConfigMap>, name: &str, bytes: usize) -> Outcome {
    match api.create(&PostParams::default(), &config_map(name, bytes)).await {
        Ok(_) => Outcome::Stored,
        Err(kube::Error::Api(s)) => Outcome::Refused(s.code, s.message),
        Err(e) => panic!("{name}: no answer from the API: {e}"),
    }
}

async fn readyz(lbdesk: &Lbdesk) -> (StatusCode, String) {
    let res = reqwest::get(format!("{}/readyz", lbdesk.url)).await.expect("readyz");
    (res.status(), res.text().await.unwrap_or_default())
}

/// Every name of `acknowledged` is among the ConfigMaps of `default` in acp-region01.
async fn all_present(lbdesk: &Lbdesk, acknowledged: &BTreeSet<String>) {
    let api: Api<ConfigMap> = Api::namespaced(lbdesk.client("acp-region01").await, "default");
    let stored: BTreeSet<String> = api
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    let lost: Vec<&String> = acknowledged.difference(&stored).collect();
    assert!(lost.is_empty(), "acknowledged but not stored: {lost:?} (of {})", acknowledged.len());
}

fn options() -> Options {
    Options { reconciler: false, ..Options::default() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_is_refused_by_name_and_writes_resume_when_room_returns_without_a_restart() {
    let tmpfs = Tmpfs::mount("48m");
    let lbdesk = start_on(TestDb::new_in(Backend::Sqlite, tmpfs.path()).await, options()).await;
    let alice = User::sign_in(&lbdesk, "alice").await;
    let api: Api<ConfigMap> = Api::namespaced(lbdesk.client("acp-region01").await, "default");
    let mut acknowledged = BTreeSet::new();
    for i in 0..5 {
        let name = format!("before-{i}");
        assert!(matches!(write(&api, &name, 100).await, Outcome::Stored), "{name}: stored with room to spare");
        acknowledged.insert(name);
    }

    let filler = fill(tmpfs.path());
    let mut refusals = Vec::new();
    for i in 0..40 {
        let name = format!("full-{i}");
        match write(&api, &name, 8 * 1024).await {
            Outcome::Stored => {
                acknowledged.insert(name);
            }
            Outcome::Refused(code, message) => refusals.push((code, message)),
        }
    }
    assert!(!refusals.is_empty(), "a full disk refuses writes");
    for (code, message) in &refusals {
        assert!(matches!(code, 503 | 507), "a storage fault is 503 or 507, never a 500: {code} {message}");
        assert!(message.starts_with("lbdesk cannot store this now: "), "the cause is named: {message}");
    }
    assert!(
        refusals.iter().any(|(code, m)| *code == 507 && m.contains("disk is full")),
        "the full disk is named: {refusals:?}"
    );
    let (status, why) = readyz(&lbdesk).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "not ready while writes fail: {why}");
    assert!(why.contains("the store takes no writes"), "{why}");
    let form = TicketForm { loadbalancer: "shared-lb".into(), ..ticket_form("on-full", "default", "") };
    let page = alice.json("ticket/save", json!({ "form": form })).await;
    let (status, body) = (page.status(), page.text().await.unwrap_or_default());
    assert!(matches!(status.as_u16(), 503 | 507), "the page's save is refused as unavailable: {status} {body}");
    assert!(body.contains("lbdesk cannot save right now") && body.contains("full"), "{body}");

    std::fs::remove_file(&filler).expect("room again");
    until("a write stored again, without a restart", 15, || async {
        match write(&api, "after-first", 100).await {
            Outcome::Stored => true,
            Outcome::Refused(..) => false,
        }
    })
    .await;
    acknowledged.insert("after-first".into());
    for i in 0..10 {
        let name = format!("after-{i}");
        assert!(matches!(write(&api, &name, 1024).await, Outcome::Stored), "{name}: stored once there is room");
        acknowledged.insert(name);
    }
    until("/readyz answers 200 again", 15, || async { readyz(&lbdesk).await.0 == StatusCode::OK }).await;

    let restarted = start_on(lbdesk.stop().await, options()).await;
    all_present(&restarted, &acknowledged).await;
    drop(restarted);
    drop(tmpfs);
}

/// A TCP proxy in front of a PostgreSQL server that the test can take down, as a restart does:
/// every connection cut at once, new ones refused, until it is up again.
struct Proxy {
    port: u16,
    up: watch::Sender<bool>,
}

impl Proxy {
    async fn start(upstream: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let port = listener.local_addr().expect("address").port();
        let (up, watching) = watch::channel(true);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let mut watching = watching.clone();
                if !*watching.borrow() {
                    drop(client);
                    continue;
                }
                let upstream = upstream.clone();
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(&upstream).await else { return };
                    let (mut client, mut server) = (client, server);
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        _ = watching.wait_for(|up| !*up) => {}
                    }
                });
            }
        });
        Proxy { port, up }
    }

    fn set(&self, up: bool) {
        self.up.send_replace(up);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_restarted_under_lbdesk_is_named_and_writes_resume_without_a_restart() {
    let test_db = TestDb::new(Backend::Postgres).await;
    let (head, rest) = test_db.url.split_once('@').expect("a URL with a user");
    let (upstream, database) = rest.split_once('/').expect("a URL with a database");
    let proxy = Proxy::start(upstream.to_string()).await;
    let proxied = TestDb { url: format!("{head}@127.0.0.1:{}/{database}", proxy.port), dir: test_db.dir };
    let lbdesk = start_on(proxied, options()).await;
    let api: Api<ConfigMap> = Api::namespaced(lbdesk.client("acp-region01").await, "default");
    let mut acknowledged = BTreeSet::new();
    for i in 0..5 {
        let name = format!("before-{i}");
        assert!(matches!(write(&api, &name, 100).await, Outcome::Stored), "{name}");
        acknowledged.insert(name);
    }

    proxy.set(false);
    for i in 0..3 {
        let name = format!("down-{i}");
        match write(&api, &name, 100).await {
            Outcome::Stored => panic!("{name}: acknowledged while the database is down"),
            Outcome::Refused(code, message) => {
                assert_eq!(code, 503, "{message}");
                assert!(message.contains("the database is not reachable"), "{message}");
            }
        }
    }
    let (status, why) = readyz(&lbdesk).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{why}");
    assert!(why.contains("not reachable"), "{why}");

    proxy.set(true);
    until("a write stored again, without a restart", 15, || async {
        matches!(write(&api, "after-first", 100).await, Outcome::Stored)
    })
    .await;
    acknowledged.insert("after-first".into());
    for i in 0..10 {
        let name = format!("after-{i}");
        assert!(matches!(write(&api, &name, 100).await, Outcome::Stored), "{name}");
        acknowledged.insert(name);
    }
    until("/readyz answers 200 again", 15, || async { readyz(&lbdesk).await.0 == StatusCode::OK }).await;
    let restarted = start_on(lbdesk.stop().await, options()).await;
    all_present(&restarted, &acknowledged).await;
}
