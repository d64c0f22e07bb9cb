//! GPU memory as a token target (cargo feature `cuda`).
//!
//! With the software transport the gateway cannot reach device memory, so the payload lands in a
//! pinned host buffer registered with the [`SoftwareTarget`] and is copied to the device with one
//! asynchronous copy. cudarc loads libcuda at run time, so this builds without a CUDA toolkit;
//! on a host without a driver or GPU, [`DeviceBuffer::new`] returns an error.

use std::sync::Arc;

use anyhow::{bail, Context};
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, PinnedHostSlice};

use crate::rdma::{Region, SoftwareTarget};
use crate::Client;

/// Device memory filled from objects through the token protocol.
pub struct DeviceBuffer {
    // Dropped first: dropping the registration waits for transfers into the pinned buffer.
    region: Region,
    pinned: PinnedHostSlice<u8>,
    device: CudaSlice<u8>,
    stream: Arc<CudaStream>,
}

/// Whether a CUDA driver can be loaded on this host.
pub fn cuda_available() -> bool {
    // SAFETY: only probes for the shared library.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

impl DeviceBuffer {
    /// `len` bytes on GPU `ordinal`, with a pinned staging buffer of the same size registered
    /// with `target`.
    pub fn new(target: &SoftwareTarget, ordinal: usize, len: usize) -> anyhow::Result<Self> {
        if !cuda_available() {
            bail!("no CUDA driver (libcuda) on this host: GPU memory targets need an NVIDIA GPU");
        }
        let ctx = CudaContext::new(ordinal).with_context(|| format!("opening CUDA device {ordinal}"))?;
        let stream = ctx.default_stream();
        // SAFETY: the buffer is written by transfers before it is read.
        let mut pinned = unsafe { ctx.alloc_pinned_with_flags::<u8>(len, 0) }.context("allocating pinned memory")?;
        let ptr = pinned.as_mut_ptr().context("pinned buffer")?;
        // SAFETY: the pinned buffer outlives `region` (field order) and no Rust reference into it
        // is held while transfers run.
        let region = unsafe { target.register_external(ptr, len) };
        let device = stream.alloc_zeros::<u8>(len).context("allocating device memory")?;
        Ok(Self {
            region,
            pinned,
            device,
            stream,
        })
    }

    /// Size of the buffer.
    pub fn len(&self) -> usize {
        self.region.len()
    }

    /// Whether the buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.region.is_empty()
    }

    /// Fetches an object (or an HTTP `range` of it) into device memory from offset 0; returns
    /// the bytes moved.
    pub async fn get_object(
        &mut self,
        client: &Client,
        bucket: &str,
        key: &str,
        range: Option<&str>,
    ) -> anyhow::Result<u64> {
        let token = self.region.token(0, self.len() as u64).context("empty buffer")?;
        let r = client.get_into(bucket, key, &token, range).await?;
        self.stage_to_device(r.bytes as usize)?;
        Ok(r.bytes)
    }

    /// Stores `[0, n)` of device memory as an object: one asynchronous copy into the pinned
    /// buffer, then a PutObject whose token names it; returns the ETag.
    pub async fn put_object(&mut self, client: &Client, bucket: &str, key: &str, n: usize) -> anyhow::Result<String> {
        if n > self.len() {
            bail!("{n} bytes asked of a {}-byte buffer", self.len());
        }
        let host = &mut self.pinned.as_mut_slice().context("pinned buffer")?[..n];
        self.stream
            .memcpy_dtoh(&self.device.slice(0..n), host)
            .context("copy from device")?;
        self.stream.synchronize().context("synchronize")?;
        let token = self.region.token(0, n as u64).context("empty object")?;
        let r = client.put_from(bucket, key, &token, &[]).await?;
        Ok(r.etag.unwrap_or_default())
    }

    /// Copies the pinned buffer's `[0, n)` to device memory: the last step of
    /// [`get_object`](Self::get_object) alone, so callers can measure the host-to-device ceiling.
    pub fn stage_to_device(&mut self, n: usize) -> anyhow::Result<()> {
        let host = &self.pinned.as_slice().context("pinned buffer")?[..n];
        let mut dst = self.device.slice_mut(0..n);
        self.stream.memcpy_htod(host, &mut dst).context("copy to device")?;
        self.stream.synchronize().context("synchronize")
    }

    /// Copies ordinary (pageable) host memory to device memory from offset 0, as a program
    /// that fetched an object over plain HTTP would.
    pub fn copy_to_device(&mut self, host: &[u8]) -> anyhow::Result<()> {
        if host.len() > self.len() {
            bail!("{} bytes into a {}-byte buffer", host.len(), self.len());
        }
        let mut dst = self.device.slice_mut(0..host.len());
        self.stream.memcpy_htod(host, &mut dst).context("copy to device")?;
        self.stream.synchronize().context("synchronize")
    }

    /// Copies `[0, n)` of device memory back to the host (for verification).
    pub fn device_bytes(&self, n: usize) -> anyhow::Result<Vec<u8>> {
        self.stream
            .clone_dtoh(&self.device.slice(0..n))
            .context("copy from device")
    }

    /// The device memory.
    pub fn device(&self) -> &CudaSlice<u8> {
        &self.device
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn without_a_driver_the_buffer_is_an_error_not_a_panic() {
        let target = SoftwareTarget::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let r = DeviceBuffer::new(&target, 0, 1 << 20);
        if !cuda_available() {
            let e = r.err().expect("no driver, no buffer").to_string();
            assert!(e.contains("no CUDA driver"), "{e}");
        }
    }

    /// On a GPU host (the device machine; see docs/rdma.md): bytes go host → device → host
    /// unchanged through each copy path, and the device memory starts zeroed.
    #[tokio::test]
    async fn with_a_driver_bytes_round_trip_through_device_memory() {
        if !cuda_available() {
            return;
        }
        let target = SoftwareTarget::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let len = 3 << 20;
        let mut buf = DeviceBuffer::new(&target, 0, len).expect("a GPU with a driver");
        assert!(buf.device_bytes(len).unwrap().iter().all(|&b| b == 0));
        let data: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        buf.copy_to_device(&data).unwrap();
        assert_eq!(buf.device_bytes(len).unwrap(), data);
        // The registration is the pinned buffer: bytes written through it reach the device.
        buf.region.write(5, b"pinned");
        buf.stage_to_device(11).unwrap();
        assert_eq!(&buf.device_bytes(11).unwrap()[5..], b"pinned");
        assert!(buf.copy_to_device(&vec![0; len + 1]).is_err());
    }
}
