//! `kube::Client`s for the management cluster and every member cluster, built from a
//! kubeconfig: the embedded one or a real one. Switching to cluster mode is a kubeconfig change.

use std::collections::BTreeMap;

use anyhow::Context;
use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};

/// A client per cluster, by cluster name.
#[derive(Clone)]
pub struct Clusters {
    mgmt: String,
    clients: BTreeMap<String, Client>,
}

impl Clusters {
    /// One client per context of `kubeconfig` (a context is named after its cluster); `mgmt`
    /// names the management cluster's context.
    pub async fn from_kubeconfig(kubeconfig: Kubeconfig, mgmt: &str) -> anyhow::Result<Clusters> {
        let mut clients = BTreeMap::new();
        for context in &kubeconfig.contexts {
            let options = KubeConfigOptions { context: Some(context.name.clone()), ..Default::default() };
            let config = kube::Config::from_custom_kubeconfig(kubeconfig.clone(), &options)
                .await
                .with_context(|| format!("the kubeconfig context {} is unusable", context.name))?;
            let client = Client::try_from(config).with_context(|| format!("no client for {}", context.name))?;
            clients.insert(context.name.clone(), client);
        }
        if !clients.contains_key(mgmt) {
            anyhow::bail!("the kubeconfig has no context named {mgmt} for the management cluster");
        }
        Ok(Clusters { mgmt: mgmt.to_string(), clients })
    }

    /// The management cluster (where the lbdesk CRDs live).
    pub fn mgmt(&self) -> &Client {
        // NB: `from_kubeconfig` refuses a kubeconfig without the management context.
        &self.clients[&self.mgmt]
    }

    /// The name of the management cluster.
    pub fn mgmt_name(&self) -> &str {
        &self.mgmt
    }

    /// A member cluster, if known.
    pub fn member(&self, cluster: &str) -> Option<&Client> {
        self.clients.get(cluster).filter(|_| cluster != self.mgmt)
    }

    /// The member clusters' names.
    pub fn members(&self) -> Vec<String> {
        self.clients.keys().filter(|c| **c != self.mgmt).cloned().collect()
    }
}

/// The kubeconfig of the embedded API at `base_url` (e.g. `https://127.0.0.1:6443`): one context
/// per cluster, the management cluster current, all with `token`, trusting the CA `ca_pem`.
pub fn embedded_kubeconfig(base_url: &str, ca_pem: &str, token: &str, clusters: &[String], mgmt: &str) -> Value {
    use base64::Engine;
    let base = base_url.trim_end_matches('/');
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    json!({
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": mgmt,
        "preferences": {},
        "clusters": clusters.iter().map(|c| json!({"name": c, "cluster": {"server": format!("{base}/k8s/clusters/{c}"), "certificate-authority-data": ca}})).collect::<Vec<_>>(),
        "users": [{"name": "lbdesk-admin", "user": {"token": token}}],
        "contexts": clusters.iter().map(|c| json!({"name": c, "context": {"cluster": c, "user": "lbdesk-admin"}})).collect::<Vec<_>>(),
    })
}

/// Parses a kubeconfig document.
pub fn parse_kubeconfig(value: &Value) -> anyhow::Result<Kubeconfig> {
    serde_json::from_value(value.clone()).context("not a kubeconfig")
}
