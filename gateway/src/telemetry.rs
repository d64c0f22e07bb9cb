//! Logging set-up: human-readable lines by default or JSON lines, filtered by `RUST_LOG`-style
//! directives (default `info`).
//!
//! s3s is always silenced: at debug level it logs whole requests, signatures included, and it
//! reports every client error at error level. The gateway's own per-request line (see
//! [`crate::observe`]) says what happened without either.

use serde::Deserialize;
use tracing_subscriber::EnvFilter;

/// Log line format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable text.
    #[default]
    Text,
    /// One JSON object per line, with the request span's fields.
    Json,
}

/// Installs the global subscriber.
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info"))
        .add_directive("s3s=off".parse().expect("valid directive"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        // Colour codes only on a terminal: log files and collectors get plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().with_current_span(true).with_span_list(false).try_init(),
    };
}
