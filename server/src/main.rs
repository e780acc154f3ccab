//! `lbdesk`: the F5 load-balancer desk — web UI, embedded Kubernetes API and reconciler in one binary.

fn main() -> anyhow::Result<()> {
    server::cli::Cli::main()
}
