//! Leftovers of interrupted writes, cleaned up without touching a running gateway's work.
//!
//! A write that a crash interrupts leaves a staging file in its folder's hidden area and maybe a
//! publish noted as pending in the metadata. Several gateways can share one volume and one
//! engine, so "older than my start" no longer means "abandoned": each gateway names its staging
//! files after its instance id ([`penstock_backends::set_instance`]) and heartbeats to the
//! engine. A gateway cleans up after instances that are gone (silent for `gone_after`): at its
//! own start (a previous run of itself is such an instance), and whenever a peer falls silent.
//! Files of instances it does not know (one that started after it looked, or names from before
//! instances) go only when older than its own start; files of live instances never.
//!
//! A gateway that stalls longer than `gone_after` (its database unreachable, say) is treated
//! as gone: its in-flight writes lose their staging files and fail, and nothing partial becomes
//! visible. Its next heartbeat makes it alive again.
//!
//! A gateway that is killed is gone sooner: where the engine keeps signs of life
//! ([`penstock_metadata::Metadata::vanished`], the PostgreSQL engine's advisory locks), one whose
//! sign has been missing at two looks [`CONFIRM`] apart is cleaned up after then, so the keys it
//! held claimed are free in seconds instead of after `gone_after`. A write that finds a key
//! claimed asks for such a look at once ([`Gateway::nudge_janitor`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use s3s::S3Result;

use penstock_backends::SweepRule;
use penstock_metadata::PendingPublish;

use super::error::{backend_err, meta_err};
use super::object::parse_key;
use super::{location, BucketCtx, Gateway};

/// How often a gateway tells the engine it is alive, and after how much silence it counts as
/// gone (`[metadata] heartbeat_secs`, `gone_after_secs`).
#[derive(Debug, Clone, Copy)]
pub struct Liveness {
    /// Between heartbeats.
    pub heartbeat: Duration,
    /// Silence that makes a gateway gone.
    pub gone_after: Duration,
}

/// How long a gateway's sign of life must stay missing before it counts as gone: a live
/// gateway whose connection to the database broke takes its sign again within a second.
const CONFIRM: Duration = Duration::from_secs(2);
/// The least time between two looks for vanished gateways, however often waiting writes ask.
const NUDGED_LOOK_EVERY: Duration = Duration::from_millis(500);

impl Gateway {
    /// Registers this gateway as alive. Must precede its first write, so that peers never take
    /// its staging files for leftovers. Its sign of life is taken first, so that no peer sees it
    /// registered without one.
    pub async fn register(&self) -> anyhow::Result<()> {
        self.meta.hold_liveness(&self.instance).await?;
        self.meta.heartbeat(&self.instance).await?;
        Ok(())
    }

    /// Asks the janitor to look for vanished gateways now: a write waits for a key another
    /// gateway holds, which may be one that was killed.
    pub(crate) fn nudge_janitor(&self) {
        self.janitor_nudge.notify_one();
    }

    /// Cleans up after gone gateways once (`started`: this process's start), then heartbeats and
    /// watches for peers falling silent, forever.
    ///
    /// Silence means gone only to a gateway that has itself been heard all along: after a
    /// database outage every gateway looks silent to the others, and after a gateway's own start
    /// it has seen too little. So a gateway declares peers gone only once its own heartbeats have
    /// succeeded for `gone_after` without a gap; until then every known gateway counts as alive.
    pub async fn run_janitor(self: Arc<Self>, started: SystemTime) {
        let mut heard_since = Instant::now();
        self.clean_up(started, false, &[]).await;
        let mut tick = tokio::time::interval(self.liveness.heartbeat);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let gone_ms = self.liveness.gone_after.as_millis() as u64;
        let mut own_swept = Instant::now();
        // Gateways seen without their sign of life, and since when.
        let mut suspects: HashMap<String, Instant> = HashMap::new();
        let mut looked = Instant::now();
        loop {
            // The next look at a suspect, to confirm it gone (never sooner than looks may come).
            let confirm_at = suspects
                .values()
                .min()
                .map(|t| (*t + CONFIRM).max(looked + NUDGED_LOOK_EVERY));
            let beat = tokio::select! {
                _ = tick.tick() => true,
                () = self.janitor_nudge.notified() => false,
                () = sleep_until_or_never(confirm_at) => false,
            };
            if self.meta.shared() && (beat || looked.elapsed() >= NUDGED_LOOK_EVERY) {
                looked = Instant::now();
                self.look_for_vanished(started, &mut suspects).await;
            }
            if !beat {
                continue;
            }
            if let Err(e) = self.meta.heartbeat(&self.instance).await {
                tracing::warn!(error = %e, "heartbeat failed");
                heard_since = Instant::now();
                continue;
            }
            if self.meta.shared() && own_swept.elapsed() >= self.liveness.gone_after {
                own_swept = Instant::now();
                self.settle_own_leftovers().await;
            }
            if heard_since.elapsed() < self.liveness.gone_after {
                continue;
            }
            match self.meta.gateways().await {
                Ok(g) if g.iter().any(|(_, age)| *age >= gone_ms) => self.clean_up(started, true, &[]).await,
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "cannot list gateways"),
            }
        }
    }

    /// Notes the gateways whose sign of life is missing ([`penstock_metadata::Metadata::vanished`])
    /// in `suspects`, and cleans up after those missing for [`CONFIRM`] or longer.
    async fn look_for_vanished(&self, started: SystemTime, suspects: &mut HashMap<String, Instant>) {
        let vanished = match self.meta.vanished().await {
            Ok(v) => v,
            Err(e) => return tracing::warn!(error = %e, "cannot look for vanished gateways"),
        };
        // A gateway seen again is no suspect; a new suspect is timed from now.
        suspects.retain(|i, _| vanished.contains(i));
        let now = Instant::now();
        for i in vanished.into_iter().filter(|i| *i != self.instance) {
            suspects.entry(i).or_insert(now);
        }
        let gone: Vec<String> = suspects
            .iter()
            .filter(|(_, since)| since.elapsed() >= CONFIRM)
            .map(|(i, _)| i.clone())
            .collect();
        if gone.is_empty() {
            return;
        }
        for i in &gone {
            tracing::info!(instance = %i, "a gateway's sign of life is gone: cleaning up after it");
            suspects.remove(i);
        }
        self.clean_up(started, false, &gone).await;
    }

    /// Settles the publishes and sweeps the staging files of gone gateways (none unless
    /// `confident`, see [`Gateway::run_janitor`], or named in `vanished`), then forgets them.
    async fn clean_up(&self, started: SystemTime, confident: bool, vanished: &[String]) {
        let known = match self.meta.gateways().await {
            Ok(g) => g,
            Err(e) => return tracing::warn!(error = %e, "clean-up: cannot list gateways"),
        };
        let gone_ms = self.liveness.gone_after.as_millis() as u64;
        // This gateway's previous run is gone however recently it spoke (see `Succession`).
        let previous = self.succession.previous.as_deref();
        let (dead, mut alive): (Vec<_>, Vec<_>) = known.into_iter().partition(|(i, age)| {
            *i != self.instance
                && ((confident && *age >= gone_ms) || Some(i.as_str()) == previous || vanished.contains(i))
        });
        alive.push((self.instance.clone(), 0));
        let rule = SweepRule {
            alive: alive.into_iter().map(|(i, _)| i).collect(),
            dead: dead.iter().map(|(i, _)| i.clone()).collect(),
            unknown_before: started,
        };
        self.settle_publishes(&rule).await;
        self.sweep_staging(&rule).await;
        for (instance, _) in dead {
            let silent_ms = if Some(instance.as_str()) == previous || vanished.contains(&instance) {
                0
            } else {
                gone_ms
            };
            match self.meta.forget_gateway(&instance, silent_ms).await {
                Ok(true) => tracing::info!(%instance, "cleaned up after a gateway that is gone"),
                Ok(false) => tracing::info!(%instance, "a silent gateway spoke again"),
                Err(e) => tracing::warn!(%instance, error = %e, "cannot forget a gone gateway"),
            }
        }
    }

    /// Removes the staging files `rule` names as leftovers in every folder; logs what it did.
    async fn sweep_staging(&self, rule: &SweepRule) {
        let buckets = match self.meta.buckets().await {
            Ok(b) => b,
            Err(e) => return tracing::warn!(error = %e, "staging sweep: cannot list buckets"),
        };
        let mut removed = 0;
        for b in buckets {
            let Ok(vol) = self.volume(&b.volume) else { continue };
            match vol.open_folder(&location(&b)).await {
                Ok(f) => match f.sweep_staging(rule).await {
                    Ok(n) => removed += n,
                    Err(e) => tracing::warn!(bucket = %b.name, error = %e, "staging sweep failed"),
                },
                Err(e) => tracing::warn!(bucket = %b.name, error = %e, "staging sweep: folder unavailable"),
            }
        }
        if removed > 0 {
            tracing::info!(removed, "removed staging files left by interrupted writes");
        }
    }

    /// Settles the publishes that gone gateways began: each such key keeps only the record of
    /// the file that is at it now (or none, if nothing is). Publishes of live gateways are theirs
    /// to end. Runs beside serving; the key lock keeps it from racing a new write of the same key
    /// through this gateway, and a write through another gateway ends its own publish after
    /// this one (its record wins).
    async fn settle_publishes(&self, rule: &SweepRule) {
        let pending = match self.meta.publishing().await {
            Ok(p) => p,
            Err(e) => return tracing::warn!(error = %e, "publish sweep: cannot read pending publishes"),
        };
        // The embedded engine does not record instances: one process opens it, so what is
        // pending is a previous run's, or this run's own (ordered by the key lock).
        let abandoned: Vec<PendingPublish> = pending
            .into_iter()
            .filter(|p| p.instance.is_empty() || !rule.alive.contains(&p.instance))
            .collect();
        let settled = self.settle_notes(abandoned).await;
        if settled > 0 {
            tracing::info!(settled, "settled records of publishes an interrupted gateway left");
        }
    }

    /// Ends the key claims and publishes noted in this gateway's own name that nothing of it
    /// holds any more (a release or settling write that failed, during a database outage say).
    /// Other gateways wait for a claimed key, so such a note would keep them from writing it
    /// for as long as this gateway lives. Under the key lock nothing of this gateway is changing
    /// the key, so a note in its name found there is a leftover.
    async fn settle_own_leftovers(&self) {
        let own: Vec<PendingPublish> = match self.meta.publishing().await {
            Ok(p) => p.into_iter().filter(|p| p.instance == self.instance).collect(),
            Err(e) => return tracing::warn!(error = %e, "own-claim sweep: cannot read pending publishes"),
        };
        let settled = self.settle_notes(own).await;
        if settled > 0 {
            tracing::info!(settled, "settled keys this gateway had left claimed");
        }
    }

    /// Settles each noted key: it keeps only the record of the file at it now (or none, if
    /// nothing is). A key is settled only if this gateway takes its note over, under the key
    /// lock, from the gateway it was listed for (`Metadata::take_note`): a note listed while a
    /// write was in flight was ended by that write (its answer leaves before its settling
    /// write), and a note another janitor settled first may since be a new writer's, whose
    /// pending record this settle would overwrite and whose claim it would end. Held by this
    /// gateway until the settle ends it, the key waits for it. Answers how many it settled.
    async fn settle_notes(&self, notes: Vec<PendingPublish>) -> usize {
        if notes.is_empty() {
            return 0;
        }
        let buckets = match self.meta.buckets().await {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(error = %e, "publish sweep: cannot list buckets");
                return 0;
            }
        };
        let mut settled = 0;
        for p in notes {
            let folder = p.folder;
            let outcome: S3Result<bool> = async {
                let Some(rec) = buckets.iter().find(|b| b.folder_id == folder).cloned() else {
                    // The bucket is gone; so are its records except this note.
                    return self
                        .meta
                        .end_publish(folder, &p.key, None)
                        .await
                        .map(|()| true)
                        .map_err(meta_err);
                };
                let b = BucketCtx {
                    folder: self
                        .volume(&rec.volume)?
                        .open_folder(&location(&rec))
                        .await
                        .map_err(backend_err)?,
                    rec: Arc::new(rec),
                };
                let path = parse_key(&p.key)?;
                let _guard = self.locks.lock(folder, &p.key).await;
                let taken = self.meta.take_note(folder, &p.key, &p.instance, &self.instance);
                if !taken.await.map_err(meta_err)? {
                    return Ok(false);
                }
                // A versioned change settles by what is at the key (versioning.rs).
                if self.key_versions(&b).settle(&path).await?.is_some() {
                    return Ok(true);
                }
                let (_, current) = self.in_place(&b, &path).await?;
                self.meta
                    .end_publish(folder, &p.key, current.as_ref())
                    .await
                    .map(|()| true)
                    .map_err(meta_err)
            }
            .await;
            match outcome {
                Ok(done) => settled += usize::from(done),
                Err(e) => tracing::warn!(%folder, error = ?e, "publish sweep: could not settle a key"),
            }
        }
        settled
    }
}

async fn sleep_until_or_never(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// A fresh instance id: 64 random bits in hex.
pub(crate) fn new_instance() -> String {
    format!("{:016x}", rand::random::<u64>())
}

/// This run's claim on its data directory, and the instance its previous run used there.
///
/// A gateway killed and started again (a crash, a container restart) comes back with a new
/// instance id; the old one's claims on keys and pending publishes would hold those keys for
/// `gone_after` (other gateways answer 503 meanwhile) although nothing of it runs any more.
/// The data directory tells: whoever holds `instance.lock` in it (an exclusive file lock the
/// kernel drops when the process dies) is its only gateway, and `instance` names the id it last
/// ran under. So a run that takes the lock knows its predecessor is gone and cleans up after it at
/// once.
#[derive(Default)]
pub(crate) struct Succession {
    /// Held for the life of the process.
    _lock: Option<std::fs::File>,
    /// The previous run's instance, when this run took the lock.
    pub previous: Option<String>,
}

impl Succession {
    /// Takes the data directory for `instance`. Another live process holding it (two gateways
    /// misconfigured onto one data directory) or an unwritable directory leaves no predecessor
    /// to clean up after, and a warning.
    pub(crate) fn take(data_dir: &std::path::Path, instance: &str) -> Self {
        let none = Self::default();
        let lock = match std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(data_dir.join("instance.lock"))
        {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!(error = %e, "cannot open the data directory's instance lock");
                return none;
            }
        };
        if lock.try_lock().is_err() {
            tracing::warn!(
                data_dir = %data_dir.display(),
                "another process holds this data directory; each gateway needs its own"
            );
            return none;
        }
        let id_file = data_dir.join("instance");
        let previous = std::fs::read_to_string(&id_file)
            .ok()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty() && s != instance);
        // Durable: after a power cut the next run must still learn whose leftovers to clean.
        let written = penstock_backends::posix::write_file_durably(&id_file, instance.as_bytes(), 0o644, true);
        if let Err(e) = written {
            tracing::warn!(error = %e, "cannot record this run's instance in the data directory");
        }
        Self {
            _lock: Some(lock),
            previous,
        }
    }
}
