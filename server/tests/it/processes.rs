//! lbdesk as separate processes, as a cluster runs it: one serves the embedded API without a
//! reconciler (standing in for a real cluster), a driver simulator beside it, and lbdesk
//! processes in cluster mode against them.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

/// How a test's lbdesk process is scheduled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Priority {
    Normal,
    /// Below everything else the suite runs (`nice -n 19`): a process whose test waits
    /// generously gives way to the tests timed closely (a burst of 300 requests on two cores
    /// took the CPU of tests waiting 20 s for a phase).
    Low,
}

/// `lbdesk` with `args`, its output in `dir/<name>.log`.
pub fn lbdesk(dir: &Path, name: &str, args: &[String], priority: Priority) -> Child {
    let log = std::fs::File::create(dir.join(format!("{name}.log"))).expect("log file");
    let mut command = match priority {
        Priority::Normal => Command::new(env!("CARGO_BIN_EXE_lbdesk")),
        // NB: nice execs lbdesk: the process the test kills is lbdesk's.
        Priority::Low => {
            let mut nice = Command::new("nice");
            nice.args(["-n", "19", env!("CARGO_BIN_EXE_lbdesk")]);
            nice
        }
    };
    command
        .args(args)
        .env("RUST_LOG", "info")
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .spawn()
        .expect("lbdesk starts")
}

/// A process of the test, killed with SIGKILL when the test ends either way.
pub struct Process(pub Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub async fn answers(url: String) -> bool {
    reqwest::get(url).await.is_ok_and(|r| r.status().is_success())
}

/// `lbdesk` with the arguments `args` makes of `N` free ports, once the URL `ready` makes of
/// them answers (within `seconds`), and those ports. NB: a port found free can be taken before
/// the child binds it (by another test's server binding port 0): the child then exits at once,
/// and it is started again on other ports (seen once as a 30 s wait for the driver in a CI run).
pub async fn on_free_ports<const N: usize>(
    dir: &Path,
    name: &str,
    seconds: u64,
    args: impl Fn([u16; N]) -> Vec<String>,
    ready: impl Fn([u16; N]) -> String,
) -> (Process, [u16; N]) {
    on_free_ports_at(Priority::Normal, dir, name, seconds, args, ready).await
}

/// `on_free_ports`, the process scheduled at `priority`.
pub async fn on_free_ports_at<const N: usize>(
    priority: Priority,
    dir: &Path,
    name: &str,
    seconds: u64,
    args: impl Fn([u16; N]) -> Vec<String>,
    ready: impl Fn([u16; N]) -> String,
) -> (Process, [u16; N]) {
    for _ in 0..5 {
        let ports = std::array::from_fn(|_| free_port());
        let mut child = Process(lbdesk(dir, name, &args(ports), priority));
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(seconds);
        while tokio::time::Instant::now() < deadline {
            if answers(ready(ports)).await {
                return (child, ports);
            }
            if child.0.try_wait().is_ok_and(|exited| exited.is_some()) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        if tokio::time::Instant::now() >= deadline {
            panic!("timed out waiting for {name} (its log: {})", dir.join(format!("{name}.log")).display());
        }
    }
    panic!("{name} exited at once five times (its log: {})", dir.join(format!("{name}.log")).display());
}

/// The embedded API standing in for the clusters, and a driver simulator: what lbdesk in
/// cluster mode runs against.
pub struct Outside {
    pub dir: PathBuf,
    /// Its `--data-dir` and `--database-url`.
    store: Vec<String>,
    api: u16,
    /// The management cluster's kubeconfig, as lbdesk's own user.
    pub kubeconfig: PathBuf,
    /// The driver simulator's port.
    pub sim: u16,
    _embedded: Process,
    _driver: Process,
}

impl Outside {
    /// Starts both in `dir`, the embedded API on the database at `database_url` (else SQLite
    /// in its data directory).
    pub async fn start(dir: &Path, database_url: Option<&str>) -> Outside {
        let store = store(&dir.join("embedded"), database_url);
        let embedded_args = |[web, api]: [u16; 2]| {
            let mut args = vec![
                "serve".to_string(),
                "--demo".into(),
                "--no-reconciler".into(),
                format!("--listen=127.0.0.1:{web}"),
                format!("--api-listen=127.0.0.1:{api}"),
                "--metrics-listen=127.0.0.1:0".into(),
            ];
            args.extend(store.clone());
            args
        };
        let (embedded, [_, api]) =
            on_free_ports(dir, "embedded", 60, embedded_args, |[web, _]| format!("http://127.0.0.1:{web}/healthz"))
                .await;
        let (driver, [sim]) = on_free_ports(
            dir,
            "driver",
            30,
            |[sim]| vec!["driver-sim".into(), format!("--listen=127.0.0.1:{sim}")],
            |[sim]| format!("http://127.0.0.1:{sim}/_calls"),
        )
        .await;
        let outside = Outside {
            dir: dir.to_path_buf(),
            store,
            api,
            kubeconfig: dir.join("kubeconfig"),
            sim,
            _embedded: embedded,
            _driver: driver,
        };
        let printed = outside.kubeconfig_of(None);
        std::fs::write(&outside.kubeconfig, printed).expect("write");
        outside
    }

    /// The kubeconfig `lbdesk kubeconfig --as-lbdesk` prints: of every cluster, the management
    /// cluster current, or of `cluster` alone.
    pub fn kubeconfig_of(&self, cluster: Option<&str>) -> Vec<u8> {
        let mut args =
            vec!["kubeconfig".to_string(), "--as-lbdesk".into(), format!("--api-listen=127.0.0.1:{}", self.api)];
        args.extend(self.store.clone());
        args.extend(cluster.map(|c| format!("--cluster={c}")));
        let printed = Command::new(env!("CARGO_BIN_EXE_lbdesk")).args(&args).output().expect("lbdesk kubeconfig");
        assert!(printed.status.success(), "{}", String::from_utf8_lossy(&printed.stderr));
        printed.stdout
    }

    /// A client of the management cluster, through that kubeconfig.
    pub async fn mgmt(&self) -> kube::Client {
        let kc = kube::config::Kubeconfig::read_from(&self.kubeconfig).expect("kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await.expect("config");
        kube::Client::try_from(config).expect("client")
    }

    /// The arguments of lbdesk in cluster mode against these, its own state in `dir/<name>`
    /// (on `database_url` when given), serving its pages on `port` and its metrics on `metrics`.
    pub fn cluster_mode(&self, name: &str, database_url: Option<&str>, (port, metrics): (u16, u16)) -> Vec<String> {
        let mut args = vec![
            "serve".to_string(),
            "--mode=cluster".into(),
            format!("--kubeconfig={}", self.kubeconfig.display()),
            format!("--driver-url=http://127.0.0.1:{}", self.sim),
            format!("--listen=127.0.0.1:{port}"),
            format!("--metrics-listen=127.0.0.1:{metrics}"),
        ];
        args.extend(store(&self.dir.join(name), database_url));
        args
    }
}

/// `--data-dir` and, when given, `--database-url`.
fn store(data_dir: &Path, database_url: Option<&str>) -> Vec<String> {
    let mut args = vec![format!("--data-dir={}", data_dir.display())];
    args.extend(database_url.map(|url| format!("--database-url={url}")));
    args
}
