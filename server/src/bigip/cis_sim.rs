//! Embedded mode's simulated CIS: for each member cluster, what the CIS model says CIS v2.20.2
//! posts (`cis::posts`, from the cluster's CIS Deployment arguments and everything it holds) is
//! posted to the BIG-IP simulator, as CIS does: when it changes, and a refused post again on
//! the next round (CIS retries failed tenants). So the loop from a saved listener to BIG-IP
//! closes without a real cluster.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use app::domain::crd::CisSpec;
use app::ssr::clusters::Clusters;
use serde_json::Value;
use tokio::task::JoinHandle;

use super::sim::{Behaviour, Simulator};

/// How often the simulated CIS looks at its cluster.
const EVERY: Duration = Duration::from_secs(1);

/// How long CIS waits before posting a refused declaration again.
const RETRY_REFUSED: Duration = Duration::from_secs(30);

/// Embedded mode's BIG-IP: the simulator on a loopback port, and the simulated CIS of every
/// member cluster posting to it.
pub struct Loop {
    pub simulator: Simulator,
    /// The simulator's base URL (`http://127.0.0.1:<port>`).
    pub url: String,
    listener: tokio::net::TcpListener,
}

impl Loop {
    /// The simulator, bound to `listen`, with `behaviour`.
    pub async fn bind(listen: std::net::SocketAddr, behaviour: Behaviour) -> anyhow::Result<Loop> {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .with_context(|| format!("could not start the BIG-IP simulator on {listen}"))?;
        let url = format!("http://{}", listener.local_addr()?);
        Ok(Loop { simulator: Simulator::new(behaviour), url, listener })
    }

    /// Serves the simulator and runs the simulated CIS of `clusters`' members, until aborted.
    pub fn spawn(self, clusters: Clusters) -> [JoinHandle<()>; 2] {
        let served = tokio::spawn(async move {
            if let Err(e) = self.simulator.serve(self.listener).await {
                tracing::warn!(error = %e, "the BIG-IP simulator stopped");
            }
        });
        [served, tokio::spawn(run(clusters, self.url))]
    }
}

/// Runs until dropped, posting to the BIG-IP at `bigip` (its base URL).
async fn run(clusters: Clusters, bigip: String) {
    let http = reqwest::Client::new();
    // (cluster, path) → the body BIG-IP took last.
    let mut taken: HashMap<(String, String), Value> = HashMap::new();
    // (cluster, path) → the body BIG-IP refused last, and when.
    let mut refused: HashMap<(String, String), (Value, Instant)> = HashMap::new();
    // Per cluster, the revision of the last round that read it.
    let mut read_at: HashMap<String, String> = HashMap::new();
    let mut every = tokio::time::interval(EVERY);
    loop {
        every.tick().await;
        for cluster in clusters.members() {
            let Some(client) = clusters.member(&cluster) else { continue };
            // NB: like CIS, only a change makes it read the cluster again (or a refused post
            // falling due).
            let Ok(revision) = crate::cis::posts::revision(&client).await else { continue };
            let due = refused.iter().any(|((c, _), (_, at))| c == &cluster && at.elapsed() >= RETRY_REFUSED);
            if read_at.get(&cluster) == revision.as_ref() && !due {
                continue;
            }
            // NB: a cluster without a readable CIS Deployment has no CIS to simulate.
            let Ok(args) = crate::cis::deployment::args_of(&client, &cluster, &CisSpec::default()).await else {
                continue;
            };
            let posted = match crate::cis::posts::posted(&client, &args).await {
                Ok(posted) => posted,
                Err(e) => {
                    tracing::debug!(%cluster, error = format!("{e:#}"), "the simulated CIS could not read its cluster");
                    continue;
                }
            };
            read_at.extend(revision.map(|r| (cluster.clone(), r)));
            for post in posted.posts {
                let key = (cluster.clone(), post.path.clone());
                let waiting = refused.get(&key).is_some_and(|(b, at)| b == &post.body && at.elapsed() < RETRY_REFUSED);
                if taken.get(&key) == Some(&post.body) || waiting {
                    continue;
                }
                let url = format!("{bigip}/mgmt/shared/appsvcs/declare{}", post.path);
                match http.post(&url).json(&post.body).send().await.map(|r| r.status()) {
                    Ok(status) if status.is_success() => {
                        refused.remove(&key);
                        taken.insert(key, post.body);
                    }
                    Ok(status) => {
                        tracing::info!(%cluster, %status, "the simulated BIG-IP refused a declaration");
                        refused.insert(key, (post.body, Instant::now()));
                    }
                    Err(e) => {
                        tracing::debug!(%cluster, error = %e, "the simulated BIG-IP did not answer");
                        read_at.remove(&cluster);
                    }
                }
            }
        }
    }
}
