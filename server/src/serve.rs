//! `lbdesk serve`: opens the database, seeds the demo, and serves until SIGTERM.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use anyhow::Context;
use app::ssr::AppState;
use app::ssr::clusters::{Clusters, embedded_kubeconfig, parse_kubeconfig};
use app::ssr::db::Db;
use axum::serve::ListenerExt;
use leptos::config::LeptosOptions;
use tower_sessions::ExpiredDeletion;

use crate::admission::Admission;
use crate::cli::{KubeconfigArgs, Mode, ServeArgs};
use crate::demo::Logins;

/// The embedded API's HTTPS listener and routes.
struct EmbeddedApi {
    listener: std::net::TcpListener,
    router: axum::Router,
    tls: axum_server::tls_rustls::RustlsConfig,
    kubeconfig: serde_json::Value,
}

/// A configured lbdesk, bound to its ports, not yet serving.
pub struct Server {
    listener: tokio::net::TcpListener,
    router: axum::Router,
    api: Option<EmbeddedApi>,
    /// The embedded API's address, in embedded mode.
    pub api_addr: Option<SocketAddr>,
    /// The embedded API's kubeconfig, in embedded mode.
    pub kubeconfig: Option<serde_json::Value>,
    pub clusters: Clusters,
    pub driver: crate::driver::DriverClient,
    /// Where the network-policy driver is.
    pub driver_url: String,
    /// The in-process driver simulator (embedded mode without a driver URL) and its listener.
    simulator: Option<(crate::driver::sim::Simulator, tokio::net::TcpListener)>,
    reconciler: Option<crate::reconciler::Config>,
    /// The address it is bound to.
    pub addr: SocketAddr,
    /// The address users reach it at.
    pub url: String,
    /// The demo logins to print.
    pub logins: Logins,
    pub db: Db,
}

impl Server {
    /// The in-process driver simulator, if one runs.
    pub fn simulator(&self) -> Option<crate::driver::sim::Simulator> {
        self.simulator.as_ref().map(|(s, _)| s.clone())
    }
}

impl Server {
    /// Opens the database, seeds the demo data and binds the listen address.
    pub async fn build(args: ServeArgs) -> anyhow::Result<Server> {
        let db = Db::connect(&args.store.database_url()?).await.context("could not open the database")?;
        let logins = crate::demo::seed(&db, args.demo).await.context("could not seed the demo data")?;
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("could not listen on {}", args.listen))?;
        let local: SocketAddr = listener.local_addr().context("no local address")?;
        let admission = Arc::new(Admission::default());
        let (api, clusters) = match args.mode {
            Mode::Embedded => {
                let embedded =
                    crate::embedded::start(&db, &args.mgmt_cluster, args.watch_history, admission.clone()).await?;
                let listener = std::net::TcpListener::bind(args.api_listen)
                    .with_context(|| format!("could not listen on {}", args.api_listen))?;
                listener.set_nonblocking(true)?;
                let api_local = listener.local_addr()?;
                let pki = crate::tls::load_or_create(&db, &[api_local.ip()]).await?;
                let tls = axum_server::tls_rustls::RustlsConfig::from_config(crate::tls::server_config(&pki)?);
                let kubeconfig = embedded_kubeconfig(
                    &loopback_url(api_local),
                    &pki.ca_pem,
                    &embedded.token,
                    &embedded.clusters,
                    &args.mgmt_cluster,
                );
                let clusters = Clusters::from_kubeconfig(parse_kubeconfig(&kubeconfig)?, &args.mgmt_cluster).await?;
                (Some(EmbeddedApi { listener, router: crate::api::router(embedded.api), tls, kubeconfig }), clusters)
            }
            Mode::Cluster => {
                let path = args.kubeconfig.as_ref().context("cluster mode needs --kubeconfig (or KUBECONFIG)")?;
                let kubeconfig = kube::config::Kubeconfig::read_from(path)
                    .with_context(|| format!("could not read the kubeconfig {}", path.display()))?;
                (None, Clusters::from_kubeconfig(kubeconfig, &args.mgmt_cluster).await?)
            }
        };
        let leptos_options = LeptosOptions::builder()
            .output_name("lbdesk")
            .site_root(args.site_root.to_string_lossy().to_string())
            .site_pkg_dir("pkg")
            .site_addr(local)
            .build();
        if !args.site_root.join("pkg").exists() {
            tracing::warn!(site_root = %args.site_root.display(), "no built site here: pages load without scripts and styles (run the README's build)");
        }
        let secure_cookies = args.public_url.as_deref().is_some_and(|u| u.starts_with("https://"));
        admission.connect(clusters.mgmt().clone());
        // The network-policy driver: the configured one, or the simulator in-process (embedded).
        let (driver_url, simulator) = match (&args.driver_url, args.mode) {
            (Some(url), _) => (url.clone(), None),
            (None, Mode::Embedded) => {
                let behaviour = match &args.driver_sim_config {
                    Some(path) => crate::driver::sim::Behaviour::read(path)?,
                    None => crate::driver::sim::Behaviour::demo(),
                };
                let sim_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .context("could not start the driver simulator")?;
                let url = format!("http://{}", sim_listener.local_addr()?);
                (url, Some((crate::driver::sim::Simulator::new(behaviour), sim_listener)))
            }
            (None, Mode::Cluster) => anyhow::bail!("cluster mode needs --driver-url (or LBDESK_DRIVER_URL)"),
        };
        let driver =
            crate::driver::DriverClient::new(&driver_url, crate::driver::Timeouts::uniform(args.driver_timeout))?;
        let reconciler = (!args.no_reconciler).then(|| crate::reconciler::Config {
            ensure_every: std::time::Duration::from_secs(args.ensure_interval.max(1)),
            crash_after: None,
        });
        let state = AppState { leptos_options, db: db.clone(), clusters: clusters.clone() };
        let router = crate::web::router(state, secure_cookies)
            .route("/admission/validate", axum::routing::post(crate::admission::endpoint).with_state(admission));
        let api_addr = api.as_ref().and_then(|a| a.listener.local_addr().ok());
        let kubeconfig = api.as_ref().map(|a| a.kubeconfig.clone());
        Ok(Server {
            listener,
            router,
            api,
            api_addr,
            kubeconfig,
            addr: local,
            url: args.public_url.clone().unwrap_or_else(|| format!("http://{local}")),
            logins,
            db,
            clusters,
            driver,
            driver_url,
            simulator,
            reconciler,
        })
    }

    /// Serves until `shutdown` resolves, letting in-flight requests finish.
    pub async fn run_until(self, shutdown: impl Future<Output = ()> + Send + 'static) -> anyhow::Result<()> {
        let sessions = app::ssr::session_store::SqlSessionStore::new(self.db.clone());
        let sweeper = tokio::spawn(async move {
            let mut every_hour = tokio::time::interval(std::time::Duration::from_secs(3600));
            loop {
                every_hour.tick().await;
                if let Err(e) = sessions.delete_expired().await {
                    tracing::warn!(error = %e, "could not delete expired sessions");
                }
            }
        });
        let simulator = self.simulator.map(|(sim, listener)| tokio::spawn(sim.serve(listener)));
        let reconciler =
            self.reconciler.map(|config| crate::reconciler::start(self.clusters.clone(), self.driver.clone(), config));
        let handle = axum_server::Handle::new();
        let api = match self.api {
            Some(api) => {
                // NB: without TCP_NODELAY, small responses wait for delayed ACKs (40 ms stalls).
                let tls = axum_server::tls_rustls::RustlsAcceptor::new(api.tls)
                    .acceptor(axum_server::accept::NoDelayAcceptor::new());
                let server = axum_server::from_tcp(api.listener)?.acceptor(tls).handle(handle.clone());
                Some(tokio::spawn(server.serve(api.router.into_make_service())))
            }
            None => None,
        };
        let stop_api = handle.clone();
        let served = axum::serve(self.listener.tap_io(no_delay), self.router)
            .with_graceful_shutdown(async move {
                shutdown.await;
                stop_api.graceful_shutdown(Some(std::time::Duration::from_secs(5)));
            })
            .await
            .context("the server failed");
        sweeper.abort();
        if let Some(r) = reconciler {
            r.task.abort();
        }
        if let Some(sim) = simulator {
            sim.abort();
        }
        if let Some(api) = api {
            api.await.context("the embedded API stopped")?.context("the embedded API failed")?;
        }
        served
    }
}

/// The embedded API as seen from this machine: loopback when listening on every address.
fn loopback_url(local: SocketAddr) -> String {
    let ip = if local.ip().is_unspecified() { IpAddr::V4(Ipv4Addr::LOCALHOST) } else { local.ip() };
    format!("https://{}", SocketAddr::new(ip, local.port()))
}

/// `lbdesk kubeconfig`: the kubeconfig of the embedded API served with these settings.
pub async fn print_kubeconfig(args: &KubeconfigArgs) -> anyhow::Result<()> {
    let db = Db::connect(&args.store.database_url()?).await.context("could not open the database")?;
    let not_yet = "nothing to connect to yet: start `lbdesk serve` once with these settings first";
    let token = crate::embedded::admin_token(&db).await?.context(not_yet)?;
    let ca = crate::tls::ca_pem(&db).await?.context(not_yet)?;
    let clusters: Vec<String> = crate::embedded::CLUSTERS
        .iter()
        .map(|(c, _)| if *c == "mgmt" { args.mgmt_cluster.clone() } else { c.to_string() })
        .collect();
    let kubeconfig = embedded_kubeconfig(&loopback_url(args.api_listen), &ca, &token, &clusters, &args.mgmt_cluster);
    print!("{}", serde_yaml::to_string(&kubeconfig).context("could not print the kubeconfig")?);
    Ok(())
}

/// `lbdesk serve`.
pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let server = Server::build(args).await?;
    println!();
    println!("  lbdesk is running in embedded mode");
    println!("  URL:    {}", server.url);
    if let Some(api) = server.api_addr {
        println!("  Kubernetes API: https://{api}/k8s/clusters/<cluster>  (`lbdesk kubeconfig` prints a kubeconfig)");
    }
    crate::demo::print_logins(&server.logins);
    println!();
    tracing::info!(url = %server.url, "serving");
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

/// Sends small responses at once: without `TCP_NODELAY` they can wait for a delayed ACK (40 ms).
pub(crate) fn no_delay(tcp: &mut tokio::net::TcpStream) {
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!(error = %e, "could not set TCP_NODELAY");
    }
}
