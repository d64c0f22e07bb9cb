//! A real PostgreSQL server for tests: Debian's `postgresql` binaries, a fresh cluster in a
//! scratch directory, on a free loopback port, stopped on drop.
//!
//! PostgreSQL refuses to run as root, so as root the cluster belongs to the `postgres` user the
//! Debian package creates, and every server command runs as that user.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// A running PostgreSQL cluster.
pub struct Postgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
    running: bool,
}

/// The superuser the fixture creates; connections from loopback are trusted.
const USER: &str = "penstock";

impl Postgres {
    /// Initializes a cluster and starts it; panics, with the server's log, when it cannot.
    pub fn start() -> Self {
        let bin = server_bin();
        let dir = tempfile::Builder::new().prefix("penstock-pg").tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let port = crate::free_port();
        let mut pg = Postgres { dir, bin, port, running: false };
        let data = pg.data_dir();
        let init = pg.run("initdb", &["-D", path(&data), "-U", USER, "-A", "trust", "-E", "UTF8", "--no-sync"]);
        assert!(init.status.success(), "initdb failed: {}", String::from_utf8_lossy(&init.stderr));
        pg.start_server();
        pg
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Runs a server binary, as the `postgres` user when this process is root.
    fn run(&self, tool: &str, args: &[&str]) -> Output {
        let exe = self.bin.join(tool);
        let mut cmd = if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        cmd.args(args).current_dir(self.dir.path()).output().unwrap_or_else(|e| panic!("run {tool}: {e}"))
    }

    fn start_server(&mut self) {
        let data = self.data_dir();
        let log = self.dir.path().join("postgres.log");
        // Durability of the test cluster itself is not under test: fsync off keeps it fast.
        let opts = format!(
            "-p {} -c listen_addresses=127.0.0.1 -k {} -c fsync=off -c max_connections=300",
            self.port,
            self.dir.path().display()
        );
        let out = self.run("pg_ctl", &["-D", path(&data), "-l", path(&log), "-o", &opts, "-w", "-t", "60", "start"]);
        assert!(
            out.status.success(),
            "pg_ctl start failed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        self.running = true;
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "PostgreSQL did not listen on {}", self.port);
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Creates database `name` and answers its URL.
    pub fn database(&self, name: &str) -> String {
        let port = self.port.to_string();
        let out = self.run("createdb", &["-h", "127.0.0.1", "-p", &port, "-U", USER, name]);
        assert!(out.status.success(), "createdb {name}: {}", String::from_utf8_lossy(&out.stderr));
        self.url(name)
    }

    /// The URL of database `name`.
    pub fn url(&self, name: &str) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/{name}", self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops the server (fast shutdown: sessions are cut, committed work is kept).
    pub fn stop(&mut self) {
        if self.running {
            let data = self.data_dir();
            let _ = self.run("pg_ctl", &["-D", path(&data), "-m", "fast", "-w", "stop"]);
            self.running = false;
        }
    }

    /// Crashes the server (immediate shutdown: no checkpoint, WAL not yet flushed is lost, as in
    /// a power cut), then starts it again on the same port and data: it recovers from its WAL.
    pub fn crash_and_restart(&mut self) {
        let data = self.data_dir();
        let _ = self.run("pg_ctl", &["-D", path(&data), "-m", "immediate", "-w", "stop"]);
        self.running = false;
        self.start_server();
    }

    /// Starts the server again after [`Postgres::stop`], on the same port and data.
    pub fn restart(&mut self) {
        self.stop();
        self.start_server();
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if self.running {
            let data = self.data_dir();
            let _ = self.run("pg_ctl", &["-D", path(&data), "-m", "immediate", "-w", "stop"]);
        }
    }
}

fn path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// The newest installed server's `bin` directory (`/usr/lib/postgresql/<major>/bin`); panics
/// with the package to install when there is none.
fn server_bin() -> PathBuf {
    let mut majors: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, p): &(u32, PathBuf)| p.join("initdb").exists())
        .collect();
    majors.sort();
    majors
        .pop()
        .map(|(_, p)| p)
        .expect("PostgreSQL server binaries not found: apt-get install postgresql (scripts/install-deps.sh test)")
}
