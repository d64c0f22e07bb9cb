//! Fills GPU memory (or host memory, where there is no GPU) from Penstock objects through the
//! `x-amz-rdma-token` protocol over the software transport, verifies the bytes and reports the
//! throughput of each path beside its baseline in the same run. See README.md.

use std::time::Instant;

use anyhow::{bail, Context};
use clap::Parser;
use penstock_client::rdma::SoftwareTarget;
use penstock_client::Client;
use rand::{Rng, SeedableRng};

#[derive(Parser)]
struct Args {
    #[arg(long, default_value = "http://127.0.0.1:9000")]
    endpoint: String,
    #[arg(long, env = "AWS_ACCESS_KEY_ID")]
    access_key: String,
    #[arg(long, env = "AWS_SECRET_ACCESS_KEY", hide_env_values = true)]
    secret_key: String,
    #[arg(long, default_value = "gpu-fill")]
    bucket: String,
    /// Object sizes in MiB, comma-separated; each is measured in turn.
    #[arg(long, value_delimiter = ',', default_value = "64")]
    mib: Vec<usize>,
    /// Transfers per measurement (a rate is their mean).
    #[arg(long, default_value_t = 5)]
    rounds: u32,
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    device: usize,
}

fn mib_s(bytes: usize, rounds: u32, start: Instant) -> f64 {
    bytes as f64 * rounds as f64 / start.elapsed().as_secs_f64() / (1 << 20) as f64
}

fn object(len: usize, seed: u64) -> Vec<u8> {
    let mut data = vec![0u8; len];
    rand::rngs::StdRng::seed_from_u64(seed).fill(&mut data[..]);
    data
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    let client = Client::new(&a.endpoint, &a.access_key, &a.secret_key);
    client.create_bucket(&a.bucket).await?;
    // The client side of the software transport: memory registered here is what tokens name.
    let target = SoftwareTarget::bind("127.0.0.1:0".parse()?).await?;
    for &mib in &a.mib {
        let len = mib << 20;
        let data = object(len, mib as u64);
        let key = format!("weights-{mib}m.bin");
        client.put_object(&a.bucket, &key, data.clone().into()).await?;
        println!("== {mib} MiB object, {} rounds", a.rounds);
        let host = fill_host(&a, &client, &target, &key, &data).await?;
        println!("token GET into host memory:   {host:9.1} MiB/s, verified");
        #[cfg(feature = "cuda")]
        if penstock_client::gpu::cuda_available() {
            device::run(&a, &client, &target, &key, &data, host).await?;
            continue;
        }
        println!("device memory: no GPU here (built without the cuda feature or no CUDA driver); host memory only");
    }
    Ok(())
}

async fn fill_host(a: &Args, client: &Client, target: &SoftwareTarget, key: &str, data: &[u8]) -> anyhow::Result<f64> {
    let region = target.register(data.len());
    let token = region.token(0, data.len() as u64).context("window")?;
    let start = Instant::now();
    for _ in 0..a.rounds {
        let r = client.get_into(&a.bucket, key, &token, None).await?;
        if r.bytes != data.len() as u64 {
            bail!("moved {} bytes, expected {}", r.bytes, data.len());
        }
    }
    let rate = mib_s(data.len(), a.rounds, start);
    if region.to_vec(0, data.len()) != data {
        bail!("host memory does not hold the object's bytes");
    }
    Ok(rate)
}

#[cfg(feature = "cuda")]
mod device {
    use std::time::Instant;

    use anyhow::bail;
    use penstock_client::gpu::DeviceBuffer;
    use penstock_client::rdma::SoftwareTarget;
    use penstock_client::Client;

    use super::{mib_s, object, Args};

    /// A range of about a quarter of the object starting at a third: neither aligned nor at an end.
    fn range_of(len: usize) -> (usize, usize) {
        let first = len / 3 + 1;
        (first, first + len / 4 - 1)
    }

    /// Every device path for one object: whole and ranged token GET into device memory, the
    /// plain-HTTP-then-copy baseline, the pinned host-to-device ceiling, and token PUT out of
    /// device memory; each result verified byte for byte.
    pub async fn run(
        a: &Args,
        client: &Client,
        target: &SoftwareTarget,
        key: &str,
        data: &[u8],
        host: f64,
    ) -> anyhow::Result<()> {
        let len = data.len();
        let mut buf = DeviceBuffer::new(target, a.device, len)?;

        let start = Instant::now();
        for _ in 0..a.rounds {
            let n = buf.get_object(client, &a.bucket, key, None).await?;
            if n != len as u64 {
                bail!("moved {n} bytes, expected {len}");
            }
        }
        let token_get = mib_s(len, a.rounds, start);
        if buf.device_bytes(len)? != data {
            bail!("device memory does not hold the object's bytes");
        }

        let (first, last) = range_of(len);
        let n = buf
            .get_object(client, &a.bucket, key, Some(&format!("bytes={first}-{last}")))
            .await?;
        if n as usize != last - first + 1 || buf.device_bytes(n as usize)? != data[first..=last] {
            bail!("ranged GET bytes={first}-{last}: device memory does not hold the range");
        }

        // Baseline: what a program without the token protocol does.
        let start = Instant::now();
        for _ in 0..a.rounds {
            let body = client.get_object(&a.bucket, key).await?;
            buf.copy_to_device(&body)?;
        }
        let http_copy = mib_s(len, a.rounds, start);
        if buf.device_bytes(len)? != data {
            bail!("plain GET + copy: device memory does not hold the object's bytes");
        }

        // The ceiling of this path: pinned host memory to the device.
        let start = Instant::now();
        for _ in 0..a.rounds {
            buf.stage_to_device(len)?;
        }
        let h2d = mib_s(len, a.rounds, start);

        // PUT out of device memory, of bytes that exist only there, then read back over HTTP.
        let other = object(len, u64::MAX - len as u64);
        buf.copy_to_device(&other)?;
        let put_key = format!("{key}.from-device");
        let start = Instant::now();
        for _ in 0..a.rounds {
            buf.put_object(client, &a.bucket, &put_key, len).await?;
        }
        let token_put = mib_s(len, a.rounds, start);
        if client.get_object(&a.bucket, &put_key).await? != other {
            bail!("token PUT from device memory: the stored object differs");
        }
        // Baseline: copy to the host, then a plain PUT with the bytes in the body.
        let start = Instant::now();
        for _ in 0..a.rounds {
            let body = buf.device_bytes(len)?;
            client.put_object(&a.bucket, &put_key, body.into()).await?;
        }
        let http_put = mib_s(len, a.rounds, start);

        println!(
            "token GET into device memory: {token_get:9.1} MiB/s, verified (÷ host memory {:.2})",
            token_get / host
        );
        println!("ranged token GET into device: bytes={first}-{last} verified");
        println!(
            "plain GET + copy to device:   {http_copy:9.1} MiB/s, verified (token GET ÷ this {:.2})",
            token_get / http_copy
        );
        println!(
            "pinned host → device ceiling: {h2d:9.1} MiB/s (token GET ÷ this {:.2})",
            token_get / h2d
        );
        println!("token PUT from device memory: {token_put:9.1} MiB/s, read back and verified");
        println!(
            "copy to host + plain PUT:     {http_put:9.1} MiB/s (token PUT ÷ this {:.2})",
            token_put / http_put
        );
        Ok(())
    }
}
