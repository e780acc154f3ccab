//! Objects of the embedded API in SQL: one resourceVersion sequence and one event log per
//! cluster. Writes are serialised in this process (so resourceVersions follow commit order)
//! and announced on an in-process feed that watches follow; the event log lets a watch resume.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use app::ssr::audit::{self, Entry, Version};
use app::ssr::db::Db;
use serde_json::Value;
use tokio::sync::broadcast;

use super::object;
use super::status::ApiError;

mod events;
mod tokens;

pub use events::{Event, EventType};

/// Where an object lives.
#[derive(Clone, Copy, Debug)]
pub struct Key<'a> {
    pub cluster: &'a str,
    /// `plural` or `plural.group`.
    pub resource: &'a str,
    /// `""` for cluster-scoped objects.
    pub namespace: &'a str,
    pub name: &'a str,
}

/// What a write does to the current object.
#[derive(Debug)]
pub enum Change {
    /// Store this object (created or replaced).
    Put(Value),
    /// Remove the object.
    Delete,
}

/// A stored object as listed.
#[derive(Clone, Debug)]
pub struct Row {
    pub namespace: String,
    pub name: String,
    pub labels: String,
    pub body: String,
}

/// The resourceVersions of a cluster: the last handed out, the newest dropped from the log.
#[derive(Clone, Copy, Debug, Default)]
struct Versions {
    last: i64,
    compacted: i64,
}

/// The SQL store of every simulated cluster.
///
/// NB: one process serves the embedded API (it hands out resourceVersions under its own
/// lock), so the versions and the accepted tokens are kept in memory once read.
pub struct Store {
    db: Db,
    /// Serialises writes; holds the clusters' versions.
    write: Arc<tokio::sync::Mutex<HashMap<String, Versions>>>,
    /// A copy of the versions for readers (lists, watches), updated after each commit.
    versions: Arc<Mutex<HashMap<String, Versions>>>,
    tokens: Mutex<HashMap<String, String>>,
    feeds: Arc<Mutex<HashMap<String, broadcast::Sender<Arc<Event>>>>>,
    /// How many events each cluster's log keeps; older resourceVersions answer 410 Gone.
    history: i64,
    /// One writer at a time of each object (`Store::hold`).
    held: Mutex<HashMap<String, std::sync::Weak<tokio::sync::Mutex<()>>>>,
}

fn labels_text(labels: &BTreeMap<String, String>) -> String {
    serde_json::to_string(labels).unwrap_or_else(|_| "{}".into())
}

/// Parses a labels column.
pub fn parse_labels(text: &str) -> BTreeMap<String, String> {
    serde_json::from_str(text).unwrap_or_default()
}

/// Writes `event`'s object (or deletes it) and the event itself in one transaction, compacting
/// the log now and then; returns the cluster's versions after it.
async fn commit(
    db: &Db,
    cluster: &str,
    event: &Event,
    audit: Option<&Entry>,
    versions: Versions,
    history: i64,
) -> Result<Versions, ApiError> {
    let rv = event.rv;
    let floor = rv - history;
    // NB: the last version needs no write of its own: the event carries it. The row is
    // updated when the log is compacted, which must be durable.
    let compact = floor > versions.compacted && rv % 64 == 0;
    db.transaction(async |tx| {
        if event.type_ == EventType::Deleted {
            sqlx::query("DELETE FROM k8s_objects WHERE cluster = $1 AND resource = $2 AND namespace = $3 AND name = $4")
                .bind(cluster)
                .bind(&event.resource)
                .bind(&event.namespace)
                .bind(&event.name)
                .execute(&mut *tx)
                .await?;
        } else {
            sqlx::query(
                "INSERT INTO k8s_objects (cluster, resource, namespace, name, rv, labels, body) VALUES ($1, $2, $3, $4, $5, $6, $7) \
                 ON CONFLICT (cluster, resource, namespace, name) DO UPDATE SET rv = excluded.rv, labels = excluded.labels, body = excluded.body",
            )
            .bind(cluster)
            .bind(&event.resource)
            .bind(&event.namespace)
            .bind(&event.name)
            .bind(rv)
            .bind(labels_text(&event.labels))
            .bind(&*event.body)
            .execute(&mut *tx)
            .await?;
        }
        sqlx::query(
            "INSERT INTO k8s_events (cluster, rv, resource, namespace, name, type, labels, prev_labels, body) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(cluster)
        .bind(rv)
        .bind(&event.resource)
        .bind(&event.namespace)
        .bind(&event.name)
        .bind(event.type_.as_str())
        .bind(labels_text(&event.labels))
        .bind(labels_text(&event.prev_labels))
        .bind(&*event.body)
        .execute(&mut *tx)
        .await?;
        if let Some(entry) = audit {
            audit::insert(tx, entry, time::OffsetDateTime::now_utc()).await?;
        }
        if compact {
            sqlx::query("DELETE FROM k8s_events WHERE cluster = $1 AND rv <= $2")
                .bind(cluster)
                .bind(floor)
                .execute(&mut *tx)
                .await?;
            sqlx::query("UPDATE k8s_clusters SET last_rv = $2, compacted = $3 WHERE name = $1")
                .bind(cluster)
                .bind(rv)
                .bind(floor)
                .execute(&mut *tx)
                .await?;
        }
        Ok(())
    })
    .await?;
    Ok(Versions { last: rv, compacted: if compact { floor } else { versions.compacted } })
}

impl Store {
    pub fn new(db: Db, history: i64) -> Store {
        Store {
            db,
            write: Arc::default(),
            versions: Arc::default(),
            tokens: Mutex::new(HashMap::new()),
            feeds: Arc::default(),
            history: history.max(1),
            held: Mutex::default(),
        }
    }

    /// Waits until no one else writes the object at `key`, and holds it until the guard drops:
    /// a writer reads, decides and stores while the others wait their turn, instead of trying
    /// again every time one of them stored first (60 writers of one object took 1,763 tries).
    pub async fn hold(&self, key: &Key<'_>) -> tokio::sync::OwnedMutexGuard<()> {
        let name = format!("{}/{}/{}/{}", key.cluster, key.resource, key.namespace, key.name);
        let lock = {
            let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
            held.retain(|_, lock| lock.strong_count() > 0);
            match held.get(&name).and_then(std::sync::Weak::upgrade) {
                Some(lock) => lock,
                None => {
                    let lock = Arc::new(tokio::sync::Mutex::new(()));
                    held.insert(name, Arc::downgrade(&lock));
                    lock
                }
            }
        };
        lock.lock_owned().await
    }

    /// Reads a cluster's versions from the database: the stored ones, raised to the newest
    /// version any event or object carries (they are written in the same transaction).
    async fn load_versions(&self, cluster: &str) -> Result<Option<Versions>, ApiError> {
        let row: Option<(i64, i64)> = sqlx::query_as("SELECT last_rv, compacted FROM k8s_clusters WHERE name = $1")
            .bind(cluster)
            .fetch_optional(&self.db.pool)
            .await?;
        let Some((last, compacted)) = row else { return Ok(None) };
        let (events,): (Option<i64>,) = sqlx::query_as("SELECT MAX(rv) FROM k8s_events WHERE cluster = $1")
            .bind(cluster)
            .fetch_one(&self.db.pool)
            .await?;
        let (objects,): (Option<i64>,) = sqlx::query_as("SELECT MAX(rv) FROM k8s_objects WHERE cluster = $1")
            .bind(cluster)
            .fetch_one(&self.db.pool)
            .await?;
        Ok(Some(Versions { last: last.max(events.unwrap_or(0)).max(objects.unwrap_or(0)), compacted }))
    }

    fn cached(&self, cluster: &str) -> Option<Versions> {
        self.versions.lock().ok().and_then(|v| v.get(cluster).copied())
    }

    /// The database (for the health check and the benchmarks' direct baseline).
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Creates a cluster if it does not exist.
    pub async fn ensure_cluster(&self, name: &str) -> Result<(), ApiError> {
        sqlx::query(
            "INSERT INTO k8s_clusters (name, last_rv, compacted) VALUES ($1, 0, 0) ON CONFLICT (name) DO NOTHING",
        )
        .bind(name)
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }

    /// Whether a cluster exists.
    pub async fn has_cluster(&self, name: &str) -> Result<bool, ApiError> {
        Ok(self.versions(name).await.is_ok())
    }

    /// The latest resourceVersion of a cluster, and the newest one compacted away.
    pub async fn versions(&self, cluster: &str) -> Result<(i64, i64), ApiError> {
        if let Some(v) = self.cached(cluster) {
            return Ok((v.last, v.compacted));
        }
        let v = self
            .load_versions(cluster)
            .await?
            .ok_or_else(|| ApiError::NotFound { kind: "cluster".into(), name: cluster.into() })?;
        if let Ok(mut cache) = self.versions.lock() {
            cache.entry(cluster.to_string()).or_insert(v);
        }
        Ok((v.last, v.compacted))
    }

    /// One column of one object's row.
    async fn column<T>(&self, key: &Key<'_>, column: &'static str) -> Result<Option<T>, ApiError>
    where
        (T,): for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + Send + Unpin,
    {
        let row: Option<(T,)> = sqlx::query_as(&format!(
            "SELECT {column} FROM k8s_objects WHERE cluster = $1 AND resource = $2 AND namespace = $3 AND name = $4"
        ))
        .bind(key.cluster)
        .bind(key.resource)
        .bind(key.namespace)
        .bind(key.name)
        .fetch_optional(&self.db.pool)
        .await?;
        Ok(row.map(|(value,)| value))
    }

    /// One object.
    pub async fn get(&self, key: &Key<'_>) -> Result<Option<Value>, ApiError> {
        self.body(key)
            .await?
            .map(|body| serde_json::from_str(&body).map_err(|e| ApiError::internal("a stored object is not JSON", e)))
            .transpose()
    }

    /// One object, in JSON as stored.
    pub async fn body(&self, key: &Key<'_>) -> Result<Option<String>, ApiError> {
        self.column(key, "body").await
    }

    /// The resourceVersion of one object.
    async fn version(&self, key: &Key<'_>) -> Result<Option<i64>, ApiError> {
        self.column(key, "rv").await
    }

    /// Objects of a resource in (cluster, namespace or all), ordered by (namespace, name),
    /// starting after `after`; with the cluster's resourceVersion read before the rows.
    pub async fn list(
        &self,
        cluster: &str,
        resource: &str,
        namespace: Option<&str>,
        after: Option<(&str, &str)>,
    ) -> Result<(i64, Vec<Row>), ApiError> {
        // NB: the version is read first: a write landing in between is listed and replayed
        // by a watch from this version, never lost.
        let (rv, _) = self.versions(cluster).await?;
        let (after_ns, after_name) = after.unwrap_or(("", ""));
        let rows: Vec<(String, String, String, String)> = sqlx::query_as(
            "SELECT namespace, name, labels, body FROM k8s_objects \
             WHERE cluster = $1 AND resource = $2 AND ($3 = '*' OR namespace = $3) \
             AND (namespace > $4 OR (namespace = $4 AND name > $5)) \
             ORDER BY namespace, name",
        )
        .bind(cluster)
        .bind(resource)
        .bind(namespace.unwrap_or("*"))
        .bind(after_ns)
        .bind(after_name)
        .fetch_all(&self.db.pool)
        .await?;
        Ok((
            rv,
            rows.into_iter().map(|(namespace, name, labels, body)| Row { namespace, name, labels, body }).collect(),
        ))
    }

    /// Whether any object of `resource` is left in a namespace.
    pub async fn namespace_has_objects(&self, cluster: &str, namespace: &str) -> Result<bool, ApiError> {
        let row: Option<(String,)> =
            sqlx::query_as("SELECT name FROM k8s_objects WHERE cluster = $1 AND namespace = $2 LIMIT 1")
                .bind(cluster)
                .bind(namespace)
                .fetch_optional(&self.db.pool)
                .await?;
        Ok(row.is_some())
    }

    /// Reads the current object, lets `decide` choose the change, and applies it atomically
    /// with a new resourceVersion and an event. A `Put` equal to the current object (but for
    /// its resourceVersion) changes nothing and makes no event. Returns the object as stored
    /// (or as it was when deleted), in JSON.
    pub async fn write(
        &self,
        key: &Key<'_>,
        decide: impl FnOnce(Option<&Value>) -> Result<Change, ApiError>,
    ) -> Result<Arc<str>, ApiError> {
        self.write_after(key, None, decide).await
    }

    /// `write`, for a caller that has just read the object: while it is still at the version
    /// read, it is not read and parsed again (a Loadbalancer holding 2,000 pairs is 150 KB).
    pub async fn write_after(
        &self,
        key: &Key<'_>,
        read: Option<Value>,
        decide: impl FnOnce(Option<&Value>) -> Result<Change, ApiError>,
    ) -> Result<Arc<str>, ApiError> {
        self.write_audited(key, read, None, decide).await
    }

    /// `write_after`, recording `audit` in the transaction that stores the change: its `before`
    /// and `after` the object as it was and as stored (what `after` held is noted beside it),
    /// its version the one stored. A write that changes nothing, or does not commit, records
    /// nothing.
    pub async fn write_audited(
        &self,
        key: &Key<'_>,
        read: Option<Value>,
        audit: Option<Entry>,
        decide: impl FnOnce(Option<&Value>) -> Result<Change, ApiError>,
    ) -> Result<Arc<str>, ApiError> {
        let serialised = self.write.clone().lock_owned().await;
        let versions = match serialised.get(key.cluster) {
            Some(v) => *v,
            None => self
                .load_versions(key.cluster)
                .await?
                .ok_or_else(|| ApiError::NotFound { kind: "cluster".into(), name: key.cluster.into() })?,
        };
        let current = match read {
            Some(read) if self.version(key).await? == object::resource_version(&read) => Some(read),
            _ => self.get(key).await?,
        };
        let prev_labels = current.as_ref().map(object::labels).unwrap_or_default();
        let change = decide(current.as_ref())?;
        let (mut object, type_, before) = match (change, current) {
            (Change::Put(new), Some(cur)) if object::same_but_version(&new, &cur) => {
                return Ok(cur.to_string().into());
            }
            (Change::Put(new), None) => (new, EventType::Added, None),
            (Change::Put(new), Some(cur)) => (new, EventType::Modified, Some(cur)),
            (Change::Delete, Some(cur)) => (cur.clone(), EventType::Deleted, Some(cur)),
            (Change::Delete, None) => {
                return Err(ApiError::NotFound { kind: key.resource.into(), name: key.name.into() });
            }
        };
        let rv = versions.last + 1;
        object::set_resource_version(&mut object, rv);
        let audit = audit.map(|mut entry| {
            let noted = entry.after.take();
            entry.after = (type_ != EventType::Deleted).then(|| noting(object.clone(), noted));
            entry.before = before;
            entry.version = Some(Version { cluster: key.cluster.to_string(), rv });
            entry
        });
        let labels = object::labels(&object);
        let body: Arc<str> = object.to_string().into();
        let event = Event {
            rv,
            resource: key.resource.into(),
            namespace: key.namespace.into(),
            name: key.name.into(),
            type_,
            labels,
            prev_labels,
            body,
        };
        let cluster = key.cluster.to_string();
        let (db, history, cache, feeds) = (self.db.clone(), self.history, self.versions.clone(), self.feeds.clone());
        // NB: committed and published on a task of its own, holding the write lock: a request
        // whose client goes away (its handler dropped) cannot leave a write committed but its
        // version not counted, or its event not sent.
        let commit = tokio::spawn(async move {
            let mut serialised = serialised;
            let next = commit(&db, &cluster, &event, audit.as_ref(), versions, history).await?;
            serialised.insert(cluster.clone(), next);
            if let Ok(mut cache) = cache.lock() {
                cache.insert(cluster.clone(), next);
            }
            let body = event.body.clone();
            // NB: sent while still serialised, so every watcher sees events in resourceVersion order.
            if let Some(feed) = feeds.lock().ok().and_then(|f| f.get(&cluster).cloned()) {
                let _ = feed.send(Arc::new(event));
            }
            Ok::<_, ApiError>(body)
        });
        commit.await.map_err(|e| ApiError::internal("a write was interrupted", e))?
    }
}

/// `object` with the fields of `note` (what a page notes beside the object) added.
fn noting(mut object: Value, note: Option<Value>) -> Value {
    if let (Some(fields), Some(Value::Object(note))) = (object.as_object_mut(), note) {
        fields.extend(note);
    }
    object
}
