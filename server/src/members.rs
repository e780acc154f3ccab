//! Cluster mode: the member clusters, each registered by a Secret in lbdesk's namespace
//! labelled `ebcpaas.io/cluster: <name>` and holding the cluster's kubeconfig under
//! `kubeconfig`. A watch follows them: a cluster added, changed or removed is picked up without
//! a restart, and a Secret that registers nothing usable says why on the load balancers using
//! its cluster.

use std::collections::BTreeMap;

use app::ssr::clusters::{Clusters, Member, client_of};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::config::Kubeconfig;
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, watcher as watch};
use kube::{Api, ResourceExt};

/// The label naming the cluster a Secret registers.
pub const LABEL: &str = "ebcpaas.io/cluster";
/// The Secret's key holding the kubeconfig.
pub const KEY: &str = "kubeconfig";

/// The cluster a Secret registers (its label), and the kubeconfig it holds or why it holds no
/// usable one. `None` when the Secret registers no cluster at all (a label that is no name).
pub fn registration(secret: &Secret, mgmt: &str) -> Option<(String, Result<Kubeconfig, String>)> {
    let shown = format!("{}/{}", secret.namespace().unwrap_or_default(), secret.name_any());
    let cluster = secret.labels().get(LABEL)?.clone();
    if let Err(refusal) = app::domain::policy::object_name(LABEL, &cluster) {
        tracing::warn!(secret = %shown, "the Secret's label {LABEL} is no cluster name: {}", refusal.reason);
        return None;
    }
    if cluster == mgmt {
        tracing::warn!(secret = %shown, "the Secret registers the management cluster {mgmt} as a member: ignored");
        return None;
    }
    let bytes = secret
        .data
        .as_ref()
        .and_then(|d| d.get(KEY))
        .map(|b| b.0.clone())
        .or_else(|| secret.string_data.as_ref().and_then(|d| d.get(KEY)).map(|s| s.clone().into_bytes()));
    let kubeconfig = match bytes {
        None => Err(format!("the Secret {shown} has no key {KEY}")),
        Some(bytes) => {
            std::str::from_utf8(&bytes).map_err(|_| format!("the Secret {shown}: {KEY} is not text")).and_then(|text| {
                Kubeconfig::from_yaml(text).map_err(|e| format!("the Secret {shown}: {KEY} is not a kubeconfig: {e}"))
            })
        }
    };
    Some((cluster, kubeconfig))
}

/// What a Secret registered, by Secret name: its cluster and the Secret's version then.
type Seen = BTreeMap<String, (String, Option<String>)>;

/// Follows the Secrets of `namespace` that register member clusters, forever, keeping
/// `clusters` current. Runs in every replica: pages read the member clusters too.
pub async fn follow(clusters: Clusters, namespace: String) {
    let api: Api<Secret> = Api::namespaced(clusters.mgmt().clone(), &namespace);
    let mut events = watch(api, watcher::Config::default().labels(LABEL)).default_backoff().boxed();
    let mut seen = Seen::new();
    let mut listing: Option<Vec<String>> = None;
    while let Some(event) = events.next().await {
        match event {
            Ok(Event::Init) => listing = Some(Vec::new()),
            Ok(Event::InitApply(secret)) => {
                listing.get_or_insert_default().push(secret.name_any());
                apply(&clusters, &mut seen, &secret).await;
            }
            Ok(Event::InitDone) => {
                let listed = listing.take().unwrap_or_default();
                let gone: Vec<String> = seen.keys().filter(|s| !listed.contains(s)).cloned().collect();
                for secret in gone {
                    remove(&clusters, &mut seen, &secret);
                }
                clusters.listed();
                tracing::info!(members = ?clusters.registered(), "member clusters registered");
            }
            Ok(Event::Apply(secret)) => apply(&clusters, &mut seen, &secret).await,
            Ok(Event::Delete(secret)) => remove(&clusters, &mut seen, &secret.name_any()),
            Err(e) => tracing::warn!(error = %e, %namespace, "could not watch the member clusters' Secrets"),
        }
    }
}

/// Registers what `secret` says, unless it said so already at this version.
async fn apply(clusters: &Clusters, seen: &mut Seen, secret: &Secret) {
    let name = secret.name_any();
    let Some((cluster, kubeconfig)) = registration(secret, clusters.mgmt_name()) else {
        remove(clusters, seen, &name);
        return;
    };
    let version = secret.resource_version();
    if seen.get(&name) == Some(&(cluster.clone(), version.clone())) {
        return;
    }
    if let Some((other, _)) = seen.iter().find(|(s, (c, _))| **s != name && *c == cluster) {
        tracing::warn!(secret = %name, %cluster, "the cluster is registered by the Secret {other} already: ignored");
        return;
    }
    if seen.get(&name).is_some_and(|(before, _)| *before != cluster) {
        remove(clusters, seen, &name);
    }
    let member = match kubeconfig {
        Ok(kubeconfig) => match client_of(&kubeconfig, None, app::ssr::clusters::KEEP_IDLE).await {
            Ok(client) => Member::Ready(client),
            Err(e) => Member::Broken(format!("the Secret {}/{name}: {e:#}", secret.namespace().unwrap_or_default())),
        },
        Err(why) => Member::Broken(why),
    };
    if let Member::Broken(why) = &member {
        tracing::warn!(secret = %name, %cluster, "member cluster not usable: {why}");
    } else {
        tracing::info!(secret = %name, %cluster, "member cluster registered");
    }
    clusters.register(&cluster, member);
    seen.insert(name, (cluster, version));
}

/// Forgets the cluster `secret` registered.
fn remove(clusters: &Clusters, seen: &mut Seen, secret: &str) {
    if let Some((cluster, _)) = seen.remove(secret) {
        tracing::info!(%secret, %cluster, "member cluster unregistered");
        clusters.unregister(&cluster);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;
    use kube::api::ObjectMeta;

    fn secret(label: Option<&str>, kubeconfig: Option<&str>) -> Secret {
        Secret {
            metadata: ObjectMeta {
                name: Some("region".into()),
                namespace: Some("lbdesk-system".into()),
                labels: label.map(|l| [(LABEL.to_string(), l.to_string())].into()),
                ..Default::default()
            },
            data: kubeconfig.map(|k| [(KEY.to_string(), ByteString(k.as_bytes().to_vec()))].into()),
            ..Default::default()
        }
    }

    const KUBECONFIG: &str = "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://c:6443'}}]\n\
        users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n";

    #[test]
    fn a_secret_registers_the_cluster_its_label_names_with_its_kubeconfig() {
        let (cluster, kubeconfig) = registration(&secret(Some("acp-region09"), Some(KUBECONFIG)), "mgmt").expect("one");
        assert_eq!(cluster, "acp-region09");
        assert_eq!(kubeconfig.expect("a kubeconfig").current_context.as_deref(), Some("c"));
    }

    #[test]
    fn a_secret_without_a_usable_kubeconfig_registers_its_cluster_with_the_reason() {
        let why = |s: Secret| registration(&s, "mgmt").expect("a cluster").1.expect_err("unusable");
        assert_eq!(why(secret(Some("acp"), None)), "the Secret lbdesk-system/region has no key kubeconfig");
        assert!(why(secret(Some("acp"), Some("clusters: ["))).contains("kubeconfig is not a kubeconfig"));
        let mut binary = secret(Some("acp"), None);
        binary.data = Some([(KEY.to_string(), ByteString(vec![0xff, 0xfe]))].into());
        assert!(why(binary).contains("is not text"));
    }

    #[test]
    fn a_secret_naming_no_cluster_or_the_management_cluster_registers_nothing() {
        assert!(registration(&secret(None, Some(KUBECONFIG)), "mgmt").is_none());
        assert!(registration(&secret(Some("Not_A_Name"), Some(KUBECONFIG)), "mgmt").is_none());
        assert!(registration(&secret(Some("mgmt"), Some(KUBECONFIG)), "mgmt").is_none());
    }

    #[test]
    fn string_data_is_read_as_well() {
        let mut s = secret(Some("acp"), None);
        s.string_data = Some([(KEY.to_string(), KUBECONFIG.to_string())].into());
        assert!(registration(&s, "mgmt").expect("one").1.is_ok());
    }
}
