//! The SQL database: SQLite by default, PostgreSQL when the URL says so, one code path
//! through sqlx's `Any` driver and portable SQL.

use std::future::Future;
use std::pin::Pin;

use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::error::BoxDynError;
use sqlx::migrate::{Migration, MigrationSource, MigrationType, Migrator};
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

/// The migrations of `migrations/`, compiled in: version, description, SQL, as sqlx reads the
/// directory (`<version>_<description>.sql`; the test `embedded_migrations_are_the_directorys`
/// holds them to sqlx's own reading of it, checksums included). NB: not `sqlx::migrate!`: that
/// one macro needs sqlx's macros, which compile sqlx, both drivers and tokio a second time for
/// the compiler (about 45 CPU-s of a fresh build, docs/perf.md).
const MIGRATIONS: [(i64, &str, &str); 6] = [
    (1, "accounts", include_str!("../../../migrations/0001_accounts.sql")),
    (2, "embedded api", include_str!("../../../migrations/0002_embedded_api.sql")),
    (3, "audit", include_str!("../../../migrations/0003_audit.sql")),
    (4, "sessions since", include_str!("../../../migrations/0004_sessions_since.sql")),
    (5, "directory accounts", include_str!("../../../migrations/0005_directory_accounts.sql")),
    (6, "user locale", include_str!("../../../migrations/0006_user_locale.sql")),
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
        Migrator::new(Embedded).await?.run(&pool).await?;
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
