//! Optional TLS on the S3 listener (rustls with the ring provider), offering HTTP/2 and
//! HTTP/1.1 by ALPN, with the certificate and key read again from their files without a restart.
//!
//! Certificates are short-lived now (Let's Encrypt's 90 days and shorter, cert-manager renewing
//! them in place): a gateway that read its files once would need a restart, and so a drained
//! listener, for every renewal. Handshakes ask [`ServedCert`] for the pair to present; SIGHUP,
//! and a poll of the files' identities, read the files again. A pair that cannot be used (a
//! half-written file, a key that does not match its certificate) is refused with a warning and
//! the previous pair stays in service, so a botched renewal never takes the listener down.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio_rustls::TlsAcceptor;

/// The certificate chain and key the listener presents, and the files they come from.
pub struct ServedCert {
    cert: PathBuf,
    key: PathBuf,
    provider: Arc<CryptoProvider>,
    current: RwLock<Arc<CertifiedKey>>,
    /// The files' identities when they were last read, whether the pair was taken or refused:
    /// a poll reads them again only once either file has changed since.
    seen: Mutex<Option<[Option<FileStamp>; 2]>>,
}

/// What tells a file's new contents from its old: replaced (another inode, as a rename or a
/// Kubernetes secret's symlink swap makes), or rewritten in place (size, modification time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileStamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime_ns: i128,
}

fn stamp(path: &Path) -> Option<FileStamp> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some(FileStamp {
        dev: m.dev(),
        ino: m.ino(),
        len: m.len(),
        mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
    })
}

impl std::fmt::Debug for ServedCert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServedCert")
            .field("cert", &self.cert)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl ResolvesServerCert for ServedCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.read().unwrap_or_else(|e| e.into_inner()).clone())
    }
}

/// Reads a chain and its key from PEM files; errors name the config key at fault.
fn read_pair(cert: &Path, key: &Path, provider: &CryptoProvider) -> anyhow::Result<CertifiedKey> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(|it| it.collect::<Result<_, _>>())
        .map_err(|e| anyhow::anyhow!("tls_cert: {}: {e}", cert.display()))?;
    if certs.is_empty() {
        anyhow::bail!("tls_cert: {}: no certificate found", cert.display());
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| anyhow::anyhow!("tls_key: {}: {e}", key.display()))?;
    CertifiedKey::from_der(certs, key, provider)
        .map_err(|e| anyhow::anyhow!("tls_key: does not match tls_cert or is unusable: {e}"))
}

/// The SHA-256 of the end-entity certificate, as `openssl x509 -fingerprint -sha256` prints it
/// (public: what every client is shown), to say in the log which certificate is served.
fn fingerprint(pair: &CertifiedKey) -> String {
    let der = pair.cert.first().map_or(&[][..], |c| c.as_ref());
    let digest = ring::digest::digest(&ring::digest::SHA256, der);
    digest
        .as_ref()
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

impl ServedCert {
    /// Reads the pair from `cert` and `key`; at start-up an unusable pair is an error.
    pub fn load(cert: &Path, key: &Path) -> anyhow::Result<Arc<Self>> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let seen = [stamp(cert), stamp(key)];
        let pair = read_pair(cert, key, &provider)?;
        Ok(Arc::new(Self {
            cert: cert.to_owned(),
            key: key.to_owned(),
            provider,
            current: RwLock::new(Arc::new(pair)),
            seen: Mutex::new(Some(seen)),
        }))
    }

    /// The acceptor for the listener: every handshake presents the pair served at that moment.
    pub fn acceptor(self: &Arc<Self>) -> anyhow::Result<TlsAcceptor> {
        let mut cfg = rustls::ServerConfig::builder_with_provider(self.provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| anyhow::anyhow!("tls: {e}"))?
            .with_no_client_auth()
            .with_cert_resolver(self.clone());
        cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(TlsAcceptor::from(Arc::new(cfg)))
    }

    /// Reads the files again if either changed since they were last read, or whatever their
    /// state with `force` (SIGHUP). `Ok(Some(fingerprint))` when another certificate is now
    /// served, `Ok(None)` when nothing changed; an error leaves the previous pair in service.
    pub fn reload(&self, force: bool) -> anyhow::Result<Option<String>> {
        let now = [stamp(&self.cert), stamp(&self.key)];
        {
            let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            if !force && seen.as_ref() == Some(&now) {
                return Ok(None);
            }
            // Recorded before reading: a refused pair is not read (nor warned about) again until
            // a file changes, and a file that changes while it is read differs at the next poll.
            *seen = Some(now);
        }
        let pair = read_pair(&self.cert, &self.key, &self.provider)?;
        let mut current = self.current.write().unwrap_or_else(|e| e.into_inner());
        if current.cert == pair.cert {
            return Ok(None);
        }
        let served = fingerprint(&pair);
        *current = Arc::new(pair);
        Ok(Some(served))
    }

    /// Reloads on SIGHUP, and every `interval` when the files changed (`None`: on SIGHUP only).
    /// Runs for the life of the listener.
    pub async fn watch(self: Arc<Self>, interval: Option<Duration>) {
        let mut hup = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "no SIGHUP handler; TLS files are reread by polling only");
                return self.poll_only(interval).await;
            }
        };
        loop {
            let forced = tokio::select! {
                _ = hup.recv() => true,
                () = sleep_or_never(interval) => false,
            };
            self.clone().reload_logged(forced).await;
        }
    }

    async fn poll_only(self: Arc<Self>, interval: Option<Duration>) {
        let Some(interval) = interval else { return };
        loop {
            tokio::time::sleep(interval).await;
            self.clone().reload_logged(false).await;
        }
    }

    async fn reload_logged(self: Arc<Self>, forced: bool) {
        let files = (self.cert.clone(), self.key.clone());
        match tokio::task::spawn_blocking(move || self.reload(forced)).await {
            Ok(Ok(Some(fp))) => tracing::info!(cert = %files.0.display(), sha256 = %fp, "TLS certificate reloaded"),
            Ok(Ok(None)) if forced => tracing::info!(cert = %files.0.display(), "TLS certificate unchanged"),
            Ok(Ok(None)) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "TLS certificate not reloaded; the previous one is still served"),
            Err(e) => tracing::warn!(error = %e, "TLS reload task failed"),
        }
    }
}

async fn sleep_or_never(interval: Option<Duration>) {
    match interval {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

/// Checks that `cert` and `key` make a usable pair (configuration validation).
pub fn check(cert: &Path, key: &Path) -> anyhow::Result<()> {
    ServedCert::load(cert, key)?.acceptor().map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A self-signed pair for `cn` written to `dir/<name>.{crt,key}` by the openssl command.
    fn make_pair(dir: &Path, name: &str, cn: &str) -> (PathBuf, PathBuf) {
        let (crt, key) = (dir.join(format!("{name}.crt")), dir.join(format!("{name}.key")));
        let out = std::process::Command::new("openssl")
            .args([
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
            ])
            .args(["-days", "2", "-subj", &format!("/CN={cn}"), "-keyout"])
            .arg(&key)
            .arg("-out")
            .arg(&crt)
            .output()
            .expect("the openssl command (Debian's openssl package) makes the test certificates");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        (crt, key)
    }

    /// Puts a copy of `src` at `dst` by a rename, as deployment tools replace files.
    fn swap_in(src: &Path, dst: &Path) {
        let staged = dst.with_extension("staged");
        std::fs::copy(src, &staged).unwrap();
        std::fs::rename(&staged, dst).unwrap();
    }

    fn served(s: &ServedCert) -> Vec<u8> {
        s.current.read().unwrap().cert[0].as_ref().to_vec()
    }

    #[test]
    fn renewed_files_are_served_and_broken_ones_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let (a_crt, a_key) = make_pair(dir.path(), "a", "first");
        // Names of different lengths, so that the certificates' files differ in size: a file
        // rewritten in place within one clock tick keeps its modification time.
        let (b_crt, b_key) = make_pair(dir.path(), "b", "a-much-longer-second-name.example");
        let (crt, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
        std::fs::copy(&a_crt, &crt).unwrap();
        std::fs::copy(&a_key, &key).unwrap();
        let s = ServedCert::load(&crt, &key).unwrap();
        let first = served(&s);
        assert_eq!(s.reload(false).unwrap(), None, "nothing changed");

        // The certificate renewed before its key: refused, the first pair still served; once
        // the key follows, the poll takes the pair.
        std::fs::copy(&b_crt, &crt).unwrap();
        assert!(s.reload(false).is_err(), "a certificate with another's key was taken");
        assert_eq!(served(&s), first);
        assert_eq!(
            s.reload(false).unwrap(),
            None,
            "an unchanged refused pair is not read again"
        );
        swap_in(&b_key, &key);
        let fp = s.reload(false).unwrap().expect("the renewed pair is served");
        assert_eq!(fp.len(), 32 * 3 - 1);
        let second = served(&s);
        assert_ne!(second, first);

        // A half-written file: refused, the second pair still served.
        std::fs::write(&crt, "-----BEGIN CERTIFICATE-----\nMIIB").unwrap();
        assert!(s.reload(true).is_err());
        assert_eq!(served(&s), second);

        // Replaced by a rename (a new inode), as deployment tools swap files: taken.
        swap_in(&a_crt, &crt);
        swap_in(&a_key, &key);
        assert!(s.reload(false).unwrap().is_some());
        assert_eq!(served(&s), first);
        // SIGHUP with nothing changed: read again, reported unchanged.
        assert_eq!(s.reload(true).unwrap(), None);
    }
}
