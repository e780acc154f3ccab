//! `spawn_lbdesk()` and the database each test gets; a panic in the lbdesk a test spawned
//! fails that test (see `panics`).

use std::path::PathBuf;

use app::ssr::db::Db;
use server::config::{Mode, ServeArgs, StoreArgs};
use server::serve::Server;

use crate::panics::Watch;

/// The database engine a test runs on.
#[derive(Clone, Copy, Debug)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Runs one `async fn(Backend)` test on SQLite and on PostgreSQL.
#[macro_export]
macro_rules! on_both_databases {
    ($($name:ident),* $(,)?) => {$( $crate::on_databases!($name: on_sqlite Sqlite, on_postgres Postgres); )*};
}

/// Runs one `async fn(Backend)` test on SQLite only: a test of what lbdesk does above its store
/// (a screen's story, a rule's path). NB: what the store itself keeps (the embedded API's
/// objects and events, sessions, accounts, the audit log, secrets) is tested on both databases.
#[macro_export]
macro_rules! on_sqlite {
    ($($name:ident),* $(,)?) => {$( $crate::on_databases!($name: on_sqlite Sqlite); )*};
}

/// Test `$name` as a module of one test per database: `on_sqlite`, `on_postgres`.
#[macro_export]
macro_rules! on_databases {
    ($name:ident: $($test:ident $backend:ident),*) => {
        mod $name {$(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() {
                super::$name($crate::helpers::Backend::$backend).await
            }
        )*}
    };
}

/// A fresh, empty database for one test; the temporary directory lives as long as this.
pub struct TestDb {
    pub url: String,
    pub dir: tempfile::TempDir,
}

impl TestDb {
    pub async fn new(backend: Backend) -> TestDb {
        TestDb::new_in(backend, &std::env::temp_dir()).await
    }

    /// The same, its directory made in `parent`.
    pub async fn new_in(backend: Backend, parent: &std::path::Path) -> TestDb {
        let dir = tempfile::tempdir_in(parent).expect("temporary directory");
        let url = match backend {
            Backend::Sqlite => Db::sqlite_url(dir.path()),
            Backend::Postgres => fresh_postgres_database().await,
        };
        TestDb { url, dir }
    }

    pub async fn connect(&self) -> Db {
        Db::connect(&self.url).await.expect("database opens and migrates")
    }
}

/// Creates a new database on the test PostgreSQL server. There is no silent skip: without
/// the server the PostgreSQL half of the suite fails, saying how to get one.
async fn fresh_postgres_database() -> String {
    let admin = std::env::var("LBDESK_TEST_POSTGRES_URL").expect(
        "LBDESK_TEST_POSTGRES_URL is not set: run the suite with `cargo xtask test`, which starts PostgreSQL, \
         or point it at a server where the user may CREATE DATABASE",
    );
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&admin).await.expect("connect to the test PostgreSQL");
    let name = format!("lbdesk_t_{:016x}", rand::random::<u64>());
    sqlx::query(&format!("CREATE DATABASE {name}")).execute(&pool).await.expect("create database");
    pool.close().await;
    let (base, _) = admin.rsplit_once('/').expect("URL with a database path");
    format!("{base}/{name}")
}

/// A running lbdesk on free loopback ports. Dropping it fails the test if lbdesk panicked.
pub struct Lbdesk {
    pub url: String,
    pub db: Db,
    /// The kubeconfig of its embedded API (admin token, CA).
    pub kubeconfig: serde_json::Value,
    /// The in-process driver simulator.
    pub simulator: server::driver::sim::Simulator,
    /// Embedded mode's BIG-IP simulator, and its base URL.
    pub bigip: (server::bigip::sim::Simulator, String),
    pub clusters: app::ssr::clusters::Clusters,
    pub driver: server::driver::DriverClient,
    /// Where the admission webhook listens, when asked for.
    pub webhook_addr: Option<std::net::SocketAddr>,
    /// Where `/metrics` is served (apart from the web UI).
    pub metrics_url: String,
    /// Panics on the test's runtime since lbdesk started fail the test.
    panics: Watch,
    /// Stops lbdesk when sent to or dropped (as SIGTERM does).
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    /// lbdesk serving; it returns once stopped.
    task: Option<tokio::task::JoinHandle<()>>,
    /// Its database, kept for as long as lbdesk runs (and handed back by `stop`).
    test_db: Option<TestDb>,
}

impl Drop for Lbdesk {
    fn drop(&mut self) {
        // NB: a test already failing (unwinding) has said what went wrong; a second panic here
        // would abort the whole binary.
        if !std::thread::panicking() {
            self.panics.check();
        }
    }
}

impl Lbdesk {
    /// The runtime it runs on (the test's, or a shared lbdesk's own): the one its watch watches.
    pub fn runtime(&self) -> tokio::runtime::Id {
        self.panics.runtime()
    }

    /// The store settings of its database, as `lbdesk reset-demo-passwords` takes them.
    pub fn store(&self) -> server::config::StoreArgs {
        let db = self.test_db.as_ref().expect("its database");
        server::config::StoreArgs { data_dir: db.dir.path().to_path_buf(), database_url: Some(db.url.clone()) }
    }

    /// Stops lbdesk as SIGTERM does and waits until it has (the web UI, the reconciler, the
    /// embedded API); fails the test if that takes over 4 s or anything panicked. Hands back
    /// the database, for a restart on it.
    ///
    /// NB: with nothing under way a stop takes well under a second; it took over 5 s while the
    /// web side's watches held the embedded API's graceful shutdown open to its end.
    pub async fn stop(mut self) -> TestDb {
        drop(self.stop.take());
        let task = self.task.take().expect("lbdesk runs until stopped");
        tokio::time::timeout(std::time::Duration::from_secs(4), task)
            .await
            .expect("lbdesk stops within 4 s")
            .expect("lbdesk's task ends without a panic");
        self.test_db.take().expect("lbdesk keeps its database until stopped")
    }

    /// A `kube::Client` for one of its clusters (`mgmt`, `acp-region01`, …).
    ///
    /// NB: without kube's own retries of a 503 (up to 15, the waits doubling to 1,000 s): a test
    /// sees what lbdesk answers, as lbdesk's own clients do.
    pub async fn client(&self, cluster: &str) -> kube::Client {
        let kubeconfig = app::ssr::clusters::parse_kubeconfig(&self.kubeconfig).expect("kubeconfig");
        let options = kube::config::KubeConfigOptions { context: Some(cluster.into()), ..Default::default() };
        let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &options).await.expect("context");
        config.default_retry = false;
        kube::Client::try_from(config).expect("client")
    }

    /// The same, with another bearer token.
    pub async fn client_with_token(&self, cluster: &str, token: &str) -> kube::Client {
        let mut kubeconfig = self.kubeconfig.clone();
        kubeconfig["users"][0]["user"]["token"] = serde_json::json!(token);
        let kubeconfig = app::ssr::clusters::parse_kubeconfig(&kubeconfig).expect("kubeconfig");
        let options = kube::config::KubeConfigOptions { context: Some(cluster.into()), ..Default::default() };
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options).await.expect("context");
        kube::Client::try_from(config).expect("client")
    }
}

/// How a test wants lbdesk started.
#[derive(Clone, Debug)]
pub struct Options {
    pub public_url: Option<String>,
    /// Events kept per cluster for watches (older resourceVersions get 410).
    pub watch_history: i64,
    /// The in-process driver simulator's behaviour (default: answers at once).
    pub driver: server::driver::sim::Behaviour,
    pub driver_timeout: u64,
    /// Seconds a revoke may take, when not `driver_timeout` (`--driver-revoke-timeout`).
    pub driver_revoke_timeout: Option<u64>,
    pub ensure_interval: u64,
    /// The longest wait before a failed reconcile is tried again (`--retry-max-delay`).
    pub retry_max_delay: u64,
    /// Run the reconciler inside lbdesk (tests of the reconciler itself start their own).
    pub reconciler: bool,
    /// TLS for the web UI and the connections' idle timeout.
    pub http: server::config::HttpArgs,
    /// The built site (`pkg/`, favicon).
    pub site_root: PathBuf,
    /// The admission webhook over HTTPS.
    pub webhook: server::config::WebhookArgs,
    /// The directory configuration file (`--directory`).
    pub directory: Option<PathBuf>,
    /// How often BIG-IP is read back (`--bigip-poll-seconds`).
    pub bigip_poll_seconds: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            public_url: None,
            watch_history: 10_000,
            driver: Default::default(),
            driver_timeout: 2,
            driver_revoke_timeout: None,
            ensure_interval: 300,
            retry_max_delay: 60,
            reconciler: true,
            http: Default::default(),
            site_root: PathBuf::from("target/site"),
            webhook: Default::default(),
            directory: None,
            bigip_poll_seconds: 2,
        }
    }
}

/// Starts lbdesk with the fixed demo logins.
pub async fn spawn_lbdesk(backend: Backend) -> Lbdesk {
    spawn_lbdesk_with(backend, Options::default()).await
}

/// Starts lbdesk with `options`.
pub async fn spawn_lbdesk_with(backend: Backend, options: Options) -> Lbdesk {
    start_on(TestDb::new(backend).await, options).await
}

/// Starts lbdesk with `options` on `test_db` (a fresh one, or one a stopped lbdesk used).
pub async fn start_on(test_db: TestDb, options: Options) -> Lbdesk {
    crate::log_capture::install();
    let panics = Watch::start();
    let sim_config = test_db.dir.path().join("driver-sim.json");
    std::fs::write(&sim_config, serde_json::to_string(&options.driver).expect("behaviour"))
        .expect("write the simulator's behaviour");
    let args = ServeArgs {
        listen: "127.0.0.1:0".parse().expect("address"),
        store: StoreArgs { data_dir: test_db.dir.path().to_path_buf(), database_url: Some(test_db.url.clone()) },
        demo: true,
        public_url: options.public_url.clone(),
        site_root: options.site_root.clone(),
        api_listen: "127.0.0.1:0".parse().expect("address"),
        metrics_listen: "127.0.0.1:0".parse().expect("address"),
        metrics_token_file: None,
        mode: Mode::Embedded,
        kubeconfig: None,
        mgmt_cluster: "mgmt".into(),
        watch_history: options.watch_history,
        driver_url: None,
        driver_sim_config: Some(sim_config),
        bigip_sim_config: None,
        bigip_sim_listen: "127.0.0.1:0".parse().expect("address"),
        driver_timeout: options.driver_timeout,
        driver_request_timeout: None,
        driver_revoke_timeout: options.driver_revoke_timeout,
        ensure_interval: options.ensure_interval,
        retry_max_delay: options.retry_max_delay,
        bigip_poll_seconds: options.bigip_poll_seconds,
        ingress_class: app::domain::cis_ingress::DEFAULT_CLASS.into(),
        no_reconciler: !options.reconciler,
        leader_elect: false,
        namespace: "lbdesk-system".into(),
        audit_retention_days: 365,
        own_user: "system:serviceaccount:lbdesk-system:lbdesk".into(),
        http: options.http.clone(),
        webhook: options.webhook.clone(),
        directory: options.directory.clone(),
    };
    let server = Server::build(args).await.expect("lbdesk starts");
    // NB: the public URL is what users see; the test talks to the bound port.
    let url = format!("http://{}", server.addr);
    let db = server.db.clone();
    let kubeconfig = server.kubeconfig.clone().expect("embedded mode");
    let simulator = server.simulator().expect("the simulator runs in-process");
    let bigip = server.bigip().expect("embedded mode's BIG-IP simulator");
    let (clusters, driver) = (server.clusters.clone(), server.driver.clone());
    let webhook_addr = server.webhook_addr;
    let metrics_url = format!("http://{}", server.metrics_addr);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    // NB: an error that ends lbdesk becomes a panic on the test's runtime, so it fails the test.
    let task = tokio::spawn(async move {
        let stopped = async move {
            let _ = stopped.await;
        };
        if let Err(e) = server.run_until(stopped).await {
            panic!("lbdesk stopped with an error: {e:#}");
        }
    });
    Lbdesk {
        url,
        db,
        kubeconfig,
        simulator,
        bigip,
        clusters,
        driver,
        webhook_addr,
        metrics_url,
        panics,
        stop: Some(stop),
        task: Some(task),
        test_db: Some(test_db),
    }
}

/// An HTTP client that keeps cookies and does not follow redirects. Its writes say they come from
/// the site's own pages (`Sec-Fetch-Site: same-origin`), as a browser's do.
pub fn browser() -> reqwest::Client {
    browser_builder().build().expect("client")
}

/// The same, connecting from the loopback address `from` (all of 127.0.0.0/8 is this machine):
/// the sign-in throttle counts each client address's attempts, so a test of it on a shared
/// lbdesk makes them from an address of its own.
pub fn browser_from(from: std::net::Ipv4Addr) -> reqwest::Client {
    browser_builder().local_address(std::net::IpAddr::V4(from)).build().expect("client")
}

fn browser_builder() -> reqwest::ClientBuilder {
    let same_origin =
        [(reqwest::header::HeaderName::from_static("sec-fetch-site"), "same-origin".parse().expect("value"))];
    reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .default_headers(same_origin.into_iter().collect())
        // NB: an answer that never comes fails the test with its URL, not the whole run.
        .timeout(std::time::Duration::from_secs(60))
        // NB: lbdesk closes a connection idle for 30 s; one the client reused just then failed a
        // run ("connection closed before message completed"). Dropped here well before.
        .pool_idle_timeout(std::time::Duration::from_secs(10))
}

/// Waits until `check` holds (polling), or fails naming `what`; fails at once if anything
/// panicked on the test's runtime meanwhile. NB: asks again after 100 ms, then half as long
/// again each time, at most every 500 ms: a check lists objects over HTTPS in a debug build,
/// and the suite is bound by the two cores, so a long wait asked ten times a second slowed
/// every other test (docs/perf.md).
pub async fn until<F, Fut>(what: &str, seconds: u64, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(seconds);
    let mut pause = std::time::Duration::from_millis(100);
    while tokio::time::Instant::now() < deadline {
        crate::panics::check_this_runtime();
        if check().await {
            return;
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 3 / 2).min(std::time::Duration::from_millis(500));
    }
    panic!("timed out waiting for {what}");
}

/// How many reconciles of address requests lbdesk's reconciler has finished, whatever their
/// result (its `lbdesk_reconciles_total`).
async fn reconciles(lbdesk: &Lbdesk) -> u64 {
    let res = reqwest::get(format!("{}/metrics", lbdesk.metrics_url)).await.expect("scrape");
    let text = res.text().await.expect("metrics");
    let counted = text.lines().filter(|l| l.starts_with(r#"lbdesk_reconciles_total{kind="lbticket","#));
    counted.filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok()).sum::<f64>() as u64
}

/// Waits until every one of the `tickets` address requests there are could have been
/// reconciled `rounds` more times: so that "nothing changed meanwhile" speaks of passes the
/// reconciler made, not of a pause.
pub async fn after_rounds(lbdesk: &Lbdesk, tickets: usize, rounds: u64) {
    let from = reconciles(lbdesk).await;
    let want = from + rounds * tickets.max(1) as u64;
    until(&format!("{rounds} rounds of the reconciler"), 30, || async { reconciles(lbdesk).await >= want }).await;
}

/// The load balancer `name` as an admin fills its form: on acp-region01, offered to every
/// project, with credentials (the tests that watch for them set their own).
pub fn lb_form(name: &str) -> app::screens::loadbalancers::LbForm {
    app::screens::loadbalancers::LbForm {
        name: name.into(),
        ltm_url: "http://100.1.1.1/api".into(),
        ltm_token: Some("ltm-token-s3cret".into()),
        ltm_cidr: "10.0.0.0/24".into(),
        ve_addr: "200.1.1.1".into(),
        ve_user: Some("ve-admin-user".into()),
        ve_password: Some("ve-passw0rd-s3cret".into()),
        ve_cidr: "20.1.0.0/16".into(),
        cluster: "acp-region01".into(),
        nsselector: vec![("zone".into(), "f5".into())],
        cis_namespace: "kube-system".into(),
        ..Default::default()
    }
}

/// Load balancer `name` as `kubectl apply` writes it: AS3 tenant `name` of acp-region01, the
/// LTM at 100.1.`n`.1 and the VE at 200.1.`n`.1, their ranges 10.`n`.0.0/23 and 20.`n`.0.0/23
/// (510 pairs).
pub fn lb_object(name: &str, n: u8) -> app::domain::crd::Loadbalancer {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "ebcpaas.io/v1", "kind": "Loadbalancer", "metadata": {"name": name},
        "spec": {
            "ltm": {"url": format!("http://100.1.{n}.1/api"), "tokenSecretRef": {"namespace": "lbdesk-system", "name": format!("{name}-ltm")}, "cidr": format!("10.{n}.0.0/23")},
            "ve": {"addr": format!("200.1.{n}.1"), "credentialsSecretRef": {"namespace": "lbdesk-system", "name": format!("{name}-ve")}, "cidr": format!("20.{n}.0.0/23")},
            "cluster": "acp-region01", "partition": name, "cis": {"namespace": "kube-system"}
        }
    }))
    .expect("a load balancer")
}

/// A load balancer `name` like `lb_form`'s but a test's own: its LTM URL (which no two load
/// balancers share), AS3 tenant (`name`) and ranges (`10.n.0.0/24`, `20.n.0.0/24`), so that a
/// test sharing its module's lbdesk may change, fill or delete it.
pub fn own_lb(name: &str, n: u8) -> app::screens::loadbalancers::LbForm {
    app::screens::loadbalancers::LbForm {
        ltm_url: format!("http://100.1.{n}.1/api"),
        ltm_cidr: format!("10.{n}.0.0/24"),
        ve_cidr: format!("20.{n}.0.0/24"),
        partition: name.into(),
        ..lb_form(name)
    }
}

/// A browser session of demo user `name` (password `<name>-demo`), signed in.
pub async fn signed_in(lbdesk: &Lbdesk, name: &str) -> reqwest::Client {
    signed_in_at(&lbdesk.url, name).await
}

/// A browser signed in as the demo user `name` at the lbdesk serving `url`.
///
/// NB: the throttle counts a sign-in as failed until it succeeds, so that parallel guesses
/// cannot all pass; tests sharing an lbdesk that sign in as one name at the same moment may be
/// asked to wait a second. They wait, as a person would, up to five times.
pub async fn signed_in_at(url: &str, name: &str) -> reqwest::Client {
    let client = browser();
    for _ in 0..5 {
        let res = client
            .post(format!("{url}/api/login"))
            .header("origin", url)
            .form(&[("username", name), ("password", &format!("{name}-demo"))])
            .send()
            .await
            .expect("request");
        let status = res.status();
        if status.is_success() || status.is_redirection() {
            return client;
        }
        let body = res.text().await.unwrap_or_default();
        if status != reqwest::StatusCode::TOO_MANY_REQUESTS || !body.contains("try again in 1 s") {
            // NB: the body says which wait a refusal asks for (a name's, up to 30 s; an
            // address's, up to 60 s), and so which of the throttle's counts refused.
            panic!("{name} signs in at {url}: {status}: {body}");
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
    panic!("{name} signs in at {url}: still asked to wait after five tries");
}

/// The English words of a key of lbdesk's dictionaries (what a client naming no language of
/// ours reads).
pub fn english(key: &'static str) -> String {
    app::i18n::Msg::new(key).to_string()
}
