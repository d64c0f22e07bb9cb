//! The Penstock gateway: configuration, the S3 service and the server around it.
//!
//! A request flows: [`server`] (hyper connection) → s3s (SigV4, XML, routing) → [`auth`] (who is
//! calling, may they touch this bucket) → the operation's module under [`s3`] (S3 semantics) →
//! `penstock-backends` for bytes and `penstock-metadata` for records.
//!
//! The gateway has no unsafe code: the MD5 kernel lives in `penstock-md5`, the RDMA transports
//! in `penstock-rdma`, system calls go through `rustix`.

#![forbid(unsafe_code)]

pub mod admin;
pub mod admin_cli;
pub mod auth;
pub mod bootstrap;
pub mod config;
pub mod conn_threads;
pub mod fuzzing;
pub mod header_case;
pub mod interim;
pub mod limits;
pub mod metadata_cli;
pub mod metrics;
pub mod observe;
pub mod s3;
pub mod secrets;
pub mod server;
pub mod signed_path;
pub mod sigv2;
mod sigv4;
pub mod telemetry;
pub mod tls;
