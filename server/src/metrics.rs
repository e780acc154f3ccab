//! Prometheus metrics, served at `/metrics` in the text exposition format, with
//! `prometheus-client` (the Prometheus project's own Rust client): what the reconciler did and
//! how long it took, what waits for it, how the driver answered, the addresses of each load
//! balancer, which member clusters answer, what BIG-IP runs of each, and whether this replica
//! leads.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Outcome {
    /// `lbticket`, `loadbalancer` or `sync`.
    pub kind: String,
    /// `ok`, or the error's label (`kube`, `driver`, `invalid`, `finalizer`, `busy`).
    pub result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Kind {
    pub kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DriverCall {
    /// `request` or `revoke`.
    pub hook: String,
    /// The driver's answer (`succ`, `fail`, `running`), or `error` when there was none.
    pub status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Pairs {
    pub loadbalancer: String,
    /// `used` or `free`.
    pub state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Cluster {
    pub cluster: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LoadbalancerLabel {
    pub loadbalancer: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct MemberLabels {
    pub loadbalancer: String,
    /// `up`, `down`, `disabled` or `unknown`.
    pub state: String,
}

type Durations = Family<Kind, Histogram, fn() -> Histogram>;

fn durations() -> Histogram {
    // 1 ms to about 33 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

/// Every metric lbdesk exports, and the registry that writes them out.
pub struct Metrics {
    registry: Registry,
    reconciles: Family<Outcome, Counter>,
    reconcile_seconds: Durations,
    queue_depth: Family<Kind, Gauge>,
    driver_calls: Family<DriverCall, Counter>,
    pairs: Family<Pairs, Gauge>,
    reachable: Family<Cluster, Gauge>,
    cis_ready: Family<LoadbalancerLabel, Gauge>,
    bigip_live: Family<LoadbalancerLabel, Gauge>,
    bigip_members: Family<MemberLabels, Gauge>,
    bigip_read_errors: Family<LoadbalancerLabel, Counter>,
    leader: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("lbdesk");
        let reconciles = Family::<Outcome, Counter>::default();
        registry.register("reconciles", "Reconciles finished, by kind and result", reconciles.clone());
        let reconcile_seconds: Durations = Family::new_with_constructor(durations);
        registry.register(
            "reconcile_duration_seconds",
            "How long a reconcile took, by kind",
            reconcile_seconds.clone(),
        );
        let queue_depth = Family::<Kind, Gauge>::default();
        registry.register(
            "reconcile_queue_depth",
            "Objects waiting for the reconciler: tickets not yet read, Created or Requested",
            queue_depth.clone(),
        );
        let driver_calls = Family::<DriverCall, Counter>::default();
        registry.register(
            "driver_calls",
            "Calls of the network-policy driver, by hook and answer",
            driver_calls.clone(),
        );
        let pairs = Family::<Pairs, Gauge>::default();
        registry.register("pairs", "Address pairs of each load balancer, used and free", pairs.clone());
        let reachable = Family::<Cluster, Gauge>::default();
        registry.register(
            "member_cluster_reachable",
            "1 when the member cluster's last sync reached it, 0 when it could not",
            reachable.clone(),
        );
        let cis_ready = Family::<LoadbalancerLabel, Gauge>::default();
        registry.register(
            "cis_ready",
            "1 when the CIS serving the load balancer runs with arguments that post all lbdesk writes, 0 when not",
            cis_ready.clone(),
        );
        let bigip_live = Family::<LoadbalancerLabel, Gauge>::default();
        registry.register(
            "bigip_live",
            "Listeners BIG-IP runs exactly as lbdesk expects CIS to post them, by load balancer",
            bigip_live.clone(),
        );
        let bigip_members = Family::<MemberLabels, Gauge>::default();
        registry.register(
            "bigip_members",
            "Pool members of lbdesk's listeners on BIG-IP, by state",
            bigip_members.clone(),
        );
        let bigip_read_errors = Family::<LoadbalancerLabel, Counter>::default();
        registry.register(
            "bigip_read_errors",
            "Read-backs of a load balancer's BIG-IP that failed",
            bigip_read_errors.clone(),
        );
        let leader = Gauge::default();
        registry.register("leader", "1 while this replica runs the reconciler", leader.clone());
        Metrics {
            registry,
            reconciles,
            reconcile_seconds,
            queue_depth,
            driver_calls,
            pairs,
            reachable,
            cis_ready,
            bigip_live,
            bigip_members,
            bigip_read_errors,
            leader,
        }
    }
}

impl Metrics {
    /// A reconcile of `kind` finished after `took`, with `result` (`ok` or the error's label).
    pub fn reconciled(&self, kind: &str, result: &str, took: Duration) {
        self.reconciles.get_or_create(&Outcome { kind: kind.into(), result: result.into() }).inc();
        self.reconcile_seconds.get_or_create(&Kind { kind: kind.into() }).observe(took.as_secs_f64());
    }

    /// How many objects of `kind` wait for the reconciler.
    pub fn waiting(&self, kind: &str, n: usize) {
        self.queue_depth.get_or_create(&Kind { kind: kind.into() }).set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// A driver call of `hook` answered `status` (`error` when it did not answer).
    pub fn driver_called(&self, hook: &str, status: &str) {
        self.driver_calls.get_or_create(&DriverCall { hook: hook.into(), status: status.into() }).inc();
    }

    /// The pairs of `loadbalancer` now.
    pub fn pairs(&self, loadbalancer: &str, used: u64, free: u64) {
        for (state, n) in [("used", used), ("free", free)] {
            let gauge = self.pairs.get_or_create(&Pairs { loadbalancer: loadbalancer.into(), state: state.into() });
            gauge.set(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }

    /// Whether `cluster` answered its last sync.
    pub fn reachable(&self, cluster: &str, reached: bool) {
        self.reachable.get_or_create(&Cluster { cluster: cluster.into() }).set(i64::from(reached));
    }

    /// Whether the CIS serving `loadbalancer` posts everything lbdesk writes for it.
    pub fn cis_ready(&self, loadbalancer: &str, ready: bool) {
        self.cis_ready.get_or_create(&LoadbalancerLabel { loadbalancer: loadbalancer.into() }).set(i64::from(ready));
    }

    /// What the last read-back of `loadbalancer`'s BIG-IP found: listeners live, and members by
    /// state (`up`, `down`, `disabled`, `unknown`).
    pub fn bigip_read(&self, loadbalancer: &str, live: usize, members: [(&str, usize); 4]) {
        let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        self.bigip_live.get_or_create(&LoadbalancerLabel { loadbalancer: loadbalancer.into() }).set(count(live));
        for (state, n) in members {
            let labels = MemberLabels { loadbalancer: loadbalancer.into(), state: state.into() };
            self.bigip_members.get_or_create(&labels).set(count(n));
        }
    }

    /// A read-back of `loadbalancer`'s BIG-IP failed.
    pub fn bigip_unread(&self, loadbalancer: &str) {
        self.bigip_read_errors.get_or_create(&LoadbalancerLabel { loadbalancer: loadbalancer.into() }).inc();
    }

    /// Whether this replica runs the reconciler.
    pub fn leading(&self, leads: bool) {
        self.leader.set(i64::from(leads));
    }

    /// Every metric, in the Prometheus text format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &self.registry) {
            tracing::error!(error = %e, "could not write the metrics");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_recorded_is_written_out_with_its_labels() {
        let m = Metrics::default();
        m.reconciled("lbticket", "ok", Duration::from_millis(3));
        m.reconciled("lbticket", "ok", Duration::from_millis(5));
        m.driver_called("request", "succ");
        m.pairs("demo", 3, 251);
        m.reachable("acp-region01", true);
        m.cis_ready("demo", false);
        m.leading(true);
        m.waiting("lbticket", 7);
        let text = m.render();
        for line in [
            r#"lbdesk_reconciles_total{kind="lbticket",result="ok"} 2"#,
            r#"lbdesk_reconcile_duration_seconds_count{kind="lbticket"} 2"#,
            r#"lbdesk_driver_calls_total{hook="request",status="succ"} 1"#,
            r#"lbdesk_pairs{loadbalancer="demo",state="used"} 3"#,
            r#"lbdesk_pairs{loadbalancer="demo",state="free"} 251"#,
            r#"lbdesk_member_cluster_reachable{cluster="acp-region01"} 1"#,
            r#"lbdesk_cis_ready{loadbalancer="demo"} 0"#,
            r#"lbdesk_leader 1"#,
            r#"lbdesk_reconcile_queue_depth{kind="lbticket"} 7"#,
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
    }
}
