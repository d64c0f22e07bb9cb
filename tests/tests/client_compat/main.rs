//! Behaviours that stock S3 clients depend on, each found by using the gateway as a new user
//! would (issue #23): interim responses, resent parts, part checksums, tag counts, content
//! encodings, ignored Range headers, request ids in errors, directory markers with a body; and
//! two limits S3 enforces (#16): key length, presigned URL lifetime (the latter in the boto3 suite);
//! a `+` left unencoded in the path, read as the client signed it; a carriage return in a key,
//! written in XML documents so that parsers read it back; S3 functionality the gateway does
//! not have (appends, newer checksum algorithms), refused rather than misread; an `Expires` that
//! is no date, kept as sent; the owner before the buckets in ListBuckets; dates to come in
//! `If-Modified-Since`; `Authorization` headers S3 cannot read.
//! Some need bytes on the wire that the SDK would not send, so they speak HTTP/1.1 over a socket
//! with presigned URLs. One module per part of a request's life: `wire` (framing, signatures,
//! how answers are spelled), `reads`, `writes`.

mod reads;
mod wire;
mod writes;

use std::time::Duration;

use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::presigning::PresigningConfig;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{ChecksumAlgorithm, ChecksumMode, ChecksumType, CompletedMultipartUpload, CompletedPart};
use base64::Engine;
use penstock_tests::raw::Conn;
use penstock_tests::{error_doc, get, md5_hex, pattern, put, xml_element, Gateway, Upload};

fn presigning() -> PresigningConfig {
    PresigningConfig::expires_in(Duration::from_secs(600)).unwrap()
}
