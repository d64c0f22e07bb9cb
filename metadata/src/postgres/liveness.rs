//! A gateway's sign of life in the database: a session-level advisory lock held on a connection
//! of its own for as long as the process runs.
//!
//! Heartbeats tell a silent gateway only after `gone_after` (30 s by default), and until then
//! every key it held claimed waits (other gateways answer 503 `SlowDown` for it). A process
//! that is killed closes its sockets with it; PostgreSQL ends the session at once and releases
//! its advisory locks, so a peer that looks at `pg_locks` sees the lock gone within moments of
//! the kill ([`PgMetadata::vanished`](super::PgMetadata)).
//!
//! What the absence of a lock cannot tell apart from a death: a database restart (every lock
//! falls at once) and a gateway whose own connection broke while it still runs. The first is
//! covered by trusting absences only once this process's own lock has been held without a break
//! for [`TRUSTED_AFTER`]; the second is safe, as a stalled gateway is (`janitor.rs`): its
//! staging files are swept, so its in-flight writes fail rather than land, and its next
//! heartbeat makes it known again. That heartbeat names no lock while the gateway holds none, so
//! a gateway that cannot take its lock again is judged by its heartbeats, not taken for gone
//! over and over. Gateways of builds without the lock name none and are judged
//! by their heartbeats alone.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio_postgres::NoTls;

use super::conn::pg;
use crate::engine::MetaResult;

/// How long this process's own lock must have been held, without a break, before the absence
/// of a peer's is believed: after a database restart every gateway takes its lock again within
/// a second or two.
pub(super) const TRUSTED_AFTER: Duration = Duration::from_secs(10);
/// Between a lost connection and the next attempt.
const RECONNECT: Duration = Duration::from_millis(200);
/// Between checks that the connection still works; the query also keeps the session from
/// counting as idle where the server ends idle sessions (`idle_session_timeout`).
const PING: Duration = Duration::from_secs(5);

/// The advisory lock key of `instance`: FNV-1a over its bytes, a stable function of the name
/// (every gateway computes its peers' keys alike, whatever its build's hasher).
pub(super) fn lock_key(instance: &str) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in instance.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h as i64
}

/// This process's hold on its lock.
pub(super) struct Liveness {
    cfg: tokio_postgres::Config,
    /// The key held, once [`Liveness::hold`] has run.
    key: OnceLock<i64>,
    /// Since when the lock has been held without a break; `None` while it is not.
    held_since: Arc<Mutex<Option<Instant>>>,
}

impl Liveness {
    pub(super) fn new(cfg: tokio_postgres::Config) -> Self {
        Self {
            cfg,
            key: OnceLock::new(),
            held_since: Arc::new(Mutex::new(None)),
        }
    }

    /// The key this process holds now, for its heartbeat to name; `None` while it holds none
    /// (its connection broke and it cannot take the lock again), so that peers judge it by its
    /// heartbeats meanwhile instead of taking it for gone at every look.
    pub(super) fn held_key(&self) -> Option<i64> {
        let held = self.held_since.lock().unwrap_or_else(|e| e.into_inner()).is_some();
        self.key.get().copied().filter(|_| held)
    }

    /// Whether this process's own lock has been held long enough for a peer's absence to mean
    /// something (see [`TRUSTED_AFTER`]).
    pub(super) fn trusted(&self) -> bool {
        self.held_since
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some_and(|t| t.elapsed() >= TRUSTED_AFTER)
    }

    /// Takes the lock of `instance` on a connection of its own (an error if the database cannot
    /// be reached now), then keeps it, taking it again on a new connection whenever that one
    /// breaks, for the life of the process.
    /// A database without advisory locks (PostgreSQL-compatible ones that lack them) leaves the
    /// gateway without a sign of life, judged by its heartbeats alone.
    pub(super) async fn hold(&self, instance: &str) -> MetaResult<()> {
        if self.key.get().is_some() {
            return Ok(());
        }
        let key = lock_key(instance);
        let first = match locked(&self.cfg, key).await {
            Ok(s) => s,
            Err(e) if unsupported(&e) => {
                tracing::warn!(error = %e, "the database has no advisory locks: a killed gateway is known only after gone_after_secs");
                return Ok(());
            }
            Err(e) => return Err(pg(e)),
        };
        let _ = self.key.set(key);
        let since = self.held_since.clone();
        set(&since, Some(Instant::now()));
        let cfg = self.cfg.clone();
        tokio::spawn(async move {
            let mut session = Some(first);
            loop {
                if let Some((client, conn)) = session.take() {
                    keep(client, conn).await;
                    set(&since, None);
                    tracing::warn!(
                        "the database connection holding this gateway's sign of life broke; taking it again"
                    );
                }
                tokio::time::sleep(RECONNECT).await;
                match locked(&cfg, key).await.map_err(pg) {
                    Ok(s) => {
                        set(&since, Some(Instant::now()));
                        session = Some(s);
                    }
                    Err(e) => tracing::debug!(error = %e, "cannot take this gateway's sign of life yet"),
                }
            }
        });
        Ok(())
    }
}

fn set(since: &Mutex<Option<Instant>>, v: Option<Instant>) {
    *since.lock().unwrap_or_else(|e| e.into_inner()) = v;
}

type Session = (tokio_postgres::Client, tokio::task::JoinHandle<()>);

/// A new connection holding lock `key`. `pg_advisory_lock` waits while another session holds
/// it: this process's previous connection, broken on this side, whose session the server has
/// not yet ended.
async fn locked(cfg: &tokio_postgres::Config, key: i64) -> Result<Session, tokio_postgres::Error> {
    let (client, conn) = cfg.connect(NoTls).await?;
    let conn = tokio::spawn(async move {
        let _ = conn.await;
    });
    client.execute("SELECT pg_advisory_lock($1)", &[&key]).await?;
    Ok((client, conn))
}

/// Whether `e` says the database lacks the function (not that it is unreachable).
fn unsupported(e: &tokio_postgres::Error) -> bool {
    use tokio_postgres::error::SqlState;
    e.code()
        .is_some_and(|c| *c == SqlState::UNDEFINED_FUNCTION || *c == SqlState::FEATURE_NOT_SUPPORTED)
}

/// Returns when the session ends: its connection closed, or a ping failed.
async fn keep(client: tokio_postgres::Client, mut conn: tokio::task::JoinHandle<()>) {
    loop {
        tokio::select! {
            _ = &mut conn => return,
            () = tokio::time::sleep(PING) => {
                if client.simple_query("SELECT 1").await.is_err() {
                    conn.abort();
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_a_stable_function_of_the_name() {
        // Fixed values: gateways of different builds must agree on each other's keys.
        assert_eq!(lock_key(""), 0xcbf2_9ce4_8422_2325_u64 as i64);
        assert_eq!(lock_key("a"), 0xaf63_dc4c_8601_ec8c_u64 as i64);
        assert_ne!(lock_key("gw-1"), lock_key("gw-2"));
    }
}
