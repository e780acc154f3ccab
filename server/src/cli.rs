//! Command line: parses the arguments and hands each command to the module that runs it
//! (`serve`, the default; `crdgen`, `render`, `route`, `reset-demo-passwords`, `kubeconfig`,
//! `cis-post`, `driver-sim`, `bigip-sim`). The settings themselves are in `config`.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::config::{KubeconfigArgs, ServeArgs, StoreArgs};

/// The F5 load-balancer desk.
#[derive(Parser, Debug)]
#[command(name = "lbdesk", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve the web UI (the default).
    Serve(Box<ServeArgs>),
    /// Write the CustomResourceDefinitions generated from the Rust types.
    Crdgen {
        /// Directory the YAML files are written to.
        #[arg(long, default_value = "deploy/crds")]
        out: PathBuf,
    },
    /// Print the AS3 declaration of every (cluster, tenant) the objects in YAML files produce.
    Render {
        /// YAML files of Loadbalancer, Lbticket (with status.phase and status.veip) and Lbrule objects.
        #[arg(short = 'f', long = "filename", required = true)]
        files: Vec<PathBuf>,
    },
    /// Where requests go on a virtual server: one JSON request per line of standard input
    /// (`{"host", "uri", "client", "headers", "cookies"}`, all optional), one JSON answer per
    /// line (`{"rule", "bucket", "service", "port", "pool"}`), as the generated iRule decides.
    Route {
        /// YAML files as for `render`.
        #[arg(short = 'f', long = "filename", required = true)]
        files: Vec<PathBuf>,
        /// The virtual server: a request's VE IP (`status.veip`) and a listener's port.
        #[arg(long)]
        vs: String,
    },
    /// Generate new passwords for the demo users and print them.
    ResetDemoPasswords(StoreArgs),
    /// Print a kubeconfig for the embedded API of the server running with these settings.
    Kubeconfig(KubeconfigArgs),
    /// Print, as JSON, what the F5 CIS of a member cluster will post to BIG-IP's AS3 now, as
    /// lbdesk's model of CIS v2.20.2 computes it from what the cluster holds; fails when CIS
    /// would post an invalid declaration or hold a tenant back.
    CisPost {
        /// The member cluster's kubeconfig (default: $KUBECONFIG, then ~/.kube/config).
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
        /// The kubeconfig context of the member cluster (default: the current one).
        #[arg(long)]
        context: Option<String>,
        /// Where CIS reads its AS3 ConfigMaps and, unless --deployment says, where it runs.
        #[arg(long, default_value = "kube-system")]
        cis_namespace: String,
        /// The CIS Deployment, as namespace/name.
        #[arg(long)]
        deployment: Option<String>,
    },
    /// Serve the network-policy driver simulator.
    DriverSim {
        #[arg(long, env = "LBDESK_DRIVER_SIM_LISTEN", default_value = "127.0.0.1:7070")]
        listen: SocketAddr,
        /// Behaviour file (YAML or JSON).
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Serve the BIG-IP simulator (AS3 declare and the iControl REST reads lbdesk makes).
    BigipSim {
        #[arg(long, env = "LBDESK_BIGIP_SIM_LISTEN", default_value = "127.0.0.1:7443")]
        listen: SocketAddr,
        /// Behaviour file (YAML or JSON): credentials, members down or disabled, refused
        /// tenants, faults.
        #[arg(long)]
        config: Option<PathBuf>,
    },
}

impl Cli {
    /// The whole program: parses the command line, installs the logs and runs the command on
    /// a multi-threaded runtime. NB: here, not as `#[tokio::main]` in the binary: the commands'
    /// futures are compiled where they are first polled, so polled from the binary they were
    /// compiled a second time there (48 s of every release build; docs/perf.md).
    pub fn main() -> anyhow::Result<()> {
        let cli = Cli::parse();
        crate::telemetry::init();
        tokio::runtime::Builder::new_multi_thread().enable_all().build()?.block_on(cli.run())
    }

    /// Runs the command given (`serve` when none is).
    async fn run(self) -> anyhow::Result<()> {
        match self.command {
            None => crate::serve::run(self.serve).await,
            Some(Command::Serve(args)) => crate::serve::run(*args).await,
            Some(Command::Crdgen { out }) => crate::crdgen::write(&out),
            Some(Command::Render { files }) => crate::render::run(&files),
            Some(Command::Route { files, vs }) => {
                crate::route::run(&files, &vs, std::io::stdin().lock(), std::io::stdout().lock())
            }
            Some(Command::ResetDemoPasswords(store)) => crate::demo::reset_passwords(&store).await,
            Some(Command::Kubeconfig(args)) => crate::embedded::print_kubeconfig(&args).await,
            Some(Command::CisPost { kubeconfig, context, cis_namespace, deployment }) => {
                let cis = app::domain::crd::CisSpec { namespace: cis_namespace, deployment };
                crate::cis::posts::run(kubeconfig, context, cis).await
            }
            Some(Command::DriverSim { listen, config }) => {
                use crate::driver::sim::{Behaviour, Simulator};
                let behaviour = config.as_deref().map(Behaviour::read).transpose()?.unwrap_or_default();
                crate::sims::run("driver", listen, Simulator::new(behaviour).router()).await
            }
            Some(Command::BigipSim { listen, config }) => {
                use crate::bigip::sim::{Behaviour, Simulator};
                let behaviour = config.as_deref().map(Behaviour::read).transpose()?.unwrap_or_default();
                crate::sims::run("BIG-IP", listen, Simulator::new(behaviour).router()).await
            }
        }
    }
}
