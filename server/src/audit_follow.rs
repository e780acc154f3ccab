//! Cluster mode: the `kubectl` writes the webhook allowed become audit entries when the
//! management cluster's watch shows them committed, each with the version it committed: once per
//! committed change, never per try (the API server may ask the webhook again for one write),
//! never for a write the API server then did not store. (The webhook leaves the entries pending:
//! `admission::review`; they are matched here: `Db::confirm`.)
//!
//! NB: every replica follows; the first to record an entry records it, the entry naming its
//! version, which the audit log holds once.

use std::time::Duration;

use app::domain::crd::{Lbquota, Lbrule, Lbticket, Loadbalancer};
use app::ssr::audit::Version;
use app::ssr::db::Db;
use futures::StreamExt;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, watcher as watch};
use kube::{Api, Resource, ResourceExt};

/// How long an allowed write may take to show committed before its entry is dropped.
const PENDING_FOR: Duration = Duration::from_secs(600);

/// Follows the management cluster (`client`, named `mgmt`) until the task is dropped.
pub async fn follow(db: Db, client: kube::Client, mgmt: String) {
    let expiry = async {
        let mut every_minute = tokio::time::interval(Duration::from_secs(60));
        loop {
            every_minute.tick().await;
            let before = app::ssr::now_micros() - PENDING_FOR.as_micros() as i64;
            match db.expire_pending(before).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(entries = n, "allowed writes that never committed are not recorded"),
                Err(e) => tracing::warn!(error = %e, "could not drop the stale pending audit entries"),
            }
        }
    };
    tokio::join!(
        kind::<Loadbalancer>(&db, &client, &mgmt),
        kind::<Lbticket>(&db, &client, &mgmt),
        kind::<Lbrule>(&db, &client, &mgmt),
        kind::<Lbquota>(&db, &client, &mgmt),
        expiry,
    );
}

/// Confirms the pending entries of the writes of `K` the watch shows committed.
///
/// NB: watched as sent, not typed: the digest is of the object as the API server holds it, as
/// the webhook's was (a typed copy would add the defaults of fields left out).
async fn kind<K>(db: &Db, client: &kube::Client, mgmt: &str)
where
    K: Resource<DynamicType = ()>,
{
    let kind = K::kind(&());
    let resource = ApiResource::erase::<K>(&());
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let events = watch(api, watcher::Config::default()).default_backoff();
    let mut events = std::pin::pin!(events);
    while let Some(event) = events.next().await {
        let (object, gone) = match event {
            Ok(Event::Apply(o) | Event::InitApply(o)) => (o, false),
            Ok(Event::Delete(o)) => (o, true),
            Ok(Event::Init | Event::InitDone) => continue,
            Err(e) => {
                tracing::debug!(error = %e, %kind, "watching for the audit log");
                continue;
            }
        };
        let Some(rv) = object.resource_version().and_then(|rv| rv.parse().ok()) else { continue };
        let version = Version { cluster: mgmt.to_string(), rv };
        let name = object.name_any();
        let Ok(value) = serde_json::to_value(&object) else { continue };
        // NB: a delete shows as the object gone, or as its deletion begun (finalizers held).
        let deleted = gone || object.meta().deletion_timestamp.is_some();
        let result = match deleted {
            true => db.confirm(&kind, &name, &version, None).await,
            false => db.confirm(&kind, &name, &version, Some(&value)).await,
        };
        if let Err(e) = result {
            tracing::warn!(error = %e, %kind, %name, "could not record a committed write");
        }
    }
}
