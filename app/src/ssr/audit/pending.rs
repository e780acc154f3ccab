//! Cluster mode: a `kubectl` write the webhook allowed is recorded once the management
//! cluster's watch shows it committed, with the version it committed, and only then. The webhook
//! sees the write before the API server stores it (the store may still refuse it, and the API
//! server may ask again for the same write), so it leaves the entry pending; the watch of the
//! object confirms it. A pending entry whose commit never shows is dropped.

use serde_json::Value;

use super::{Entry, Version, bind_entry, redact};
use crate::ssr::db::Db;

/// What a write leaves an object as, for matching a pending entry with the commit the watch
/// shows: the hash of its spec, labels and annotations, keys in order (what the API server
/// adds, its version, status and bookkeeping, left out).
pub fn digest(object: &Value) -> String {
    fn canonical(v: &Value) -> Value {
        match v {
            Value::Object(map) => {
                let sorted: std::collections::BTreeMap<&String, Value> =
                    map.iter().map(|(k, v)| (k, canonical(v))).collect();
                serde_json::to_value(sorted).unwrap_or_default()
            }
            Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
            other => other.clone(),
        }
    }
    let meta = &object["metadata"];
    let what =
        serde_json::json!({"spec": object["spec"], "labels": meta["labels"], "annotations": meta["annotations"]});
    format!("{:016x}", crate::domain::hash::fnv1a(canonical(&what).to_string().as_bytes()))
}

impl Db {
    /// Leaves the entry of a write the webhook allowed pending, as of `at`: a delete's (no
    /// object after it), or a write leaving the object as `digest` says.
    pub async fn audit_pending(&self, e: &Entry, digest: &str, at: time::OffsetDateTime) -> Result<(), sqlx::Error> {
        let query = sqlx::query(
            "INSERT INTO audit_pending (id, at, username, via, action, kind, name, project, before, digest) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        );
        bind_entry(query, e, at).bind(digest).execute(&self.pool).await?;
        Ok(())
    }

    /// Records the pending entry the commit of `kind` `name` at `version` answers (the oldest
    /// of a write leaving it as `object` is, or of a delete when `object` is `None`): its entry,
    /// with that version and the object as stored; the same write asked for again is answered
    /// too. Whether one was pending.
    pub async fn confirm(
        &self,
        kind: &str,
        name: &str,
        version: &Version,
        object: Option<&Value>,
    ) -> Result<bool, sqlx::Error> {
        let digest = object.map(digest);
        self.transaction(async |tx| {
            let pending: Option<(String, i64, String, String, String, String, String)> = sqlx::query_as(
                "SELECT id, at, username, via, action, project, before FROM audit_pending \
                 WHERE kind = $1 AND name = $2 AND (($3 = '' AND action = 'delete') OR digest = $3) \
                 ORDER BY at LIMIT 1",
            )
            .bind(kind)
            .bind(name)
            .bind(digest.clone().unwrap_or_default())
            .fetch_optional(&mut *tx)
            .await?;
            let Some((id, at, user, via, action, project, before)) = pending else { return Ok(false) };
            let after = object.map(|o| redact(o).to_string()).unwrap_or_default();
            sqlx::query(
                "INSERT INTO audit (id, at, username, via, action, kind, name, project, before, after, cluster, rv) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT DO NOTHING",
            )
            .bind(&id)
            .bind(at)
            .bind(user)
            .bind(via)
            .bind(action)
            .bind(kind)
            .bind(name)
            .bind(project)
            .bind(before)
            .bind(after)
            .bind(&version.cluster)
            .bind(version.rv)
            .execute(&mut *tx)
            .await?;
            // NB: the same write asked for again (the API server's retry) is this commit too.
            sqlx::query(
                "DELETE FROM audit_pending WHERE kind = $1 AND name = $2 \
                 AND (($3 = '' AND action = 'delete') OR digest = $3)",
            )
            .bind(kind)
            .bind(name)
            .bind(digest.clone().unwrap_or_default())
            .execute(&mut *tx)
            .await?;
            Ok(true)
        })
        .await
    }

    /// Drops the pending entries older than `before` (unix microseconds): writes the API server
    /// never stored. How many.
    pub async fn expire_pending(&self, before: i64) -> Result<u64, sqlx::Error> {
        let gone = sqlx::query("DELETE FROM audit_pending WHERE at < $1").bind(before).execute(&self.pool).await?;
        Ok(gone.rows_affected())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_commit_matches_the_write_as_allowed_whatever_the_server_added() {
        let allowed = json!({"metadata": {"name": "t", "labels": {"b": "2", "a": "1"}}, "spec": {"z": 1, "a": [1, 2]}});
        let stored = json!({
            "apiVersion": "ebcpaas.io/v1",
            "metadata": {"name": "t", "resourceVersion": "42", "uid": "u", "labels": {"a": "1", "b": "2"}, "managedFields": []},
            "spec": {"a": [1, 2], "z": 1},
            "status": {"phase": "Created"}
        });
        assert_eq!(digest(&allowed), digest(&stored));
        let other = json!({"metadata": {"name": "t", "labels": {"a": "1", "b": "2"}}, "spec": {"a": [2, 1], "z": 1}});
        assert_ne!(digest(&allowed), digest(&other), "another spec is another write");
    }
}
