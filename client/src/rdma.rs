//! The `x-amz-rdma-token` side of the client: GET into and PUT from registered memory.
//!
//! The client registers memory with a [`SoftwareTarget`] (the software transport; an RDMA NIC's
//! registration would produce DC tokens instead) and sends the token in a signed header; the
//! gateway moves the payload and answers with an empty body.

use anyhow::{bail, Context};
use bytes::Bytes;
use http::{Method, StatusCode};

pub use penstock_rdma::{Region, SoftwareTarget, SwToken, Token, BYTES_HEADER, REPLY_HEADER, TOKEN_HEADER};

use crate::{Client, Reply};

/// The answer to a token request.
#[derive(Debug)]
pub struct TokenReply {
    /// HTTP status (200, or 206 for ranges and parts).
    pub status: StatusCode,
    /// `x-amz-rdma-reply`.
    pub rdma_reply: Option<u16>,
    /// `x-amz-rdma-bytes-transferred`.
    pub bytes: u64,
    /// The ETag, when the response has one.
    pub etag: Option<String>,
    /// The whole response.
    pub reply: Reply,
}

impl TokenReply {
    fn from_reply(reply: Reply, what: &str) -> anyhow::Result<Self> {
        let header = |n: &str| reply.headers.get(n).and_then(|v| v.to_str().ok()).map(str::to_owned);
        if !reply.status.is_success() {
            bail!(
                "{what}: HTTP {} (x-amz-rdma-reply {:?}) {}",
                reply.status,
                header(REPLY_HEADER),
                String::from_utf8_lossy(&reply.body)
            );
        }
        let rdma_reply = header(REPLY_HEADER).and_then(|v| v.parse().ok());
        if rdma_reply != Some(200) && rdma_reply != Some(206) {
            bail!("{what}: the gateway did not serve the token (x-amz-rdma-reply {rdma_reply:?})");
        }
        Ok(Self {
            status: reply.status,
            rdma_reply,
            bytes: header(BYTES_HEADER).and_then(|v| v.parse().ok()).unwrap_or(0),
            etag: header("etag"),
            reply,
        })
    }
}

impl Client {
    /// GetObject into the token's window; `range` is an HTTP Range value such as `bytes=0-99`.
    pub async fn get_into(
        &self,
        bucket: &str,
        key: &str,
        token: &SwToken,
        range: Option<&str>,
    ) -> anyhow::Result<TokenReply> {
        let tok = token.to_string();
        let mut headers = vec![(TOKEN_HEADER, tok.as_str())];
        if let Some(r) = range {
            headers.push(("range", r));
        }
        let r = self
            .send(Method::GET, &self.url(bucket, Some(key)), &headers, Bytes::new())
            .await?;
        TokenReply::from_reply(r, "token GET")
    }

    /// PutObject of the token's whole window, with optional extra headers (checksums).
    pub async fn put_from(
        &self,
        bucket: &str,
        key: &str,
        token: &SwToken,
        extra: &[(&str, &str)],
    ) -> anyhow::Result<TokenReply> {
        let tok = token.to_string();
        let mut headers = vec![(TOKEN_HEADER, tok.as_str())];
        headers.extend_from_slice(extra);
        let r = self
            .send(Method::PUT, &self.url(bucket, Some(key)), &headers, Bytes::new())
            .await?;
        TokenReply::from_reply(r, "token PUT")
    }

    /// UploadPart of the token's whole window.
    pub async fn upload_part_from(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part: u32,
        token: &SwToken,
    ) -> anyhow::Result<TokenReply> {
        let url = format!("{}?partNumber={part}&uploadId={upload_id}", self.url(bucket, Some(key)));
        let tok = token.to_string();
        let r = self
            .send(Method::PUT, &url, &[(TOKEN_HEADER, tok.as_str())], Bytes::new())
            .await?;
        TokenReply::from_reply(r, "token UploadPart")
    }

    /// CreateMultipartUpload: the upload id.
    pub async fn create_multipart_upload(&self, bucket: &str, key: &str) -> anyhow::Result<String> {
        let url = format!("{}?uploads", self.url(bucket, Some(key)));
        let r = self.send(Method::POST, &url, &[], Bytes::new()).await?;
        if !r.status.is_success() {
            bail!(
                "create multipart upload: HTTP {} {}",
                r.status,
                String::from_utf8_lossy(&r.body)
            );
        }
        xml_value(&r.body, "UploadId").context("no UploadId in CreateMultipartUpload response")
    }

    /// CompleteMultipartUpload with `(part number, ETag)` pairs; returns the object's ETag.
    pub async fn complete_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        parts: &[(u32, String)],
    ) -> anyhow::Result<String> {
        let mut xml = String::from("<CompleteMultipartUpload>");
        for (n, etag) in parts {
            xml.push_str(&format!("<Part><PartNumber>{n}</PartNumber><ETag>{etag}</ETag></Part>"));
        }
        xml.push_str("</CompleteMultipartUpload>");
        let url = format!("{}?uploadId={upload_id}", self.url(bucket, Some(key)));
        let r = self.send(Method::POST, &url, &[], Bytes::from(xml)).await?;
        if !r.status.is_success() || r.body.windows(7).any(|w| w == b"<Error>") {
            bail!(
                "complete multipart upload: HTTP {} {}",
                r.status,
                String::from_utf8_lossy(&r.body)
            );
        }
        xml_value(&r.body, "ETag").context("no ETag in CompleteMultipartUpload response")
    }

    /// Uploads `[offset, offset + len)` of `region` as a multipart object with parts of
    /// `part_size` bytes, one token per part, `concurrency` parts in flight. Returns the ETag.
    #[allow(clippy::too_many_arguments)]
    pub async fn put_multipart_from(
        &self,
        bucket: &str,
        key: &str,
        region: &Region,
        offset: u64,
        len: u64,
        part_size: u64,
        concurrency: usize,
    ) -> anyhow::Result<String> {
        use futures::StreamExt;
        if part_size == 0 || len == 0 {
            bail!("multipart upload needs a non-empty range and part size");
        }
        let upload = self.create_multipart_upload(bucket, key).await?;
        let parts: Vec<(u32, SwToken)> = (0..len.div_ceil(part_size))
            .map(|i| {
                let start = i * part_size;
                let n = (len - start).min(part_size);
                let tok = region
                    .token(offset + start, n)
                    .context("the range does not fit the region")?;
                Ok((i as u32 + 1, tok))
            })
            .collect::<anyhow::Result<_>>()?;
        let results: Vec<anyhow::Result<(u32, String)>> = futures::stream::iter(parts)
            .map(|(n, tok)| {
                let upload = upload.clone();
                async move {
                    let r = self.upload_part_from(bucket, key, &upload, n, &tok).await?;
                    Ok((n, r.etag.context("UploadPart response without ETag")?))
                }
            })
            .buffer_unordered(concurrency.max(1))
            .collect()
            .await;
        let mut etags = results.into_iter().collect::<anyhow::Result<Vec<_>>>()?;
        etags.sort_by_key(|(n, _)| *n);
        self.complete_multipart_upload(bucket, key, &upload, &etags).await
    }
}

/// The text of the first `<name>` element (XML entities for quotes decoded).
fn xml_value(body: &[u8], name: &str) -> Option<String> {
    let s = std::str::from_utf8(body).ok()?;
    let open = format!("<{name}>");
    let start = s.find(&open)? + open.len();
    let end = s[start..].find(&format!("</{name}>"))? + start;
    Some(s[start..end].replace("&quot;", "\"").replace("&#34;", "\""))
}
