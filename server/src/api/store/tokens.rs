//! The embedded API's bearer tokens: kept as digests, the user of each cached once read.

use sha2::{Digest, Sha256};

use super::Store;
use crate::api::status::ApiError;

impl Store {
    /// Registers a bearer token for `username` (stored as a digest).
    pub async fn add_token(&self, token: &str, username: &str, now: i64) -> Result<(), ApiError> {
        sqlx::query(
            "INSERT INTO api_tokens (digest, username, created_at) VALUES ($1, $2, $3) ON CONFLICT (digest) DO NOTHING",
        )
        .bind(digest(token))
        .bind(username)
        .bind(now)
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }

    /// The user a bearer token belongs to.
    pub async fn token_user(&self, token: &str) -> Result<Option<String>, ApiError> {
        let digest = digest(token);
        if let Some(user) = self.tokens.lock().ok().and_then(|t| t.get(&digest).cloned()) {
            return Ok(Some(user));
        }
        let row: Option<(String,)> = sqlx::query_as("SELECT username FROM api_tokens WHERE digest = $1")
            .bind(&digest)
            .fetch_optional(&self.db.pool)
            .await?;
        if let (Some((user,)), Ok(mut cache)) = (&row, self.tokens.lock()) {
            cache.insert(digest, user.clone());
        }
        Ok(row.map(|(u,)| u))
    }
}

/// SHA-256 hex digest of a token: the database never holds a usable token.
fn digest(token: &str) -> String {
    Sha256::digest(token.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}
