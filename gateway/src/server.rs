//! The listener: accepts connections, serves HTTP/1.1 and HTTP/2 (h2c) with hyper-util, and drains
//! in-flight requests on SIGTERM/SIGINT.

use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tracing::{error, info, warn};

use crate::bootstrap::{ensure_admin, Bootstrap};
use crate::config::Config;
use crate::interim::ContinueIo;
use crate::s3::Gateway;

/// HTTP/2 flow control. Only the connection window paces uploads; it bounds what one connection
/// can make us buffer. HTTP/2 clients (awscrt) put dozens of multi-MiB uploads on one connection,
/// which the 64 KiB default windows throttle to a trickle.
pub const H2_CONNECTION_WINDOW: u32 = 16 << 20;

/// The per-stream window is four times the connection window so that it never binds: a sender's
/// stream window stays above half of it minus the connection window (h2 credits a stream once
/// half its window is consumed, and no more than the connection window can be outstanding).
/// Why it matters: awscrt's HTTP/2 client (aws-c-http through at least 0.32.2) crashes when a
/// stream WINDOW_UPDATE reaches a stream that finished its body with its window used up
/// (`s_decoder_on_window_update` unlinks a stream that is on no list); with 1 MiB stream windows
/// LMCache-sized uploads hit that within a few hundred parts.
pub const H2_STREAM_WINDOW: u32 = 4 * H2_CONNECTION_WINDOW;

/// Opens the stores, binds the listener and serves until a shutdown signal.
pub async fn run(cfg: Config) -> anyhow::Result<()> {
    let started = std::time::SystemTime::now();
    let gateway = Arc::new(Gateway::open(&cfg).await?);
    let banner = ensure_admin(&gateway.store, &gateway.master)?;
    // Staging files older than this process belong to writes a crash interrupted.
    let sweeper = gateway.clone();
    tokio::spawn(async move { sweeper.sweep_staging(started).await });
    let service = crate::s3::build_service(gateway.clone(), &cfg);
    let admin_token = crate::admin::load_token(cfg.admin_token.as_deref(), &cfg.data_dir)?;
    let admin_listener = tokio::net::TcpListener::bind(cfg.admin_listen)
        .await
        .map_err(|e| anyhow::anyhow!("admin_listen {}: {e}", cfg.admin_listen))?;
    let admin = tokio::spawn(crate::admin::serve(gateway.clone(), admin_listener, admin_token));

    let tls = match (&cfg.tls_cert, &cfg.tls_key) {
        (Some(c), Some(k)) => Some(crate::tls::acceptor(c, k)?),
        _ => None,
    };
    let listener = TcpListener::bind(cfg.listen).await?;
    let addr = listener.local_addr()?;
    info!(%addr, data_dir = %cfg.data_dir.display(), "penstock listening");
    let scheme = if tls.is_some() { "https" } else { "http" };
    print_banner(&banner, &format!("{scheme}://{addr}"));

    let mut builder = ConnBuilder::new(TokioExecutor::new());
    builder.http1().keep_alive(true).half_close(false);
    builder
        .http2()
        .max_concurrent_streams(256)
        .initial_stream_window_size(H2_STREAM_WINDOW)
        .initial_connection_window_size(H2_CONNECTION_WINDOW);
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown_signal());

    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(x) => x,
                    Err(e) => {
                        // Out of file descriptors and similar: back off instead of spinning.
                        warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                match &tls {
                    None => {
                        let (stream, signal) = ContinueIo::new(stream);
                        let svc = service.for_connection(peer, signal);
                        let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), svc);
                        let conn = graceful.watch(conn.into_owned());
                        tokio::spawn(async move {
                            if let Err(e) = conn.await {
                                tracing::debug!(%peer, error = %e, "connection ended with error");
                            }
                        });
                    }
                    Some(acceptor) => {
                        // The handshake runs in the connection's task so a slow client cannot
                        // stall the accept loop.
                        let (acceptor, builder, service) = (acceptor.clone(), builder.clone(), service.clone());
                        let watcher = graceful.watcher();
                        tokio::spawn(async move {
                            let hs = tokio::time::timeout(Duration::from_secs(10), acceptor.accept(stream)).await;
                            let stream = match hs {
                                Ok(Ok(s)) => s,
                                Ok(Err(e)) => return tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                                Err(_) => return tracing::debug!(%peer, "TLS handshake timed out"),
                            };
                            let (stream, signal) = ContinueIo::new(stream);
                            let svc = service.for_connection(peer, signal);
                            let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), svc);
                            if let Err(e) = watcher.watch(conn.into_owned()).await {
                                tracing::debug!(%peer, error = %e, "connection ended with error");
                            }
                        });
                    }
                }
            }
            () = &mut shutdown => break,
        }
    }

    drop(listener);
    admin.abort();
    info!("shutting down: waiting for in-flight requests");
    tokio::select! {
        () = graceful.shutdown() => info!("all connections closed"),
        () = tokio::time::sleep(Duration::from_secs(cfg.shutdown_grace_secs)) => {
            error!("grace period over, closing remaining connections");
        }
    }
    Ok(())
}

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

fn print_banner(b: &Bootstrap, addr: &str) {
    match b {
        Bootstrap::Generated { access_key, secret_key } => {
            println!("Penstock is ready on {addr}");
            println!("Generated admin credentials (shown once):");
            println!("  access key: {access_key}");
            println!("  secret key: {secret_key}");
            println!(
                "  AWS_ACCESS_KEY_ID={access_key} AWS_SECRET_ACCESS_KEY='{secret_key}' aws --endpoint-url {addr} s3 ls"
            );
        }
        Bootstrap::FromEnv { access_key } => {
            println!("Penstock is ready on {addr} (admin access key {access_key} from PENSTOCK_ACCESS_KEY)");
        }
        Bootstrap::Existing => println!("Penstock is ready on {addr}"),
    }
}
