//! The server's benchmarks, one binary for all (one link in every test build instead of nine).
//! Each prints its figures. Run one: `cargo bench -p server --bench server -- <name>`; with no
//! name, each runs in a process of its own, one after the other: a benchmark starts its own
//! lbdesk and some measure their process's memory.

mod allocation;
mod audit;
mod common;
mod embedded_api;
mod isolation;
mod listeners;
mod readback;
mod reconciler;
mod rules;
mod screens;

use anyhow::{Context, anyhow, ensure};

/// A benchmark: it prints its figures, and fails when what it measured went wrong.
type Benchmark = fn() -> anyhow::Result<()>;

const BENCHMARKS: [(&str, Benchmark); 9] = [
    ("allocation", allocation::run),
    ("audit", audit::run),
    ("embedded_api", embedded_api::run),
    ("isolation", isolation::run),
    ("listeners", listeners::run),
    ("readback", readback::run),
    ("reconciler", reconciler::run),
    ("rules", rules::run),
    ("screens", screens::run),
];

fn main() -> anyhow::Result<()> {
    // NB: cargo passes `--bench`; the other arguments name benchmarks.
    let names: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    if names.is_empty() {
        let exe = std::env::current_exe().context("the benchmark binary")?;
        for (name, _) in BENCHMARKS {
            let status = std::process::Command::new(&exe).arg(name).status().context("could not start it")?;
            ensure!(status.success(), "the {name} benchmark failed ({status})");
        }
        return Ok(());
    }
    for name in &names {
        let (_, run) = BENCHMARKS.iter().find(|(n, _)| n == name).ok_or_else(|| {
            let all: Vec<&str> = BENCHMARKS.iter().map(|(n, _)| *n).collect();
            anyhow!("no benchmark {name}; there are: {}", all.join(", "))
        })?;
        run()?;
    }
    Ok(())
}
