//! Fills GPU memory (or host memory, where there is no GPU) from a Penstock object through the
//! `x-amz-rdma-token` protocol over the software transport, verifies the bytes and reports the
//! throughput of each memory target. See README.md.

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
    #[arg(long, default_value = "weights.bin")]
    key: String,
    /// Object size in MiB.
    #[arg(long, default_value_t = 64)]
    mib: usize,
    /// Fills per target (throughput is their mean).
    #[arg(long, default_value_t = 5)]
    rounds: u32,
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    device: usize,
}

fn mib_s(bytes: u64, secs: f64) -> f64 {
    bytes as f64 / secs / (1 << 20) as f64
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    let client = Client::new(&a.endpoint, &a.access_key, &a.secret_key);
    let len = a.mib << 20;
    let mut data = vec![0u8; len];
    rand::rngs::StdRng::seed_from_u64(7).fill(&mut data[..]);
    client.create_bucket(&a.bucket).await?;
    client.put_object(&a.bucket, &a.key, data.clone().into()).await?;

    // The client side of the software transport: memory registered here is what tokens name.
    let target = SoftwareTarget::bind("127.0.0.1:0".parse()?).await?;

    // Host memory.
    let region = target.register(len);
    let token = region.token(0, len as u64).context("window")?;
    let start = Instant::now();
    for _ in 0..a.rounds {
        let r = client.get_into(&a.bucket, &a.key, &token, None).await?;
        if r.bytes != len as u64 {
            bail!("moved {} bytes, expected {len}", r.bytes);
        }
    }
    let host = mib_s(len as u64 * a.rounds as u64, start.elapsed().as_secs_f64());
    if region.to_vec(0, len) != data {
        bail!("host memory does not hold the object's bytes");
    }
    println!("host memory:   {host:8.1} MiB/s, {} MiB verified", a.mib);

    let device = fill_device(&a, &client, &target, &data).await?;
    match device {
        Some(d) => println!(
            "device memory: {d:8.1} MiB/s, verified on device (ratio device/host {:.2})",
            d / host
        ),
        None => {
            println!("device memory: no GPU here (built without the cuda feature or no CUDA driver); host memory only")
        }
    }
    Ok(())
}

#[cfg(feature = "cuda")]
async fn fill_device(a: &Args, client: &Client, target: &SoftwareTarget, data: &[u8]) -> anyhow::Result<Option<f64>> {
    if !penstock_client::gpu::cuda_available() {
        return Ok(None);
    }
    let mut buf = penstock_client::gpu::DeviceBuffer::new(target, a.device, data.len())?;
    let start = Instant::now();
    for _ in 0..a.rounds {
        let n = buf.get_object(client, &a.bucket, &a.key, None).await?;
        if n != data.len() as u64 {
            bail!("moved {n} bytes, expected {}", data.len());
        }
    }
    let secs = start.elapsed().as_secs_f64();
    if buf.device_bytes(data.len())? != data {
        bail!("device memory does not hold the object's bytes");
    }
    Ok(Some(mib_s(data.len() as u64 * a.rounds as u64, secs)))
}

#[cfg(not(feature = "cuda"))]
async fn fill_device(_: &Args, _: &Client, _: &SoftwareTarget, _: &[u8]) -> anyhow::Result<Option<f64>> {
    Ok(None)
}
