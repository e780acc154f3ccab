//! The SQL database: SQLite by default, PostgreSQL when the URL says so, one code path
//! through sqlx's `Any` driver and portable SQL.

mod fault;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::error::BoxDynError;
use sqlx::migrate::{Migration, MigrationSource, MigrationType, Migrator};
use sqlx::{AnyConnection, AnyPool, Connection, Executor};

pub use fault::{Cause, Fault, Health, fault};

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
    /// What the latest writes came to.
    pub health: Arc<Health>,
}

/// The migrations of `migrations/`, compiled in: version, description, SQL, as sqlx reads the
/// directory (`<version>_<description>.sql`; the test `embedded_migrations_are_the_directorys`
/// holds them to sqlx's own reading of it, checksums included). NB: not `sqlx::migrate!`: that
/// one macro needs sqlx's macros, which compile sqlx, both drivers and tokio a second time for
/// the compiler (about 45 CPU-s of a fresh build, docs/perf.md).
const MIGRATIONS: [(i64, &str, &str); 9] = [
    (1, "accounts", include_str!("../../../migrations/0001_accounts.sql")),
    (2, "embedded api", include_str!("../../../migrations/0002_embedded_api.sql")),
    (3, "audit", include_str!("../../../migrations/0003_audit.sql")),
    (4, "sessions since", include_str!("../../../migrations/0004_sessions_since.sql")),
    (5, "directory accounts", include_str!("../../../migrations/0005_directory_accounts.sql")),
    (6, "user locale", include_str!("../../../migrations/0006_user_locale.sql")),
    (7, "store probe", include_str!("../../../migrations/0007_store_probe.sql")),
    (8, "audit version", include_str!("../../../migrations/0008_audit_version.sql")),
    (9, "audit pending", include_str!("../../../migrations/0009_audit_pending.sql")),
];

/// [`MIGRATIONS`], for sqlx's migrator.
#[derive(Debug)]
struct Embedded;

impl<'s> MigrationSource<'s> for Embedded {
    fn resolve(self) -> Pin<Box<dyn Future<Output = Result<Vec<Migration>, BoxDynError>> + Send + 's>> {
        let migrations = MIGRATIONS.iter().map(|&(version, description, sql)| {
            let no_tx = sql.starts_with("-- no-transaction");
            Migration::new(version, description.into(), MigrationType::Simple, sql.into(), no_tx)
        });
        Box::pin(std::future::ready(Ok(migrations.collect())))
    }
}

impl Db {
    /// Opens (creating a SQLite file when needed) and migrates the database at `url`.
    pub async fn connect(url: &str) -> Result<Db, sqlx::Error> {
        install_default_drivers();
        let engine = if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Engine::Postgres
        } else {
            Engine::Sqlite
        };
        // NB: a database out of reach answers within the acquire timeout (sqlx's default is
        // 30 s), as a 503 naming it, rather than holding the request.
        let options = AnyPoolOptions::new()
            .max_connections(match engine {
                Engine::Sqlite => 8,
                Engine::Postgres => 16,
            })
            .acquire_timeout(std::time::Duration::from_secs(10));
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
        Migrator::new(Embedded).await?.run(&pool).await?;
        Ok(Db { pool, engine, health: Arc::default() })
    }

    /// Runs `work` in one transaction, committed when it returns `Ok`, and records the outcome
    /// in [`Db::health`].
    ///
    /// NB: a connection on which anything failed is closed, never handed back to the pool.
    /// SQLite rolls a transaction back by itself on some errors (a full disk), and sqlx, whose
    /// own rollback then fails, kept counting it open: the connection's next transactions became
    /// savepoints inside one that never committed. Their writes were acknowledged and lost, and
    /// the write lock stayed taken ("database is locked" for every other connection, until a
    /// restart). A closed connection rolls back whatever it held; the pool opens a new one.
    pub async fn transaction<T>(
        &self,
        work: impl AsyncFnOnce(&mut AnyConnection) -> Result<T, sqlx::Error>,
    ) -> Result<T, sqlx::Error> {
        let mut conn = self.pool.acquire().await;
        let result = match &mut conn {
            Ok(conn) => {
                async {
                    let mut tx = conn.begin().await?;
                    let value = work(&mut tx).await?;
                    tx.commit().await?;
                    Ok(value)
                }
                .await
            }
            Err(e) => Err(std::mem::replace(e, sqlx::Error::PoolClosed)),
        };
        if let (Err(_), Ok(conn)) = (&result, &mut conn) {
            conn.close_on_drop();
        }
        self.health.record(&result);
        result
    }

    /// Whether the store takes a write now: a probe row written in a transaction of its own,
    /// unless a write failed a moment ago with nothing written since. The fault when not.
    pub async fn writable(&self) -> Result<(), Fault> {
        if let Some(fault) = self.health.recent_fault() {
            return Err(fault);
        }
        let at = crate::ssr::now_micros();
        let probe = self
            .transaction(async |tx| {
                sqlx::query(
                    "INSERT INTO store_probe (id, at) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET at = excluded.at",
                )
                .bind(at)
                .execute(&mut *tx)
                .await
            })
            .await;
        probe.map(drop).map_err(|e| fault(&e).unwrap_or(Fault::Unavailable(Cause::Io)))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What a migration is to sqlx: what it records in `_sqlx_migrations` and checks at start.
    fn facts(m: &Migration) -> (i64, String, Vec<u8>, bool, bool) {
        (m.version, m.description.to_string(), m.checksum.to_vec(), m.no_tx, m.migration_type.is_reversible())
    }

    #[test]
    fn embedded_migrations_are_the_directorys() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations");
        let mut read = sqlx::migrate::resolve_blocking(&dir).expect("sqlx reads migrations/");
        read.sort_by_key(|(m, _)| m.version);
        let read: Vec<_> = read.iter().map(|(m, _)| facts(m)).collect();
        let embedded = futures::executor::block_on(Embedded.resolve()).expect("the embedded migrations");
        let embedded: Vec<_> = embedded.iter().map(facts).collect();
        assert_eq!(embedded, read, "MIGRATIONS holds migrations/ as sqlx reads it");
    }
}
