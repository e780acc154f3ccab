//! The audit log's list with 100,000 entries (50 users, 20 projects, 3 kinds, a year of
//! changes): the first page unfiltered, by user, by a tenant's projects, by object name, and a
//! page deep in the keyset, straight from the database; then `/api/audit/list` through the
//! whole server, as an admin and as a tenant; then the retention purge of a tenth of them.
//! SQLite always; PostgreSQL too when `LBDESK_TEST_POSTGRES_URL` names a server where the user
//! may create a database (as `cargo xtask test` sets it).
//! Run: `cargo bench -p server --bench server -- audit`.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use app::ssr::audit::{Cursor, Filter, PAGE, Projects};
use app::ssr::db::Db;
use serde_json::json;

const ENTRIES: usize = 100_000;
const USERS: usize = 50;
const PROJECTS: usize = 20;
const KINDS: [&str; 3] = ["Loadbalancer", "Lbticket", "Lbrule"];
const ACTIONS: [&str; 5] = ["create", "update", "update", "disable", "enable"];
/// A year, in microseconds: the entries are spread over it, oldest first.
const YEAR: i64 = 365 * 24 * 3600 * 1_000_000;
/// Rows per INSERT while filling.
const BATCH: usize = 100;

/// Project `n`: the demo's `project-a` and `project-b` (so the demo's alice sees hers through
/// the server), then `project-02` to `project-19`.
fn project(n: usize) -> String {
    match n {
        0 => "project-a".into(),
        1 => "project-b".into(),
        n => format!("project-{n:02}"),
    }
}

/// Fills the log: entry `i` is by user `i % USERS`, of project `i % PROJECTS` (one in 50 a load
/// balancer's, of no project; the others tickets' and rules'), on object `i % 5,000`, at a time
/// growing with `i`, each with an object of about 400 bytes before and after.
async fn fill(db: &Db, now: i64) -> anyhow::Result<()> {
    let started = Instant::now();
    let object = |i: usize| {
        json!({
            "apiVersion": "ebcpaas.io/v1", "kind": "Lbticket",
            "metadata": {"name": format!("obj-{:04}", i % 5_000), "labels": {"ebcpaas.io/project": project(i % PROJECTS)}},
            "spec": {
                "loadbalancer": "shared-lb", "namespace": "team-a", "veip": "20.9.0.7",
                "listeners": [{"name": "web", "port": 443, "protocol": "https", "services": [{"service": "web-v1", "port": 8443, "weight": 100}]}],
            },
        })
        .to_string()
    };
    for start in (0..ENTRIES).step_by(BATCH) {
        let rows: Vec<usize> = (start..(start + BATCH).min(ENTRIES)).collect();
        let values: Vec<String> = (0..rows.len())
            .map(|r| format!("({})", (1..=10).map(|c| format!("${}", r * 10 + c)).collect::<Vec<_>>().join(", ")))
            .collect();
        let sql = format!(
            "INSERT INTO audit (id, at, username, via, action, kind, name, project, before, after) VALUES {}",
            values.join(", ")
        );
        let mut q = sqlx::query(&sql);
        for &i in &rows {
            let kind = if i % 50 == 49 { KINDS[0] } else { KINDS[1 + i % 2] };
            let project = if kind == KINDS[0] { String::new() } else { project(i % PROJECTS) };
            let at = now - YEAR + (i as i64) * (YEAR / ENTRIES as i64);
            q = q
                .bind(format!("{:032x}", rand::random::<u128>()))
                .bind(at)
                .bind(format!("user-{:02}", i % USERS))
                .bind("page")
                .bind(ACTIONS[i % ACTIONS.len()])
                .bind(kind)
                .bind(format!("obj-{:04}", i % 5_000))
                .bind(project)
                .bind(object(i))
                .bind(object(i + 1));
        }
        q.execute(&db.pool).await.context("fill the audit log")?;
    }
    println!("  filled {ENTRIES} entries in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// The database-level figures on `db`, filled.
async fn queries(db: &Db) -> anyhow::Result<Vec<Duration>> {
    let all = Projects::All;
    let tenant = Projects::Only(vec!["project-03".into(), "project-07".into(), "project-11".into()]);
    let one = Projects::Only(vec!["project-05".into()]);
    let by_user = Filter { user: Some("user-07".into()), ..Default::default() };
    let by_name = Filter { name: Some("obj-1234".into()), ..Default::default() };
    let by_kind_action = Filter { kind: Some("Lbrule".into()), action: Some("disable".into()), ..Default::default() };
    // The cursor of the entry half-way down the log (found once, with an OFFSET the list never uses).
    let (at, id): (i64, String) =
        sqlx::query_as("SELECT at, id FROM audit ORDER BY at DESC, id DESC LIMIT 1 OFFSET 50000")
            .fetch_one(&db.pool)
            .await?;
    let deep = Cursor { at, id };
    let page = |projects: &Projects, filter: &Filter, after: Option<&Cursor>| {
        let (db, projects, filter, after) =
            (db.clone(), Arc::new(projects.clone()), Arc::new(filter.clone()), after.cloned());
        move || {
            let (db, projects, filter, after) = (db.clone(), projects.clone(), filter.clone(), after.clone());
            async move {
                let page = db.audit_page(&projects, &filter, after.as_ref()).await?;
                ensure!(!page.records.is_empty(), "the page is empty");
                Ok(page.records.len())
            }
        }
    };
    let none = Filter::default();
    Ok(vec![
        common::measure("first page, unfiltered (admin)", "rows", page(&all, &none, None)).await?,
        common::measure("first page, by user", "rows", page(&all, &by_user, None)).await?,
        common::measure("first page, a tenant of 3 projects", "rows", page(&tenant, &none, None)).await?,
        common::measure("first page, a tenant of 1 project", "rows", page(&one, &none, None)).await?,
        common::measure("first page, by object name", "rows", page(&all, &by_name, None)).await?,
        common::measure("first page, by kind and action", "rows", page(&all, &by_kind_action, None)).await?,
        common::measure("a page 50,000 entries deep, unfiltered", "rows", page(&all, &none, Some(&deep))).await?,
        common::measure(
            "a page 50,000 entries deep, a tenant of 3 projects",
            "rows",
            page(&tenant, &none, Some(&deep)),
        )
        .await?,
    ])
}

/// The retention purge of the oldest tenth of the log.
async fn purge(db: &Db, now: i64) -> anyhow::Result<()> {
    let started = Instant::now();
    let cutoff = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(now - YEAR + YEAR / 10) * 1_000)?;
    let purged = db.purge_audit_before(cutoff).await?;
    println!(
        "  purge of the oldest tenth ({purged} entries)                      {:>6.0} ms",
        started.elapsed().as_secs_f64() * 1000.0
    );
    Ok(())
}

/// `/api/audit/list` through the whole server (session, guard, query, JSON) on the filled
/// SQLite database in `dir`.
async fn through_the_server(dir: &std::path::Path) -> anyhow::Result<()> {
    let url = common::start(common::args(dir)?).await?.url;
    for user in ["admin", "alice"] {
        let browser = common::signed_in(&url, user).await?;
        common::measure(&format!("POST /api/audit/list as {user}, first page"), "rows", || async {
            let res = browser.post(format!("{url}/api/audit/list")).json(&json!({"query": {}})).send().await?;
            ensure!(res.status().is_success(), "{}", res.status());
            let page: app::screens::audit::AuditPage = res.json().await?;
            Ok(page.rows.len())
        })
        .await?;
    }
    Ok(())
}

#[tokio::main]
pub async fn run() -> anyhow::Result<()> {
    let now = app::ssr::audit::micros(time::OffsetDateTime::now_utc());
    let dir = tempfile::tempdir().context("no temporary directory")?;
    println!("SQLite, {ENTRIES} entries, pages of {PAGE}, {} rounds each:", common::ROUNDS);
    let sqlite = Db::connect(&Db::sqlite_url(dir.path())).await?;
    fill(&sqlite, now).await?;
    let figures = queries(&sqlite).await?;
    through_the_server(dir.path()).await?;
    purge(&sqlite, now).await?;
    let slowest = figures.iter().max().copied().unwrap_or_default();
    println!("slowest query p50 {:.2} ms (target: < 20 ms each)", slowest.as_secs_f64() * 1000.0);

    if let Ok(admin) = std::env::var("LBDESK_TEST_POSTGRES_URL") {
        sqlx::any::install_default_drivers();
        let pool = sqlx::AnyPool::connect(&admin).await.context("connect to PostgreSQL")?;
        let name = format!("lbdesk_bench_{:016x}", rand::random::<u64>());
        sqlx::query(&format!("CREATE DATABASE {name}")).execute(&pool).await?;
        let (base, _) = admin.rsplit_once('/').context("a URL with a database path")?;
        println!("PostgreSQL, the same:");
        let pg = Db::connect(&format!("{base}/{name}")).await?;
        fill(&pg, now).await?;
        sqlx::query("ANALYZE audit").execute(&pg.pool).await?;
        queries(&pg).await?;
        purge(&pg, now).await?;
        pg.pool.close().await;
        sqlx::query(&format!("DROP DATABASE {name} WITH (FORCE)")).execute(&pool).await?;
    }
    Ok(())
}
