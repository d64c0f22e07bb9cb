//! Several gateways over one shared POSIX volume and one PostgreSQL metadata database: the
//! scale-out deployment, on one machine.

use std::path::PathBuf;

use crate::postgres::Postgres;
use crate::powercut::PowerCutFs;
use crate::Gateway;

/// The master key every gateway of a cluster shares (base64 of 32 bytes).
pub const MASTER_KEY: &str = "cGVuc3RvY2stY2x1c3Rlci10ZXN0LW1hc3Rlci1rZXk=";

/// A running cluster.
pub struct Cluster {
    /// The gateways, all serving the same buckets.
    pub gateways: Vec<Gateway>,
    /// The shared metadata database's server.
    pub pg: Postgres,
    root: PathBuf,
    _volume: Option<tempfile::TempDir>,
    config: String,
}

impl Cluster {
    /// Starts PostgreSQL and `n` gateways at once on a fresh database and a fresh POSIX volume.
    /// Gateways count as gone after 3 s of silence (30 s by default), so tests see the clean-up
    /// soon.
    pub fn start(n: usize) -> Self {
        Self::start_with(n, "")
    }

    /// [`Cluster::start`] with extra top-level configuration for every gateway.
    pub fn start_with(n: usize, top: &str) -> Self {
        Self::start_shared(n, top, 3.0)
    }

    /// [`Cluster::start`] where gateways count as gone only after `gone_after_secs` of silence.
    pub fn start_with_gone_after(n: usize, gone_after_secs: f64) -> Self {
        Self::start_shared(n, "", gone_after_secs)
    }

    fn start_shared(n: usize, top: &str, gone_after_secs: f64) -> Self {
        let volume = tempfile::Builder::new().prefix("penstock-shared").tempdir().unwrap();
        let spec = format!("backend = \"posix\"\npath = \"{}\"\n", volume.path().display());
        let root = volume.path().to_path_buf();
        Self::launch(n, top, &spec, root, Some(volume), gone_after_secs)
    }

    /// Starts PostgreSQL and `n` gateways on the volume `spec` describes (the keys of a
    /// `[[volumes]]` table after its name), whose folders a test finds under `root`.
    pub fn start_on(n: usize, spec: &str, root: PathBuf, volume: Option<tempfile::TempDir>) -> Self {
        Self::launch(n, "", spec, root, volume, 3.0)
    }

    /// [`Cluster::start_on`] a POSIX volume on a [`PowerCutFs`]: the cluster, and the file system
    /// whose power the test cuts. Drop the file system (it unmounts) once every gateway is
    /// killed, and before the cluster, which removes the directory holding its mount point.
    pub fn start_on_power_cut(n: usize) -> (Self, PowerCutFs) {
        let dir = tempfile::Builder::new().prefix("penstock-cut").tempdir().unwrap();
        let root = dir.path().join("volume");
        std::fs::create_dir(&root).unwrap();
        let disk = PowerCutFs::mount(&root);
        let spec = format!("backend = \"posix\"\npath = \"{}\"\n", root.display());
        (Self::start_on(n, &spec, root, Some(dir)), disk)
    }

    fn launch(
        n: usize,
        top: &str,
        spec: &str,
        root: PathBuf,
        volume: Option<tempfile::TempDir>,
        gone_after_secs: f64,
    ) -> Self {
        let pg = Postgres::start();
        let url = pg.database("penstock");
        let config = format!(
            "{top}master_key = \"{MASTER_KEY}\"\ndefault_volume = \"shared\"\n\
             [[volumes]]\nname = \"shared\"\n{spec}\
             [metadata]\nengine = \"postgres\"\nurl = \"{url}\"\npool_size = 8\n\
             heartbeat_secs = 0.5\ngone_after_secs = {gone_after_secs:?}\n"
        );
        let gateways = Gateway::start_many(n, &config);
        Cluster { gateways, pg, root, _volume: volume, config }
    }

    /// The shared volume's root directory.
    pub fn volume_dir(&self) -> PathBuf {
        self.root.clone()
    }

    /// The configuration every gateway runs with.
    pub fn config(&self) -> &str {
        &self.config
    }

    /// Gateway `i`.
    pub fn gw(&self, i: usize) -> &Gateway {
        &self.gateways[i]
    }
}
