//! A write charged to its project's quota in the admission that admits it, as kube-apiserver's
//! ResourceQuota admission does: what the project holds (the watch caches, and the charges the
//! quota's status records for writes the caches may not show yet) and the write's share are
//! checked against the limits, and the charge is written to the quota's status with a
//! compare-and-swap on its `resourceVersion`. A writer that loses the swap reads the quota again
//! and checks again: any number of parallel writers and replicas never take a project past its
//! quota. (`policy::Holdings` counts; this is the swap.)

use app::domain::crd::{Charge, Lbquota, LbquotaStatus, Loadbalancer, MAX_DECLARATION_BYTES};
use app::domain::policy::{Holdings, Limits, pending, within_quota};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;

use super::{Admission, Denial, Review};

/// Swaps tried before a write is refused as too contended (each loses only to another
/// charge of the same project, which was stored).
const ATTEMPTS: usize = 50;

/// Why a charge could not be decided, in the API's words. NB: a store that cannot take the
/// charge (a full disk: 507; out of reach: 503) is said as it is: nothing was stored, and the
/// same write may be tried again.
fn unreadable(e: kube::Error) -> Denial {
    match e {
        kube::Error::Api(s) if matches!(s.code, 503 | 507) => Denial { code: s.code, field: None, reason: s.message },
        e => Denial::failed(format!("admission could not read or write the project's quota: {e}")),
    }
}

impl Admission {
    /// Charges `charge` (an object's share once the write is stored; `was` its share before)
    /// to `project`, on load balancer `lb`, when it grows what a limit holds: refused, naming the
    /// quota and what is left, when the project would then hold more than its quota allows.
    /// `cached` is what the project holds as the caller's one read of the caches shows it, its
    /// share of `lb`'s AS3 tenant rendered from the same read (a share and digests of two reads
    /// miscount an object that arrived between them). A dry run is checked the same way and
    /// charged nothing.
    pub(super) async fn charge(
        &self,
        review: &Review,
        project: &str,
        lb: &Loadbalancer,
        charge: Charge,
        was: &Charge,
        cached: Holdings,
    ) -> Result<(), Denial> {
        let mut quota = self.caches.get::<Lbquota>(project).await.ok().flatten().map(|q| (*q).clone());
        // NB: only what grows past a limit is charged: a listener more, with no limit on
        // listeners, writes nothing (a listener's save costs no call of its own).
        let limits = Limits::of(quota.as_ref().map(|q| &q.spec), &lb.spec, MAX_DECLARATION_BYTES as u64);
        let grows = |now: u64, was: u64, limit: Option<u64>| now > was && limit.is_some();
        // NB: addresses always have a limit (half the load balancer's pairs by default).
        let address =
            charge.addresses > was.addresses || (charge.addresses > 0 && charge.loadbalancer != was.loadbalancer);
        // NB: the declaration always has a limit (half a ConfigMap by default).
        let limited = address
            || charge.declaration_bytes > 0
            || grows(charge.listeners, was.listeners, limits.listeners)
            || grows(charge.rules, was.rules, limits.rules)
            || grows(charge.ingresses, was.ingresses, limits.ingresses);
        if !limited {
            return Ok(());
        }
        let client = self
            .mgmt
            .get()
            .cloned()
            .ok_or_else(|| Denial::failed("admission cannot reach the management cluster yet"))?;
        let api: Api<Lbquota> = Api::all(client);
        let lb_name = lb.metadata.name.clone().unwrap_or_default();
        for _ in 0..ATTEMPTS {
            let current = match quota.take() {
                Some(q) => q,
                None => fresh(&api, project).await?,
            };
            let now = time::OffsetDateTime::now_utc();
            let status = current.status.clone().unwrap_or_default();
            let charges = pending(&status.charges, now.unix_timestamp());
            let before = cached.clone().with(&charges);
            let mut after_charges: Vec<Charge> = charges.into_iter().filter(|c| c.object != charge.object).collect();
            after_charges.push(Charge { at: rfc3339(now), ..charge.clone() });
            let after = cached.clone().with(&after_charges);
            let limits = Limits::of(Some(&current.spec), &lb.spec, MAX_DECLARATION_BYTES as u64);
            within_quota(&limits, &before.held(&lb_name), &after.held(&lb_name), &lb_name).map_err(Denial::refused)?;
            if review.dry_run {
                return Ok(());
            }
            let status = LbquotaStatus { used: after.used(), charges: after_charges };
            let patch = json!({"metadata": {"resourceVersion": current.metadata.resource_version}, "status": status});
            match api.patch_status(project, &PatchParams::default(), &Patch::Merge(&patch)).await {
                Ok(stored) => {
                    // NB: the next charge reads the quota from the cache, with this one.
                    self.caches.seen(&stored).await;
                    return Ok(());
                }
                Err(kube::Error::Api(e)) if e.code == 409 => continue,
                Err(e) => return Err(unreadable(e)),
            }
        }
        Err(Denial::failed(format!(
            "project {project}'s quota was charged by {ATTEMPTS} other writes meanwhile; try again"
        )))
    }
}

/// `project`'s quota as the API holds it now, made (with the default limits) if it has none.
async fn fresh(api: &Api<Lbquota>, project: &str) -> Result<Lbquota, Denial> {
    if let Some(quota) = api.get_opt(project).await.map_err(unreadable)? {
        return Ok(quota);
    }
    match api.create(&PostParams::default(), &Lbquota::new(project, Default::default())).await {
        Ok(made) => Ok(made),
        Err(kube::Error::Api(e)) if e.code == 409 => api
            .get_opt(project)
            .await
            .map_err(unreadable)?
            .ok_or_else(|| Denial::failed("the project's quota was made and is gone")),
        Err(e) => Err(unreadable(e)),
    }
}

fn rfc3339(t: time::OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}
