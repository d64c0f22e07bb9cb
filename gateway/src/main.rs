//! `penstock`: an S3 gateway for tenant virtual folders.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

use penstock::config::Config;

#[derive(Parser)]
#[command(name = "penstock", version, about = "S3 gateway for tenant virtual folders")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the S3 gateway.
    Serve {
        /// Data directory (metadata store and the default volume).
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// S3 listen address.
        #[arg(long)]
        listen: Option<SocketAddr>,
        /// Configuration file (TOML).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Admin API listen address.
        #[arg(long)]
        admin_listen: Option<SocketAddr>,
    },
    /// Manage domains, projects, users, keypairs, vfolders and quotas through the admin API.
    Admin(penstock::admin_cli::AdminOpts),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Admin(opts) => {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            rt.block_on(penstock::admin_cli::run(opts))
        }
        Command::Serve {
            data_dir,
            listen,
            config,
            admin_listen,
        } => {
            let mut cfg = match config {
                Some(p) => Config::load(&p)?,
                None => Config::default(),
            };
            if let Some(d) = data_dir {
                cfg.data_dir = d;
            }
            if let Some(l) = listen {
                cfg.listen = l;
            }
            if let Some(a) = admin_listen {
                cfg.admin_listen = a;
            }
            cfg.validate()?;
            penstock::telemetry::init();
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            rt.block_on(penstock::server::run(cfg))
        }
    }
}
