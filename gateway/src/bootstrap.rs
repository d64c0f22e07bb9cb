//! First-start set-up: the bootstrap superadmin keypair.

use penstock_metadata::{Keypair, Store};
use rand::distributions::{Alphanumeric, DistString};
use rand::Rng;
use uuid::Uuid;

/// What happened to the bootstrap keypair, for the start-up banner.
pub enum Bootstrap {
    /// A random keypair was generated; its secret is shown once.
    Generated(Keypair),
    /// The keypair from `PENSTOCK_ACCESS_KEY`/`PENSTOCK_SECRET_KEY` was installed or updated.
    FromEnv(Keypair),
    /// Keypairs already exist and no environment override was given.
    Existing,
}

/// Ensures a superadmin keypair exists, honouring `PENSTOCK_ACCESS_KEY` and `PENSTOCK_SECRET_KEY`.
pub fn ensure_admin(store: &Store) -> anyhow::Result<Bootstrap> {
    let env_ak = std::env::var("PENSTOCK_ACCESS_KEY").ok().filter(|s| !s.is_empty());
    let env_sk = std::env::var("PENSTOCK_SECRET_KEY").ok().filter(|s| !s.is_empty());
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    match (env_ak, env_sk) {
        (Some(ak), Some(sk)) => {
            let kp = match store.keypair(&ak)? {
                Some(mut kp) => {
                    kp.secret_key = sk;
                    kp.superadmin = true;
                    kp.enabled = true;
                    kp
                }
                None => Keypair {
                    access_key: ak,
                    secret_key: sk,
                    user_id: admin_user(store)?,
                    superadmin: true,
                    enabled: true,
                    created: now,
                },
            };
            store.put_keypair(&kp)?;
            Ok(Bootstrap::FromEnv(kp))
        }
        (Some(_), None) | (None, Some(_)) => {
            anyhow::bail!("PENSTOCK_ACCESS_KEY and PENSTOCK_SECRET_KEY must be set together")
        }
        (None, None) if store.keypairs()?.is_empty() => {
            let kp = Keypair {
                access_key: format!(
                    "PK{}",
                    Alphanumeric.sample_string(&mut rand::thread_rng(), 18).to_uppercase()
                ),
                secret_key: random_secret(),
                user_id: Uuid::new_v4(),
                superadmin: true,
                enabled: true,
                created: now,
            };
            store.put_keypair(&kp)?;
            Ok(Bootstrap::Generated(kp))
        }
        (None, None) => Ok(Bootstrap::Existing),
    }
}

/// The user of an existing superadmin keypair, so an env-supplied key joins the same tenant.
fn admin_user(store: &Store) -> anyhow::Result<Uuid> {
    Ok(store
        .keypairs()?
        .into_iter()
        .find(|k| k.superadmin)
        .map_or_else(Uuid::new_v4, |k| k.user_id))
}

fn random_secret() -> String {
    const CHARSET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut rng = rand::thread_rng();
    (0..40)
        .map(|_| CHARSET[rng.gen_range(0..CHARSET.len())] as char)
        .collect()
}
