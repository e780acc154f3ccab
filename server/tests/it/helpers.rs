//! `spawn_lbdesk()` and the database each test gets.

use std::path::PathBuf;

use app::ssr::db::Db;
use server::cli::{ServeArgs, StoreArgs};
use server::serve::Server;

/// The database engine a test runs on.
#[derive(Clone, Copy, Debug)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Runs one `async fn(Backend)` test on SQLite and on PostgreSQL.
#[macro_export]
macro_rules! on_both_databases {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn on_sqlite() {
                super::$name($crate::helpers::Backend::Sqlite).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn on_postgres() {
                super::$name($crate::helpers::Backend::Postgres).await
            }
        }
    )*};
}

/// A fresh, empty database for one test; the temporary directory lives as long as this.
pub struct TestDb {
    pub url: String,
    pub dir: tempfile::TempDir,
}

impl TestDb {
    pub async fn new(backend: Backend) -> TestDb {
        let dir = tempfile::tempdir().expect("temporary directory");
        let url = match backend {
            Backend::Sqlite => Db::sqlite_url(dir.path()),
            Backend::Postgres => fresh_postgres_database().await,
        };
        TestDb { url, dir }
    }

    pub async fn connect(&self) -> Db {
        Db::connect(&self.url).await.expect("database opens and migrates")
    }
}

/// Creates a new database on the test PostgreSQL server. There is no silent skip: without
/// the server the PostgreSQL half of the suite fails, saying how to get one.
async fn fresh_postgres_database() -> String {
    let admin = std::env::var("LBDESK_TEST_POSTGRES_URL").expect(
        "LBDESK_TEST_POSTGRES_URL is not set: run the suite with `cargo xtask test`, which starts PostgreSQL, \
         or point it at a server where the user may CREATE DATABASE",
    );
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&admin).await.expect("connect to the test PostgreSQL");
    let name = format!("lbdesk_t_{:016x}", rand::random::<u64>());
    sqlx::query(&format!("CREATE DATABASE {name}")).execute(&pool).await.expect("create database");
    pool.close().await;
    let (base, _) = admin.rsplit_once('/').expect("URL with a database path");
    format!("{base}/{name}")
}

/// A running lbdesk on a free loopback port.
pub struct Lbdesk {
    pub url: String,
    pub db: Db,
    _db: TestDb,
}

/// Starts lbdesk with the fixed demo logins.
pub async fn spawn_lbdesk(backend: Backend) -> Lbdesk {
    spawn_lbdesk_with(backend, None).await
}

/// Starts lbdesk, optionally behind a public URL (which decides the `Secure` cookie flag).
pub async fn spawn_lbdesk_with(backend: Backend, public_url: Option<&str>) -> Lbdesk {
    let test_db = TestDb::new(backend).await;
    let args = ServeArgs {
        listen: "127.0.0.1:0".parse().expect("address"),
        store: StoreArgs { data_dir: test_db.dir.path().to_path_buf(), database_url: Some(test_db.url.clone()) },
        demo: true,
        public_url: public_url.map(str::to_string),
        site_root: PathBuf::from("target/site"),
    };
    let server = Server::build(args).await.expect("lbdesk starts");
    // NB: the public URL is what users see; the test talks to the bound port.
    let url = format!("http://{}", server.addr);
    let db = server.db.clone();
    tokio::spawn(server.run_until(std::future::pending()));
    Lbdesk { url, db, _db: test_db }
}

/// An HTTP client that keeps cookies and does not follow redirects.
pub fn browser() -> reqwest::Client {
    reqwest::Client::builder().cookie_store(true).redirect(reqwest::redirect::Policy::none()).build().expect("client")
}
