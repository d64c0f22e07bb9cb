//! The GPU-direct data path of Penstock: the `x-amz-rdma-token` protocol.
//!
//! A client registers memory with its RDMA NIC and describes a window of it in a token sent with
//! an ordinary signed S3 request; the gateway then moves the payload itself (RDMA WRITE for GET,
//! READ for PUT) and answers with an empty body. This crate holds the protocol's pieces that do
//! not depend on the gateway: [`token`] parses and formats the descriptors.

pub mod token;

pub use token::{DcToken, TokenError, Window};
