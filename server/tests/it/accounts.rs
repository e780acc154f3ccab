//! Users, projects, passwords and the session store, on both databases.

use app::domain::user::Role;
use app::ssr::accounts::verify_password;
use server::demo;
use tower_sessions::SessionStore;
use tower_sessions::session::{Id, Record};

use crate::helpers::{Backend, TestDb};
use crate::on_both_databases;

on_both_databases!(
    seeding_twice_gives_the_same_users_and_projects,
    passwords_are_stored_only_as_argon2_hashes,
    generated_passwords_are_shown_once_and_reset_on_request,
    the_session_store_saves_loads_expires_and_deletes,
);

async fn seeding_twice_gives_the_same_users_and_projects(backend: Backend) {
    let test_db = TestDb::new(backend).await;
    let db = test_db.connect().await;
    demo::seed(&db, true).await.expect("first seed");
    demo::seed(&db, true).await.expect("second seed");
    let (users,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM users").fetch_one(&db.pool).await.expect("count");
    assert_eq!(users, 3);
    let alice = db.account("alice").await.expect("query").expect("alice exists");
    assert_eq!(alice.role, Role::Tenant);
    assert_eq!(db.projects_of(&alice).await.expect("projects"), ["project-a"]);
    let admin = db.account("admin").await.expect("query").expect("admin exists");
    assert_eq!(admin.role, Role::Admin);
    assert_eq!(db.projects_of(&admin).await.expect("projects"), ["project-a", "project-b"]);
    let scope = db.project_scope("project-b").await.expect("scope");
    assert_eq!(
        scope.namespaces,
        [("acp-region01".to_string(), "team-b".to_string()), ("acp-region02".to_string(), "team-b".to_string())]
    );
    assert!(db.account("mallory").await.expect("query").is_none());
}

async fn passwords_are_stored_only_as_argon2_hashes(backend: Backend) {
    let test_db = TestDb::new(backend).await;
    let db = test_db.connect().await;
    demo::seed(&db, true).await.expect("seed");
    let (_, hash) = db.account_with_hash("bob").await.expect("query").expect("bob exists");
    // The demo's published passwords at argon2's lightest cost: a costly hash would protect
    // nothing, and each sign-in pays for it.
    assert!(hash.starts_with("$argon2id$v=19$m=8,t=1,p=1$"), "{hash}");
    assert!(!hash.contains("bob-demo"));
    assert!(verify_password("bob-demo", &hash));
    assert!(!verify_password("bob-demo ", &hash));
    assert!(!verify_password("bob-demo", "not a hash"));
}

async fn generated_passwords_are_shown_once_and_reset_on_request(backend: Backend) {
    let test_db = TestDb::new(backend).await;
    let db = test_db.connect().await;
    let first = demo::seed(&db, false).await.expect("first start");
    assert!(first.iter().all(|(_, p, _)| p.as_ref().is_some_and(|p| p.len() >= 16)), "{first:?}");
    let (user, password, _) = &first[1];
    let (_, hash) = db.account_with_hash(user).await.expect("query").expect("user exists");
    assert!(verify_password(password.as_deref().expect("password"), &hash));
    // A password nobody else knows at argon2's default cost (OWASP's minimum).
    assert!(hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{hash}");
    let again = demo::seed(&db, false).await.expect("second start");
    assert!(again.iter().all(|(_, p, _)| p.is_none()), "a restart does not print or change passwords");
    let (_, same) = db.account_with_hash(user).await.expect("query").expect("user exists");
    assert_eq!(hash, same);
}

async fn the_session_store_saves_loads_expires_and_deletes(backend: Backend) {
    let test_db = TestDb::new(backend).await;
    let db = test_db.connect().await;
    let store = app::ssr::session_store::SqlSessionStore::new(db.clone());
    let later = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    let mut record = Record {
        id: Id::default(),
        data: [("user".to_string(), serde_json::json!("alice"))].into_iter().collect(),
        expiry_date: later,
    };
    store.create(&mut record).await.expect("create");
    let loaded = store.load(&record.id).await.expect("load").expect("present");
    assert_eq!(loaded.data, record.data);
    assert_eq!(loaded.expiry_date.unix_timestamp(), later.unix_timestamp());

    record.data.insert("project".into(), serde_json::json!("project-a"));
    store.save(&record).await.expect("save");
    assert_eq!(store.load(&record.id).await.expect("load").expect("present").data.len(), 2);

    let mut expired = Record {
        id: Id::default(),
        data: Default::default(),
        expiry_date: time::OffsetDateTime::now_utc() - time::Duration::seconds(1),
    };
    store.create(&mut expired).await.expect("create");
    assert!(store.load(&expired.id).await.expect("load").is_none(), "an expired session is not loaded");
    tower_sessions::ExpiredDeletion::delete_expired(&store).await.expect("sweep");
    let (rows,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM sessions").fetch_one(&db.pool).await.expect("count");
    assert_eq!(rows, 1, "the sweep removed the expired session only");

    store.delete(&record.id).await.expect("delete");
    assert!(store.load(&record.id).await.expect("load").is_none());
}
