//! What the benchmarks share: lbdesk in embedded mode inside the benchmark's process, and
//! clients of its Kubernetes API.

use std::path::Path;

use anyhow::Context;
use kube::Client;
use server::config::{Mode, ServeArgs, StoreArgs};

/// `lbdesk serve --demo` on free loopback ports with its data in `dir`, the driver simulator
/// answering at once and no reconciler (a benchmark starts its own when it needs one).
pub fn args(dir: &Path) -> anyhow::Result<ServeArgs> {
    let sim = dir.join("sim.json");
    std::fs::write(&sim, "{}").with_context(|| format!("could not write {}", sim.display()))?;
    let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    Ok(ServeArgs {
        listen: loopback,
        api_listen: loopback,
        store: StoreArgs { data_dir: dir.to_path_buf(), database_url: None },
        demo: true,
        public_url: None,
        site_root: "target/site".into(),
        mode: Mode::Embedded,
        kubeconfig: None,
        mgmt_cluster: "mgmt".into(),
        watch_history: 100_000,
        driver_url: None,
        driver_sim_config: Some(sim),
        driver_timeout: 10,
        ensure_interval: 3600,
        no_reconciler: true,
        audit_retention_days: 365,
        own_user: "system:serviceaccount:lbdesk-system:lbdesk".into(),
        http: Default::default(),
    })
}

/// A client of one cluster of the embedded API.
pub async fn client(kubeconfig: &serde_json::Value, cluster: &str) -> anyhow::Result<Client> {
    let kc = app::ssr::clusters::parse_kubeconfig(kubeconfig).map_err(|e| anyhow::anyhow!("kubeconfig: {e}"))?;
    let options = kube::config::KubeConfigOptions { context: Some(cluster.into()), ..Default::default() };
    let config = kube::Config::from_custom_kubeconfig(kc, &options).await.context("kubeconfig")?;
    Ok(Client::try_from(config)?)
}
