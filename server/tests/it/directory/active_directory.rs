//! Directory sign-in read as Active Directory is, groups read again every second: groups to roles
//! and projects; refusals in the one message; the throttle and a fresh session id; a directory
//! account never takes over a local one; a user taken out of a group, requests at once past the
//! period, and a mapping that changes.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use app::domain::user::Role;
use app::error::AppError;
use reqwest::StatusCode;

use super::{
    Style, config, directory_bob, granted, projects, refused, shared, sign_in, sign_in_with, signed_in, wrong,
};
use crate::helpers::{Backend, Options, browser_from, english, signed_in as local_signed_in, until};
use crate::log_capture::Capture;
use crate::shared::Shared;
use crate::user::ok;

/// Shared by the tests here; those that change the directory or the mapping do it to users and
/// groups of their own.
static LBDESK: Shared = Shared::with(options, false);

/// The module's mapping: the seeded one (as `start.sh` writes it), with the group `team-mapped`
/// (the mapping test's) in `project`.
fn mapping(project: &str) -> String {
    let (a, b) = match project {
        "project-a" => (", team-mapped", ""),
        _ => ("", ", team-mapped"),
    };
    format!(
        "admins: [\"cn=lb-admins,ou=groups,dc=bank,dc=example\"]\nprojects:\n  \
         project-a: [\"CN=Team-A-Dev,OU=Groups,DC=bank,DC=example\"{a}]\n  project-b: [team-b-ops, team-b-dev{b}]\n"
    )
}

fn mapping_file() -> PathBuf {
    crate::shared::files("directory-active-directory").join("mapping.yaml")
}

/// The shared directory, read as Active Directory, every second, with the module's own mapping.
fn options() -> Options {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    let file = FILE.get_or_init(|| {
        let mapping_file = mapping_file();
        std::fs::write(&mapping_file, mapping("project-a")).expect("write");
        let folder = mapping_file.parent().expect("a folder").to_path_buf();
        config(shared(), Style::ActiveDirectory, &folder, |text| {
            let own = format!("mappingFile: {}", mapping_file.display());
            let lines = text.lines().map(|l| if l.starts_with("mappingFile:") { own.as_str() } else { l });
            format!("{}\nrefreshSeconds: 1\n", lines.collect::<Vec<_>>().join("\n"))
        })
    });
    Options { directory: Some(file.clone()), ..Default::default() }
}

async fn groups_give_roles_and_projects(backend: Backend) {
    let lbdesk = LBDESK.get(backend).await;
    let tenant = |projects: &[&str]| projects.iter().map(|p| p.to_string()).collect::<Vec<_>>();
    assert_eq!(granted(&lbdesk, "dora", "dora-directory").await, ("dora".into(), Role::Tenant, tenant(&["project-a"])));
    // The name as the directory spells it, whatever the case typed (AD compares without it).
    let erik = granted(&lbdesk, "ERIK", "erik-directory").await;
    assert_eq!(erik, ("erik".into(), Role::Tenant, tenant(&["project-a", "project-b"])));
    let gina = granted(&lbdesk, "gina", "gina-directory").await;
    assert_eq!((gina.0.as_str(), gina.1), ("gina", Role::Admin));
    // A user in no mapped group gave the right password: told why, not let in.
    assert_eq!(
        refused(&lbdesk, "hank", "hank-directory").await,
        AppError::invalid("password", english("common.login.no_group"))
    );
    // A disabled account, a wrong or empty password, an unknown name: the one message.
    for (name, password) in
        [("frank", "frank-directory"), ("dora", "wrong"), ("dora", ""), ("nobody", "x"), ("", "dora-directory")]
    {
        assert_eq!(refused(&lbdesk, name, password).await, wrong(), "{name:?} / {password:?}");
    }
    // erik works in his second project as any tenant does: switched to it, his change is made
    // and audited under his name.
    let (erik, _, _) = sign_in(&lbdesk, "erik", "erik-directory").await;
    let call = |endpoint: &str, body: serde_json::Value| {
        erik.post(format!("{}/api/{endpoint}", lbdesk.url)).json(&body).send()
    };
    ok::<()>(call("switch-project", serde_json::json!({"project": "project-b"})).await.expect("request")).await;
    let form = app::screens::tickets::TicketForm {
        loadbalancer: "shared-lb".into(),
        ..crate::user::ticket_form("erik-req", "team-b", "")
    };
    ok::<String>(call("ticket/save", serde_json::json!({"form": form})).await.expect("request")).await;
    // Local accounts still sign in (break-glass), and the admin sees who signs in how.
    let admin = local_signed_in(&lbdesk, "admin").await;
    let query = serde_json::json!({"object": "erik-req"});
    let audit: app::screens::audit::AuditPage = ok(admin
        .post(format!("{}/api/audit/list", lbdesk.url))
        .json(&serde_json::json!({"query": query}))
        .send()
        .await
        .expect("request"))
    .await;
    assert!(audit.rows.iter().any(|r| r.user == "erik" && r.project == "project-b"), "{:?}", audit.rows);
    let accounts: app::screens::users::Accounts = ok(admin
        .post(format!("{}/api/users/list", lbdesk.url))
        .json(&serde_json::json!({}))
        .send()
        .await
        .expect("request"))
    .await;
    let how =
        |name: &str| accounts.users.iter().find(|u| u.username == name).map(|u| (u.directory, u.projects.clone()));
    assert_eq!(how("erik"), Some((true, tenant(&["project-a", "project-b"]))));
    assert_eq!(how("alice"), Some((false, tenant(&["project-a"]))));
    assert_eq!(how("hank"), None, "a user let in nowhere is not recorded");
}

crate::on_both_databases!(groups_give_roles_and_projects);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_user_is_throttled_and_gets_a_fresh_session_id() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    // NB: a user of its own, guessed at from an address of its own (the throttle counts both).
    shared().add_user("tess", &["team-a-dev"]);
    let guesser = browser_from(std::net::Ipv4Addr::new(127, 0, 0, 61));
    for _ in 0..5 {
        let (status, body) = sign_in_with(&guesser, &lbdesk, "tess", "guess").await;
        assert!(!status.is_success(), "{status} {body}");
        assert_eq!(serde_json::from_str::<AppError>(&body).ok(), Some(wrong()), "{status} {body}");
    }
    let (status, body) = sign_in_with(&guesser, &lbdesk, "tess", "tess-directory").await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "the sixth try waits, right password or not: {body}");
    // Each sign-in of a directory user starts a session with a new id, in a safe cookie.
    let client = crate::helpers::browser();
    let mut ids = Vec::new();
    for _ in 0..2 {
        let res = crate::web::login(&client, &lbdesk, "erik", "erik-directory").await;
        let cookie = res.headers().get("set-cookie").and_then(|c| c.to_str().ok()).unwrap_or_default().to_string();
        assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite"), "a safe session cookie: {cookie}");
        ids.push(cookie.split(';').next().unwrap_or_default().to_string());
    }
    assert_ne!(ids[0], ids[1], "the session id changes at each sign-in");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_account_cannot_take_over_a_local_one() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    // The directory has a `bob` of its own, in team-a-dev (project-a).
    directory_bob();
    assert_eq!(refused(&lbdesk, "bob", "bob-directory").await, wrong(), "the directory's password opens nothing");
    let bob = granted(&lbdesk, "bob", "bob-demo").await;
    assert_eq!(bob, ("bob".into(), Role::Tenant, vec!["project-b".to_string()]), "the local bob, unchanged");
    // Nor with local accounts switched off: `local_off::a_directory_account_cannot_take_over_a_local_one`.
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_taken_out_of_a_group_loses_its_project_within_the_refresh_period() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    shared().add_user("ivan", &["team-a-dev", "team-b-ops"]);
    let ivan = signed_in(&lbdesk, "ivan", "ivan-directory").await;
    let both = vec!["project-a".to_string(), "project-b".to_string()];
    assert_eq!(projects(&lbdesk, &ivan).await, Ok(both));

    shared().remove_member("team-b-ops", "uid=ivan");
    let taken = Instant::now();
    until("ivan loses project-b", 10, || async { projects(&lbdesk, &ivan).await == Ok(vec!["project-a".into()]) })
        .await;
    assert!(taken.elapsed() < Duration::from_secs(4), "within the period: {:?}", taken.elapsed());

    // Out of every mapped group: the open session ends, and signing in again is refused.
    shared().remove_member("team-a-dev", "uid=ivan");
    until("ivan's session ends", 10, || async { projects(&lbdesk, &ivan).await == Err(StatusCode::UNAUTHORIZED) })
        .await;
    let (_, status, _) = sign_in(&lbdesk, "ivan", "ivan-directory").await;
    assert!(!status.is_success(), "ivan is let in nowhere now");
}

/// Requests a page makes at once, past the refresh period: each reads the groups again, and
/// every one of them passes.
async fn requests_at_once_past_the_refresh_period_all_pass(backend: Backend) {
    let lbdesk = LBDESK.get(backend).await;
    let erik = signed_in(&lbdesk, "erik", "erik-directory").await;
    let both = vec!["project-a".to_string(), "project-b".to_string()];
    let capture = Capture::start();
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(1_100)).await;
        let answers = futures::future::join_all((0..12).map(|_| projects(&lbdesk, &erik))).await;
        assert!(answers.iter().all(|a| *a == Ok(both.clone())), "{answers:?}");
    }
    // Nor did any of them fail to record what it read (a session stands when that fails).
    let log = capture.text();
    assert!(!log.contains("could not record the directory user"), "{log}");
}

crate::on_both_databases!(requests_at_once_past_the_refresh_period_all_pass);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mapping_is_read_again_when_it_changes() {
    let lbdesk = LBDESK.get(Backend::Sqlite).await;
    // NB: the module's lbdesk on PostgreSQL reads this mapping too: started first, it never
    // starts on the broken one.
    let _also = LBDESK.get(Backend::Postgres).await;
    shared().add_user("mia", &[]);
    shared().add_group("team-mapped", "mia");
    let mia = signed_in(&lbdesk, "mia", "mia-directory").await;
    assert_eq!(projects(&lbdesk, &mia).await, Ok(vec!["project-a".to_string()]));
    // A broken mapping is refused and the last good one kept.
    std::fs::write(mapping_file(), "projects: {Not A Name: [team-mapped]}\n").expect("write");
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    assert_eq!(projects(&lbdesk, &mia).await, Ok(vec!["project-a".to_string()]));
    std::fs::write(mapping_file(), mapping("project-b")).expect("write");
    until("mia's group now means project-b", 10, || async {
        projects(&lbdesk, &mia).await == Ok(vec!["project-b".to_string()])
    })
    .await;
    // Every other group still means what it did.
    assert_eq!(granted(&lbdesk, "dora", "dora-directory").await.2, vec!["project-a".to_string()]);
}
