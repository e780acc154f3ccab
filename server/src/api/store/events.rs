//! A cluster's watch events: the in-process feed a watch follows, and the event log it resumes
//! from.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::sync::broadcast;

use super::{Store, parse_labels};
use crate::api::status::ApiError;

/// The kind of a watch event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }

    fn parse(s: &str) -> EventType {
        match s {
            "ADDED" => EventType::Added,
            "DELETED" => EventType::Deleted,
            _ => EventType::Modified,
        }
    }
}

/// One entry of a cluster's event log.
#[derive(Clone, Debug)]
pub struct Event {
    pub rv: i64,
    pub resource: String,
    pub namespace: String,
    pub name: String,
    pub type_: EventType,
    pub labels: BTreeMap<String, String>,
    /// Labels before a modification, so a selector watch can tell an object left it.
    pub prev_labels: BTreeMap<String, String>,
    pub body: Arc<str>,
}

impl Store {
    /// The live feed of a cluster's events.
    pub fn subscribe(&self, cluster: &str) -> broadcast::Receiver<Arc<Event>> {
        let mut feeds = self.feeds.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        feeds.entry(cluster.to_string()).or_insert_with(|| broadcast::channel(8192).0).subscribe()
    }

    /// Logged events of `resource` after `since`; `Gone` when the log no longer reaches back.
    pub async fn events_since(&self, cluster: &str, resource: &str, since: i64) -> Result<Vec<Event>, ApiError> {
        let (_, compacted) = self.versions(cluster).await?;
        if since < compacted {
            return Err(ApiError::Gone(format!("too old resource version: {since} ({compacted})")));
        }
        let rows: Vec<(i64, String, String, String, String, String, String)> = sqlx::query_as(
            "SELECT rv, namespace, name, type, labels, prev_labels, body FROM k8s_events \
             WHERE cluster = $1 AND resource = $2 AND rv > $3 ORDER BY rv",
        )
        .bind(cluster)
        .bind(resource)
        .bind(since)
        .fetch_all(&self.db.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|(rv, namespace, name, t, labels, prev, body)| Event {
                rv,
                resource: resource.to_string(),
                namespace,
                name,
                type_: EventType::parse(&t),
                labels: parse_labels(&labels),
                prev_labels: parse_labels(&prev),
                body: body.into(),
            })
            .collect())
    }
}
