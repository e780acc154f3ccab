//! The management cluster as lbdesk's saves and admission read it: one watch per kind (an
//! informer's cache), so a save checks a change without listing every request, and admission
//! checks a write against the same view.
//!
//! NB: a cache trails the cluster by the time an event takes to arrive. lbdesk waits, after
//! each of its own writes, until its cache holds what it wrote ([`Caches::seen`]), so the
//! next save of the same process reads it; a write by someone else in that moment is seen as
//! late as any webhook's informer would see it.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::StreamExt;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use tokio::task::AbortHandle;

use crate::domain::crd::{Lbquota, Lbrule, Lbticket, Loadbalancer};

/// How long a read waits for the caches' first list, and a write for its echo.
const READY_WITHIN: Duration = Duration::from_secs(10);
const ECHO_WITHIN: Duration = Duration::from_secs(2);

/// The watch caches of the management cluster's load balancers, requests, rules and quotas.
#[derive(Default)]
pub struct Caches {
    stores: OnceLock<Stores>,
}

#[doc(hidden)]
pub struct Stores {
    loadbalancers: Store<Loadbalancer>,
    tickets: Store<Lbticket>,
    rules: Store<Lbrule>,
    quotas: Store<Lbquota>,
    watches: Vec<AbortHandle>,
}

/// The caches could not be read: never connected, or their first list did not come.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the management cluster could not be read")]
pub struct Unavailable;

/// A kind the caches hold.
pub trait Cached:
    Resource<DynamicType = (), Scope = kube::core::ClusterResourceScope>
    + Clone
    + DeserializeOwned
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
    #[doc(hidden)]
    fn store(stores: &Stores) -> &Store<Self>;
}

macro_rules! cached {
    ($($kind:ty => $field:ident),*) => {$(
        impl Cached for $kind {
            fn store(stores: &Stores) -> &Store<Self> {
                &stores.$field
            }
        }
    )*};
}
cached!(Loadbalancer => loadbalancers, Lbticket => tickets, Lbrule => rules, Lbquota => quotas);

impl Drop for Caches {
    fn drop(&mut self) {
        self.disconnect();
    }
}

fn watch<K: Cached>(client: &kube::Client) -> (Store<K>, AbortHandle) {
    let (reader, writer) = reflector::store();
    let stream = reflector::reflector(writer, watcher(Api::<K>::all(client.clone()), Default::default()))
        .default_backoff()
        .for_each(|_| async {});
    (reader, tokio::spawn(stream).abort_handle())
}

impl Caches {
    /// Starts the watches on the management cluster (once; later calls change nothing).
    pub fn connect(&self, mgmt: &kube::Client) {
        self.stores.get_or_init(|| {
            let (loadbalancers, a) = watch(mgmt);
            let (tickets, b) = watch(mgmt);
            let (rules, c) = watch(mgmt);
            let (quotas, d) = watch(mgmt);
            Stores { loadbalancers, tickets, rules, quotas, watches: vec![a, b, c, d] }
        });
    }

    /// Ends the watches (at shutdown); the stores keep what they last held.
    pub fn disconnect(&self) {
        for watch in self.stores.get().map(|s| s.watches.as_slice()).unwrap_or_default() {
            watch.abort();
        }
    }

    /// The store of `K`, once its first list has come.
    async fn ready<K: Cached>(&self) -> Result<&Store<K>, Unavailable> {
        let store = K::store(self.stores.get().ok_or(Unavailable)?);
        match tokio::time::timeout(READY_WITHIN, store.wait_until_ready()).await {
            Ok(Ok(())) => Ok(store),
            _ => Err(Unavailable),
        }
    }

    /// Every object of `K` that `keep` keeps.
    pub async fn list<K: Cached>(&self, keep: impl Fn(&K) -> bool) -> Result<Vec<K>, Unavailable> {
        Ok(self.ready::<K>().await?.state().iter().filter(|o| keep(o)).map(|o| (**o).clone()).collect())
    }

    /// Object `name` of `K`, as the cache holds it.
    pub async fn get<K: Cached>(&self, name: &str) -> Result<Option<Arc<K>>, Unavailable> {
        Ok(self.ready::<K>().await?.get(&ObjectRef::new(name)))
    }

    /// Waits (a little) until the cache holds `written` as lbdesk wrote it, or a later version.
    pub async fn seen<K: Cached>(&self, written: &K) {
        let name = written.meta().name.clone().unwrap_or_default();
        let version = written.meta().resource_version.clone();
        self.echo::<K>(&name, |held| match (held, &version) {
            (Some(held), Some(version)) => is_at_least(held.meta().resource_version.as_deref(), version),
            _ => false,
        })
        .await
    }

    /// Waits (a little) until the cache no longer holds object `name` of `K`.
    pub async fn seen_gone<K: Cached>(&self, name: &str) {
        self.echo::<K>(name, |held| held.is_none()).await
    }

    /// Waits (a little) until the cache holds what a delete answered: the object still there,
    /// being finalized, or gone. NB: an object deleted at once is answered as it was, at its
    /// last version, which the cache never holds again: its going is the echo.
    pub async fn seen_deleted<K: Cached>(&self, name: &str, answer: &either::Either<K, kube::core::Status>) {
        match answer {
            either::Either::Left(object) => {
                let version = object.meta().resource_version.clone().unwrap_or_default();
                self.echo::<K>(name, |held| {
                    held.is_none_or(|held| is_at_least(held.meta().resource_version.as_deref(), &version))
                })
                .await
            }
            either::Either::Right(_) => self.seen_gone::<K>(name).await,
        }
    }

    async fn echo<K: Cached>(&self, name: &str, arrived: impl Fn(Option<&K>) -> bool) {
        let Ok(store) = self.ready::<K>().await else { return };
        let reference = ObjectRef::new(name);
        let waited = tokio::time::timeout(ECHO_WITHIN, async {
            while !arrived(store.get(&reference).as_deref()) {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        })
        .await;
        if waited.is_err() {
            tracing::warn!(kind = %K::kind(&()), name, "the watch did not bring lbdesk's own write back in time");
        }
    }
}

/// Whether `held` is `written` or later. NB: resource versions are opaque to clients, but both
/// the embedded API and etcd write them as increasing integers; when one is not, only the
/// same version counts.
fn is_at_least(held: Option<&str>, written: &str) -> bool {
    match (held.and_then(|h| h.parse::<u64>().ok()), written.parse::<u64>().ok()) {
        (Some(h), Some(w)) => h >= w,
        _ => held == Some(written),
    }
}

#[cfg(test)]
mod tests {
    use super::is_at_least;

    #[test]
    fn a_later_version_counts_as_seen_an_earlier_one_does_not() {
        assert!(is_at_least(Some("12"), "12"));
        assert!(is_at_least(Some("13"), "12"));
        assert!(!is_at_least(Some("11"), "12"));
        assert!(!is_at_least(None, "12"));
        assert!(is_at_least(Some("abc"), "abc"));
        assert!(!is_at_least(Some("abd"), "abc"));
    }
}
