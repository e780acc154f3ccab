//! Directory sign-in: groups to roles and projects, in both directories' ways; names that are
//! LDAP filter syntax; refusals in the one message; the throttle and a fresh session id.

use app::domain::user::Role;
use app::error::AppError;
use reqwest::StatusCode;

use super::{Slapd, Style, lbdesk_edited, lbdesk_with, me, sign_in};
use crate::helpers::{Backend, english, signed_in};
use crate::user::ok;

/// Signs `name` in and returns their role and projects.
async fn granted(lbdesk: &crate::helpers::Lbdesk, name: &str, password: &str) -> (String, Role, Vec<String>) {
    let (client, status, body) = sign_in(lbdesk, name, password).await;
    assert!(status.is_success() || status.is_redirection(), "{name} signs in: {status} {body}");
    let user = me(lbdesk, &client).await.unwrap_or_else(|s| panic!("{name} is signed in: {s}"));
    (user.username, user.role, user.projects)
}

/// Refused, and with what.
async fn refused(lbdesk: &crate::helpers::Lbdesk, name: &str, password: &str) -> AppError {
    let (client, status, body) = sign_in(lbdesk, name, password).await;
    assert!(!status.is_success() && !status.is_redirection(), "{name:?} is refused: {status} {body}");
    assert_eq!(me(lbdesk, &client).await, Err(StatusCode::UNAUTHORIZED), "{name:?} is not signed in");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

fn wrong() -> AppError {
    AppError::invalid("password", english("common.login.wrong"))
}

async fn active_directory_groups_give_roles_and_projects(backend: Backend) {
    let slapd = Slapd::start();
    let lbdesk = lbdesk_with(backend, &slapd, Style::ActiveDirectory, "").await;
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
    let admin = signed_in(&lbdesk, "admin").await;
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

crate::on_both_databases!(active_directory_groups_give_roles_and_projects);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openldap_groups_are_searched_and_a_name_is_never_a_filter() {
    let slapd = Slapd::start();
    let lbdesk = lbdesk_with(Backend::Sqlite, &slapd, Style::OpenLdap, "").await;
    // erik is in team-a-dev (groupOfNames `member`) and team-b-dev (posixGroup `memberUid`).
    let erik = granted(&lbdesk, "erik", "erik-directory").await;
    assert_eq!(erik.2, vec!["project-a".to_string(), "project-b".to_string()]);
    // A disabled account (the filter leaves it out) is refused like a wrong password.
    assert_eq!(refused(&lbdesk, "frank", "frank-directory").await, wrong());
    // A name made of filter syntax and non-ASCII signs in as itself...
    let zoe = granted(&lbdesk, "zoë(*)\\lab", "zoe-directory").await;
    assert_eq!((zoe.0.as_str(), zoe.2), ("zoë(*)\\lab", vec!["project-b".to_string()]));
    // ...and no typed name widens the search to someone else.
    // NB: each with the password of the user it aims at (20 failures make the address wait).
    for (name, password) in [
        ("*", "dora-directory"),
        ("zo*", "zoe-directory"),
        ("zoë(*)*", "zoe-directory"),
        ("erik)(uid=*", "erik-directory"),
        ("*)(|(uid=*", "erik-directory"),
        ("erik\0", "erik-directory"),
        ("dora)(|(uid=*", "dora-directory"),
    ] {
        assert_eq!(refused(&lbdesk, name, password).await, wrong(), "{name:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_tls_upgrades_a_plain_port_before_anything_is_sent() {
    let slapd = Slapd::start();
    let (ldaps, ldap) = (format!("ldaps://127.0.0.1:{}", slapd.ldaps), format!("ldap://127.0.0.1:{}", slapd.ldap));
    let lbdesk = lbdesk_edited(Backend::Sqlite, &slapd, Style::OpenLdap, |text| {
        format!("{}startTls: true\n", text.replace(&ldaps, &ldap))
    })
    .await;
    assert_eq!(granted(&lbdesk, "dora", "dora-directory").await.2, vec!["project-a".to_string()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_whose_certificate_is_not_trusted_is_not_sent_a_password() {
    let slapd = Slapd::start();
    // Without its CA file, the test directory's certificate (of a CA made for it) is checked
    // against the system's CAs, and refused.
    let lbdesk = lbdesk_edited(Backend::Sqlite, &slapd, Style::OpenLdap, |text| {
        text.lines().filter(|l| !l.starts_with("caFile:")).map(|l| format!("{l}\n")).collect()
    })
    .await;
    let capture = crate::log_capture::Capture::start();
    let AppError::Refused(message) = refused(&lbdesk, "dora", "dora-directory").await else { panic!("refused") };
    assert!(message.starts_with("The directory cannot be reached"), "{message}");
    let log = capture.text();
    assert!(log.contains("could not connect") && log.to_lowercase().contains("certificate"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_user_is_throttled_and_gets_a_fresh_session_id() {
    let slapd = Slapd::start();
    let lbdesk = lbdesk_with(Backend::Sqlite, &slapd, Style::ActiveDirectory, "").await;
    for _ in 0..5 {
        assert_eq!(refused(&lbdesk, "dora", "guess").await, wrong());
    }
    let (_, status, body) = sign_in(&lbdesk, "dora", "dora-directory").await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "the sixth try waits, right password or not: {body}");
    // Each sign-in of a directory user starts a session with a new id, in a safe cookie.
    let client = crate::helpers::browser();
    let mut ids = Vec::new();
    for _ in 0..2 {
        let res = client
            .post(format!("{}/api/login", lbdesk.url))
            .form(&[("username", "erik"), ("password", "erik-directory")])
            .send()
            .await
            .expect("request");
        let cookie = res.headers().get("set-cookie").and_then(|c| c.to_str().ok()).unwrap_or_default().to_string();
        assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite"), "a safe session cookie: {cookie}");
        ids.push(cookie.split(';').next().unwrap_or_default().to_string());
    }
    assert_ne!(ids[0], ids[1], "the session id changes at each sign-in");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_account_cannot_take_over_a_local_one() {
    let slapd = Slapd::start();
    // The directory gains a `bob` of its own, in team-a-dev (project-a).
    slapd.modify(
        "dn: uid=bob,ou=people,dc=bank,dc=example\nchangetype: add\nobjectClass: inetOrgPerson\n\
         objectClass: adAccount\ncn: Bob Directory\nsn: Directory\nuid: bob\nsAMAccountName: bob\n\
         userPassword: bob-directory\nuserAccountControl: 512\n\n\
         dn: cn=team-a-dev,ou=groups,dc=bank,dc=example\nchangetype: modify\nadd: member\n\
         member: uid=bob,ou=people,dc=bank,dc=example\n",
    );
    let lbdesk = lbdesk_with(Backend::Sqlite, &slapd, Style::ActiveDirectory, "").await;
    assert_eq!(refused(&lbdesk, "bob", "bob-directory").await, wrong(), "the directory's password opens nothing");
    let bob = granted(&lbdesk, "bob", "bob-demo").await;
    assert_eq!(bob, ("bob".into(), Role::Tenant, vec!["project-b".to_string()]), "the local bob, unchanged");
    // Nor with local accounts switched off: the name stays the local account's, which signs in no more.
    let off = lbdesk_with(Backend::Sqlite, &slapd, Style::ActiveDirectory, "localAccounts: false").await;
    assert_eq!(refused(&off, "bob", "bob-directory").await, wrong());
    assert_eq!(refused(&off, "bob", "bob-demo").await, wrong());
}
