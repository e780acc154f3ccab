//! tower-sessions storage in lbdesk's own database (SQLite or PostgreSQL), so sessions
//! survive restarts and are shared by replicas.
//!
//! NB: the published sqlx stores each take one concrete pool type; lbdesk runs on sqlx's
//! `Any` pool, hence this small adapter.

use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{self, ExpiredDeletion, SessionStore};

use super::db::Db;

/// Sessions in the `sessions` table.
#[derive(Clone, Debug)]
pub struct SqlSessionStore {
    db: Db,
}

impl SqlSessionStore {
    pub fn new(db: Db) -> Self {
        Self { db }
    }
}

fn backend(e: sqlx::Error) -> session_store::Error {
    session_store::Error::Backend(e.to_string())
}

#[async_trait::async_trait]
impl SessionStore for SqlSessionStore {
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        // A fresh id collides only by astronomic chance; draw again if it does.
        loop {
            let data = serde_json::to_string(&record.data).map_err(|e| session_store::Error::Encode(e.to_string()))?;
            let inserted = sqlx::query(
                "INSERT INTO sessions (id, data, expiry_date) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING",
            )
            .bind(record.id.to_string())
            .bind(data)
            .bind(record.expiry_date.unix_timestamp())
            .execute(&self.db.pool)
            .await
            .map_err(backend)?;
            if inserted.rows_affected() == 1 {
                return Ok(());
            }
            record.id = Id::default();
        }
    }

    async fn save(&self, record: &Record) -> session_store::Result<()> {
        let data = serde_json::to_string(&record.data).map_err(|e| session_store::Error::Encode(e.to_string()))?;
        sqlx::query(
            "INSERT INTO sessions (id, data, expiry_date) VALUES ($1, $2, $3) \
             ON CONFLICT (id) DO UPDATE SET data = excluded.data, expiry_date = excluded.expiry_date",
        )
        .bind(record.id.to_string())
        .bind(data)
        .bind(record.expiry_date.unix_timestamp())
        .execute(&self.db.pool)
        .await
        .map_err(backend)?;
        Ok(())
    }

    async fn load(&self, id: &Id) -> session_store::Result<Option<Record>> {
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        let row: Option<(String, i64)> =
            sqlx::query_as("SELECT data, expiry_date FROM sessions WHERE id = $1 AND expiry_date > $2")
                .bind(id.to_string())
                .bind(now)
                .fetch_optional(&self.db.pool)
                .await
                .map_err(backend)?;
        let Some((data, expiry)) = row else {
            return Ok(None);
        };
        let data = serde_json::from_str(&data).map_err(|e| session_store::Error::Decode(e.to_string()))?;
        let expiry_date = time::OffsetDateTime::from_unix_timestamp(expiry)
            .map_err(|e| session_store::Error::Decode(e.to_string()))?;
        Ok(Some(Record { id: *id, data, expiry_date }))
    }

    async fn delete(&self, id: &Id) -> session_store::Result<()> {
        sqlx::query("DELETE FROM sessions WHERE id = $1")
            .bind(id.to_string())
            .execute(&self.db.pool)
            .await
            .map_err(backend)?;
        Ok(())
    }
}

#[async_trait::async_trait]
impl ExpiredDeletion for SqlSessionStore {
    async fn delete_expired(&self) -> session_store::Result<()> {
        sqlx::query("DELETE FROM sessions WHERE expiry_date <= $1")
            .bind(time::OffsetDateTime::now_utc().unix_timestamp())
            .execute(&self.db.pool)
            .await
            .map_err(backend)?;
        Ok(())
    }
}
