//! `kube::Client`s for the management cluster and every member cluster: from the embedded
//! API's kubeconfig, or in cluster mode the management cluster's and a kubeconfig per member
//! cluster, each in a Secret that registers it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use anyhow::Context;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use kube::Client;
use kube::client::ConfigExt;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};

/// The management cluster's client, and the member clusters': fixed (embedded mode) or kept
/// current from the Secrets that register them (cluster mode, `server::members`).
#[derive(Clone)]
pub struct Clusters {
    mgmt: String,
    mgmt_client: Client,
    members: Arc<Members>,
}

/// The member clusters as last registered, each with the version of its registration, and
/// that version, which moves with every change.
struct Members {
    by_name: RwLock<BTreeMap<String, (Member, u64)>>,
    version: tokio::sync::watch::Sender<u64>,
    listed: AtomicBool,
}

/// A registered member cluster: its client, or why its registration is unusable.
#[derive(Clone)]
pub enum Member {
    Ready(Client),
    Broken(String),
}

impl Clusters {
    /// One client per context of `kubeconfig` (a context is named after its cluster), each
    /// keeping a connection unused `keep_idle` at most; `mgmt` names the management cluster's
    /// context, the others are the member clusters.
    pub async fn from_kubeconfig(kubeconfig: Kubeconfig, mgmt: &str, keep_idle: Duration) -> anyhow::Result<Clusters> {
        let mut clients = BTreeMap::new();
        for context in &kubeconfig.contexts {
            clients.insert(context.name.clone(), client_of(&kubeconfig, Some(&context.name), keep_idle).await?);
        }
        let mgmt_client = clients
            .remove(mgmt)
            .with_context(|| format!("the kubeconfig has no context named {mgmt} for the management cluster"))?;
        let clusters = Clusters::managing(mgmt, mgmt_client);
        for (name, client) in clients {
            clusters.register(&name, Member::Ready(client));
        }
        clusters.listed();
        Ok(clusters)
    }

    /// The management cluster alone: member clusters are registered later ([`Clusters::register`]).
    pub fn managing(mgmt: &str, client: Client) -> Clusters {
        let members = Members {
            by_name: RwLock::default(),
            version: tokio::sync::watch::Sender::new(0),
            listed: AtomicBool::new(false),
        };
        Clusters { mgmt: mgmt.to_string(), mgmt_client: client, members: Arc::new(members) }
    }

    /// The management cluster (where the lbdesk CRDs live).
    pub fn mgmt(&self) -> &Client {
        &self.mgmt_client
    }

    /// The name of the management cluster.
    pub fn mgmt_name(&self) -> &str {
        &self.mgmt
    }

    /// A member cluster's client, if it is registered and usable.
    pub fn member(&self, cluster: &str) -> Option<Client> {
        match self.read().get(cluster)? {
            (Member::Ready(client), _) => Some(client.clone()),
            (Member::Broken(_), _) => None,
        }
    }

    /// The usable member clusters' names.
    pub fn members(&self) -> Vec<String> {
        self.usable().into_keys().collect()
    }

    /// The usable member clusters, each with the version of its registration.
    pub fn usable(&self) -> BTreeMap<String, u64> {
        self.read()
            .iter()
            .filter(|(_, (m, _))| matches!(m, Member::Ready(_)))
            .map(|(c, (_, v))| (c.clone(), *v))
            .collect()
    }

    /// Why `cluster` cannot be used as a member cluster, if it cannot.
    pub fn problem(&self, cluster: &str) -> Option<String> {
        match self.read().get(cluster) {
            Some((Member::Ready(_), _)) => None,
            Some((Member::Broken(why), _)) => Some(why.clone()),
            None => Some(format!("no member cluster {cluster} is registered")),
        }
    }

    /// Registers (or replaces) a member cluster.
    pub fn register(&self, cluster: &str, member: Member) {
        let mut by_name = self.write();
        self.members.version.send_modify(|v| *v += 1);
        by_name.insert(cluster.to_string(), (member, *self.members.version.borrow()));
    }

    /// Forgets a member cluster.
    pub fn unregister(&self, cluster: &str) {
        if self.write().remove(cluster).is_some() {
            self.members.version.send_modify(|v| *v += 1);
        }
    }

    /// The registered clusters' names.
    pub fn registered(&self) -> Vec<String> {
        self.read().keys().cloned().collect()
    }

    /// The version of the registrations, which moves with every change.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.members.version.subscribe()
    }

    /// Says that every registration has been read once.
    pub fn listed(&self) {
        self.members.listed.store(true, Ordering::Relaxed);
    }

    /// Whether every registration has been read once (for `/readyz`).
    pub fn is_listed(&self) -> bool {
        self.members.listed.load(Ordering::Relaxed)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, (Member, u64)>> {
        self.members.by_name.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, (Member, u64)>> {
        self.members.by_name.write().unwrap_or_else(|p| p.into_inner())
    }
}

type Call = http::Request<kube::client::Body>;
type Traced = tower_http::trace::TraceLayer<
    tower_http::classify::SharedClassifier<tower_http::classify::ServerErrorsAsFailures>,
    fn(&Call) -> tracing::Span,
    fn(&Call, &tracing::Span),
>;

/// Each call's debug lines, as kube's own client writes them: a span `HTTP` with the method and
/// the URL, and "requesting" when it is sent (what a save's calls are counted by).
fn traced() -> Traced {
    fn span(request: &Call) -> tracing::Span {
        tracing::debug_span!("HTTP", http.method = %request.method(), http.url = %request.uri())
    }
    fn requesting(_: &Call, _: &tracing::Span) {
        tracing::debug!("requesting");
    }
    tower_http::trace::TraceLayer::new_for_http()
        .make_span_with(span as fn(&_) -> _)
        .on_request(requesting as fn(&_, &_))
}

/// How long a client of a Kubernetes API server keeps a connection unused for its next
/// request, where the server closes idle connections later than that (lbdesk's embedded API:
/// `--idle-timeout`, then half of it).
pub const KEEP_IDLE: Duration = Duration::from_secs(15);

/// A client for `context` of `kubeconfig` (its current context when `None`) that keeps a
/// connection unused `keep_idle` at most.
///
/// NB: kube's own client keeps an idle connection until the server closes it, and a request
/// sent on one as the server closes it fails: a save answered "something went wrong", a cluster
/// shown unreachable. So lbdesk's clients let go of it first, `keep_idle` being shorter than the
/// server's idle timeout. Otherwise the client is kube's: its TLS, credentials and headers, and
/// its connect timeout; through a proxy, it is kube's own.
pub async fn client_of(kubeconfig: &Kubeconfig, context: Option<&str>, keep_idle: Duration) -> anyhow::Result<Client> {
    let options = KubeConfigOptions { context: context.map(String::from), ..Default::default() };
    let shown = context.unwrap_or("current");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig.clone(), &options)
        .await
        .with_context(|| format!("the kubeconfig context {shown} is unusable"))?;
    let unusable = || format!("no client for the kubeconfig context {shown}");
    if config.proxy_url.is_some() {
        // NB: through a proxy (`proxy-url`), kube's client as it is: it speaks the proxy's
        // protocol, and its connections are the proxy's to keep.
        return Client::try_from(config).with_context(unusable);
    }
    let mut tcp = HttpConnector::new();
    tcp.enforce_http(false);
    tcp.set_connect_timeout(config.connect_timeout);
    let connector = config.rustls_https_connector_with_connector(tcp).with_context(unusable)?;
    let pool = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .pool_idle_timeout(keep_idle)
        .pool_timer(TokioTimer::new())
        .build(connector);
    let service = tower::ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.auth_layer().with_context(unusable)?)
        .layer(config.extra_headers_layer().with_context(unusable)?)
        .layer(traced())
        .map_err(tower::BoxError::from)
        .service(pool);
    Ok(Client::new(service, config.default_namespace))
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
