//! Logging set-up: human-readable by default, filtered by `RUST_LOG` (default `info`).

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber.
pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,s3s=off"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .try_init();
}
