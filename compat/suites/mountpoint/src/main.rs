//! Mounts a bucket of a running gateway as `mount-s3` would: Mountpoint's file system
//! (mountpoint-s3-fs) over its CRT client, with the options a compat scenario needs.
//!
//! Usage: `mountpoint-compat ENDPOINT BUCKET DIR [--allow-delete] [--allow-overwrite]
//! [--read-only] [--cache DIR]`. Keys come from
//! `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` (the CRT's default credential chain, as for
//! `mount-s3`). Runs in the foreground until the directory is unmounted; `MP_LOG` sets the log
//! filter (default `warn,awscrt=off`).
//!
//! Everything not set here is `mount-s3`'s default: 8 MiB parts, CRC32C checksums on uploads,
//! metadata cached for a second, standard S3 semantics (no rename, no appends), virtual-hosted
//! addressing where the endpoint allows it and path style otherwise.

use anyhow::{anyhow, Context, Result};
use mountpoint_s3_client::config::AddressingStyle;
use mountpoint_s3_client::user_agent::UserAgent;
use mountpoint_s3_fs::data_cache::{CacheLimit, DataCacheConfig, DiskDataCacheConfig};
use mountpoint_s3_fs::fs::{CacheConfig, TimeToLive};
use mountpoint_s3_fs::fuse::config::{FuseOptions, FuseSessionConfig, MountPoint};
use mountpoint_s3_fs::logging::{init_logging, LoggingConfig};
use mountpoint_s3_fs::memory::{CandidateSize, PagedPool};
use mountpoint_s3_fs::s3::config::{ClientConfig, MemoryLimitSetting, PartConfig, Region, TargetThroughputSetting};
use mountpoint_s3_fs::s3::{Bucket, Prefix, S3Path, S3Personality};
use mountpoint_s3_fs::{MountpointConfig, Runtime, S3FilesystemConfig, Superblock, SuperblockConfig};

/// mount-s3's default part size, for reads and writes alike.
const PART_SIZE: usize = 8 * 1024 * 1024;

/// Memory Mountpoint may use for its part buffers: enough for a few 8 MiB parts in flight on
/// a CI machine.
const MEMORY_LIMIT: usize = 512 * 1024 * 1024;

/// A disk cache's size limit: far below what CI machines have free, far above what the
/// scenario reads, so that the cache holds everything and never evicts.
const CACHE_LIMIT: usize = 1024 * 1024 * 1024;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [endpoint, bucket, dir, options @ ..] = args.as_slice() else {
        return Err(anyhow!("usage: mountpoint-compat ENDPOINT BUCKET DIR [options]"));
    };
    let mut fs_config = S3FilesystemConfig {
        cache_config: CacheConfig::new(TimeToLive::Minimal),
        s3_personality: S3Personality::Standard,
        ..Default::default()
    };
    let mut cache_dir = None;
    let mut rest = options.iter();
    while let Some(option) = rest.next() {
        match option.as_str() {
            "--allow-delete" => fs_config.allow_delete = true,
            "--allow-overwrite" => fs_config.allow_overwrite = true,
            "--read-only" => fs_config.read_only = true,
            "--cache" => cache_dir = Some(rest.next().context("--cache DIR")?.clone()),
            other => return Err(anyhow!("unknown option {other}")),
        }
    }

    // The handle flushes the log when dropped: kept until the session ends.
    let _logging = init_logging(LoggingConfig {
        log_file: None,
        log_to_stdout: true,
        default_filter: std::env::var("MP_LOG").unwrap_or_else(|_| "warn,awscrt=off".into()),
    })?;

    let client_config = ClientConfig {
        region: Region::new_user_specified("us-east-1".into()),
        endpoint_url: Some(endpoint.clone()),
        addressing_style: AddressingStyle::Automatic,
        dual_stack: false,
        transfer_acceleration: false,
        auth_config: Default::default(),
        requester_pays: false,
        expected_bucket_owner: None,
        throughput_target: TargetThroughputSetting::User { gbps: 10.0 },
        bind: None,
        part_config: PartConfig::with_part_size(PART_SIZE).validate(MemoryLimitSetting::User(MEMORY_LIMIT))?,
        user_agent: UserAgent::new(Some("penstock-compat".into())),
        tls_config: None,
    };
    let pool = PagedPool::config()
        .with_candidate_sizes([CandidateSize::new(client_config.part_config.read_size_bytes)])
        .with_memory_limit(MEMORY_LIMIT)
        .build();
    let s3_path = S3Path::new(
        Bucket::new(bucket.as_str()).map_err(|e| anyhow!("bucket {bucket}: {e}"))?,
        Prefix::new("").map_err(|e| anyhow!("{e}"))?,
    );
    // As mount-s3 does, the client checks the bucket (a ListObjectsV2) before mounting.
    let client = client_config.create_client(pool.clone(), Some(&s3_path))?;
    let runtime = Runtime::new(client.event_loop_group());

    let data_cache = DataCacheConfig {
        disk_cache_config: cache_dir.map(|d| DiskDataCacheConfig {
            cache_directory: d.into(),
            block_size: 1024 * 1024,
            limit: CacheLimit::TotalSize { max_size: CACHE_LIMIT },
        }),
        express_cache_config: None,
    };
    let fuse = FuseSessionConfig::new(
        MountPoint::new(dir)?,
        FuseOptions {
            read_only: fs_config.read_only,
            auto_unmount: false,
            allow_root: false,
            allow_other: false,
            clone_fd: false,
        },
        16,
    )?;
    let superblock = Superblock::new(
        client.clone(),
        s3_path,
        SuperblockConfig {
            cache_config: fs_config.cache_config.clone(),
            s3_personality: fs_config.s3_personality,
        },
    );
    let session =
        MountpointConfig::new(fuse, fs_config, data_cache)?.create_fuse_session(superblock, client, runtime, pool)?;
    eprintln!("mounted {bucket} at {dir}");
    session.join()
}
