//! `lbdesk serve`: opens the database, seeds the demo, and serves until SIGTERM; then stops
//! the web UI, the reconciler and the embedded API, each after what depends on it.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use app::ssr::AppState;
use app::ssr::audit::Via;
use app::ssr::clusters::{Clusters, embedded_kubeconfig, parse_kubeconfig};
use app::ssr::db::Db;
use leptos::config::LeptosOptions;
use tower_sessions::ExpiredDeletion;

use crate::admission::Admission;
use crate::config::{Mode, ServeArgs};
use crate::demo::Logins;
use crate::driver::DriverClient;
use crate::driver::sim::{Behaviour, Simulator};
use crate::reconciler;

/// The embedded API, serving over HTTPS.
struct EmbeddedApi {
    handle: axum_server::Handle<SocketAddr>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl EmbeddedApi {
    /// Serves the embedded API's routes on `listener`.
    fn serve(
        listener: std::net::TcpListener,
        router: axum::Router,
        tls: axum_server::tls_rustls::RustlsConfig,
        idle: Duration,
    ) -> anyhow::Result<EmbeddedApi> {
        let handle = axum_server::Handle::new();
        let task = crate::net::serve(listener, router, Some(tls), idle, handle.clone())?;
        Ok(EmbeddedApi { handle, task })
    }

    /// Lets the requests under way finish (5 s at most), then returns how serving ended.
    async fn stop(self) -> anyhow::Result<()> {
        self.handle.graceful_shutdown(Some(Duration::from_secs(5)));
        self.task.await.context("the embedded API stopped")?.context("the embedded API failed")
    }
}

/// A configured lbdesk, bound to its ports: the embedded API already serves (lbdesk's own
/// startup writes go through it), the web UI and the reconciler start with `run_until`.
pub struct Server {
    listener: tokio::net::TcpListener,
    router: axum::Router,
    /// The web UI's TLS configuration, when it serves HTTPS itself.
    tls: Option<axum_server::tls_rustls::RustlsConfig>,
    /// How long a connection may idle or take to send a request's headers.
    idle: Duration,
    api: Option<EmbeddedApi>,
    /// How lbdesk reaches Kubernetes.
    pub mode: Mode,
    /// The embedded API's address, in embedded mode.
    pub api_addr: Option<SocketAddr>,
    /// The embedded API's kubeconfig, in embedded mode.
    pub kubeconfig: Option<serde_json::Value>,
    /// A `kube::Client` per cluster, the management cluster's first.
    pub clusters: Clusters,
    /// The client of the network-policy driver.
    pub driver: DriverClient,
    /// Where the network-policy driver is.
    pub driver_url: String,
    /// The in-process driver simulator (embedded mode without a driver URL) and its listener.
    simulator: Option<(Simulator, tokio::net::TcpListener)>,
    /// Embedded mode's BIG-IP simulator and the simulated CIS posting to it.
    bigip: Option<crate::bigip::cis_sim::Loop>,
    /// The reconciler's context, unless another process runs the reconciler.
    reconciler: Option<Arc<reconciler::Context>>,
    /// The Lease the reconciler runs under, with `--leader-elect`.
    election: Option<crate::leader::Election>,
    /// Cluster mode: the namespace whose Secrets register the member clusters.
    members: Option<String>,
    /// The admission webhook served over HTTPS, when asked for.
    webhook: Option<crate::webhook::Webhook>,
    /// `/metrics`, on a listener of its own, and its address.
    metrics: (std::net::TcpListener, axum::Router),
    pub metrics_addr: SocketAddr,
    /// Its address.
    pub webhook_addr: Option<SocketAddr>,
    /// The address it is bound to.
    pub addr: SocketAddr,
    /// The address users reach it at.
    pub url: String,
    /// The demo logins to print.
    pub logins: Logins,
    /// lbdesk's own database (accounts, sessions, and in embedded mode the clusters).
    pub db: Db,
    /// Days the audit log keeps an entry; 0 keeps every entry.
    audit_retention_days: u64,
    /// The web side's watch caches of the management cluster.
    caches: Arc<app::ssr::caches::Caches>,
}

impl Server {
    /// The in-process driver simulator, if one runs.
    pub fn simulator(&self) -> Option<Simulator> {
        self.simulator.as_ref().map(|(s, _)| s.clone())
    }

    /// Embedded mode's BIG-IP simulator, and its base URL.
    pub fn bigip(&self) -> Option<(crate::bigip::sim::Simulator, String)> {
        self.bigip.as_ref().map(|b| (b.simulator.clone(), b.url.clone()))
    }

    /// Opens the database, seeds the demo data, binds the listen addresses and, in embedded
    /// mode, starts serving the Kubernetes API.
    pub async fn build(args: ServeArgs) -> anyhow::Result<Server> {
        let tls = crate::net::web_tls(&args.http)?;
        let idle = Duration::from_secs(args.http.idle_timeout.max(1));
        let db = Db::connect(&args.store.database_url()?).await.context("could not open the database")?;
        let logins = crate::demo::seed(&db, args.demo).await.context("could not seed the demo data")?;
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("could not listen on {}", args.listen))?;
        let local: SocketAddr = listener.local_addr().context("no local address")?;
        // lbdesk's own writes were authorized and audited by its pages; admission does the others'.
        let (own_user, via) = match args.mode {
            Mode::Embedded => (app::domain::access::Principal::System.name().to_string(), Via::Api),
            Mode::Cluster => (args.own_user.clone(), Via::Admission),
        };
        // NB: saves and admission read the management cluster from the same watch caches.
        let caches = Arc::new(app::ssr::caches::Caches::default());
        let admission = Arc::new(Admission::new(db.clone(), own_user, via, caches.clone()));
        let (api, kubeconfig, clusters) = match args.mode {
            Mode::Embedded => {
                let embedded =
                    crate::embedded::start(&db, &args.mgmt_cluster, args.watch_history, admission.clone()).await?;
                let listener = std::net::TcpListener::bind(args.api_listen)
                    .with_context(|| format!("could not listen on {}", args.api_listen))?;
                listener.set_nonblocking(true)?;
                let api_local = listener.local_addr()?;
                let pki = crate::tls::load_or_create(&db, &[api_local.ip()]).await?;
                let tls = axum_server::tls_rustls::RustlsConfig::from_config(crate::tls::server_config(&pki)?);
                let kubeconfig_with = |token: &str| {
                    let url = crate::embedded::api_url(api_local);
                    embedded_kubeconfig(&url, &pki.ca_pem, token, &embedded.clusters, &args.mgmt_cluster)
                };
                // kubectl users get the admin's token; lbdesk's own clients, its own.
                let kubeconfig = kubeconfig_with(&embedded.token);
                let own = parse_kubeconfig(&kubeconfig_with(&embedded.own_token))?;
                // NB: lbdesk's clients let go of an idle connection before its API closes it.
                let keep_idle = (idle / 2).min(app::ssr::clusters::KEEP_IDLE);
                let clusters = Clusters::from_kubeconfig(own, &args.mgmt_cluster, keep_idle).await?;
                let api = EmbeddedApi::serve(listener, crate::api::routes::router(embedded.api), tls, idle)?;
                (Some((api, api_local)), Some(kubeconfig), clusters)
            }
            Mode::Cluster => (None, None, Clusters::managing(&args.mgmt_cluster, mgmt_client(&args).await?)),
        };
        caches.connect(clusters.mgmt());
        admission.connect(clusters.mgmt().clone());
        let webhook = crate::webhook::Webhook::bind(&args.webhook, admission.clone())?;
        let webhook_addr = webhook.as_ref().map(|w| w.addr()).transpose()?;
        if args.demo && args.mode == Mode::Embedded {
            crate::demo::loadbalancer::seed(clusters.mgmt()).await.context("could not seed the demo load balancer")?;
        }
        let directory = match &args.directory {
            Some(file) => Some(Arc::new(app::ssr::directory::Directory::load(file).map_err(anyhow::Error::msg)?)),
            None => None,
        };
        // NB: so that the sign-in page can say from the first visit whether it answers.
        if let Some(directory) = &directory {
            directory.probe_soon();
        }
        let leptos_options = LeptosOptions::builder()
            .output_name("lbdesk")
            .site_root(args.site_root.to_string_lossy().to_string())
            .site_pkg_dir("pkg")
            .site_addr(local)
            .build();
        if !args.site_root.join("pkg").exists() {
            tracing::warn!(site_root = %args.site_root.display(), "no built site here: pages load without scripts and styles (run the README's build)");
        }
        // NB: a public `https://` URL means TLS is terminated in front of lbdesk.
        let secure_cookies = tls.is_some() || args.public_url.as_deref().is_some_and(|u| u.starts_with("https://"));
        let site = crate::web::SiteOrigin::new(args.public_url.as_deref(), local, tls.is_some())?;
        // The network-policy driver: the configured one, or the simulator in-process (embedded).
        let (driver_url, simulator) = match (&args.driver_url, args.mode) {
            (Some(url), _) => (url.clone(), None),
            (None, Mode::Embedded) => {
                let behaviour = match &args.driver_sim_config {
                    Some(path) => Behaviour::read(path)?,
                    None => Behaviour::demo(),
                };
                let sim_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .context("could not start the driver simulator")?;
                let url = format!("http://{}", sim_listener.local_addr()?);
                (url, Some((Simulator::new(behaviour), sim_listener)))
            }
            (None, Mode::Cluster) => anyhow::bail!("cluster mode needs --driver-url (or LBDESK_DRIVER_URL)"),
        };
        let driver = DriverClient::new(
            &driver_url,
            crate::driver::Timeouts::new(args.driver_timeout, args.driver_request_timeout, args.driver_revoke_timeout),
        )?;
        let bigip = match args.mode {
            Mode::Embedded => {
                let behaviour = match &args.bigip_sim_config {
                    Some(path) => crate::bigip::sim::Behaviour::read(path)?,
                    None => Default::default(),
                };
                Some(crate::bigip::cis_sim::Loop::bind(args.bigip_sim_listen, behaviour).await?)
            }
            Mode::Cluster => None,
        };
        let metrics = Arc::new(crate::metrics::Metrics::default());
        let reconciler = (!args.no_reconciler).then(|| {
            let config = reconciler::Config {
                ensure_every: Duration::from_secs(args.ensure_interval.max(1)),
                ingress_class: args.ingress_class.clone(),
                retry_ceiling: Duration::from_secs(args.retry_max_delay),
                bigip_every: Duration::from_secs(args.bigip_poll_seconds),
                bigip_url: bigip.as_ref().map(|b| b.url.clone()),
            };
            Arc::new(reconciler::Context::new(clusters.clone(), driver.clone(), config).with_metrics(metrics.clone()))
        });
        let state = AppState {
            leptos_options,
            db: db.clone(),
            clusters: clusters.clone(),
            ingress_class: args.ingress_class.clone(),
            caches: caches.clone(),
            saves: Default::default(),
            directory,
        };
        // NB: admission is called in-process by the embedded API; it is not served on the web
        // UI's port, where anyone could ask it about load balancers and their use.
        let probes = crate::web::Probes {
            db: db.clone(),
            clusters: clusters.clone(),
            reconciler: reconciler.clone(),
            said: Default::default(),
        };
        let metrics_listener = std::net::TcpListener::bind(args.metrics_listen)
            .with_context(|| format!("could not listen on {} (metrics)", args.metrics_listen))?;
        let metrics_addr = metrics_listener.local_addr().context("no local address (metrics)")?;
        if let Some(file) = &args.metrics_token_file {
            crate::web::metrics_token(file).map_err(anyhow::Error::msg)?;
        }
        let policy = crate::web::SessionPolicy {
            idle: Duration::from_secs(args.http.session_idle),
            lifetime: Duration::from_secs(args.http.session_lifetime),
        };
        let router = crate::web::router(state, secure_cookies, site, probes, policy);
        let (api, api_addr) = api.unzip();
        let scheme = if tls.is_some() { "https" } else { "http" };
        Ok(Server {
            listener,
            router,
            tls,
            idle,
            api,
            mode: args.mode,
            api_addr,
            kubeconfig,
            addr: local,
            url: args.public_url.clone().unwrap_or_else(|| format!("{scheme}://{local}")),
            logins,
            db,
            clusters,
            driver,
            driver_url,
            simulator,
            bigip,
            reconciler,
            election: args.leader_elect.then(|| crate::leader::Election {
                namespace: args.namespace.clone(),
                lease: "lbdesk-reconciler".into(),
                identity: format!(
                    "{}-{}",
                    std::env::var("HOSTNAME").unwrap_or_else(|_| "lbdesk".into()),
                    &uuid::Uuid::new_v4().simple().to_string()[..8]
                ),
            }),
            members: (args.mode == Mode::Cluster).then(|| args.namespace.clone()),
            webhook,
            webhook_addr,
            metrics: (metrics_listener, crate::web::metrics_router(metrics, args.metrics_token_file.clone())),
            metrics_addr,
            audit_retention_days: args.audit_retention_days,
            caches,
        })
    }

    /// Serves until `shutdown` resolves and the requests under way have finished; then stops
    /// the reconciler (joined: its reconciles under way finish) and, last, the embedded API
    /// both of them use.
    pub async fn run_until(self, shutdown: impl Future<Output = ()> + Send + 'static) -> anyhow::Result<()> {
        // SIGTERM stops accepting connections; the requests under way finish.
        let handle = axum_server::Handle::new();
        let listener = self.listener.into_std().context("the web UI's listener")?;
        let web = crate::net::serve(listener, self.router, self.tls, self.idle, handle.clone())
            .context("could not serve the web UI")?;
        let webhook_handle = axum_server::Handle::new();
        let webhook = match self.webhook {
            Some(w) => Some(w.serve(self.idle, webhook_handle.clone()).context("could not serve the webhook")?),
            None => None,
        };
        let (metrics_listener, metrics_router) = self.metrics;
        let metrics_handle = axum_server::Handle::new();
        let metrics = crate::net::serve(metrics_listener, metrics_router, None, self.idle, metrics_handle.clone())
            .context("could not serve the metrics")?;
        let sessions = app::ssr::session_store::SqlSessionStore::new(self.db.clone());
        let sweeper = tokio::spawn(async move {
            let mut every_hour = tokio::time::interval(Duration::from_secs(3600));
            loop {
                every_hour.tick().await;
                if let Err(e) = sessions.delete_expired().await {
                    tracing::warn!(error = %e, "could not delete expired sessions");
                }
            }
        });
        let simulator = self.simulator.map(|(sim, listener)| tokio::spawn(sim.serve(listener)));
        let bigip = self.bigip.map(|b| b.spawn(self.clusters.clone()));
        let members = self.members.map(|ns| tokio::spawn(crate::members::follow(self.clusters.clone(), ns)));
        // NB: the writes the webhook allowed are recorded once the watch shows them committed.
        let audited = webhook.as_ref().map(|_| {
            let (db, clusters) = (self.db.clone(), self.clusters.clone());
            tokio::spawn(crate::audit_follow::follow(db, clusters.mgmt().clone(), clusters.mgmt_name().to_string()))
        });
        // NB: dropping the sender stops the reconciler, also when this future is dropped.
        let (stop_reconciler, reconciler_stopped) = tokio::sync::oneshot::channel::<()>();
        let mgmt = self.clusters.mgmt().clone();
        let reconciler = self.reconciler.map(|ctx| match self.election {
            Some(election) => tokio::spawn(crate::leader::lead(ctx, mgmt, election, reconciler_stopped)),
            None => tokio::spawn(reconciler::controllers::run(ctx, async move {
                let _ = reconciler_stopped.await;
            })),
        });
        let (stop_retention, retention_stopped) = tokio::sync::oneshot::channel::<()>();
        let retention =
            tokio::spawn(crate::retention::keep_audit(self.db.clone(), self.audit_retention_days, retention_stopped));
        let stopper = tokio::spawn(async move {
            shutdown.await;
            handle.graceful_shutdown(None);
        });
        let served = web.await.context("the server stopped").and_then(|r| r.context("the server failed"));
        stopper.abort();
        metrics_handle.graceful_shutdown(Some(Duration::from_secs(1)));
        metrics.await.context("the metrics stopped")?.context("the metrics failed")?;
        // NB: the webhook answers until the web UI has stopped: an API server may still ask.
        webhook_handle.graceful_shutdown(Some(Duration::from_secs(5)));
        if let Some(task) = webhook {
            task.await.context("the webhook stopped")?.context("the webhook failed")?;
        }
        drop(stop_reconciler);
        drop(stop_retention);
        let retained = retention.await.context("the audit retention failed");
        let reconciled = match reconciler {
            Some(task) => task.await.context("the reconciler failed"),
            None => Ok(()),
        };
        sweeper.abort();
        if let Some(sim) = simulator {
            sim.abort();
        }
        for task in bigip.into_iter().flatten() {
            task.abort();
        }
        if let Some(members) = members {
            members.abort();
        }
        if let Some(audited) = audited {
            audited.abort();
        }
        // NB: the caches' watches would hold the embedded API's graceful shutdown open to its
        // end (5 s); nothing reads them once the web UI and the webhook have stopped.
        self.caches.disconnect();
        if let Some(api) = self.api {
            api.stop().await?;
        }
        reconciled?;
        retained?;
        served
    }
}

/// Cluster mode: the management cluster's client, from `--kubeconfig` (its context named after
/// the management cluster, else its current one) or else the in-cluster service account.
async fn mgmt_client(args: &ServeArgs) -> anyhow::Result<kube::Client> {
    let Some(path) = &args.kubeconfig else {
        let config = kube::Config::incluster()
            .context("cluster mode needs --kubeconfig (or KUBECONFIG) outside a pod, or a pod's service account")?;
        return kube::Client::try_from(config).context("no client for the management cluster");
    };
    let kubeconfig = kube::config::Kubeconfig::read_from(path)
        .with_context(|| format!("could not read the kubeconfig {}", path.display()))?;
    let named = kubeconfig.contexts.iter().any(|c| c.name == args.mgmt_cluster);
    let context = named.then_some(args.mgmt_cluster.as_str());
    app::ssr::clusters::client_of(&kubeconfig, context, app::ssr::clusters::KEEP_IDLE).await
}

/// What `lbdesk serve` prints once it listens: the mode that runs and where to reach it (in
/// embedded mode, its Kubernetes API and BIG-IP simulator too).
fn banner(mode: Mode, url: &str, metrics: SocketAddr, api: Option<SocketAddr>, bigip: Option<&str>) -> Vec<String> {
    let mut lines = vec![
        format!("  lbdesk is running in {} mode", mode.name()),
        format!("  URL:    {url}"),
        format!("  Metrics: http://{metrics}/metrics"),
    ];
    if let Some(api) = api {
        lines.push(format!(
            "  Kubernetes API: https://{api}/k8s/clusters/<cluster>  (`lbdesk kubeconfig` prints a kubeconfig)"
        ));
    }
    if let Some(bigip) = bigip {
        lines.push(format!("  BIG-IP simulator: {bigip}  (PUT {bigip}/_behaviour changes it; see the README)"));
    }
    lines
}

/// `lbdesk serve`.
pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let server = Server::build(args).await?;
    println!();
    let bigip = server.bigip().map(|(_, url)| url);
    for line in banner(server.mode, &server.url, server.metrics_addr, server.api_addr, bigip.as_deref()) {
        println!("{line}");
    }
    crate::demo::print_logins(&server.logins);
    println!();
    tracing::info!(url = %server.url, mode = server.mode.name(), "serving");
    server.run_until(shutdown_signal()).await?;
    tracing::info!("stopped");
    Ok(())
}

/// Resolves on SIGTERM or Ctrl-C.
async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "could not listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "could not listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
    tracing::info!("shutting down");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_banner_names_the_mode_that_runs() {
        let api: SocketAddr = ([127, 0, 0, 1], 6443).into();
        let metrics: SocketAddr = ([127, 0, 0, 1], 9464).into();
        let cluster = banner(Mode::Cluster, "http://127.0.0.1:3000", metrics, None, None);
        assert_eq!(cluster[0], "  lbdesk is running in cluster mode");
        let embedded_only = |l: &String| l.contains("embedded") || l.contains("Kubernetes API") || l.contains("BIG-IP");
        assert!(!cluster.iter().any(embedded_only), "{cluster:?}");
        let embedded =
            banner(Mode::Embedded, "http://127.0.0.1:3000", metrics, Some(api), Some("http://127.0.0.1:7443"));
        assert_eq!(embedded[0], "  lbdesk is running in embedded mode");
        assert!(embedded.iter().any(|l| l.contains("https://127.0.0.1:6443/k8s/clusters/<cluster>")), "{embedded:?}");
        assert!(embedded.iter().any(|l| l.contains("http://127.0.0.1:9464/metrics")), "{embedded:?}");
        assert!(embedded.iter().any(|l| l.contains("BIG-IP simulator: http://127.0.0.1:7443")), "{embedded:?}");
    }
}
