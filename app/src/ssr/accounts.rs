//! Users, projects and memberships in SQL, and argon2 password hashing.

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString, rand_core::OsRng};

use super::db::Db;
use crate::domain::user::{Role, Scope};

/// A user row with what the pages need.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Account {
    pub username: String,
    pub display_name: String,
    pub role: Role,
}

/// Hashes a password with argon2id and a random salt (PHC string).
pub fn hash_password(password: &str) -> Result<String, argon2::password_hash::Error> {
    hash_with(&Argon2::default(), password)
}

/// Hashes a published password (the demo users' fixed ones, documented in the README) with
/// argon2id at its lightest cost. NB: a costly hash protects a password nobody knows; these are
/// printed for everyone, and every sign-in pays for the cost (at the default, about 6 % of the
/// integration suite's CPU, docs/perf.md). Verifying reads the cost from the hash itself.
pub fn hash_published_password(password: &str) -> Result<String, argon2::password_hash::Error> {
    use argon2::{Algorithm, Params, Version};
    let params = Params::new(Params::MIN_M_COST, Params::MIN_T_COST, Params::MIN_P_COST, None)?;
    hash_with(&Argon2::new(Algorithm::Argon2id, Version::V0x13, params), password)
}

/// `password` hashed by `argon2` with a random salt (PHC string).
fn hash_with(argon2: &Argon2, password: &str) -> Result<String, argon2::password_hash::Error> {
    let salt = SaltString::generate(&mut OsRng);
    Ok(argon2.hash_password(password.as_bytes(), &salt)?.to_string())
}

/// Whether `password` matches the PHC `hash`; a malformed hash never matches.
pub fn verify_password(password: &str, hash: &str) -> bool {
    PasswordHash::new(hash)
        .map(|parsed| Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok())
        .unwrap_or(false)
}

/// A hash of a random password, verified against when the user does not exist, so a wrong
/// user name costs as much time as a wrong password (no user enumeration by timing).
pub fn decoy_hash() -> &'static str {
    static DECOY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DECOY.get_or_init(|| hash_password(&format!("{:x}", rand::random::<u128>())).unwrap_or_default())
}

/// What a user's sessions are checked against at each request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionFacts {
    /// The instant (unix microseconds) before which their sessions are over (a password reset,
    /// sessions ended by an admin or by the directory).
    pub sessions_since: i64,
    /// Whether the account is the directory's.
    pub directory: bool,
    /// When a directory account's groups were last read (unix microseconds).
    pub synced_at: i64,
    /// The language they chose for the console, if they did.
    pub locale: Option<crate::i18n::Locale>,
}

/// The `source` of a directory account (else `local`).
const DIRECTORY: &str = "directory";

fn role_of(s: &str) -> Role {
    if s == "admin" { Role::Admin } else { Role::Tenant }
}

fn role_str(r: Role) -> &'static str {
    match r {
        Role::Admin => "admin",
        Role::Tenant => "tenant",
    }
}

impl Db {
    /// The account and its password hash, for sign-in.
    pub async fn account_with_hash(&self, username: &str) -> Result<Option<(Account, String)>, sqlx::Error> {
        let row: Option<(String, String, String, String)> =
            sqlx::query_as("SELECT username, display_name, role, password_hash FROM users WHERE username = $1")
                .bind(username)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.map(|(username, display_name, role, hash)| {
            (Account { username, display_name, role: role_of(&role) }, hash)
        }))
    }

    /// The account of `username`, if it exists.
    pub async fn account(&self, username: &str) -> Result<Option<Account>, sqlx::Error> {
        Ok(self.account_with_hash(username).await?.map(|(a, _)| a))
    }

    /// Creates or updates a user (password given as a PHC hash).
    pub async fn upsert_user(&self, account: &Account, password_hash: &str, now: i64) -> Result<(), sqlx::Error> {
        sqlx::query(
            "INSERT INTO users (username, display_name, password_hash, role, created_at) VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (username) DO UPDATE SET display_name = excluded.display_name, \
             password_hash = excluded.password_hash, role = excluded.role, source = 'local'",
        )
        .bind(&account.username)
        .bind(&account.display_name)
        .bind(password_hash)
        .bind(role_str(account.role))
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Records a directory user as the directory has them now (`at`, unix microseconds): their
    /// name, role and memberships (of the projects that exist), in one transaction. Refused
    /// (`Ok(false)`) for the name of a local account, which a directory cannot take over.
    pub async fn sync_directory_user(
        &self,
        account: &Account,
        projects: &[String],
        at: i64,
    ) -> Result<bool, sqlx::Error> {
        // NB: the transaction's first statement writes the user's row: SQLite takes its write
        // lock then (waiting its turn), where a read first could not upgrade while another writer
        // holds it; PostgreSQL locks the row, so that two syncs of one user (requests at once past
        // the refresh period) run one after the other.
        self.transaction(async |tx| {
            let written = sqlx::query(
                "INSERT INTO users (username, display_name, password_hash, role, created_at, source, synced_at) \
             VALUES ($1, $2, '', $3, $4, 'directory', $5) \
             ON CONFLICT (username) DO UPDATE SET display_name = excluded.display_name, role = excluded.role, \
             synced_at = excluded.synced_at WHERE users.source = 'directory'",
            )
            .bind(&account.username)
            .bind(&account.display_name)
            .bind(role_str(account.role))
            .bind(at / 1_000_000)
            .bind(at)
            .execute(&mut *tx)
            .await?;
            // A local account's name: left as it is.
            if written.rows_affected() == 0 {
                return Ok(false);
            }
            sqlx::query("DELETE FROM project_members WHERE username = $1")
                .bind(&account.username)
                .execute(&mut *tx)
                .await?;
            for project in projects {
                sqlx::query(
                    "INSERT INTO project_members (project, username) SELECT name, $2 FROM projects WHERE name = $1",
                )
                .bind(project)
                .bind(&account.username)
                .execute(&mut *tx)
                .await?;
            }
            Ok(true)
        })
        .await
    }

    /// Takes everything from a directory user the directory no longer grants anything: their
    /// memberships, the admin role, and every session begun before `at` (unix microseconds).
    pub async fn revoke_directory_user(&self, username: &str, at: i64) -> Result<(), sqlx::Error> {
        self.transaction(async |tx| {
            sqlx::query(
                "DELETE FROM project_members WHERE username = $1 \
             AND username IN (SELECT username FROM users WHERE source = 'directory')",
            )
            .bind(username)
            .execute(&mut *tx)
            .await?;
            sqlx::query(
                "UPDATE users SET role = 'tenant', sessions_since = $1, synced_at = $1 \
             WHERE username = $2 AND source = 'directory'",
            )
            .bind(at)
            .bind(username)
            .execute(&mut *tx)
            .await?;
            Ok(())
        })
        .await
    }

    /// What deciding whether `username`'s session still signs them in needs; `None` for no
    /// such user.
    pub async fn session_facts(&self, username: &str) -> Result<Option<SessionFacts>, sqlx::Error> {
        let row: Option<(i64, String, i64, Option<String>)> =
            sqlx::query_as("SELECT sessions_since, source, synced_at, locale FROM users WHERE username = $1")
                .bind(username)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.map(|(sessions_since, source, synced_at, locale)| SessionFacts {
            sessions_since,
            directory: source == DIRECTORY,
            synced_at,
            locale: locale.as_deref().and_then(crate::i18n::Locale::of_tag),
        }))
    }

    /// Saves the language `username` chose for the console (a locale's tag).
    pub async fn set_locale(&self, username: &str, locale: &str) -> Result<(), sqlx::Error> {
        sqlx::query("UPDATE users SET locale = $1 WHERE username = $2")
            .bind(locale)
            .bind(username)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Ends every session of `username` that began before `at` (unix microseconds).
    pub async fn end_sessions(&self, username: &str, at: i64) -> Result<(), sqlx::Error> {
        sqlx::query("UPDATE users SET sessions_since = $1 WHERE username = $2")
            .bind(at)
            .bind(username)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Every account with its projects (memberships; an admin's are every project's, so none
    /// are listed), the instant its sessions were last ended (unix microseconds, 0 for never) and
    /// whether it is a directory account.
    pub async fn accounts(&self) -> Result<Vec<(Account, Vec<String>, i64, bool)>, sqlx::Error> {
        let users: Vec<(String, String, String, i64, String)> =
            sqlx::query_as("SELECT username, display_name, role, sessions_since, source FROM users ORDER BY username")
                .fetch_all(&self.pool)
                .await?;
        let members: Vec<(String, String)> =
            sqlx::query_as("SELECT username, project FROM project_members ORDER BY username, project")
                .fetch_all(&self.pool)
                .await?;
        Ok(users
            .into_iter()
            .map(|(username, display_name, role, since, source)| {
                let role = role_of(&role);
                let projects = match role {
                    Role::Admin => Vec::new(),
                    Role::Tenant => members.iter().filter(|(u, _)| *u == username).map(|(_, p)| p.clone()).collect(),
                };
                (Account { username, display_name, role }, projects, since, source == DIRECTORY)
            })
            .collect())
    }

    /// Every project's name.
    pub async fn projects(&self) -> Result<Vec<String>, sqlx::Error> {
        sqlx::query_scalar("SELECT name FROM projects ORDER BY name").fetch_all(&self.pool).await
    }

    /// Creates a project (idempotent).
    pub async fn upsert_project(&self, name: &str, display_name: &str) -> Result<(), sqlx::Error> {
        sqlx::query(
            "INSERT INTO projects (name, display_name) VALUES ($1, $2) \
             ON CONFLICT (name) DO UPDATE SET display_name = excluded.display_name",
        )
        .bind(name)
        .bind(display_name)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Makes `username` a member of `project` (idempotent).
    pub async fn add_member(&self, project: &str, username: &str) -> Result<(), sqlx::Error> {
        sqlx::query("INSERT INTO project_members (project, username) VALUES ($1, $2) ON CONFLICT DO NOTHING")
            .bind(project)
            .bind(username)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Puts `namespace` of `cluster` into `project` (idempotent; a namespace has one project).
    pub async fn assign_namespace(&self, project: &str, cluster: &str, namespace: &str) -> Result<(), sqlx::Error> {
        sqlx::query(
            "INSERT INTO project_namespaces (project, cluster, namespace) VALUES ($1, $2, $3) \
             ON CONFLICT (cluster, namespace) DO UPDATE SET project = excluded.project",
        )
        .bind(project)
        .bind(cluster)
        .bind(namespace)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The projects a user may work in: their memberships, or every project for an admin.
    pub async fn projects_of(&self, account: &Account) -> Result<Vec<String>, sqlx::Error> {
        let rows: Vec<(String,)> = match account.role {
            Role::Admin => sqlx::query_as("SELECT name FROM projects ORDER BY name").fetch_all(&self.pool).await?,
            Role::Tenant => {
                sqlx::query_as("SELECT project FROM project_members WHERE username = $1 ORDER BY project")
                    .bind(&account.username)
                    .fetch_all(&self.pool)
                    .await?
            }
        };
        Ok(rows.into_iter().map(|(p,)| p).collect())
    }

    /// The (cluster, namespace) pairs of a project.
    pub async fn project_scope(&self, project: &str) -> Result<Scope, sqlx::Error> {
        let rows: Vec<(String, String)> = sqlx::query_as(
            "SELECT cluster, namespace FROM project_namespaces WHERE project = $1 ORDER BY cluster, namespace",
        )
        .bind(project)
        .fetch_all(&self.pool)
        .await?;
        Ok(Scope { namespaces: rows })
    }

    /// A server-wide setting.
    pub async fn setting(&self, key: &str) -> Result<Option<String>, sqlx::Error> {
        let row: Option<(String,)> =
            sqlx::query_as("SELECT value FROM settings WHERE key = $1").bind(key).fetch_optional(&self.pool).await?;
        Ok(row.map(|(v,)| v))
    }

    /// Sets a server-wide setting.
    pub async fn set_setting(&self, key: &str, value: &str) -> Result<(), sqlx::Error> {
        sqlx::query(
            "INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        )
        .bind(key)
        .bind(value)
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}
