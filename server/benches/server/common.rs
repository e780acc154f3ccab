//! What the benchmarks share: lbdesk in embedded mode inside the benchmark's process, and
//! clients of its Kubernetes API.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use app::ssr::clusters::Clusters;
use app::ssr::db::Db;
use kube::Client;
use server::config::{Mode, ServeArgs, StoreArgs};
use server::driver::DriverClient;

/// `lbdesk serve --demo` on free loopback ports with its data in `dir`, the driver simulator
/// answering at once and no reconciler (a benchmark starts its own when it needs one).
pub fn args(dir: &Path) -> anyhow::Result<ServeArgs> {
    let sim = dir.join("sim.json");
    std::fs::write(&sim, "{}").with_context(|| format!("could not write {}", sim.display()))?;
    let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    Ok(ServeArgs {
        listen: loopback,
        api_listen: loopback,
        metrics_listen: loopback,
        metrics_token_file: None,
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
        bigip_sim_config: None,
        bigip_sim_listen: loopback,
        driver_timeout: 10,
        driver_request_timeout: None,
        driver_revoke_timeout: None,
        ensure_interval: 3600,
        retry_max_delay: 60,
        bigip_poll_seconds: 10,
        ingress_class: app::domain::cis_ingress::DEFAULT_CLASS.into(),
        no_reconciler: true,
        leader_elect: false,
        namespace: "lbdesk-system".into(),
        audit_retention_days: 365,
        own_user: "system:serviceaccount:lbdesk-system:lbdesk".into(),
        http: Default::default(),
        webhook: Default::default(),
        directory: None,
    })
}

/// A client of one cluster of the embedded API.
pub async fn client(kubeconfig: &serde_json::Value, cluster: &str) -> anyhow::Result<Client> {
    let kc = app::ssr::clusters::parse_kubeconfig(kubeconfig).map_err(|e| anyhow::anyhow!("kubeconfig: {e}"))?;
    let options = kube::config::KubeConfigOptions { context: Some(cluster.into()), ..Default::default() };
    let config = kube::Config::from_custom_kubeconfig(kc, &options).await.context("kubeconfig")?;
    Ok(Client::try_from(config)?)
}

/// A browser session of demo user `user` (password `<user>-demo`) on the web UI at `url`,
/// signed in; its writes say they come from the site's own pages (the cross-site check).
pub async fn signed_in(url: &str, user: &str) -> anyhow::Result<reqwest::Client> {
    let same_origin = [(reqwest::header::ORIGIN, reqwest::header::HeaderValue::from_str(url)?)];
    let browser =
        reqwest::Client::builder().cookie_store(true).default_headers(same_origin.into_iter().collect()).build()?;
    let res = browser
        .post(format!("{url}/api/login"))
        .form(&[("username", user), ("password", &format!("{user}-demo"))])
        .send()
        .await
        .context("sign in")?;
    anyhow::ensure!(res.status().is_success(), "{user} could not sign in: {}", res.status());
    Ok(browser)
}

/// Runs per measurement, after two warm-up runs.
pub const ROUNDS: usize = 50;

/// Prints p50, p95 and max of `ROUNDS` runs of `f` (which returns how many `unit`s it read) and
/// returns the p50.
pub async fn measure<F, Fut>(what: &str, unit: &str, mut f: F) -> anyhow::Result<Duration>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<usize>>,
{
    let mut read = 0;
    for _ in 0..2 {
        read = f().await?;
    }
    let mut times = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let started = Instant::now();
        f().await?;
        times.push(started.elapsed());
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let (p50, p95, max) = (times[ROUNDS / 2], times[ROUNDS * 95 / 100], times[ROUNDS - 1]);
    println!("  {what:<56} p50 {:>7.2} ms  p95 {:>7.2} ms  max {:>7.2} ms  ({read} {unit})", ms(p50), ms(p95), ms(max));
    Ok(p50)
}

/// Polls `check` every 5 ms until it holds, or fails naming `what` after `seconds`.
pub async fn wait<F, Fut>(what: &str, seconds: u64, mut check: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<bool>>,
{
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while Instant::now() < deadline {
        if check().await? {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    anyhow::bail!("timed out waiting for {what}")
}

/// Prints p50, p95 and max of `times` (measured apart) against `target`.
pub fn report(what: &str, mut times: Vec<Duration>, target: &str) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let n = times.len();
    println!(
        "  {what:<56} p50 {:>7.2} ms  p95 {:>7.2} ms  max {:>7.2} ms  ({target})",
        ms(times[n / 2]),
        ms(times[n * 95 / 100]),
        ms(times[n - 1])
    );
}

/// lbdesk started from `args` and served from this process for as long as it runs: what a
/// benchmark reaches it by.
pub struct Started {
    pub url: String,
    /// The embedded API's kubeconfig.
    pub kubeconfig: serde_json::Value,
    pub db: Db,
    /// lbdesk's own clients (a status is lbdesk's alone to write).
    pub clusters: Clusters,
    pub driver: DriverClient,
}

/// Starts lbdesk from `args` (`args(dir)`, changed as the benchmark needs) in this process.
pub async fn start(args: ServeArgs) -> anyhow::Result<Started> {
    let server = server::serve::Server::build(args).await.context("lbdesk did not start")?;
    let started = Started {
        url: server.url.clone(),
        kubeconfig: server.kubeconfig.clone().context("no embedded API")?,
        db: server.db.clone(),
        clusters: server.clusters.clone(),
        driver: server.driver.clone(),
    };
    tokio::spawn(server.run_until(std::future::pending()));
    Ok(started)
}

/// lbdesk in embedded mode, its reconciler and driver simulator running, served from this
/// process for as long as it runs: its URL and clients of the management cluster and of
/// acp-region01.
pub async fn embedded(dir: &Path) -> anyhow::Result<(String, Client, Client)> {
    let lbdesk = start(ServeArgs { no_reconciler: false, ..args(dir)? }).await?;
    Ok((lbdesk.url, client(&lbdesk.kubeconfig, "mgmt").await?, client(&lbdesk.kubeconfig, "acp-region01").await?))
}

/// Calls server function `path` with `args` as the signed-in `browser`; its answer's body.
pub async fn call(browser: &reqwest::Client, url: &str, path: &str, args: serde_json::Value) -> anyhow::Result<String> {
    let res = browser.post(format!("{url}/api/{path}")).json(&args).send().await?;
    let status = res.status();
    let body = res.text().await?;
    anyhow::ensure!(status.is_success(), "{path}: {status}: {}", &body[..body.len().min(300)]);
    Ok(body)
}

/// Runs `work(i)` for every `i` in `range` on `writers` tasks at once, each taking the next `i`
/// when it is done with one (what many clients writing at once do); the first error ends it.
pub async fn spread<F, Fut>(writers: usize, range: std::ops::Range<usize>, work: F) -> anyhow::Result<()>
where
    F: Fn(usize) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = anyhow::Result<()>> + Send,
{
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(range.start));
    let tasks: Vec<_> = (0..writers)
        .map(|_| {
            let (next, work) = (next.clone(), work.clone());
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    if i >= range.end {
                        return anyhow::Ok(());
                    }
                    work(i).await?;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await??;
    }
    Ok(())
}
