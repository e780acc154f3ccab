//! `lbdesk`: the F5 load-balancer desk — web UI, embedded Kubernetes API and reconciler in one binary.

use clap::Parser;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = server::cli::Cli::parse();
    server::telemetry::init();
    cli.run().await
}
