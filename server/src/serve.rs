//! `lbdesk serve`: opens the database, seeds the demo, and serves until SIGTERM.

use std::future::Future;
use std::net::SocketAddr;

use anyhow::Context;
use app::ssr::AppState;
use app::ssr::db::Db;
use leptos::config::LeptosOptions;
use tower_sessions::ExpiredDeletion;

use crate::cli::ServeArgs;
use crate::demo::Logins;

/// A configured lbdesk, bound to its port, not yet serving.
pub struct Server {
    listener: tokio::net::TcpListener,
    router: axum::Router,
    /// The address it is bound to.
    pub addr: SocketAddr,
    /// The address users reach it at.
    pub url: String,
    /// The demo logins to print.
    pub logins: Logins,
    pub db: Db,
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
        let state = AppState { leptos_options, db: db.clone() };
        Ok(Server {
            listener,
            router: crate::web::router(state, secure_cookies),
            addr: local,
            url: args.public_url.clone().unwrap_or_else(|| format!("http://{local}")),
            logins,
            db,
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
        let served =
            axum::serve(self.listener, self.router).with_graceful_shutdown(shutdown).await.context("the server failed");
        sweeper.abort();
        served
    }
}

/// `lbdesk serve`.
pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let server = Server::build(args).await?;
    println!();
    println!("  lbdesk is running in embedded mode");
    println!("  URL:    {}", server.url);
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
