//! `penstock`: an S3 gateway for tenant virtual folders.

#![forbid(unsafe_code)]

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
enum ConfigCmd {
    /// Parses and validates FILE; prints the effective settings or the first error.
    Check { file: PathBuf },
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
        /// Log format (overrides `log_format` in the config).
        #[arg(long, value_enum)]
        log_format: Option<penstock::telemetry::LogFormat>,
    },
    /// Check configuration files.
    #[command(subcommand)]
    Config(ConfigCmd),
    /// Manage domains, projects, users, keypairs, vfolders and quotas through the admin API.
    Admin(penstock::admin_cli::AdminOpts),
    /// Metadata engine maintenance (gateways stopped): migrate, export, import.
    #[command(subcommand)]
    Metadata(penstock::metadata_cli::MetadataCmd),
}

fn main() {
    // Errors are for operators: one line naming the key or the cause, no backtrace.
    if let Err(e) = run(Cli::parse()) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Admin(opts) => {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            rt.block_on(penstock::admin_cli::run(opts))
        }
        Command::Metadata(cmd) => {
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            rt.block_on(penstock::metadata_cli::run(cmd))
        }
        Command::Config(ConfigCmd::Check { file }) => {
            let cfg = Config::load(&file)?;
            cfg.validate()?;
            println!("{}: ok", file.display());
            println!("  listen = {}, admin_listen = {}", cfg.listen, cfg.admin_listen);
            println!("  data_dir = {}, fsync = {}", cfg.data_dir.display(), cfg.fsync);
            for v in cfg.effective_volumes() {
                let default = if v.name() == cfg.default_volume {
                    " (default)"
                } else {
                    ""
                };
                println!("  volume {}{default}: {v:?}", v.name());
            }
            Ok(())
        }
        Command::Serve {
            data_dir,
            listen,
            config,
            admin_listen,
            log_format,
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
            if let Some(f) = log_format {
                cfg.log_format = f;
            }
            cfg.validate()?;
            penstock::telemetry::init(cfg.log_format);
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            rt.block_on(penstock::server::run(cfg))
        }
    }
}
