//! The S3 surface through the Rust aws-sdk-s3, against the real binary: one module per operation
//! family, as in `gateway/src/s3/`.

mod acl;
mod bucket;
mod checksum;
mod copy;
mod delete;
mod encryption;
mod lifecycle;
mod list;
mod multipart;
mod object;
mod object_lock;
mod service;
mod sse_c;
mod tagging;
mod versioning;
