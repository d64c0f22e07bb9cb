//! Response header names spelled as S3 spells them on HTTP/1.1: `ETag`, `Last-Modified`,
//! `Content-Length`, ... and the `x-amz-*` names in lower case.
//!
//! HTTP says header names are case-insensitive, and hyper writes every name in lower case. Some
//! S3 clients find headers by searching the response text for S3's spelling: htslib (samtools,
//! bcftools) looks for `ETag: "` after each part of an upload and aborts the upload without it,
//! as do Fluent Bit's S3 output and the AWS SDK for Java 1.7-1.10 that older Hadoop distributions
//! ship. S3, MinIO and Ceph RGW send `ETag`, so such clients work there and failed here.
//!
//! hyper writes a response's names in the case a `HeaderCaseMap` in its extensions gives, a type
//! it does not export; it puts one in the extensions of every response its HTTP/1 client parses
//! with `preserve_header_case`. So once per process a hyper client reads, over an in-memory pipe,
//! a response that names the headers as S3 does, and the extensions it comes back with are the
//! template given to every HTTP/1.x response ([`spelling`]). Names the template lacks (user
//! metadata, `x-amz-*`) keep hyper's lower case, as S3 writes them too. HTTP/2 needs lower case
//! and never reads the template.

use std::sync::OnceLock;

use bytes::Bytes;
use http_body_util::Empty;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Header names in S3's spelling, for those it does not write in lower case. Names that can
/// appear more than once in an answer are listed once per value they may carry.
const S3_SPELLING: &[&str] = &[
    "Accept-Ranges",
    "Access-Control-Allow-Credentials",
    "Access-Control-Allow-Headers",
    "Access-Control-Allow-Methods",
    "Access-Control-Allow-Origin",
    "Access-Control-Expose-Headers",
    "Access-Control-Max-Age",
    "Cache-Control",
    "Connection",
    "Content-Disposition",
    "Content-Encoding",
    "Content-Language",
    "Content-Length",
    "Content-Range",
    "Content-Type",
    "Date",
    "ETag",
    "Expires",
    "Last-Modified",
    "Location",
    "Retry-After",
    "Server",
    "Transfer-Encoding",
    "Vary",
    "Vary",
];

/// The extensions that make hyper write an HTTP/1.x response's header names as S3 does (see the
/// module docs); `None` if they could not be made, and then names stay in lower case.
pub fn spelling() -> Option<&'static http::Extensions> {
    static TEMPLATE: OnceLock<Option<http::Extensions>> = OnceLock::new();
    TEMPLATE
        .get_or_init(|| {
            // Its own thread and runtime: callers may be inside a runtime, where blocking on
            // another is refused.
            std::thread::spawn(|| {
                let rt = tokio::runtime::Builder::new_current_thread().build().ok()?;
                rt.block_on(read_template())
            })
            .join()
            .ok()
            .flatten()
        })
        .as_ref()
}

/// A hyper client's reading of a response whose header names are spelled as S3 spells them.
async fn read_template() -> Option<http::Extensions> {
    let (ours, theirs) = tokio::io::duplex(16 * 1024);
    let (mut send, conn) = hyper::client::conn::http1::Builder::new()
        .preserve_header_case(true)
        .handshake::<_, Empty<Bytes>>(TokioIo::new(ours))
        .await
        .ok()?;
    let answer = async move {
        let mut theirs = theirs;
        let mut head = Vec::new();
        let mut buf = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = theirs.read(&mut buf).await.ok()?;
            if n == 0 {
                return None;
            }
            head.extend_from_slice(&buf[..n]);
        }
        let mut text = String::from("HTTP/1.1 200 OK\r\n");
        for name in S3_SPELLING {
            // Content-Length must be a length; the other values are never read.
            let value = if *name == "Content-Length" { "0" } else { "x" };
            text.push_str(&format!("{name}: {value}\r\n"));
        }
        text.push_str("\r\n");
        theirs.write_all(text.as_bytes()).await.ok()?;
        // Kept open until the client has read the answer.
        Some(theirs)
    };
    // Both ends run beside this one; the runtime they run on ends with the call.
    tokio::spawn(conn);
    tokio::spawn(answer);
    let request = http::Request::get("/").body(Empty::new()).ok()?;
    let response = send.send_request(request).await;
    let mut response = response.ok()?;
    Some(std::mem::take(response.extensions_mut()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A response given the template is written by hyper's HTTP/1 server with S3's spelling.
    #[tokio::test]
    async fn responses_given_the_template_name_headers_as_s3_does() {
        let template = spelling().expect("a template").clone();
        let (client, server) = tokio::io::duplex(16 * 1024);
        let service = hyper::service::service_fn(move |_req: http::Request<hyper::body::Incoming>| {
            let template = template.clone();
            async move {
                let mut resp = http::Response::new(http_body_util::Full::new(Bytes::from_static(b"body")));
                let h = resp.headers_mut();
                h.insert("etag", http::HeaderValue::from_static("\"abc\""));
                h.insert(
                    "last-modified",
                    http::HeaderValue::from_static("Fri, 27 Nov 2026 00:00:00 GMT"),
                );
                h.insert("x-amz-request-id", http::HeaderValue::from_static("ID"));
                h.insert("x-amz-meta-mixed", http::HeaderValue::from_static("m"));
                resp.extensions_mut().extend(template);
                Ok::<_, std::convert::Infallible>(resp)
            }
        });
        tokio::spawn(hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(server), service));
        let mut client = client;
        client.write_all(b"GET /b/k HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !got.ends_with(b"body") {
            let n = client.read(&mut buf).await.unwrap();
            assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&got));
            got.extend_from_slice(&buf[..n]);
        }
        let text = String::from_utf8(got).unwrap();
        for line in [
            "\r\nETag: \"abc\"\r\n",
            "\r\nLast-Modified: ",
            "\r\nx-amz-request-id: ID\r\n",
            "\r\nx-amz-meta-mixed: m\r\n",
            "\r\nContent-Length: 4\r\n",
        ] {
            assert!(text.contains(line), "{line:?} missing from {text}");
        }
    }
}
