//! First-start set-up: the `default` domain and the bootstrap superadmin with its keypair.

use anyhow::Context;
use penstock_metadata::{Domain, Keypair, Metadata, Role, User};
use rand::distributions::{Alphanumeric, DistString};
use rand::Rng;
use uuid::Uuid;

use crate::secrets::MasterKey;

/// Domain of the bootstrap superadmin, created on first start.
pub const DEFAULT_DOMAIN: &str = "default";

/// Id of the bootstrap superadmin when the first start creates it.
pub const BOOTSTRAP_ADMIN: Uuid = Uuid::from_u128(0x70656e73_746f_636b_6164_6d696e000001);

/// What happened to the bootstrap keypair, for the start-up banner.
pub enum Bootstrap {
    /// A random keypair was generated; its secret is shown once.
    Generated { access_key: String, secret_key: String },
    /// The keypair from `PENSTOCK_ACCESS_KEY`/`PENSTOCK_SECRET_KEY` was installed or updated.
    FromEnv { access_key: String },
    /// Keypairs already exist and no environment override was given.
    Existing,
}

/// Ensures the default domain and a superadmin keypair exist, honouring `PENSTOCK_ACCESS_KEY` and
/// `PENSTOCK_SECRET_KEY`.
pub async fn ensure_admin(store: &dyn Metadata, master: &MasterKey) -> anyhow::Result<Bootstrap> {
    let now_ms = crate::s3::now_ms();
    // Gateways starting on one shared engine at once: the first creates it, the rest find it.
    store
        .create_domain(&Domain {
            name: DEFAULT_DOMAIN.to_owned(),
            created_ms: now_ms,
        })
        .await?;
    let env_ak = std::env::var("PENSTOCK_ACCESS_KEY").ok().filter(|s| !s.is_empty());
    let env_sk = std::env::var("PENSTOCK_SECRET_KEY").ok().filter(|s| !s.is_empty());
    let (access_key, secret_key, generated) = match (env_ak, env_sk) {
        (Some(ak), Some(sk)) => (ak, sk, false),
        (Some(_), None) | (None, Some(_)) => {
            anyhow::bail!("PENSTOCK_ACCESS_KEY and PENSTOCK_SECRET_KEY must be set together")
        }
        (None, None) if store.keypairs().await?.is_empty() => (new_access_key(), new_secret_key(), true),
        (None, None) => return Ok(Bootstrap::Existing),
    };
    let existing = store.keypair(&access_key).await?;
    let user_id = match &existing {
        Some(kp) if store.user(kp.user_id).await?.is_some() => kp.user_id,
        _ => admin_user(store, now_ms).await?,
    };
    // Promoted where stored, so a membership changed meanwhile stays.
    let promote = Box::new(|u: &mut User| std::mem::replace(&mut u.role, Role::Superadmin) != Role::Superadmin);
    store
        .update_user(user_id, promote)
        .await?
        .context("the admin user vanished")?;
    store
        .put_keypair(&Keypair {
            sealed_secret: master.seal(&access_key, &secret_key),
            access_key: access_key.clone(),
            user_id,
            enabled: true,
            // Restarting with the same keys (and maybe a new secret) does not make the key new.
            created_ms: existing.map_or(now_ms, |kp| kp.created_ms),
        })
        .await?;
    Ok(if generated {
        Bootstrap::Generated { access_key, secret_key }
    } else {
        Bootstrap::FromEnv { access_key }
    })
}

/// Refuses to serve with a master key that did not seal the stored secrets (a gateway started
/// with another key than its peers on a shared engine, or a lost key file): every signature
/// would fail with a misleading error. Tries a few keypairs; one that opens is enough.
/// Each is a local decryption, no round trip.
pub async fn verify_master(store: &dyn Metadata, master: &MasterKey) -> anyhow::Result<()> {
    let keypairs = store.keypairs().await?;
    // The bootstrap keypair named in the environment is sealed again at start-up anyway.
    let env_ak = std::env::var("PENSTOCK_ACCESS_KEY").ok();
    let tried: Vec<_> = keypairs
        .iter()
        .filter(|kp| env_ak.as_deref() != Some(kp.access_key.as_str()))
        .take(16)
        .collect();
    if tried.is_empty()
        || tried
            .iter()
            .any(|kp| master.open(&kp.access_key, &kp.sealed_secret).is_ok())
    {
        return Ok(());
    }
    anyhow::bail!(
        "the master key cannot open the stored secret keys: it is not the key that sealed them \
         (every gateway sharing a metadata engine needs the same master_key / PENSTOCK_MASTER_KEY)"
    )
}

/// The existing superadmin user, or a new one named `admin` in the default domain.
async fn admin_user(store: &dyn Metadata, now_ms: i64) -> anyhow::Result<Uuid> {
    if let Some(u) = store.users().await?.into_iter().find(|u| u.role == Role::Superadmin) {
        return Ok(u.id);
    }
    // A fixed id: gateways bootstrapping one shared engine at once write the same user instead
    // of one superadmin each.
    let u = User {
        id: BOOTSTRAP_ADMIN,
        domain: DEFAULT_DOMAIN.to_owned(),
        name: "admin".to_owned(),
        role: Role::Superadmin,
        projects: Default::default(),
        created_ms: now_ms,
    };
    store.put_user(&u).await?;
    Ok(u.id)
}

/// A new access key: `PK` and 18 upper-case letters or digits.
pub fn new_access_key() -> String {
    format!(
        "PK{}",
        Alphanumeric.sample_string(&mut rand::thread_rng(), 18).to_uppercase()
    )
}

/// A new 40-character secret key.
pub fn new_secret_key() -> String {
    const CHARSET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut rng = rand::thread_rng();
    (0..40)
        .map(|_| CHARSET[rng.gen_range(0..CHARSET.len())] as char)
        .collect()
}
