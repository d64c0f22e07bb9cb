//! Secret keys at rest: sealed with XChaCha20-Poly1305 under the gateway's master key.
//!
//! SigV4 needs each secret in clear to verify signatures, so secrets cannot be hashed; instead
//! the metadata store holds them sealed, with the access key as associated data so a sealed
//! secret cannot be moved to another keypair. The master key comes from `master_key` in the
//! config, `PENSTOCK_MASTER_KEY`, or (development default) a key file created in the data dir.

use std::path::Path;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};

/// The key that seals secret keys.
pub struct MasterKey {
    cipher: XChaCha20Poly1305,
    /// Secrets opened recently: sealed form → (access key it was opened for, secret). Every
    /// signed request needs its secret, and opening it (a key setup and an AEAD decryption) cost
    /// ~4 % of a small GET's CPU. A sealed form names one secret for good (a new secret is sealed
    /// with a new nonce), so entries never go stale; the secrets are in this process's memory
    /// either way. Keyed by the sealed form alone so a hit borrows the caller's `&str` instead
    /// of building an owned key per request; the access key is compared, keeping the binding.
    opened: std::sync::Mutex<std::collections::HashMap<String, (String, String)>>,
}

/// Opened secrets kept at most; when full, the map starts over.
const OPENED_MAX: usize = 4096;

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MasterKey(..)")
    }
}

impl MasterKey {
    fn with_key(key: [u8; 32]) -> Self {
        Self {
            cipher: XChaCha20Poly1305::new(&key.into()),
            opened: Default::default(),
        }
    }

    /// Parses a base64-encoded 32-byte key.
    pub fn from_base64(s: &str) -> anyhow::Result<Self> {
        let raw = B64
            .decode(s.trim())
            .map_err(|_| anyhow::anyhow!("master key: not valid base64"))?;
        let key: [u8; 32] = raw
            .try_into()
            .map_err(|_| anyhow::anyhow!("master key: must decode to exactly 32 bytes"))?;
        Ok(Self::with_key(key))
    }

    /// Loads the key from config, environment, or `<data_dir>/master.key` (created on first use).
    pub fn load(configured: Option<&str>, data_dir: &Path) -> anyhow::Result<Self> {
        if let Some(k) = configured {
            return Self::from_base64(k);
        }
        if let Ok(k) = std::env::var("PENSTOCK_MASTER_KEY") {
            return Self::from_base64(&k);
        }
        let path = data_dir.join("master.key");
        if let Ok(k) = std::fs::read_to_string(&path) {
            return Self::from_base64(&k);
        }
        let key: [u8; 32] = rand::random();
        write_private(&path, &B64.encode(key))?;
        tracing::warn!(path = %path.display(), "generated a master key for secrets at rest; set master_key or PENSTOCK_MASTER_KEY in production");
        Ok(Self::with_key(key))
    }

    /// Seals `secret` for the keypair `access_key`.
    pub fn seal(&self, access_key: &str, secret: &str) -> String {
        let nonce: [u8; 24] = rand::random();
        let ct = self
            .cipher
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: secret.as_bytes(),
                    aad: access_key.as_bytes(),
                },
            )
            .expect("encryption of a short secret cannot fail");
        let mut out = nonce.to_vec();
        out.extend(ct);
        B64.encode(out)
    }

    /// Opens a sealed secret; fails if it was sealed under another key or for another keypair.
    pub fn open(&self, access_key: &str, sealed: &str) -> anyhow::Result<String> {
        if let Some((ak, secret)) = self.opened.lock().unwrap_or_else(|e| e.into_inner()).get(sealed) {
            if ak == access_key {
                return Ok(secret.clone());
            }
        }
        let secret = self.open_sealed(access_key, sealed)?;
        let mut opened = self.opened.lock().unwrap_or_else(|e| e.into_inner());
        if opened.len() >= OPENED_MAX {
            opened.clear();
        }
        opened.insert(sealed.to_owned(), (access_key.to_owned(), secret.clone()));
        Ok(secret)
    }

    fn open_sealed(&self, access_key: &str, sealed: &str) -> anyhow::Result<String> {
        let raw = B64
            .decode(sealed)
            .map_err(|_| anyhow::anyhow!("sealed secret is not base64"))?;
        if raw.len() < 24 {
            anyhow::bail!("sealed secret is truncated");
        }
        let (nonce, ct) = raw.split_at(24);
        let pt = self
            .cipher
            .decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: ct,
                    aad: access_key.as_bytes(),
                },
            )
            .map_err(|_| anyhow::anyhow!("sealed secret does not open under this master key"))?;
        Ok(String::from_utf8(pt)?)
    }
}

/// Writes a file readable by its owner only, once: an existing file is an error. It is on disk,
/// whole, when this returns (a master key or token lost or cut short in a power cut would lock
/// every keypair out).
pub fn write_private(path: &Path, content: &str) -> anyhow::Result<()> {
    penstock_backends::posix::write_file_durably(path, content.as_bytes(), 0o600, false)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_open_round_trip_and_binding() {
        let k = MasterKey::from_base64(&B64.encode([7u8; 32])).unwrap();
        let sealed = k.seal("AK1", "s3cr3t");
        assert!(!sealed.contains("s3cr3t"));
        assert_eq!(k.open("AK1", &sealed).unwrap(), "s3cr3t");
        assert!(k.open("AK2", &sealed).is_err(), "bound to its access key");
        let other = MasterKey::from_base64(&B64.encode([8u8; 32])).unwrap();
        assert!(other.open("AK1", &sealed).is_err());
        assert!(MasterKey::from_base64("c2hvcnQ=").is_err());
    }
}
