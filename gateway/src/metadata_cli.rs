//! `penstock metadata`: schema migrations, export and import of the configured engine, run
//! offline (stop the gateways first: the embedded store admits one process, and a dump of a
//! store being written is not a consistent one).

use std::io::{BufReader, BufWriter, Write};
use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::config::{Config, MetadataEngine};

/// Which configuration to take the engine from.
#[derive(Args, Debug)]
pub struct EngineArgs {
    /// Configuration file (TOML); its `[metadata]` section names the engine.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Data directory (the embedded engine's store is `<data-dir>/metadata`).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum MetadataCmd {
    /// Applies the engine's schema migrations and prints its schema version.
    Migrate(EngineArgs),
    /// Writes every record of the engine as JSON lines, to --out or standard output.
    Export {
        #[command(flatten)]
        at: EngineArgs,
        /// File to write (default: standard output).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Reads a dump written by `export` into the engine, which must have no buckets.
    Import {
        #[command(flatten)]
        at: EngineArgs,
        /// The dump.
        #[arg(long = "in")]
        input: PathBuf,
    },
}

fn config(at: &EngineArgs) -> anyhow::Result<Config> {
    let mut cfg = match &at.config {
        Some(p) => Config::load(p)?,
        None => Config::default(),
    };
    if let Some(d) = &at.data_dir {
        cfg.data_dir = d.clone();
    }
    cfg.validate()?;
    Ok(cfg)
}

/// Runs a subcommand; reports what it did on standard error (standard output may be the dump).
pub async fn run(cmd: MetadataCmd) -> anyhow::Result<()> {
    match cmd {
        MetadataCmd::Migrate(at) => {
            let cfg = config(&at)?;
            let m = crate::s3::open_metadata(&cfg).await?;
            let v = m.schema_version().await?.unwrap_or(0);
            println!("{} schema version {v}", m.engine());
        }
        MetadataCmd::Export { at, out } => {
            let cfg = config(&at)?;
            let store = cfg.data_dir.join("metadata");
            if cfg.metadata.engine == MetadataEngine::Rocksdb && !store.exists() {
                anyhow::bail!("no metadata store at {}", store.display());
            }
            let m = crate::s3::open_metadata(&cfg).await?;
            let mut sink: Box<dyn Write> = match &out {
                Some(p) => Box::new(BufWriter::new(std::fs::File::create(p)?)),
                None => Box::new(BufWriter::new(std::io::stdout().lock())),
            };
            let n = penstock_metadata::dump::export(m.as_ref(), &mut sink).await?;
            sink.flush()?;
            eprintln!("exported from {}: {}", m.engine(), serde_json::to_string(&n)?);
        }
        MetadataCmd::Import { at, input } => {
            let cfg = config(&at)?;
            let m = crate::s3::open_metadata(&cfg).await?;
            let mut reader =
                BufReader::new(std::fs::File::open(&input).map_err(|e| anyhow::anyhow!("{}: {e}", input.display()))?);
            let n = penstock_metadata::dump::import(m.as_ref(), &mut reader).await?;
            eprintln!("imported into {}: {}", m.engine(), serde_json::to_string(&n)?);
        }
    }
    Ok(())
}
