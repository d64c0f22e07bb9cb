//! Harness for end-to-end tests: starts the real `penstock` binary on a free loopback port with a
//! fresh data directory, and stops it on drop.

pub mod cluster;
pub mod crash;
pub mod ganesha;
pub mod postgres;
pub mod powercut;
pub mod s3;

pub use s3::{
    code, completed, data, error_doc, keys, list_all, md5_hex, mkbucket, status, xml_element, Failure, Upload,
};

/// Raw HTTP/1.1 over a socket, for bytes on the wire that an SDK would not send (interim
/// responses, stalled bodies, malformed headers), with presigned URLs for authentication.
pub mod raw {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpStream;
    use std::time::Duration;

    use aws_sdk_s3::presigning::PresignedRequest;

    use crate::Gateway;

    /// One HTTP/1.1 response read off a socket.
    pub struct Answer {
        pub status: u16,
        pub headers: Vec<(String, String)>,
        pub body: Vec<u8>,
    }

    impl Answer {
        /// The value of header `name` (any case).
        pub fn header(&self, name: &str) -> Option<&str> {
            self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
        }
    }

    /// A keep-alive HTTP/1.1 connection to the gateway.
    pub struct Conn {
        /// The socket, for writes.
        pub w: TcpStream,
        r: BufReader<TcpStream>,
        host: String,
    }

    impl Conn {
        /// Connects to the gateway (10 s read timeout).
        pub fn open(gw: &Gateway) -> Self {
            let host = gw.endpoint.trim_start_matches("http://").to_owned();
            let w = TcpStream::connect(&host).unwrap();
            w.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let r = BufReader::new(w.try_clone().unwrap());
            Self { w, r, host }
        }

        /// Sends a request head for a presigned URL, with extra header lines.
        pub fn send_head(&mut self, req: &PresignedRequest, extra: &[(&str, String)]) {
            let uri: http::Uri = req.uri().parse().unwrap();
            let mut head =
                format!("{} {} HTTP/1.1\r\nHost: {}\r\n", req.method(), uri.path_and_query().unwrap(), self.host);
            for (k, v) in req.headers() {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            for (k, v) in extra {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            self.w.write_all(head.as_bytes()).unwrap();
        }

        /// Sends an unsigned request (anonymous, as `curl` of an object URL) and reads the answer.
        pub fn unsigned(&mut self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Answer {
            let mut head = format!("{method} {path} HTTP/1.1\r\nContent-Length: {}\r\n", body.len());
            if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
                head.push_str(&format!("Host: {}\r\n", self.host));
            }
            for (k, v) in headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            self.w.write_all(head.as_bytes()).unwrap();
            self.w.write_all(body).unwrap();
            self.answer(method == "HEAD")
        }

        /// Writes raw bytes.
        pub fn send(&mut self, bytes: &[u8]) {
            self.w.write_all(bytes).unwrap();
        }

        /// Reads one response (interim ones included); `head_only` for answers to HEAD.
        pub fn answer(&mut self, head_only: bool) -> Answer {
            let mut line = String::new();
            self.r.read_line(&mut line).expect("a status line before the read timeout");
            let status: u16 = line.split_whitespace().nth(1).expect("status line").parse().unwrap();
            let mut headers = Vec::new();
            loop {
                let mut l = String::new();
                self.r.read_line(&mut l).unwrap();
                let l = l.trim_end();
                if l.is_empty() {
                    break;
                }
                let (k, v) = l.split_once(':').unwrap();
                headers.push((k.trim().to_owned(), v.trim().to_owned()));
            }
            let mut a = Answer { status, headers, body: Vec::new() };
            if status >= 200 && !head_only && status != 204 && status != 304 {
                let n: usize = a.header("content-length").expect("content-length").parse().unwrap();
                a.body = vec![0; n];
                self.r.read_exact(&mut a.body).unwrap();
            }
            a
        }
    }
}

/// SigV4 signing of hand-made requests (region `us-east-1`, service `s3`), for tests that put
/// bytes on the wire themselves.
pub mod sigv4 {
    use std::time::SystemTime;

    use aws_credential_types::Credentials;
    use aws_sigv4::http_request::{
        sign, PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
        UriPathNormalizationMode,
    };
    use aws_sigv4::sign::v4;
    use aws_smithy_runtime_api::client::identity::Identity;

    /// Keys and a signing time.
    pub struct Signer {
        identity: Identity,
        time: SystemTime,
        /// The path of the URL signed as it is written (S3's rule, what S3 clients do) instead of
        /// encoded again and normalized (the SDK's default for other services).
        path_as_written: bool,
        /// The region of the credential scope.
        region: String,
    }

    impl Signer {
        /// Signs as `access_key`/`secret_key` at `time`.
        pub fn new(access_key: &str, secret_key: &str, time: SystemTime) -> Self {
            let identity = Credentials::new(access_key, secret_key, None, None, "test").into();
            Self { identity, time, path_as_written: false, region: "us-east-1".to_owned() }
        }

        /// Signs in the scope of `region` (any string, as clients of other hosts name one).
        pub fn in_region(mut self, region: &str) -> Self {
            self.region = region.to_owned();
            self
        }

        /// Signs URL paths as they are written, percent escapes included, as S3 clients do.
        pub fn path_as_written(mut self) -> Self {
            self.path_as_written = true;
            self
        }

        /// The harness's superadmin keys, now.
        pub fn admin() -> Self {
            Self::new(crate::ACCESS_KEY, crate::SECRET_KEY, SystemTime::now())
        }

        fn params(&self) -> v4::SigningParams<'_, SigningSettings> {
            self.params_with(self.settings())
        }

        fn settings(&self) -> SigningSettings {
            let mut settings = SigningSettings::default();
            settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
            if self.path_as_written {
                settings.percent_encoding_mode = PercentEncodingMode::Single;
                settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
            }
            settings
        }

        fn params_with(&self, settings: SigningSettings) -> v4::SigningParams<'_, SigningSettings> {
            v4::SigningParams::builder()
                .identity(&self.identity)
                .region(&self.region)
                .name("s3")
                .time(self.time)
                .settings(settings)
                .build()
                .expect("signing parameters")
        }

        /// Signs `method url` with `headers` (which must include `host`) and `body`: the headers
        /// to add (`authorization`, `x-amz-date`, `x-amz-content-sha256`) and the signature,
        /// which seeds an aws-chunked body's chunk signatures.
        pub fn sign(
            &self,
            method: &str,
            url: &str,
            headers: &[(&str, &str)],
            body: SignableBody<'_>,
        ) -> (Vec<(String, String)>, String) {
            let signable = SignableRequest::new(method, url, headers.iter().copied(), body).expect("signable request");
            let (instructions, signature) = sign(signable, &self.params().into()).expect("signature").into_parts();
            let added = instructions.headers().map(|(k, v)| (k.to_owned(), v.to_owned())).collect();
            (added, signature)
        }

        /// Presigns `method url` (whose query may already carry parameters, which are signed
        /// with it) for five minutes, with `headers` (which must include `host`) signed and
        /// `payload` as the canonical request's payload hash: the parameters to append to the
        /// URL's query, already encoded.
        pub fn presign(&self, method: &str, url: &str, headers: &[(&str, &str)], payload: &str) -> String {
            let mut settings = self.settings();
            settings.signature_location = aws_sigv4::http_request::SignatureLocation::QueryParams;
            settings.expires_in = Some(std::time::Duration::from_secs(300));
            let body = SignableBody::Precomputed(payload.to_owned());
            let signable = SignableRequest::new(method, url, headers.iter().copied(), body).expect("signable request");
            let (instructions, _) = sign(signable, &self.params_with(settings).into()).expect("signature").into_parts();
            let encode = |s: &str| {
                s.bytes()
                    .map(|b| match b {
                        b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                            char::from(b).to_string()
                        }
                        _ => format!("%{b:02X}"),
                    })
                    .collect::<String>()
            };
            let pairs: Vec<String> =
                instructions.params().iter().map(|(k, v)| format!("{}={}", encode(k), encode(v))).collect();
            pairs.join("&")
        }

        /// The signature of one aws-chunked chunk of `data`, following `previous` (the seed's
        /// or the previous chunk's signature).
        pub fn sign_chunk(&self, data: &[u8], previous: &str) -> String {
            let data = bytes::Bytes::copy_from_slice(data);
            v4::sign_chunk(&data, previous, &self.params()).expect("chunk signature").signature().to_owned()
        }
    }
}

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// Access key the harness installs as the bootstrap superadmin.
pub const ACCESS_KEY: &str = "PENSTOCKTESTKEY";
/// Its secret.
pub const SECRET_KEY: &str = "penstock-test-secret-key-0123456789abcdef";
/// Bearer token of the admin API.
pub const ADMIN_TOKEN: &str = "penstock-test-admin-token";

/// A user made through the admin CLI, with an S3 client of their keypair.
pub struct Tenant {
    /// The user id.
    pub id: String,
    /// The keypair's access key.
    pub ak: String,
    /// An S3 client signing with the keypair.
    pub s3: aws_sdk_s3::Client,
}

/// A running gateway.
pub struct Gateway {
    child: Child,
    addr: SocketAddr,
    admin_addr: SocketAddr,
    config: PathBuf,
    /// `http://127.0.0.1:PORT`
    pub endpoint: String,
    /// The gateway's data directory.
    pub data_dir: PathBuf,
    /// Where the process's standard output (its "ready" banner) goes, and how long that file was
    /// when the current process started: its banner lies beyond.
    out: (PathBuf, u64),
    _dir: tempfile::TempDir,
}

/// The `penstock` binary: `$PENSTOCK_BIN`, else next to the test executable's `deps/` folder.
pub fn binary() -> PathBuf {
    if let Ok(p) = std::env::var("PENSTOCK_BIN") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe.parent().and_then(Path::parent).expect("target profile dir");
    let bin = dir.join("penstock");
    assert!(bin.exists(), "{} not found: build it first (cargo build -p penstock) or set PENSTOCK_BIN", bin.display());
    bin
}

/// A loopback port that is free now and that no earlier call in this process returned. Free
/// now is all a probe can tell: another process (or an outgoing connection) may still take it
/// before its user binds it, which [`Gateway::wait_ready`] survives by moving.
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

/// `127.0.0.1:port`.
fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

impl Gateway {
    /// Starts a gateway with default settings.
    pub fn start() -> Self {
        Self::start_with_config("")
    }

    /// Starts a gateway with extra TOML configuration.
    pub fn start_with_config(toml: &str) -> Self {
        Self::start_in(tempfile::tempdir().unwrap(), toml)
    }

    /// Starts a gateway on `dir/data`, which may hold a data directory written earlier (by
    /// another release, say), with extra TOML configuration.
    pub fn start_in(dir: tempfile::TempDir, toml: &str) -> Self {
        let mut gw = Self::launch(dir, toml);
        gw.wait_ready(true);
        gw
    }

    /// Starts `n` gateways with the same configuration at once (racing through start-up, as a
    /// cluster restarted together does) and waits until all listen.
    pub fn start_many(n: usize, toml: &str) -> Vec<Self> {
        let mut gws: Vec<Self> = (0..n).map(|_| Self::launch(tempfile::tempdir().unwrap(), toml)).collect();
        for gw in &mut gws {
            gw.wait_ready(true);
        }
        gws
    }

    fn launch(dir: tempfile::TempDir, toml: &str) -> Self {
        Self::launch_on(dir, toml, loopback(free_port()), loopback(free_port()))
    }

    fn launch_on(dir: tempfile::TempDir, toml: &str, addr: SocketAddr, admin_addr: SocketAddr) -> Self {
        let data_dir = dir.path().join("data");
        let cfg = dir.path().join("penstock.toml");
        std::fs::write(&cfg, toml).unwrap();
        let out = (dir.path().join("gateway.out"), 0);
        let child = spawn(&cfg, &data_dir, addr, admin_addr, &dir.path().join("gateway.log"), &out.0);
        Self { child, addr, admin_addr, config: cfg, endpoint: format!("http://{addr}"), data_dir, out, _dir: dir }
    }

    /// Starts the process (again) with the current configuration, ports and data, logging to
    /// `log` (in the test's directory).
    fn respawn(&mut self, log: &str) {
        self.out.1 = std::fs::metadata(&self.out.0).map_or(0, |m| m.len());
        let log = self._dir.path().join(log);
        self.child = spawn(&self.config, &self.data_dir, self.addr, self.admin_addr, &log, &self.out.0);
    }

    /// Whether this process said it listens on `self.addr`. A connection alone does not tell:
    /// another program may hold the port the gateway failed to bind.
    fn announced(&self) -> bool {
        let Ok(out) = std::fs::read(&self.out.0) else { return false };
        let banner = format!("Penstock is ready on http://{}", self.addr);
        let tls_banner = format!("Penstock is ready on https://{}", self.addr);
        let new = String::from_utf8_lossy(out.get(self.out.1 as usize..).unwrap_or_default());
        new.contains(&banner) || new.contains(&tls_banner)
    }

    /// Waits until the gateway listens. With `may_move` (a first start, whose ports nobody
    /// knows yet), a gateway that exited because one of its ports was taken between
    /// [`free_port`] and its bind is started again on new ones.
    fn wait_ready(&mut self, may_move: bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut moves = 0;
        while !(self.announced() && TcpStream::connect(self.addr).is_ok()) {
            let exited = matches!(self.child.try_wait(), Ok(Some(_)));
            if exited && may_move && moves < 5 && self.log().contains("Address already in use") {
                moves += 1;
                std::fs::write(self._dir.path().join("gateway.log"), "").unwrap();
                (self.addr, self.admin_addr) = (loopback(free_port()), loopback(free_port()));
                self.endpoint = format!("http://{}", self.addr);
                self.respawn("gateway.log");
                continue;
            }
            assert!(!exited && Instant::now() < deadline, "gateway did not start; log:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the process with SIGKILL (a crash) and starts it again on the same data and port.
    pub fn crash_and_restart(&mut self) {
        self.kill();
        self.restart();
    }

    /// Kills the process with SIGKILL and waits for it to be gone.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        self.child.wait().unwrap();
    }

    /// Starts the process again (after [`Gateway::kill`]) on the same data and port.
    pub fn restart(&mut self) {
        self.respawn("gateway2.log");
        self.wait_ready(false);
    }

    /// Stops the process with SIGKILL and starts it again on the same data and port with `toml`
    /// as its configuration.
    pub fn restart_with_config(&mut self, toml: &str) {
        self.kill();
        std::fs::write(&self.config, toml).unwrap();
        self.restart();
    }

    /// Runs `penstock admin --json ARGS` against this gateway and returns the parsed answer;
    /// panics (with the output) when the command fails.
    pub fn admin(&self, args: &[&str]) -> serde_json::Value {
        let out = self.admin_raw(args);
        assert!(
            out.status.success(),
            "penstock admin {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("admin --json prints JSON")
    }

    /// Runs `penstock admin --json ARGS` and returns the raw process output.
    pub fn admin_raw(&self, args: &[&str]) -> std::process::Output {
        let url = format!("http://{}", self.admin_addr);
        Command::new(binary())
            .args(["admin", "--url", &url, "--token", ADMIN_TOKEN, "--json"])
            .args(args)
            .output()
            .expect("run penstock admin")
    }

    /// Starts a gateway and creates bucket `name` with the bootstrap keypair: the opening of
    /// most S3 tests. Answers the gateway and that keypair's client.
    pub async fn with_bucket(name: &str) -> (Self, aws_sdk_s3::Client) {
        let gw = Gateway::start();
        let c = gw.client();
        s3::mkbucket(&c, name).await;
        (gw, c)
    }

    /// An aws-sdk-s3 client for this gateway with the bootstrap superadmin's keys.
    pub fn client(&self) -> aws_sdk_s3::Client {
        self.client_with(ACCESS_KEY, SECRET_KEY)
    }

    /// An aws-sdk-s3 client for this gateway with the given keys (path-style addressing).
    pub fn client_with(&self, access_key: &str, secret_key: &str) -> aws_sdk_s3::Client {
        use aws_sdk_s3::config::{Credentials, Region};
        let conf = aws_sdk_s3::Config::builder()
            .behavior_version_latest()
            .region(Region::new("us-east-1"))
            .endpoint_url(&self.endpoint)
            .credentials_provider(Credentials::new(access_key, secret_key, None, None, "test"))
            .force_path_style(true)
            .http_client(aws_smithy_http_client::Builder::new().build_http())
            .build();
        aws_sdk_s3::Client::from_conf(conf)
    }

    /// The process id of the running gateway.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The names of the gateway's threads (Linux: `/proc/PID/task/*/comm`).
    pub fn thread_names(&self) -> Vec<String> {
        std::fs::read_dir(format!("/proc/{}/task", self.pid()))
            .unwrap()
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .map(|n| n.trim().to_owned())
            .collect()
    }

    /// The admin API's address.
    pub fn admin_addr(&self) -> SocketAddr {
        self.admin_addr
    }

    /// A plain HTTP/1.0 GET of `path` on the admin listener (no token: `/health`, `/ready`,
    /// `/metrics`, or a refusal): (status, body).
    pub fn admin_get(&self, path: &str) -> (u16, String) {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(self.admin_addr()).unwrap();
        write!(s, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        let status = out[9..12].parse().unwrap();
        let body = out.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
        (status, body)
    }

    /// A new user of `domain` with role `role` (`user`, `domain-admin`, ...) and a keypair.
    pub fn tenant(&self, domain: &str, name: &str, role: &str) -> Tenant {
        let u = self.admin(&["user", "create", "--domain", domain, "--role", role, name]);
        let field =
            |v: &serde_json::Value, k: &str| v[k].as_str().unwrap_or_else(|| panic!("{k} missing in {v}")).to_owned();
        let id = field(&u, "id");
        let kp = self.admin(&["keypair", "create", &id]);
        let ak = field(&kp, "access_key");
        let s3 = self.client_with(&ak, &field(&kp, "secret_key"));
        Tenant { id, ak, s3 }
    }

    /// The gateway's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("gateway.log")).unwrap_or_default()
    }

    /// The directory of the default volume.
    pub fn volume_dir(&self) -> PathBuf {
        self.data_dir.join("volumes").join("local")
    }

    /// Finds the directory of a bucket's folder on the default volume (`<scope>/<aa>/<bb>/<rest>`).
    pub fn folder_dir(&self, marker_file: &str) -> PathBuf {
        find_folder(&self.volume_dir(), marker_file)
    }

    /// Sends SIGTERM and waits for the process to exit.
    pub fn terminate(mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        self.child.wait().unwrap()
    }
}

fn spawn(cfg: &Path, data_dir: &Path, addr: SocketAddr, admin: SocketAddr, log: &Path, out: &Path) -> Child {
    let append = |p: &Path| std::fs::OpenOptions::new().create(true).append(true).open(p).unwrap();
    let (log, out) = (append(log), append(out));
    Command::new(binary())
        .args(["serve", "--config"])
        .arg(cfg)
        .arg("--data-dir")
        .arg(data_dir)
        .args(["--listen", &addr.to_string()])
        .args(["--admin-listen", &admin.to_string()])
        .env("PENSTOCK_ADMIN_TOKEN", ADMIN_TOKEN)
        .env("PENSTOCK_ACCESS_KEY", ACCESS_KEY)
        .env("PENSTOCK_SECRET_KEY", SECRET_KEY)
        .stdout(out)
        .stderr(log)
        .spawn()
        .expect("start penstock")
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // A failing test shows what its gateway said: CI keeps only the test's output.
        if std::thread::panicking() {
            let log = self.log();
            let lines: Vec<&str> = log.lines().collect();
            let tail = lines[lines.len().saturating_sub(40)..].join("\n");
            eprintln!("--- last lines of the log of the gateway on {} ---\n{tail}\n---", self.addr);
        }
    }
}

/// Finds the folder (`<scope>/<aa>/<bb>/<rest>` below `volume_root`) that holds `marker_file`.
pub fn find_folder(volume_root: &Path, marker_file: &str) -> PathBuf {
    fn walk(p: &Path, depth: usize, name: &str) -> Option<PathBuf> {
        if depth == 4 {
            return p.join(name).exists().then(|| p.to_path_buf());
        }
        for e in std::fs::read_dir(p).ok()? {
            let e = e.ok()?;
            if e.file_type().ok()?.is_dir() {
                if let Some(f) = walk(&e.path(), depth + 1, name) {
                    return Some(f);
                }
            }
        }
        None
    }
    walk(volume_root, 0, marker_file).expect("folder holding the marker file")
}

/// Deterministic pseudo-random bytes (xorshift64 seeded by `seed`): test payloads that are cheap to
/// regenerate for comparison and differ between seeds.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// PUTs `body` at `bucket/key`; panics on failure.
pub async fn put(c: &aws_sdk_s3::Client, bucket: &str, key: &str, body: &[u8]) {
    c.put_object()
        .bucket(bucket)
        .key(key)
        .body(aws_sdk_s3::primitives::ByteStream::from(body.to_vec()))
        .send()
        .await
        .unwrap();
}

/// The bytes at `bucket/key`; panics on failure.
pub async fn get(c: &aws_sdk_s3::Client, bucket: &str, key: &str) -> Vec<u8> {
    let o = c.get_object().bucket(bucket).key(key).send().await.unwrap();
    o.body.collect().await.unwrap().into_bytes().to_vec()
}

/// Unpacks `tests/fixtures/NAME` (a tarball holding `data/` and `data/expect.json`, what the
/// fixture's maker recorded) into a fresh directory; answers the directory and that record.
pub fn unpack_fixture(name: &str) -> (tempfile::TempDir, serde_json::Value) {
    let tarball = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures").join(name);
    let dir = tempfile::tempdir().unwrap();
    let st = Command::new("tar").arg("-C").arg(dir.path()).arg("-xzf").arg(&tarball).status().expect("run tar");
    assert!(st.success(), "tar -xzf {} failed", tarball.display());
    let expect = std::fs::read(dir.path().join("data/expect.json")).unwrap();
    (dir, serde_json::from_slice(&expect).unwrap())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// A port taken by someone else between the probe and the gateway's bind moves the gateway
    /// to new ports instead of failing the test that started it; a squatter on the S3 port, whose
    /// listener accepts the readiness probe's connection, does not pass for the gateway.
    #[test]
    fn a_gateway_whose_port_was_taken_starts_on_new_ones() {
        for s3_port in [false, true] {
            let squatter = TcpListener::bind("127.0.0.1:0").unwrap();
            let taken = squatter.local_addr().unwrap();
            let (addr, admin) = if s3_port { (taken, loopback(free_port())) } else { (loopback(free_port()), taken) };
            let mut gw = Gateway::launch_on(tempfile::tempdir().unwrap(), "", addr, admin);
            gw.wait_ready(true);
            assert!(gw.addr != taken && gw.admin_addr != taken, "{s3_port}");
            assert!(gw.endpoint.ends_with(&gw.addr.port().to_string()));
            assert!(matches!(gw.child.try_wait(), Ok(None)), "the gateway runs");
            let mut c = TcpStream::connect(gw.addr).unwrap();
            c.write_all(b"GET /minio/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
            let mut answer = String::new();
            c.read_to_string(&mut answer).unwrap();
            assert!(answer.starts_with("HTTP/1.1 "), "{answer}");
        }
    }
}
