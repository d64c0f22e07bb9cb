//! The listener: accepts connections, serves HTTP/1.1 and HTTP/2 (h2c) with hyper-util, and drains
//! in-flight requests on SIGTERM/SIGINT.

use std::sync::Arc;
use std::time::Duration;

use std::net::SocketAddr;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tracing::{error, info, warn};

use crate::bootstrap::{ensure_admin, Bootstrap};
use crate::config::Config;
use crate::conn_threads::ConnThreads;
use crate::interim::ContinueIo;
use crate::limits::{secs, ActiveIo, Activity};
use crate::metrics::{CloseReason, Metrics};
use crate::observe::Observed;
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

/// The most header fields an HTTP/1.1 request may carry (hyper's default is 100, over which it
/// answers a bare 431). S3 takes a request whose user metadata alone is up to 2 KB, which fits
/// well over a hundred short `x-amz-meta-*` fields beside the ten or so every SDK sends; 500
/// covers any header section of S3's 8 KB. Above 100 hyper holds the parsed fields on the heap
/// instead of its stack, which alternating runs of 4 KiB GETs did not tell apart from the default
/// (session 50: 22,981-26,989 GET/s against 21,169-26,851).
const MAX_HEADERS: usize = 500;

/// Opens the stores, binds the listener and serves until a shutdown signal.
pub async fn run(cfg: Config) -> anyhow::Result<()> {
    let started = std::time::SystemTime::now();
    if cfg.heap_release_mib > 0 {
        // Bursts of large requests free their buffers at once; glibc keeps such memory (pinned
        // by any live allocation above it) unless asked, and the next burst starts on top of it.
        let slack = usize::try_from(cfg.heap_release_mib.saturating_mul(1 << 20)).unwrap_or(usize::MAX);
        penstock_heap::start(slack, std::time::Duration::from_secs(1));
    }
    let gateway = Arc::new(Gateway::open(&cfg).await?);
    crate::bootstrap::verify_master(gateway.meta.as_ref(), &gateway.master).await?;
    let banner = ensure_admin(gateway.meta.as_ref(), &gateway.master).await?;
    // Alive before the first write, so no peer takes this gateway's staging files for leftovers;
    // then clean up after gone gateways (a previous run of this one included) and keep watch.
    gateway.register().await?;
    tokio::spawn(gateway.clone().run_janitor(started));
    tokio::spawn(gateway.clone().run_lifecycle());
    let service = crate::s3::build_service(gateway.clone(), &cfg);
    let admin_token = crate::admin::load_token(cfg.admin_token.as_deref(), &cfg.data_dir)?;
    let admin_listener = tokio::net::TcpListener::bind(cfg.admin_listen)
        .await
        .map_err(|e| anyhow::anyhow!("admin_listen {}: {e}", cfg.admin_listen))?;
    let admin = tokio::spawn(crate::admin::serve(gateway.clone(), admin_listener, admin_token));

    let tls = match (&cfg.tls_cert, &cfg.tls_key) {
        (Some(c), Some(k)) => {
            let served = crate::tls::ServedCert::load(c, k)?;
            let acceptor = served.acceptor()?;
            tokio::spawn(served.watch(secs(cfg.tls_reload_interval_secs)));
            Some(acceptor)
        }
        _ => {
            tokio::spawn(ignore_hangups());
            None
        }
    };
    let listener = TcpListener::bind(cfg.listen).await?;
    let addr = listener.local_addr()?;
    info!(%addr, data_dir = %cfg.data_dir.display(), "penstock listening");
    let scheme = if tls.is_some() { "https" } else { "http" };
    print_banner(&banner, &format!("{scheme}://{addr}"));

    let limits = cfg.connections.clone();
    let threads = ConnThreads::start(limits.threads)?;
    let nofile = crate::limits::raise_nofile();
    let max_conns = crate::limits::max_connections(&limits, nofile);
    info!(
        max_connections = max_conns,
        open_file_limit = nofile,
        threads = threads.len(),
        "connection limits"
    );
    let mut builder = ConnBuilder::new(TokioExecutor::new());
    builder
        .http1()
        .keep_alive(true)
        .half_close(false)
        .timer(TokioTimer::new())
        .header_read_timeout(secs(limits.header_read_timeout_secs))
        .max_headers(MAX_HEADERS);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(secs(limits.h2_keepalive_interval_secs))
        .keep_alive_timeout(secs(limits.h2_keepalive_timeout_secs).unwrap_or(Duration::from_secs(20)))
        .max_concurrent_streams(limits.h2_max_concurrent_streams)
        .initial_stream_window_size(H2_STREAM_WINDOW)
        .initial_connection_window_size(H2_CONNECTION_WINDOW);
    let conn_opts = ConnOpts {
        idle: secs(limits.idle_timeout_secs),
        body_stall: secs(limits.body_stall_timeout_secs),
        metrics: gateway.metrics.clone(),
    };
    // One permit per open connection: the cap, and what shutdown waits for to drain.
    let slots = Arc::new(Semaphore::new(max_conns));
    let (closing, _) = watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown_signal());
    let mut backoff = ACCEPT_BACKOFF_MIN;

    loop {
        // Wait for a free slot before accepting: at the cap, clients wait in the kernel's accept
        // queue instead of costing a descriptor each.
        let permit = match slots.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                gateway.metrics.connection_deferred();
                tokio::select! {
                    p = slots.clone().acquire_owned() => p.expect("the semaphore is never closed"),
                    () = &mut shutdown => break,
                }
            }
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(x) => {
                    backoff = ACCEPT_BACKOFF_MIN;
                    x
                }
                Err(e) => {
                    // Out of file descriptors and similar: back off (up to a second) instead
                    // of spinning; connections closing will free what accept needs.
                    warn!(error = %e, "accept failed");
                    gateway.metrics.connection_deferred();
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(ACCEPT_BACKOFF_MAX);
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        // The stream leaves the accepting runtime's reactor and joins that of the task serving it
        // (a connection thread's, or this runtime again when there are none).
        let stream = match stream.into_std() {
            Ok(s) => s,
            Err(e) => {
                warn!(%peer, error = %e, "could not hand the connection to a thread");
                continue;
            }
        };
        let (builder, service, opts, closing) =
            (builder.clone(), service.clone(), conn_opts.clone(), closing.subscribe());
        let tls = tls.clone();
        threads.spawn(async move {
            let stream = match TcpStream::from_std(stream) {
                Ok(s) => s,
                Err(e) => {
                    warn!(%peer, error = %e, "could not register the connection");
                    return;
                }
            };
            match tls {
                None => serve_connection(stream, peer, builder, service, opts, closing, permit).await,
                Some(acceptor) => {
                    // The handshake runs in the connection's task so a slow client cannot stall
                    // the accept loop.
                    let hs = tokio::time::timeout(Duration::from_secs(10), acceptor.accept(stream)).await;
                    match hs {
                        Ok(Ok(s)) => serve_connection(s, peer, builder, service, opts, closing, permit).await,
                        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                }
            }
        });
    }

    drop(listener);
    admin.abort();
    info!("shutting down: waiting for in-flight requests");
    let _ = closing.send(true);
    tokio::select! {
        _ = slots.acquire_many(max_conns as u32) => info!("all connections closed"),
        () = tokio::time::sleep(Duration::from_secs(cfg.shutdown_grace_secs)) => {
            error!("grace period over, closing remaining connections");
        }
    }
    Ok(())
}

const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(10);
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// What every connection's task needs to know about limits.
#[derive(Clone)]
struct ConnOpts {
    idle: Option<Duration>,
    body_stall: Option<Duration>,
    metrics: Arc<Metrics>,
}

/// Serves one connection until it ends, closing it gracefully when it has been idle for
/// `opts.idle` or the gateway shuts down, and dropping it when it then stays silent for as long
/// again with no request in flight (a client that stopped reading its response).
async fn serve_connection<S>(
    stream: S,
    peer: SocketAddr,
    builder: ConnBuilder<TokioExecutor>,
    service: Observed,
    opts: ConnOpts,
    mut closing: watch::Receiver<bool>,
    _slot: OwnedSemaphorePermit,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    opts.metrics.connections_open().inc();
    let activity = Arc::new(Activity::default());
    let (stream, signal) = ContinueIo::new(ActiveIo::new(stream, activity.clone()));
    let svc = service.for_connection(peer, signal, activity.clone(), opts.body_stall);
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), svc);
    let mut conn = std::pin::pin!(conn);
    let period = opts.idle.map_or(Duration::from_secs(1), |t| {
        (t / 4).clamp(Duration::from_millis(50), Duration::from_secs(1))
    });
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut asked_to_close = false;
    let outcome = loop {
        tokio::select! {
            r = conn.as_mut() => break r,
            _ = closing.changed(), if !asked_to_close => {
                conn.as_mut().graceful_shutdown();
                asked_to_close = true;
            }
            _ = tick.tick() => {
                let Some(idle) = opts.idle else { continue };
                if activity.in_flight() > 0 {
                    continue;
                }
                let quiet = activity.quiet_for();
                if !asked_to_close && quiet >= idle {
                    opts.metrics.connection_closed(CloseReason::Idle);
                    conn.as_mut().graceful_shutdown();
                    asked_to_close = true;
                } else if asked_to_close && quiet >= 2 * idle {
                    opts.metrics.connection_closed(CloseReason::Forced);
                    break Ok(());
                }
            }
        }
    };
    if let Err(e) = outcome {
        if e.downcast_ref::<hyper::Error>().is_some_and(hyper::Error::is_timeout) {
            opts.metrics.connection_closed(CloseReason::HeaderTimeout);
        }
        tracing::debug!(%peer, error = %e, "connection ended with error");
    }
    opts.metrics.connections_open().dec();
}

/// Without TLS there is nothing to read again on SIGHUP (the conventional reload signal, which
/// would otherwise end the process): it is logged and otherwise ignored.
async fn ignore_hangups() {
    let Ok(mut hup) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) else {
        return;
    };
    while hup.recv().await.is_some() {
        tracing::info!("SIGHUP: nothing to reload (no TLS listener)");
    }
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
