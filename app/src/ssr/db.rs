//! The SQL database: SQLite by default, PostgreSQL when the URL says so, one code path
//! through sqlx's `Any` driver and portable SQL.

use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::{AnyPool, Executor};

/// Which engine is behind the pool; the SQL is the same, a few tunings differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
}

/// A migrated connection pool.
#[derive(Clone, Debug)]
pub struct Db {
    pub pool: AnyPool,
    pub engine: Engine,
}

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");

impl Db {
    /// Opens (creating a SQLite file when needed) and migrates the database at `url`.
    pub async fn connect(url: &str) -> Result<Db, sqlx::Error> {
        install_default_drivers();
        let engine = if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Engine::Postgres
        } else {
            Engine::Sqlite
        };
        let options = AnyPoolOptions::new().max_connections(match engine {
            Engine::Sqlite => 8,
            Engine::Postgres => 16,
        });
        let options = if engine == Engine::Sqlite {
            options.after_connect(|conn, _| {
                Box::pin(async move {
                    // NB: busy_timeout lets concurrent writers queue instead of failing at once.
                    conn.execute("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 10000")
                        .await?;
                    Ok(())
                })
            })
        } else {
            options
        };
        let pool = options.connect(url).await?;
        if engine == Engine::Sqlite {
            pool.execute("PRAGMA journal_mode = WAL").await?;
        }
        MIGRATOR.run(&pool).await?;
        Ok(Db { pool, engine })
    }

    /// The SQLite URL of the default database file inside `data_dir`.
    pub fn sqlite_url(data_dir: &std::path::Path) -> String {
        format!("sqlite://{}?mode=rwc", Self::sqlite_file(data_dir).display())
    }

    /// The SQLite database file in a data directory.
    pub fn sqlite_file(data_dir: &std::path::Path) -> std::path::PathBuf {
        data_dir.join("lbdesk.db")
    }
}
