//! What lbdesk is started with: the settings of `serve` and of the commands that share its
//! state, read from flags or environment variables. The command line (`cli`) only parses
//! them and picks the command; everything else reads them from here.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

/// Where the state lives.
#[derive(Args, Debug, Clone)]
pub struct StoreArgs {
    /// Directory for the SQLite database and other state.
    #[arg(long, env = "LBDESK_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
    /// `postgres://…` to use PostgreSQL instead of SQLite in the data directory.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
}

impl StoreArgs {
    /// The database URL: `DATABASE_URL`, else a SQLite file in the data directory (created).
    pub fn database_url(&self) -> anyhow::Result<String> {
        if let Some(url) = &self.database_url {
            return Ok(url.clone());
        }
        private_store(&self.data_dir)?;
        Ok(app::ssr::db::Db::sqlite_url(&self.data_dir))
    }
}

/// Creates the data directory (0700) and the SQLite file (0600), and tightens them when they
/// already exist: they hold session ids, the embedded API's token and CA key, and Secrets.
/// NB: SQLite gives its `-wal` and `-shm` files the database file's permissions.
fn private_store(dir: &std::path::Path) -> anyhow::Result<()> {
    use std::fs::{DirBuilder, OpenOptions, Permissions, set_permissions};
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    let shown = dir.display();
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("could not create the data directory {shown}"))?;
    set_permissions(dir, Permissions::from_mode(0o700)).with_context(|| format!("could not protect {shown}"))?;
    let file = app::ssr::db::Db::sqlite_file(dir);
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&file)
        .with_context(|| format!("could not create {}", file.display()))?;
    set_permissions(&file, Permissions::from_mode(0o600))
        .with_context(|| format!("could not protect {}", file.display()))?;
    Ok(())
}

/// How lbdesk reaches Kubernetes.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// lbdesk serves its own Kubernetes-compatible API (management and member clusters).
    Embedded,
    /// Real clusters: the management cluster from the in-cluster service account or a
    /// kubeconfig, the member clusters from the Secrets that register them.
    Cluster,
}

impl Mode {
    /// The mode as the flag spells it (`embedded`, `cluster`), for the startup banner and logs.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Embedded => "embedded",
            Mode::Cluster => "cluster",
        }
    }
}

/// Options of `lbdesk kubeconfig`: the same address and state as `serve`.
#[derive(Args, Debug, Clone)]
pub struct KubeconfigArgs {
    /// Address of the embedded Kubernetes API (HTTPS).
    #[arg(long, env = "LBDESK_API_LISTEN", default_value = "127.0.0.1:6443")]
    pub api_listen: SocketAddr,
    #[command(flatten)]
    pub store: StoreArgs,
    /// The management cluster's name.
    #[arg(long, env = "LBDESK_MGMT_CLUSTER", default_value = "mgmt")]
    pub mgmt_cluster: String,
    /// Print lbdesk's own token instead of the admin's: for lbdesk processes in cluster mode
    /// against this embedded API, whose writes are then lbdesk's own (as its ServiceAccount's
    /// are on a real cluster).
    #[arg(long)]
    pub as_lbdesk: bool,
    /// Print one cluster's context only (current): the kubeconfig a Secret registering that
    /// member cluster holds.
    #[arg(long)]
    pub cluster: Option<String>,
}

/// Options of `lbdesk serve`.
#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "LBDESK_LISTEN", default_value = "127.0.0.1:3000")]
    pub listen: SocketAddr,
    /// Address of the embedded Kubernetes API (HTTPS; embedded mode only).
    #[arg(long, env = "LBDESK_API_LISTEN", default_value = "127.0.0.1:6443")]
    pub api_listen: SocketAddr,
    /// Address of `/metrics` for Prometheus (plain HTTP), apart from the web UI.
    #[arg(long, env = "LBDESK_METRICS_LISTEN", default_value = "127.0.0.1:9464")]
    pub metrics_listen: SocketAddr,
    /// A file holding the bearer token `/metrics` asks of its scraper (`Authorization: Bearer
    /// …`), read at every scrape so that a rotated Secret takes effect; none: no token asked.
    #[arg(long, env = "LBDESK_METRICS_TOKEN_FILE")]
    pub metrics_token_file: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Seed the demo users with fixed, documented passwords, and (embedded mode) a load
    /// balancer both demo projects may use (never in production).
    #[arg(long, env = "LBDESK_DEMO")]
    pub demo: bool,
    /// The address users reach lbdesk at; `https://…` marks the session cookie `Secure`.
    #[arg(long, env = "LBDESK_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Directory holding the built site (`pkg/`, favicon).
    #[arg(long, env = "LEPTOS_SITE_ROOT", default_value = "target/site")]
    pub site_root: PathBuf,
    /// Embedded API (default) or real clusters.
    #[arg(long, env = "LBDESK_MODE", value_enum, default_value = "embedded")]
    pub mode: Mode,
    /// Cluster mode: the management cluster's kubeconfig (else the in-cluster service account).
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// The management cluster's name (in cluster mode, the kubeconfig's context of this name,
    /// else its current context).
    #[arg(long, env = "LBDESK_MGMT_CLUSTER", default_value = "mgmt")]
    pub mgmt_cluster: String,
    /// Events each embedded cluster keeps for watches to resume from; older versions get 410.
    #[arg(long, env = "LBDESK_WATCH_HISTORY", default_value_t = 10_000)]
    pub watch_history: i64,
    /// The network-policy driver; embedded mode runs the simulator in-process when absent.
    #[arg(long, env = "LBDESK_DRIVER_URL")]
    pub driver_url: Option<String>,
    /// The embedded simulator's behaviour file (see the README); a demo behaviour when absent.
    #[arg(long, env = "LBDESK_DRIVER_SIM_CONFIG")]
    pub driver_sim_config: Option<PathBuf>,
    /// Embedded mode's BIG-IP simulator: its behaviour file (see the README; none: every member
    /// up, every declaration that passes the AS3 schema taken) and where it listens (its
    /// `/_behaviour` can be changed there while lbdesk runs).
    #[arg(long, env = "LBDESK_BIGIP_SIM_CONFIG")]
    pub bigip_sim_config: Option<PathBuf>,
    #[arg(long, env = "LBDESK_BIGIP_SIM_LISTEN", default_value = "127.0.0.1:0")]
    pub bigip_sim_listen: SocketAddr,
    /// Seconds each driver call may take (1–60).
    #[arg(long, env = "LBDESK_DRIVER_TIMEOUT", default_value_t = 10,
        value_parser = clap::value_parser!(u64).range(1..=60))]
    pub driver_timeout: u64,
    /// Seconds a `requestNetworkPolicy` call may take (1–60); `--driver-timeout` when absent.
    #[arg(long, env = "LBDESK_DRIVER_REQUEST_TIMEOUT", value_parser = clap::value_parser!(u64).range(1..=60))]
    pub driver_request_timeout: Option<u64>,
    /// Seconds a `revokeNetworkPolicy` call may take (1–60); `--driver-timeout` when absent.
    #[arg(long, env = "LBDESK_DRIVER_REVOKE_TIMEOUT", value_parser = clap::value_parser!(u64).range(1..=60))]
    pub driver_revoke_timeout: Option<u64>,
    /// Seconds between full reconciles that repair drift (generated objects edited by hand).
    #[arg(long, env = "LBDESK_ENSURE_INTERVAL", default_value_t = 300)]
    pub ensure_interval: u64,
    /// Seconds a failed reconcile waits at most before it is tried again (1–3600): the wait
    /// doubles from half a second with each failure of the same object.
    #[arg(long, env = "LBDESK_RETRY_MAX_DELAY", default_value_t = 60,
        value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub retry_max_delay: u64,
    /// Seconds between read-backs of what each load balancer's BIG-IP runs (1–3600). An
    /// unreachable BIG-IP is tried again after a growing wait, up to five minutes.
    #[arg(long, env = "LBDESK_BIGIP_POLL_SECONDS", default_value_t = 10,
        value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub bigip_poll_seconds: u64,
    /// The ingress class the member clusters' CIS watches (its `--ingress-class`): lbdesk's
    /// Ingresses carry it, and the F5 Ingress pages show it.
    #[arg(long, env = "LBDESK_INGRESS_CLASS", default_value = app::domain::cis_ingress::DEFAULT_CLASS,
        value_parser = ingress_class)]
    pub ingress_class: String,
    /// Serve without the reconciler (another process runs it).
    #[arg(long, env = "LBDESK_NO_RECONCILER")]
    pub no_reconciler: bool,
    /// Run the reconciler only while this replica holds the Lease `lbdesk-reconciler` (several
    /// replicas, one reconciler).
    #[arg(long, env = "LBDESK_LEADER_ELECT", conflicts_with = "no_reconciler")]
    pub leader_elect: bool,
    /// lbdesk's own namespace in the management cluster: the leader election's Lease, and in
    /// cluster mode the Secrets that register the member clusters.
    #[arg(long, env = "LBDESK_NAMESPACE", default_value = "lbdesk-system")]
    pub namespace: String,
    /// Days the audit log keeps an entry (purged hourly); 0 keeps every entry.
    #[arg(long, env = "LBDESK_AUDIT_RETENTION_DAYS", default_value_t = 365)]
    pub audit_retention_days: u64,
    /// Cluster mode: the Kubernetes user lbdesk itself writes as. Admission neither checks nor
    /// audits its writes: the pages made them and audited them already.
    #[arg(long, env = "LBDESK_OWN_USER", default_value = "system:serviceaccount:lbdesk-system:lbdesk")]
    pub own_user: String,
    /// Users sign in with the bank's directory (LDAP / Active Directory) as this YAML file
    /// says (see the README, "Signing in with a directory").
    #[arg(long, env = "LBDESK_DIRECTORY")]
    pub directory: Option<PathBuf>,
    #[command(flatten)]
    pub http: HttpArgs,
    #[command(flatten)]
    pub webhook: WebhookArgs,
}

/// An ingress class is the name of an IngressClass: a DNS subdomain.
fn ingress_class(value: &str) -> Result<String, String> {
    app::domain::policy::object_name("--ingress-class", value)
        .map(|_| value.to_string())
        .map_err(|r| r.reason.to_string())
}

/// How lbdesk's HTTP listeners treat connections: TLS for the web UI, and how long an idle or
/// slow client may hold a connection.
#[derive(Args, Debug, Clone)]
pub struct HttpArgs {
    /// Serve the web UI over HTTPS with this certificate chain (PEM; with `--tls-key`).
    #[arg(long, env = "LBDESK_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of `--tls-cert` (PEM).
    #[arg(long, env = "LBDESK_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Seconds a connection to the web UI or the embedded API may stay idle, or take to send a
    /// request's headers (or the TLS handshake), before it is closed.
    #[arg(long, env = "LBDESK_IDLE_TIMEOUT", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub idle_timeout: u64,
    /// Seconds a signed-in session lasts without a request.
    #[arg(long, env = "LBDESK_SESSION_IDLE", default_value_t = 8 * 3600, value_parser = clap::value_parser!(u64).range(1..))]
    pub session_idle: u64,
    /// Seconds a session lasts from sign-in, however much it is used.
    #[arg(long, env = "LBDESK_SESSION_LIFETIME", default_value_t = 12 * 3600, value_parser = clap::value_parser!(u64).range(1..))]
    pub session_lifetime: u64,
}

impl Default for HttpArgs {
    fn default() -> Self {
        HttpArgs {
            tls_cert: None,
            tls_key: None,
            idle_timeout: 30,
            session_idle: 8 * 3600,
            session_lifetime: 12 * 3600,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use clap::Parser;

    use super::{HttpArgs, ServeArgs, StoreArgs};

    fn mode(path: &std::path::Path) -> u32 {
        std::fs::metadata(path).expect("exists").permissions().mode() & 0o777
    }

    #[test]
    fn a_tls_flag_without_its_partner_is_refused_naming_it() {
        #[derive(Parser)]
        struct Flags {
            #[command(flatten)]
            http: HttpArgs,
        }
        let error = Flags::try_parse_from(["lbdesk", "--tls-cert", "cert.pem"]).err().map(|e| e.to_string());
        assert!(error.as_deref().is_some_and(|e| e.contains("--tls-key")), "{error:?}");
        let error = Flags::try_parse_from(["lbdesk", "--tls-key", "key.pem"]).err().map(|e| e.to_string());
        assert!(error.as_deref().is_some_and(|e| e.contains("--tls-cert")), "{error:?}");
        let both = Flags::try_parse_from(["lbdesk", "--tls-cert", "c.pem", "--tls-key", "k.pem"]).expect("both");
        assert_eq!(both.http.idle_timeout, 30);
        assert!(Flags::try_parse_from(["lbdesk", "--idle-timeout", "0"]).is_err(), "at least a second");
    }

    #[test]
    fn the_ingress_class_is_cis_s_default_unless_named_and_must_be_a_name() {
        #[derive(Parser)]
        struct Flags {
            #[command(flatten)]
            serve: ServeArgs,
        }
        let class = |args: &[&str]| {
            Flags::try_parse_from([&["lbdesk"], args].concat())
                .map(|f| f.serve.ingress_class)
                .map_err(|e| e.to_string())
        };
        assert_eq!(class(&[]).as_deref(), Ok(app::domain::cis_ingress::DEFAULT_CLASS));
        assert_eq!(class(&["--ingress-class", "bigip.example.com"]).as_deref(), Ok("bigip.example.com"));
        for bad in ["", "F5", "f5 cis"] {
            let refused = class(&["--ingress-class", bad]).err();
            assert!(refused.as_deref().is_some_and(|e| e.contains("--ingress-class")), "{bad:?}: {refused:?}");
        }
    }

    #[test]
    fn the_data_directory_and_database_are_private_to_their_owner() {
        let root = tempfile::tempdir().expect("temporary directory");
        let dir = root.path().join("data");
        // An existing, world-readable store is tightened too.
        std::fs::create_dir(&dir).expect("create");
        std::fs::write(dir.join("lbdesk.db"), b"").expect("write");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        std::fs::set_permissions(dir.join("lbdesk.db"), std::fs::Permissions::from_mode(0o644)).expect("chmod");
        for data_dir in [dir.clone(), root.path().join("fresh")] {
            let args = StoreArgs { data_dir: data_dir.clone(), database_url: None };
            args.database_url().expect("the store is prepared");
            assert_eq!(mode(&data_dir), 0o700, "{}", data_dir.display());
            assert_eq!(mode(&data_dir.join("lbdesk.db")), 0o600, "{}", data_dir.display());
        }
    }
}

/// Where and with what the webhook is served.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct WebhookArgs {
    /// Serve the validating admission webhook over HTTPS on this address (cluster mode; with
    /// `--webhook-cert` and `--webhook-key`).
    #[arg(long, env = "LBDESK_WEBHOOK_LISTEN", requires_all = ["webhook_cert", "webhook_key"])]
    pub webhook_listen: Option<SocketAddr>,
    /// The webhook's certificate chain (PEM), read again when it changes.
    #[arg(long, env = "LBDESK_WEBHOOK_CERT")]
    pub webhook_cert: Option<PathBuf>,
    /// The private key of `--webhook-cert` (PEM), read again when it changes.
    #[arg(long, env = "LBDESK_WEBHOOK_KEY")]
    pub webhook_key: Option<PathBuf>,
    /// The CA certificate(s) (PEM) that sign the API server's client certificate: the webhook
    /// then answers only a caller presenting one, and audits the writes it allows with the user
    /// the API server names. Without it the webhook answers anyone who reaches it and audits
    /// nothing (a review's user would be whatever the caller wrote).
    #[arg(long, env = "LBDESK_WEBHOOK_CLIENT_CA")]
    pub webhook_client_ca: Option<PathBuf>,
}
