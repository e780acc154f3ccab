//! The project's two commands and their helpers:
//!
//! * `cargo xtask run`  — build (release) and start lbdesk in embedded mode with the demo logins;
//! * `cargo xtask test` — install what is missing, then run every test: format, lints, the
//!   release bundle's size, unit, integration (SQLite and PostgreSQL) and end-to-end in
//!   headless Chromium.
//!
//! Also `cargo xtask build [--release]` (the site and the binary), `cargo xtask sizes` (the release
//! bundle's first load per page, chunks and total, against their limits) and `cargo xtask setup`.

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

mod bundle;
mod test;

/// The exact wasm-bindgen the workspace pins; the CLI must match it.
pub(crate) const WASM_BINDGEN: &str = "0.2.130";
const WASM_TARGET: &str = "wasm32-unknown-unknown";
const OUTPUT_NAME: &str = "lbdesk";
/// Where the test PostgreSQL listens (loopback only).
const PG_PORT: u16 = 55432;

type Result<T = ()> = std::result::Result<T, String>;

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let rest: Vec<&str> = args.iter().skip(1).map(String::as_str).collect();
    let result = match args.first().map(String::as_str) {
        Some("run") => run(&rest),
        Some("test") => test::run(),
        Some("build") => setup(false).and_then(|_| build(Profile::from_flags(&rest)).map(|_| ())),
        Some("setup") => setup(true),
        Some("sizes") => setup(false).and_then(|_| check_bundle_size()),
        Some("instructions") => instructions(),
        _ => {
            eprintln!(
                "usage: cargo xtask <run [serve options…] | test | build [--release] | sizes | setup | instructions>"
            );
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Profile {
    Debug,
    Release,
}

impl Profile {
    fn from_flags(flags: &[&str]) -> Profile {
        if flags.contains(&"--release") { Profile::Release } else { Profile::Debug }
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
}

fn target_dir() -> PathBuf {
    env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root().join("target"))
}

/// Where the built site (scripts, styles, static files) goes; `lbdesk serve` looks here by default.
fn site_dir() -> PathBuf {
    root().join("target/site")
}

/// Starts a step, saying how long the one before took (to see where a run's time goes).
fn step(what: &str) {
    use std::sync::Mutex;
    static LAST: Mutex<Option<(String, Instant)>> = Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((before, started)) = last.take() {
        eprintln!("\n(took {:.0?}: {before})", started.elapsed());
    }
    *last = Some((what.to_string(), Instant::now()));
    eprintln!("\n==> {what}");
}

/// Runs a command in `dir`, failing with its name when it fails.
fn sh(dir: &Path, program: &str, args: &[&str], envs: &[(&str, &str)]) -> Result {
    let status = command(dir, program, args, envs).status().map_err(|e| format!("could not start {program}: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("`{program} {}` failed ({status})", args.join(" "))) }
}

/// A command to run in `dir`, without what `cargo run` told the xtask of its own package (see
/// `set_by_cargo_run`).
fn command(dir: &Path, program: &str, args: &[&str], envs: &[(&str, &str)]) -> Command {
    let mut command = Command::new(program);
    for (name, _) in std::env::vars_os() {
        if set_by_cargo_run(&name.to_string_lossy()) {
            command.env_remove(&name);
        }
    }
    command.args(args).envs(envs.iter().copied()).current_dir(dir);
    command
}

/// Whether `name` is a variable `cargo run` sets for the package it runs (the xtask's own). Build
/// scripts (ring's, and every one built with `cc`) ask to run again when `CARGO_MANIFEST_DIR` or
/// a `CARGO_PKG_…` changes, so a cargo started by the xtask with them set rebuilt ring and the 15
/// crates above it after any cargo command typed in a shell, and the other way round.
fn set_by_cargo_run(name: &str) -> bool {
    name.starts_with("CARGO_PKG_")
        || ["CARGO_MANIFEST_DIR", "CARGO_MANIFEST_PATH", "CARGO_CRATE_NAME", "CARGO_BIN_NAME", "CARGO_PRIMARY_PACKAGE"]
            .contains(&name)
}

/// The environment under which cargo compiles the workspace's own crates with clippy's driver,
/// which lints them (warnings denied) and compiles them as rustc does, MIR optimisations off;
/// dependencies are compiled as usual. It is what `cargo clippy` sets, on any cargo command.
/// NB: the same environment for every command of a run, or cargo compiles the crates again.
pub(crate) fn lints() -> Result<[(&'static str, &'static str); 2]> {
    static DRIVER: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let driver = DRIVER
        .get_or_init(|| {
            output("rustup", &["which", "clippy-driver"])
                .map(|p| p.trim().to_string())
                .filter(|p| Path::new(p).exists())
        })
        .as_deref()
        .ok_or("clippy is not installed (rustup component add clippy)")?;
    Ok([("RUSTC_WORKSPACE_WRAPPER", driver), ("CLIPPY_ARGS", "-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__")])
}

/// The standard output of a command, if it ran and succeeded.
fn output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).stderr(Stdio::null()).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn is_root() -> bool {
    output("id", &["-u"]).is_some_and(|u| u.trim() == "0")
}

/// Installs Debian packages (as root, or through sudo).
fn apt_install(packages: &[&str]) -> Result {
    let (program, mut prefix): (&str, Vec<&str>) =
        if is_root() { ("apt-get", vec![]) } else { ("sudo", vec!["apt-get"]) };
    let mut update = prefix.clone();
    update.extend(["update", "-q"]);
    sh(&root(), program, &update, &[])?;
    prefix.extend(["install", "-y", "-q", "--no-install-recommends"]);
    prefix.extend(packages);
    sh(&root(), program, &prefix, &[("DEBIAN_FRONTEND", "noninteractive")])
}

/// Installs what the build needs (and, with `browser`, what the tests need) when missing.
fn setup(browser: bool) -> Result {
    let root = root();
    if !output("rustup", &["target", "list", "--installed"]).is_some_and(|t| t.contains(WASM_TARGET)) {
        step("adding the wasm32 target");
        sh(&root, "rustup", &["target", "add", WASM_TARGET], &[])?;
    }
    if !output("wasm-bindgen", &["--version"]).is_some_and(|v| v.trim().ends_with(WASM_BINDGEN)) {
        step("installing wasm-bindgen-cli from crates.io (about 3 minutes)");
        let version = format!("={WASM_BINDGEN}");
        sh(&root, "cargo", &["install", "wasm-bindgen-cli", "--version", &version], &[])?;
    }
    let e2e = root.join("end2end");
    if !e2e.join("node_modules/.bin/wasm-opt").exists() || !e2e.join("node_modules/@playwright/test").exists() {
        step("installing npm packages (Playwright, binaryen's wasm-opt)");
        sh(&e2e, "npm", &["ci", "--no-audit", "--no-fund"], &[("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")])?;
    }
    if browser {
        let mut missing = Vec::new();
        if !Path::new("/usr/bin/chromium").exists() {
            missing.push("chromium");
        }
        if pg_bin("pg_ctl").is_none() {
            missing.push("postgresql");
        }
        // The iRule tests run the generated iRules in Tcl; the API tests drive kubectl.
        if output("tclsh", &["/dev/null"]).is_none() {
            missing.push("tcl");
        }
        if output("kubectl", &["version", "--client"]).is_none() {
            missing.push("kubectl");
        }
        // The directory sign-in tests run a throw-away OpenLDAP with a certificate they make.
        if !Path::new("/usr/sbin/slapd").exists() {
            missing.push("slapd");
        }
        if !Path::new("/usr/bin/ldapmodify").exists() {
            missing.push("ldap-utils");
        }
        if output("openssl", &["version"]).is_none() {
            missing.push("openssl");
        }
        if !missing.is_empty() {
            step(&format!("installing Debian packages: {}", missing.join(" ")));
            apt_install(&missing)?;
        }
    }
    Ok(())
}

/// Builds the browser bundle, the site directory and the server binary; returns the binary.
fn build(profile: Profile) -> Result<PathBuf> {
    let started = Instant::now();
    let site = site_dir();
    let _ = std::fs::remove_dir_all(&site);
    let bundled = bundle::build(profile, &site.join("pkg"))?;
    finish_site(&site, profile)?;
    let bin = build_server(profile)?;
    let size = std::fs::metadata(&bundled.main).map(|m| m.len()).unwrap_or(0);
    eprintln!(
        "built in {:.0?}: {} ({} KB main wasm, {} chunks)",
        started.elapsed(),
        bin.display(),
        size / 1024,
        bundled.chunks.len()
    );
    Ok(bin)
}

/// Puts the stylesheet and the static files beside a built bundle in `site`, the stylesheet's
/// compressed copies beside it (the bundle's own were made with it).
fn finish_site(site: &Path, profile: Profile) -> Result {
    let root = root();
    let pkg = site.join("pkg");
    copy(&root.join("style/main.css"), &pkg.join(format!("{OUTPUT_NAME}.css")))?;
    for entry in std::fs::read_dir(root.join("public")).map_err(|e| format!("could not read public/: {e}"))? {
        let entry = entry.map_err(|e| e.to_string())?;
        copy(&entry.path(), &site.join(entry.file_name()))?;
    }
    bundle::compress(&pkg, profile).map(|_| ())
}

/// Builds the server binary.
fn build_server(profile: Profile) -> Result<PathBuf> {
    step("building the server");
    let mut args = vec!["build", "-p", "server"];
    if profile == Profile::Release {
        args.push("--release");
    }
    sh(&root(), "cargo", &args, &[])?;
    Ok(target_dir().join(if profile == Profile::Release { "release" } else { "debug" }).join("lbdesk"))
}

pub(crate) fn copy(from: &Path, to: &Path) -> Result {
    std::fs::copy(from, to)
        .map(|_| ())
        .map_err(|e| format!("could not copy {} to {}: {e}", from.display(), to.display()))
}

/// `cargo xtask run`: build for release and serve embedded mode with the demo logins.
fn run(serve_args: &[&str]) -> Result {
    setup(false)?;
    let bin = build(Profile::Release)?;
    let mut args = vec!["serve", "--demo"];
    args.extend(serve_args);
    step("starting lbdesk (Ctrl-C stops it)");
    sh(&root(), &bin.to_string_lossy(), &args, &[])
}

/// Fails when the release browser bundle, gzipped as a server would send it, is over a limit.
fn check_bundle_size() -> Result {
    step("browser bundle sizes (release)");
    bundle::check_sizes(&bundle::build(Profile::Release, &target_dir().join("bundle-size"))?)
}

/// A PostgreSQL server binary of the newest installed major version.
fn pg_bin(name: &str) -> Option<PathBuf> {
    let mut versions: Vec<PathBuf> =
        std::fs::read_dir("/usr/lib/postgresql").ok()?.flatten().map(|e| e.path()).collect();
    versions.sort();
    versions.into_iter().rev().map(|v| v.join("bin").join(name)).find(|p| p.exists())
}

/// `cargo xtask instructions`: instructions per call of each benchmarked function and of its
/// baseline, counted by valgrind (callgrind), so the ratios in docs/perf.md do not depend on how
/// busy the machine is.
fn instructions() -> Result {
    let root = root();
    sh(&root, "cargo", &["bench", "-p", "app", "--bench", "domain", "--no-run"], &[])?;
    let deps = target_dir().join("release/deps");
    let bench = std::fs::read_dir(&deps)
        .map_err(|e| format!("could not read {}: {e}", deps.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            name.starts_with("domain-") && p.extension().is_none()
        })
        .max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        .ok_or("the domain benchmark was not built")?;
    let out = env::temp_dir().join("lbdesk-callgrind.out");
    let out_arg = format!("--callgrind-out-file={}", out.display());
    let bench_arg = bench.to_string_lossy().into_owned();
    sh(
        &root,
        "valgrind",
        &["--tool=callgrind", "-q", &out_arg, &bench_arg, "--sample-count", "3", "--sample-size", "1"],
        &[],
    )?;
    let text = std::fs::read_to_string(&out).map_err(|e| format!("could not read the profile: {e}"))?;
    let per_call = callgrind_per_call(&text);
    let pairs = [
        ("allocate a pair (allocate + release)", "ipam::PairAllocator::allocate", "domain::first_free_bit"),
        ("render 500 listeners × 4 rules", "app::domain::as3::render", "domain::to_vec"),
    ];
    for (what, subject, baseline) in pairs {
        let find = |name: &str| per_call.iter().find(|(n, _)| n.ends_with(name)).map(|(_, c)| *c);
        match (find(subject), find(baseline)) {
            (Some(s), Some(b)) => {
                println!("{what}: {s} instructions per call, baseline {b}: ratio {:.2}", s as f64 / b as f64)
            }
            _ => println!("{what}: not found in the profile (inlined?)"),
        }
    }
    Ok(())
}

/// (function, inclusive instructions per call) from a callgrind profile, for every called function.
fn callgrind_per_call(text: &str) -> Vec<(String, u64)> {
    use std::collections::HashMap;
    let mut names: HashMap<String, String> = HashMap::new();
    let mut totals: HashMap<String, (u64, u64)> = HashMap::new();
    let mut callee: Option<String> = None;
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some(rest) = line.strip_prefix("cfn=(").or_else(|| line.strip_prefix("fn=(")) {
            let (id, name) = rest.split_once(')').unwrap_or((rest, ""));
            if !name.trim().is_empty() {
                names.insert(id.to_string(), name.trim().to_string());
            }
            callee = line.starts_with("cfn=").then(|| id.to_string());
        } else if let (Some(calls), Some(id)) = (line.strip_prefix("calls="), callee.as_ref()) {
            let n: u64 = calls.split_whitespace().next().and_then(|c| c.parse().ok()).unwrap_or(0);
            let cost: u64 =
                lines.next().and_then(|l| l.split_whitespace().nth(1)).and_then(|c| c.parse().ok()).unwrap_or(0);
            let entry = totals.entry(id.clone()).or_default();
            entry.0 += n;
            entry.1 += cost;
        }
    }
    totals
        .into_iter()
        .filter(|(_, (n, _))| *n > 0)
        .filter_map(|(id, (n, cost))| names.get(&id).map(|name| (name.clone(), cost / n)))
        .filter(|(name, _)| !name.ends_with("'2"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::set_by_cargo_run;

    #[test]
    fn only_what_cargo_run_says_of_the_xtask_is_left_out_of_the_commands() {
        for name in ["CARGO_PKG_NAME", "CARGO_PKG_VERSION_MAJOR", "CARGO_MANIFEST_DIR", "CARGO_MANIFEST_PATH"] {
            assert!(set_by_cargo_run(name), "{name}");
        }
        // What configures cargo and the tools it runs stays.
        for name in ["CARGO_HOME", "CARGO_TARGET_DIR", "CARGO", "RUSTUP_TOOLCHAIN", "PATH", "CC", "CARGO_PKG"] {
            assert!(!set_by_cargo_run(name), "{name}");
        }
    }
}
