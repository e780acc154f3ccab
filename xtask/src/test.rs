//! `cargo xtask test`: every test, from formatting to the browser, and what it needs: the
//! release site, the lints riding on the builds, a throw-away PostgreSQL.

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::{
    PG_PORT, Profile, Result, bundle, command, finish_site, is_root, lints, output, pg_bin, root, setup, sh, site_dir,
    step, target_dir,
};

/// What the server side's build compiles, each target linted: the libraries' unit tests, the
/// integration tests (and through them the binary) and the benchmarks. NB: not `--all-targets`,
/// whose `--bins` builds a test harness of the binary even when its `test` is off: a link of
/// the whole program for no test.
const TARGETS: [&str; 3] = ["--lib", "--tests", "--benches"];

/// `cargo xtask test`: every test, from formatting to the browser.
pub fn run() -> Result {
    let root = root();
    let started = Instant::now();
    setup(true)?;
    step("format");
    sh(&root, "cargo", &["fmt", "--all", "--check"], &[])?;
    // NB: the server side's lints ride on the build the tests need anyway (clippy's driver lints
    // and compiles): `cargo clippy` would first check every crate again, about 200 s of a fresh
    // clone's run (docs/perf.md).
    let lints = lints()?;
    // NB: the xtask apart: built with the workspace, 21 of its dependencies take the workspace's
    // features and are compiled a second time, the heaviest at opt-level 3 (wasmparser 41 s, the
    // splitter 30 s, gimli 9 s, brotli 7 s by `cargo build --timings`); alone, they are the ones
    // `cargo xtask` was built with.
    let server = ["test", "--workspace", "--exclude", "frontend", "--exclude", "xtask"];
    // NB: the server side compiles beside the browser's, at the lowest priority, on what the
    // browser's build leaves idle (its last crates compile and link on one core): on an empty
    // target directory the three builds took 643 s together against 693 s one after the other
    // (docs/perf.md). At the same priority, side by side took longer than in turn.
    let compiling = Background::start(
        &root,
        &[&["nice", "-n", "19", "cargo"][..], &server[..], &TARGETS, &["--no-run"]].concat(),
        &lints,
        &target_dir().join("xtask-server-build.log"),
    )?;
    browser_site()?;
    let pg_url = start_postgres()?;
    step("dropping the test databases earlier runs left");
    let dropped = drop_test_databases()?;
    if dropped > 0 {
        eprintln!("dropped {dropped} databases earlier test runs left");
    }
    step("server side: lint and compile every target, benchmarks included (begun beside the browser's)");
    compiling.wait()?;
    step("unit and integration tests (SQLite and PostgreSQL), then the xtask's");
    // NB: ten at a time on two cores: the integration tests mostly wait (on the reconciler, on
    // timers); six took 48–56 s where ten took 42–44 s, and ten runs of ten in a row passed
    // (docs/perf.md).
    sh(
        &root,
        "cargo",
        &[&server[..], &["--", "--test-threads=10"]].concat(),
        &[&lints[..], &[("LBDESK_TEST_POSTGRES_URL", pg_url.as_str())]].concat(),
    )?;
    sh(&root, "cargo", &["test", "-p", "xtask"], &lints)?;
    drop_test_databases()?;
    // NB: the server the end-to-end tests run is the one `cargo test` just built for the
    // integration tests (`CARGO_BIN_EXE_lbdesk`, the workspace's features): `cargo build -p
    // server` would resolve the server's features alone and compile some 60 crates again (56 s
    // on a fresh clone).
    let bin = target_dir().join("debug").join("lbdesk");
    if !bin.exists() {
        return Err(format!("{} is missing: the integration tests build it", bin.display()));
    }
    step("end-to-end tests in headless Chromium, on the release bundle");
    let bin_arg = bin.to_string_lossy().into_owned();
    sh(&root.join("end2end"), "npx", &["playwright", "test"], &[("LBDESK_BIN", &bin_arg)])?;
    step("done");
    eprintln!("\nall tests passed in {:.0?}", started.elapsed());
    Ok(())
}

/// The release site (bundle, stylesheet, static files) the size check measures and the browser
/// tests load: what ships is what is tested. The browser code's lints ride on the bundle's build
/// (`bundle::build`).
fn browser_site() -> Result {
    let site = site_dir();
    let _ = std::fs::remove_dir_all(&site);
    let bundle = bundle::build(Profile::Release, &site.join("pkg"))?;
    step("browser bundle sizes (release)");
    bundle::check_sizes(&bundle)?;
    finish_site(&site, Profile::Release)
}

/// A command run beside the steps that follow, its output kept in a file and printed when it is
/// waited for; stopped if never waited for (a step before failed). NB: in the xtask's process
/// group, so that Ctrl-C stops it too.
struct Background {
    child: std::process::Child,
    log: PathBuf,
    what: String,
}

impl Background {
    fn start(dir: &Path, argv: &[&str], envs: &[(&str, &str)], log: &Path) -> Result<Background> {
        let what = argv.join(" ");
        let (program, args) = argv.split_first().ok_or("no command to run")?;
        if let Some(parent) = log.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("could not create {}: {e}", parent.display()))?;
        }
        let out = std::fs::File::create(log).map_err(|e| format!("could not create {}: {e}", log.display()))?;
        let err = out.try_clone().map_err(|e| format!("{}: {e}", log.display()))?;
        let child = command(dir, program, args, envs)
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("could not start {program}: {e}"))?;
        Ok(Background { child, log: log.to_path_buf(), what })
    }

    /// Waits for the command, prints what it printed, and fails if it failed.
    fn wait(mut self) -> Result {
        let status = self.child.wait().map_err(|e| format!("`{}`: {e}", self.what));
        let printed = std::fs::read_to_string(&self.log).unwrap_or_default();
        eprint!("{printed}");
        let status = status?;
        if status.success() { Ok(()) } else { Err(format!("`{}` failed ({status})", self.what)) }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        // NB: cargo stopped, the compilers it started end with the crate each is on.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Starts a throw-away PostgreSQL on loopback (unless one already answers there) and returns its URL.
fn start_postgres() -> Result<String> {
    let url = format!("postgres://postgres@127.0.0.1:{PG_PORT}/postgres");
    let ready = pg_bin("pg_isready").ok_or("PostgreSQL is not installed")?;
    let is_up = || {
        Command::new(&ready)
            .args(["-q", "-h", "127.0.0.1", "-p", &PG_PORT.to_string()])
            .status()
            .is_ok_and(|s| s.success())
    };
    if is_up() {
        return Ok(url);
    }
    step(&format!("starting PostgreSQL for the tests on 127.0.0.1:{PG_PORT}"));
    let data = env::temp_dir().join("lbdesk-test-pg");
    let data_arg = data.to_string_lossy().into_owned();
    // NB: PostgreSQL refuses to run as root; as root, run it as the `postgres` user.
    let as_pg = |program: PathBuf, args: Vec<String>| -> Result {
        let program = program.to_string_lossy().into_owned();
        if is_root() {
            let mut all = vec!["-u".to_string(), "postgres".to_string(), "--".to_string(), program];
            all.extend(args);
            let refs: Vec<&str> = all.iter().map(String::as_str).collect();
            sh(&env::temp_dir(), "runuser", &refs, &[])
        } else {
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            sh(&env::temp_dir(), &program, &refs, &[])
        }
    };
    if !data.join("PG_VERSION").exists() {
        let _ = std::fs::remove_dir_all(&data);
        std::fs::create_dir_all(&data).map_err(|e| format!("could not create {data_arg}: {e}"))?;
        if is_root() {
            sh(&env::temp_dir(), "chown", &["postgres:postgres", &data_arg], &[])?;
        }
        let initdb = pg_bin("initdb").ok_or("initdb is missing")?;
        as_pg(
            initdb,
            vec![
                "-D".into(),
                data_arg.clone(),
                "-U".into(),
                "postgres".into(),
                "--auth=trust".into(),
                "-E".into(),
                "UTF8".into(),
            ],
        )?;
    }
    let pg_ctl = pg_bin("pg_ctl").ok_or("pg_ctl is missing")?;
    let options = format!(
        "-c listen_addresses=127.0.0.1 -p {PG_PORT} -k {} -c fsync=off -c max_connections=200",
        env::temp_dir().display()
    );
    let log = data.join("server.log").to_string_lossy().into_owned();
    as_pg(pg_ctl, vec!["-D".into(), data_arg, "-l".into(), log, "-o".into(), options, "-w".into(), "start".into()])?;
    if is_up() { Ok(url) } else { Err("PostgreSQL did not start".into()) }
}

/// Drops the databases the integration tests made on the throw-away PostgreSQL (each test makes
/// its own, `lbdesk_t_…`, and cannot drop it while its lbdesk still holds connections): left
/// behind, runs added up to 2,636 databases and 22 GB. Returns how many were dropped.
fn drop_test_databases() -> Result<usize> {
    use std::io::Write;
    let psql = pg_bin("psql").ok_or("psql is missing")?;
    let port = PG_PORT.to_string();
    let connect = ["-h", "127.0.0.1", "-p", &port, "-U", "postgres", "-d", "postgres", "-Atq"];
    let query = r"SELECT datname FROM pg_database WHERE datname LIKE 'lbdesk\_t\_%'";
    let psql_name = psql.to_string_lossy().into_owned();
    let names =
        output(&psql_name, &[&connect[..], &["-c", query]].concat()).ok_or("could not list the test databases")?;
    let names: Vec<&str> = names.lines().filter(|n| !n.is_empty()).collect();
    if names.is_empty() {
        return Ok(0);
    }
    // NB: one statement per line, each in its own transaction (DROP DATABASE refuses a block).
    let script: String = names.iter().map(|n| format!("DROP DATABASE IF EXISTS \"{n}\" WITH (FORCE);\n")).collect();
    let mut child = Command::new(&psql)
        .args(connect)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("could not start psql: {e}"))?;
    child
        .stdin
        .take()
        .ok_or("psql took no input")?
        .write_all(script.as_bytes())
        .map_err(|e| format!("could not write to psql: {e}"))?;
    let status = child.wait().map_err(|e| format!("psql: {e}"))?;
    if status.success() { Ok(names.len()) } else { Err(format!("dropping the test databases failed ({status})")) }
}
