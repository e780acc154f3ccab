//! Leader election of the reconciler: every replica serves pages, server functions and the
//! webhook; the one holding the Lease runs the reconciler. The Lease is taken and renewed by
//! `kube-lease-manager` (server-side apply: of two replicas racing for a free Lease, one wins).
//!
//! A replica stops reconciling before another can start: it stops when the manager says the
//! Lease is lost or cannot be renewed, and, as a fence of its own, when it has not seen itself
//! holding an unexpired Lease for `DURATION - GRACE` seconds (a renewal stuck on a partitioned
//! network says nothing). What is under way then gets `STOP_WITHIN` to finish and is cut short
//! after: every reconcile step is idempotent, so a cut is a crash the next leader completes.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube_lease_manager::{LeaseManager, LeaseManagerBuilder};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::reconciler::{self, Context};

/// Seconds a Lease is held without renewal: another replica takes over this long after the
/// leader died (and about a second more).
const DURATION: u64 = 10;
/// Seconds before the end of the Lease when its holder renews it.
const GRACE: u64 = 4;
/// How long a run told to stop may take before it is cut short.
const STOP_WITHIN: Duration = Duration::from_secs(2);
/// How often the leader reads the Lease back (its fence).
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// Which Lease the replicas compete for, and who this one is.
#[derive(Clone, Debug)]
pub struct Election {
    pub namespace: String,
    pub lease: String,
    pub identity: String,
}

/// A reconciler run under way, and what stops it.
struct Run {
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl Run {
    fn start(ctx: Arc<Context>) -> Run {
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(reconciler::controllers::run(ctx, async move {
            let _ = stopped.await;
        }));
        Run { stop, task }
    }

    /// Tells the run to stop, waits `STOP_WITHIN` for it, then cuts it short.
    async fn end(self) {
        let _ = self.stop.send(());
        let mut task = self.task;
        if tokio::time::timeout(STOP_WITHIN, &mut task).await.is_err() {
            task.abort();
            let _ = task.await;
            tracing::warn!("the reconciler was cut short on losing the Lease");
        }
    }
}

/// The leader's own check that it still holds the Lease.
#[derive(Clone)]
struct Fence {
    api: Api<Lease>,
    election: Election,
}

impl Fence {
    /// Whether the Lease names this replica and runs past `now` plus a check's interval.
    async fn held(&self) -> bool {
        let read = tokio::time::timeout(CHECK_EVERY, self.api.get(&self.election.lease)).await;
        // NB: unreadable counts as not held: a partitioned leader must not go on.
        let Ok(Ok(lease)) = read else { return false };
        let Some(spec) = lease.spec else { return false };
        let ours = spec.holder_identity.as_deref() == Some(self.election.identity.as_str());
        let until = spec.renew_time.map(|t| {
            let renewed =
                SystemTime::UNIX_EPOCH + Duration::from_millis(u64::try_from(t.0.as_millisecond()).unwrap_or(0));
            renewed + Duration::from_secs(u64::try_from(spec.lease_duration_seconds.unwrap_or(0)).unwrap_or(0))
        });
        ours && until.is_some_and(|u| u > SystemTime::now() + CHECK_EVERY)
    }

    /// Resolves once the Lease has not been seen held for `DURATION - GRACE` seconds.
    async fn lost(self) {
        let mut confirmed = tokio::time::Instant::now();
        loop {
            tokio::time::sleep(CHECK_EVERY).await;
            if self.held().await {
                confirmed = tokio::time::Instant::now();
            } else if confirmed.elapsed() >= Duration::from_secs(DURATION - GRACE) {
                return;
            }
        }
    }
}

async fn manager(client: kube::Client, election: &Election) -> kube_lease_manager::Result<LeaseManager> {
    LeaseManagerBuilder::new(client, &election.lease)
        .with_namespace(&election.namespace)
        .with_identity(&election.identity)
        .with_duration(DURATION)
        .with_grace(GRACE)
        .build()
        .await
}

/// Competes for the Lease until `stop`, running the reconciler while this replica holds it;
/// on `stop`, ends the run and gives the Lease up, so another replica takes over at once.
pub async fn lead(ctx: Arc<Context>, client: kube::Client, election: Election, mut stop: oneshot::Receiver<()>) {
    let fence = Fence { api: Api::namespaced(client.clone(), &election.namespace), election: election.clone() };
    let manager = loop {
        tokio::select! {
            built = manager(client.clone(), &election) => match built {
                Ok(m) => break m,
                Err(e) => tracing::warn!(error = %e, "leader election: the Lease cannot be read yet"),
            },
            _ = &mut stop => return,
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    let mut run: Option<Run> = None;
    loop {
        let leading = run.is_some();
        let fenced = async { if leading { fence.clone().lost().await } else { std::future::pending().await } };
        let changed = tokio::select! {
            changed = manager.changed() => changed.map_err(|e| e.to_string()),
            () = fenced => Err("the Lease was not seen held in time".to_string()),
            _ = &mut stop => break,
        };
        match changed {
            Ok(true) => {
                tracing::info!(identity = %election.identity, "leading: the reconciler starts");
                if let Some(old) = run.take() {
                    old.end().await;
                }
                run = Some(Run::start(ctx.clone()));
            }
            Ok(false) => {
                tracing::info!(identity = %election.identity, "the Lease is someone else's: the reconciler stops");
                if let Some(r) = run.take() {
                    r.end().await;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "leader election: the Lease is not confirmed; the reconciler stops");
                if let Some(r) = run.take() {
                    r.end().await;
                }
                // NB: given up, so the next change says whether it is won again.
                let _ = manager.release().await;
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
    if let Some(r) = run.take() {
        r.end().await;
    }
    if let Err(e) = manager.release().await {
        tracing::warn!(error = %e, "leader election: the Lease could not be given up; it expires instead");
    }
}
