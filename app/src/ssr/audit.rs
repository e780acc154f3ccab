//! The audit log in SQL: who changed which object how, with the object before and after.
//! Secrets are redacted here, before anything is written, whatever path the change took.

mod pending;
mod query;

use serde_json::Value;

use super::db::Db;
pub use pending::digest;
pub use query::{Cursor, Filter, PAGE, Page, Projects, Record};

/// The path a change came through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// A server function, on behalf of the signed-in user.
    Page,
    /// The embedded API, on behalf of its token's user.
    Api,
    /// A write admission saw (a `kubectl` user in cluster mode).
    Admission,
}

impl Via {
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Page => "page",
            Via::Api => "api",
            Via::Admission => "admission",
        }
    }
}

/// One change.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub user: String,
    pub via: Via,
    /// create, update, delete, enable, disable, …
    pub action: String,
    /// The object's kind: Loadbalancer, Lbticket, Lbrule, …
    pub kind: String,
    pub name: String,
    /// The project the object belongs to, if any (tenants see their projects' entries).
    pub project: Option<String>,
    pub before: Option<Value>,
    pub after: Option<Value>,
    /// The version the change committed, when it is an object's: one entry per version.
    pub version: Option<Version>,
}

/// The version a change of an object committed: its cluster and the `resourceVersion` the
/// store gave it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version {
    pub cluster: String,
    pub rv: i64,
}

/// What replaces a secret value.
pub const REDACTED: &str = "[redacted]";

/// The annotation `kubectl apply` keeps the whole applied object in (a Secret's data included).
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// `object` with every secret value replaced: the values of a Secret's `data` and `stringData`,
/// any string under a key that names a password, token or credential, and `kubectl apply`'s
/// copy of the object. References to Secrets (objects, not strings) stay readable. The
/// server's bookkeeping (`managedFields`) is left out: it says nothing about the change.
pub fn redact(object: &Value) -> Value {
    fn walk(v: &mut Value, secret_data: bool) {
        match v {
            Value::Object(map) => {
                for (key, value) in map.iter_mut() {
                    let k = key.to_ascii_lowercase();
                    let whole = secret_data && (k == "data" || k == "stringdata");
                    let named = ["password", "token", "credential", "secret"].iter().any(|s| k.contains(s));
                    match value {
                        Value::Object(inner) if whole => {
                            inner.values_mut().for_each(|x| *x = Value::String(REDACTED.into()))
                        }
                        Value::String(_) if named || whole => *value = Value::String(REDACTED.into()),
                        other => walk(other, false),
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|x| walk(x, false)),
            _ => {}
        }
    }
    let mut out = object.clone();
    let is_secret = out.get("kind").and_then(Value::as_str) == Some("Secret");
    if let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
        if let Some(copy) = meta.get_mut("annotations").and_then(|a| a.get_mut(LAST_APPLIED)) {
            *copy = Value::String(REDACTED.into());
        }
    }
    walk(&mut out, is_secret);
    out
}

fn json_or_empty(v: &Option<Value>) -> String {
    v.as_ref().map(|v| redact(v).to_string()).unwrap_or_default()
}

/// A time as the log stores it: unix microseconds.
pub fn micros(t: time::OffsetDateTime) -> i64 {
    (t.unix_timestamp_nanos() / 1_000) as i64
}

impl Db {
    /// Writes one entry, redacted, as of now.
    pub async fn audit(&self, e: &Entry) -> Result<(), sqlx::Error> {
        self.audit_at(e, time::OffsetDateTime::now_utc()).await
    }

    /// Writes one entry, redacted, as of `at`.
    pub async fn audit_at(&self, e: &Entry, at: time::OffsetDateTime) -> Result<(), sqlx::Error> {
        let mut conn = self.pool.acquire().await?;
        insert(&mut conn, e, at).await
    }
}

/// Writes one entry, redacted, as of `at`, on `conn` (in the transaction that stores the change,
/// for the embedded API). An entry of a version already recorded is not written again.
pub async fn insert(conn: &mut sqlx::AnyConnection, e: &Entry, at: time::OffsetDateTime) -> Result<(), sqlx::Error> {
    let (cluster, rv) = e.version.as_ref().map_or((String::new(), None), |v| (v.cluster.clone(), Some(v.rv)));
    let query = sqlx::query(
        "INSERT INTO audit (id, at, username, via, action, kind, name, project, before, after, cluster, rv) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT DO NOTHING",
    );
    bind_entry(query, e, at).bind(json_or_empty(&e.after)).bind(cluster).bind(rv).execute(conn).await?;
    Ok(())
}

/// `query` with what the log and its pending entries both keep of `e`, as of `at`, under a new
/// id: `id, at, username, via, action, kind, name, project, before`, in that order.
fn bind_entry<'q>(
    query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    e: &'q Entry,
    at: time::OffsetDateTime,
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    query
        .bind(format!("{:032x}", rand::random::<u128>()))
        .bind(micros(at))
        .bind(&e.user)
        .bind(e.via.as_str())
        .bind(&e.action)
        .bind(&e.kind)
        .bind(&e.name)
        .bind(e.project.clone().unwrap_or_default())
        .bind(json_or_empty(&e.before))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_redacted_and_references_kept() {
        let lb = json!({
            "kind": "Loadbalancer",
            "spec": {"ltm": {"url": "https://ltm", "tokenSecretRef": {"namespace": "lbdesk-system", "name": "x-ltm"}}},
            "form": {"ltm_token": "s3cret", "ve_password": "pw", "ve_user": "admin"}
        });
        let out = redact(&lb);
        assert_eq!(out["spec"]["ltm"]["tokenSecretRef"]["name"], "x-ltm");
        assert_eq!(out["form"]["ltm_token"], REDACTED);
        assert_eq!(out["form"]["ve_password"], REDACTED);
        assert_eq!(out["form"]["ve_user"], "admin");
        let secret = json!({"kind": "Secret", "metadata": {"name": "x-ve"}, "data": {"user": "YWRt", "password": "cHc="}, "stringData": {"token": "t"}});
        let out = redact(&secret);
        assert_eq!(out["data"]["user"], REDACTED);
        assert_eq!(out["data"]["password"], REDACTED);
        assert_eq!(out["stringData"]["token"], REDACTED);
        assert_eq!(out["metadata"]["name"], "x-ve");
        assert!(!out.to_string().contains("cHc=") && !out.to_string().contains("s3cret"));
    }

    #[test]
    fn kubectl_applys_copy_of_a_secret_is_redacted_and_managed_fields_left_out() {
        let applied = r#"{"kind":"Secret","stringData":{"token":"s3cret"}}"#;
        let secret = json!({
            "kind": "Secret",
            "metadata": {"name": "x", "annotations": {LAST_APPLIED: applied, "team": "a"}, "managedFields": [{"manager": "kubectl"}]},
            "stringData": {"token": "s3cret"}
        });
        let out = redact(&secret);
        assert_eq!(out["metadata"]["annotations"][LAST_APPLIED], REDACTED);
        assert_eq!(out["metadata"]["annotations"]["team"], "a");
        assert!(out["metadata"].get("managedFields").is_none());
        assert!(!out.to_string().contains("s3cret"), "{out}");
    }
}
