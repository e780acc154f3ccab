//! Watches: newline-delimited events from a resourceVersion, bookmarks, 410 when too old.

use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use super::selector::{FieldSelector, LabelSelector};
use super::status::ApiError;
use super::store::{Event, EventType, parse_labels};
use super::{Api, Call, Objects, table};

/// How often a watch that allows them gets a bookmark.
const BOOKMARK_EVERY: Duration = Duration::from_secs(5);
/// Longest a watch stays open.
const MAX_TIMEOUT: u64 = 3600;

struct Filter {
    resource: String,
    namespace: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
}

impl Filter {
    /// The event type a watcher with this filter sees, if any: objects entering or leaving a
    /// label selector are seen as ADDED or DELETED.
    fn see(&self, e: &Event) -> Option<EventType> {
        if e.resource != self.resource
            || self.namespace.as_deref().is_some_and(|ns| ns != e.namespace)
            || !self.fields.matches(&e.namespace, &e.name)
        {
            return None;
        }
        let now = self.labels.matches(&e.labels);
        let before = self.labels.matches(&e.prev_labels);
        match (e.type_, before, now) {
            (EventType::Added, _, true) => Some(EventType::Added),
            (EventType::Deleted, _, true) => Some(EventType::Deleted),
            (EventType::Modified, true, true) => Some(EventType::Modified),
            (EventType::Modified, false, true) => Some(EventType::Added),
            (EventType::Modified, true, false) => Some(EventType::Deleted),
            _ => None,
        }
    }
}

fn line(type_: &str, object: Value) -> Bytes {
    let mut text = json!({"type": type_, "object": object}).to_string();
    text.push('\n');
    Bytes::from(text)
}

/// GET with `watch=true`.
pub async fn watch(api: &Api, call: &Call, objects: &Objects) -> Result<Response, ApiError> {
    let kind = objects.kind;
    let filter = Filter {
        resource: kind.resource(),
        namespace: if kind.namespaced { objects.namespace.clone() } else { None },
        labels: LabelSelector::parse(call.param("labelSelector").unwrap_or("")).map_err(ApiError::BadRequest)?,
        fields: FieldSelector::parse(call.param("fieldSelector").unwrap_or("")).map_err(ApiError::BadRequest)?,
    };
    let bookmarks = matches!(call.param("allowWatchBookmarks"), Some("true" | "1"));
    let timeout =
        call.param("timeoutSeconds").and_then(|t| t.parse::<u64>().ok()).unwrap_or(MAX_TIMEOUT).min(MAX_TIMEOUT);
    let as_table = call.table;
    // NB: subscribe before reading the log, so nothing written in between is missed.
    let mut live = api.store.subscribe(&call.cluster);
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    let render = move |type_: EventType, body: &str| -> Option<Bytes> {
        let object: Value = serde_json::from_str(body).ok()?;
        let object = if as_table { table::table(kind, &[object], "") } else { object };
        Some(line(type_.as_str(), object))
    };
    let mut initial = Vec::new();
    let mut sent = match call.param("resourceVersion").filter(|rv| *rv != "0") {
        Some(rv) => rv.parse::<i64>().map_err(|_| ApiError::BadRequest(format!("invalid resourceVersion {rv:?}")))?,
        None => {
            // No version: the current objects first, as ADDED, then what follows.
            let namespace = if kind.namespaced { objects.namespace.as_deref() } else { Some("") };
            let (rv, rows) = api.store.list(&call.cluster, &filter.resource, namespace, None).await?;
            initial.extend(
                rows.iter()
                    .filter(|r| {
                        filter.fields.matches(&r.namespace, &r.name) && filter.labels.matches(&parse_labels(&r.labels))
                    })
                    .filter_map(|r| render(EventType::Added, &r.body)),
            );
            rv
        }
    };
    let backlog = match api.store.events_since(&call.cluster, &filter.resource, sent).await {
        Ok(events) => events,
        Err(ApiError::Gone(message)) => {
            let status = ApiError::Gone(message).status();
            let _ = tx.try_send(line("ERROR", status));
            drop(tx);
            return Ok(stream(rx));
        }
        Err(e) => return Err(e),
    };
    let bookmark = move |rv: i64| {
        line(
            "BOOKMARK",
            json!({"apiVersion": kind.api_version(), "kind": kind.kind, "metadata": {"resourceVersion": rv.to_string()}}),
        )
    };
    tokio::spawn(async move {
        for bytes in initial {
            if tx.send(bytes).await.is_err() {
                return;
            }
        }
        for e in backlog {
            sent = e.rv;
            if let Some(t) = filter.see(&e)
                && let Some(bytes) = render(t, &e.body)
                && tx.send(bytes).await.is_err()
            {
                return;
            }
        }
        let deadline = tokio::time::sleep(Duration::from_secs(timeout));
        tokio::pin!(deadline);
        let mut ticks = tokio::time::interval(BOOKMARK_EVERY);
        ticks.tick().await;
        loop {
            let next = tokio::select! {
                _ = &mut deadline => return,
                _ = tx.closed() => return,
                _ = ticks.tick(), if bookmarks => {
                    if tx.send(bookmark(sent)).await.is_err() { return; }
                    continue;
                }
                e = live.recv() => e,
            };
            match next {
                Ok(e) if e.rv <= sent => continue,
                Ok(e) => {
                    sent = e.rv;
                    if let Some(t) = filter.see(&e)
                        && let Some(bytes) = render(t, &e.body)
                        && tx.send(bytes).await.is_err()
                    {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    let status =
                        ApiError::Gone(format!("the watch fell behind after resource version {sent}")).status();
                    let _ = tx.send(line("ERROR", status)).await;
                    return;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    });
    Ok(stream(rx))
}

fn stream(rx: mpsc::Receiver<Bytes>) -> Response {
    use tokio_stream::StreamExt;
    let body =
        Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx).map(Ok::<_, std::convert::Infallible>));
    Response::builder().header(http::header::CONTENT_TYPE, "application/json").body(body).unwrap_or_default()
}
