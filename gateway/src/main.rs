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
    },
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve {
            data_dir,
            listen,
            config,
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
            cfg.validate()?;
            penstock::telemetry::init();
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            rt.block_on(penstock::server::run(cfg))
        }
    }
}
