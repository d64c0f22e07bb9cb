//! NFS-Ganesha as a test fixture: a real NFS server on loopback ports exporting a fresh temp
//! directory through its VFS backend, stopped on drop.
//!
//! Needs `ganesha.nfsd` (Debian: `nfs-ganesha nfs-ganesha-vfs`) and `rpcbind`, as installed by
//! `scripts/install-deps.sh`; a missing server fails the test with that hint, it never skips.
//! Clients bypass the portmapper with explicit `nfsport`/`mountport`, so several servers can run
//! side by side, but Ganesha still registers with rpcbind at start-up, which must be running:
//! the fixture starts `rpcbind -f` when nothing listens on port 111.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::free_port;

/// A running NFS-Ganesha.
pub struct Ganesha {
    child: Option<Child>,
    dir: tempfile::TempDir,
    /// The exported directory (writable by the test, as a second client would see it).
    pub export: PathBuf,
    /// NFS service port.
    pub nfs_port: u16,
    /// MOUNT service port (NFSv3).
    pub mount_port: u16,
}

fn find(bin: &str) -> Option<PathBuf> {
    ["/usr/bin", "/usr/sbin", "/usr/local/bin", "/sbin"].iter().map(|d| Path::new(d).join(bin)).find(|p| p.exists())
}

/// Starts `rpcbind -f` if no portmapper listens on 127.0.0.1:111. It is left running: it is
/// shared by every server on the machine (CI starts and stops its own).
fn ensure_rpcbind() {
    if TcpStream::connect("127.0.0.1:111").is_ok() {
        return;
    }
    let bin = find("rpcbind").expect("rpcbind not installed: run scripts/install-deps.sh (apt-get install rpcbind)");
    #[allow(clippy::zombie_processes, reason = "rpcbind outlives the test: it is shared by every server")]
    Command::new(bin)
        .args(["-f", "-w"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start rpcbind");
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect("127.0.0.1:111").is_err() {
        assert!(Instant::now() < deadline, "rpcbind did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Ganesha {
    /// Starts a server exporting a fresh directory over NFSv3 and v4 on free loopback ports.
    pub fn start() -> Self {
        find("ganesha.nfsd")
            .expect("ganesha.nfsd not installed: run scripts/install-deps.sh (apt-get install nfs-ganesha nfs-ganesha-vfs rpcbind)");
        ensure_rpcbind();
        let dir = tempfile::tempdir().unwrap();
        let export = dir.path().join("export");
        std::fs::create_dir(&export).unwrap();
        let (nfs_port, mount_port) = (free_port(), free_port());
        let conf = format!(
            r#"NFS_CORE_PARAM {{
    Bind_addr = 127.0.0.1;
    NFS_Port = {nfs_port};
    MNT_Port = {mount_port};
    NLM_Port = {nlm};
    Rquota_Port = {rq};
    Enable_NLM = false;
    Enable_RQUOTA = false;
    Enable_UDP = false;
    Protocols = 3, 4;
}}
NFS_KRB5 {{ Active_krb5 = false; }}
NFSV4 {{ Graceless = true; }}
EXPORT {{
    Export_Id = 1;
    Path = {export};
    Pseudo = /export;
    Protocols = 3, 4;
    Transports = TCP;
    Access_Type = RW;
    Squash = No_Root_Squash;
    SecType = sys;
    # Tests also change the exported directory locally, behind the server's back; without this
    # Ganesha serves cached attributes of such files for up to a minute.
    Attr_Expiration_Time = 0;
    FSAL {{ Name = VFS; }}
}}
LOG {{ Default_Log_Level = EVENT; }}
"#,
            nlm = free_port(),
            rq = free_port(),
            export = export.display()
        );
        std::fs::write(dir.path().join("ganesha.conf"), conf).unwrap();
        let mut g = Self { child: None, dir, export, nfs_port, mount_port };
        g.launch();
        g
    }

    /// Starts the daemon. Start-ups are serialized across test processes (a file lock) and
    /// retried: two servers registering with rpcbind at the same instant can make one fail.
    fn launch(&mut self) {
        let lock = std::fs::File::create(std::env::temp_dir().join("penstock-ganesha.lock")).unwrap();
        lock.lock().unwrap();
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.try_launch() {
                Ok(()) => return,
                Err(e) if attempt < 3 => eprintln!("ganesha start attempt {attempt} failed, retrying: {e}"),
                Err(e) => panic!("{e}"),
            }
        }
    }

    fn try_launch(&mut self) -> Result<(), String> {
        let bin = find("ganesha.nfsd").expect("ganesha.nfsd");
        let d = self.dir.path();
        let child = Command::new(bin)
            .arg("-F")
            .arg("-f")
            .arg(d.join("ganesha.conf"))
            .arg("-L")
            .arg(d.join("ganesha.log"))
            .arg("-p")
            .arg(d.join("ganesha.pid"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start ganesha.nfsd");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        for port in [self.nfs_port, self.mount_port] {
            while TcpStream::connect(("127.0.0.1", port)).is_err() {
                if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                    self.child = None;
                    return Err(format!("ganesha.nfsd exited ({status}); log:\n{}", self.log()));
                }
                if Instant::now() > deadline {
                    self.stop();
                    return Err(format!("ganesha.nfsd did not listen; log:\n{}", self.log()));
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(())
    }

    /// The server's log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("ganesha.log")).unwrap_or_default()
    }

    /// An nfs-rs / libnfs URL for the export, `version` being `3` or `4.1` (v4 uses the pseudo
    /// path). Ports are explicit, so no portmapper lookup happens.
    pub fn url(&self, version: &str) -> String {
        if version == "3" {
            format!(
                "nfs://127.0.0.1{}?version=3&nfsport={}&mountport={}",
                self.export.display(),
                self.nfs_port,
                self.mount_port
            )
        } else {
            format!("nfs://127.0.0.1/export?version={version}&nfsport={}", self.nfs_port)
        }
    }

    /// The libnfs (`nfs-cp`, `nfs-ls`) URL of `path` inside the export, over NFSv3.
    pub fn libnfs_url(&self, path: &str) -> String {
        format!(
            "nfs://127.0.0.1{}/{}?nfsport={}&mountport={}",
            self.export.display(),
            path.trim_start_matches('/'),
            self.nfs_port,
            self.mount_port
        )
    }

    /// Stops the server (SIGTERM, then SIGKILL after 10 s) and waits for it.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("kill").arg(c.id().to_string()).status();
            let deadline = Instant::now() + Duration::from_secs(10);
            while c.try_wait().unwrap().is_none() {
                if Instant::now() > deadline {
                    let _ = c.kill();
                    let _ = c.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    /// Starts the server again on the same ports and export.
    pub fn restart(&mut self) {
        self.stop();
        self.launch();
    }
}

impl Drop for Ganesha {
    fn drop(&mut self) {
        self.stop();
    }
}
