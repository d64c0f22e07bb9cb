//! A small S3 client on hyper and aws-sigv4: the operations Penstock's tools need, signed with
//! SigV4 and `UNSIGNED-PAYLOAD`, over pooled HTTP/1.1 connections.
//!
//! It exists so benchmarks measure the gateway rather than a heavyweight SDK, and so the RDMA
//! token protocol can add its signed header where SDKs cannot.

#[cfg(feature = "cuda")]
pub mod gpu;
pub mod rdma;
mod sigv4;

use std::sync::Arc;
use std::time::SystemTime;

use anyhow::{bail, Context};
use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;

/// Characters left unescaped in object keys: RFC 3986 unreserved plus `/`.
const KEY_SET: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/');

/// An S3 client bound to one endpoint and one keypair.
#[derive(Clone)]
pub struct Client {
    endpoint: String,
    signer: Arc<sigv4::Signer>,
    http: HyperClient<HttpConnector, Full<Bytes>>,
}

/// A response: status, headers and the whole body.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    fn ok(self, what: &str) -> anyhow::Result<Self> {
        if !self.status.is_success() {
            bail!("{what}: HTTP {} {}", self.status, String::from_utf8_lossy(&self.body));
        }
        Ok(self)
    }
}

impl Client {
    /// A client for `endpoint` (`http://host:port`), signing with the given keys.
    pub fn new(endpoint: &str, access_key: &str, secret_key: &str) -> Self {
        let mut conn = HttpConnector::new();
        conn.set_nodelay(true);
        let http = HyperClient::builder(TokioExecutor::new())
            .pool_max_idle_per_host(1024)
            .build(conn);
        Self {
            endpoint: endpoint.trim_end_matches('/').to_owned(),
            signer: Arc::new(sigv4::Signer::new(access_key, secret_key, "us-east-1")),
            http,
        }
    }

    /// The URL of a bucket or object.
    pub fn url(&self, bucket: &str, key: Option<&str>) -> String {
        match key {
            Some(k) => format!(
                "{}/{bucket}/{}",
                self.endpoint,
                percent_encoding::utf8_percent_encode(k, KEY_SET)
            ),
            None => format!("{}/{bucket}", self.endpoint),
        }
    }

    /// Sends a signed request with extra headers and a body; returns the whole response.
    pub async fn send(
        &self,
        method: Method,
        url: &str,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> anyhow::Result<Reply> {
        let req = self.signed_request(method, url, headers, body)?;
        let resp = self
            .http
            .request(req)
            .await
            .with_context(|| format!("request to {url}"))?;
        let (parts, body) = resp.into_parts();
        let body = body.collect().await?.to_bytes();
        Ok(Reply {
            status: parts.status,
            headers: parts.headers,
            body,
        })
    }

    /// Sends a signed (or, with `anonymous`, unsigned) GET and hands each body chunk to `f` as it
    /// arrives, so large objects are never held in memory. Returns the status and byte count.
    pub async fn get_streaming(
        &self,
        url: &str,
        anonymous: bool,
        mut f: impl FnMut(&[u8]) -> anyhow::Result<()>,
    ) -> anyhow::Result<(StatusCode, u64)> {
        let mut req = Request::get(url).body(Full::new(Bytes::new()))?;
        if !anonymous {
            self.sign(&mut req)?;
        }
        let resp = self
            .http
            .request(req)
            .await
            .with_context(|| format!("request to {url}"))?;
        let status = resp.status();
        let mut body = resp.into_body();
        let mut n = 0u64;
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame?.into_data() {
                n += data.len() as u64;
                if status.is_success() {
                    f(&data)?;
                }
            }
        }
        Ok((status, n))
    }

    /// The headers of a signed request, for callers that write HTTP themselves (such as a PUT
    /// that declares a length it never sends, as LMCache's connector does).
    pub fn signed_headers(
        &self,
        method: Method,
        url: &str,
        headers: &[(&str, &str)],
    ) -> anyhow::Result<Vec<(String, String)>> {
        let req = self.signed_request(method, url, headers, Bytes::new())?;
        Ok(req
            .headers()
            .iter()
            .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
            .collect())
    }

    fn signed_request(
        &self,
        method: Method,
        url: &str,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> anyhow::Result<Request<Full<Bytes>>> {
        let mut req = Request::builder().method(method).uri(url);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let mut req = req.body(Full::new(body))?;
        self.sign(&mut req)?;
        Ok(req)
    }

    fn sign(&self, req: &mut Request<Full<Bytes>>) -> anyhow::Result<()> {
        self.signer.sign(req, SystemTime::now())
    }

    /// CreateBucket; an existing bucket of the caller's is fine.
    pub async fn create_bucket(&self, bucket: &str) -> anyhow::Result<()> {
        let r = self
            .send(Method::PUT, &self.url(bucket, None), &[], Bytes::new())
            .await?;
        if r.status.is_success() || String::from_utf8_lossy(&r.body).contains("BucketAlreadyOwnedByYou") {
            return Ok(());
        }
        bail!(
            "create bucket {bucket}: HTTP {} {}",
            r.status,
            String::from_utf8_lossy(&r.body)
        )
    }

    /// PutObject; returns the ETag.
    pub async fn put_object(&self, bucket: &str, key: &str, body: Bytes) -> anyhow::Result<String> {
        let r = self
            .send(Method::PUT, &self.url(bucket, Some(key)), &[], body)
            .await?
            .ok("put")?;
        Ok(r.headers
            .get("etag")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned())
    }

    /// GetObject: the whole body.
    pub async fn get_object(&self, bucket: &str, key: &str) -> anyhow::Result<Bytes> {
        Ok(self
            .send(Method::GET, &self.url(bucket, Some(key)), &[], Bytes::new())
            .await?
            .ok("get")?
            .body)
    }

    /// HeadObject: the size, or `None` for a missing key.
    pub async fn head_object(&self, bucket: &str, key: &str) -> anyhow::Result<Option<u64>> {
        let r = self
            .send(Method::HEAD, &self.url(bucket, Some(key)), &[], Bytes::new())
            .await?;
        if r.status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let r = r.ok("head")?;
        Ok(r.headers
            .get("content-length")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok()))
    }

    /// DeleteObject.
    pub async fn delete_object(&self, bucket: &str, key: &str) -> anyhow::Result<()> {
        self.send(Method::DELETE, &self.url(bucket, Some(key)), &[], Bytes::new())
            .await?
            .ok("delete")?;
        Ok(())
    }

    /// A multipart upload of `parts` in order (every part but the last at least 5 MiB);
    /// returns the object's ETag. The upload is aborted if a step fails.
    pub async fn multipart_upload(&self, bucket: &str, key: &str, parts: &[Bytes]) -> anyhow::Result<String> {
        let url = self.url(bucket, Some(key));
        let r = self
            .send(Method::POST, &format!("{url}?uploads"), &[], Bytes::new())
            .await?
            .ok("create multipart upload")?;
        let text = String::from_utf8_lossy(&r.body);
        let id = text
            .split("<UploadId>")
            .nth(1)
            .and_then(|s| s.split("</UploadId>").next())
            .context("no UploadId in the answer")?
            .to_owned();
        let done = async {
            let mut xml = String::from("<CompleteMultipartUpload>");
            for (i, part) in parts.iter().enumerate() {
                let n = i + 1;
                let r = self
                    .send(
                        Method::PUT,
                        &format!("{url}?partNumber={n}&uploadId={id}"),
                        &[],
                        part.clone(),
                    )
                    .await?
                    .ok("upload part")?;
                let etag = r.headers.get("etag").and_then(|v| v.to_str().ok()).unwrap_or("");
                xml.push_str(&format!("<Part><PartNumber>{n}</PartNumber><ETag>{etag}</ETag></Part>"));
            }
            xml.push_str("</CompleteMultipartUpload>");
            let r = self
                .send(Method::POST, &format!("{url}?uploadId={id}"), &[], Bytes::from(xml))
                .await?
                .ok("complete multipart upload")?;
            let text = String::from_utf8_lossy(&r.body);
            if text.contains("<Error>") {
                bail!("complete multipart upload: {text}");
            }
            Ok(text
                .split("<ETag>")
                .nth(1)
                .and_then(|s| s.split("</ETag>").next())
                .unwrap_or("")
                .replace("&quot;", "\""))
        }
        .await;
        if done.is_err() {
            let _ = self
                .send(Method::DELETE, &format!("{url}?uploadId={id}"), &[], Bytes::new())
                .await;
        }
        done
    }

    /// One ListObjectsV2 page: the keys.
    pub async fn list_objects_v2(&self, bucket: &str, prefix: &str, max_keys: u32) -> anyhow::Result<Vec<String>> {
        Ok(self.list_page(bucket, prefix, None, max_keys).await?.0)
    }

    /// One ListObjectsV2 page from after `start_after`: its keys, and whether more follow.
    pub async fn list_page(
        &self,
        bucket: &str,
        prefix: &str,
        start_after: Option<&str>,
        max_keys: u32,
    ) -> anyhow::Result<(Vec<String>, bool)> {
        let enc = |s: &str| percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string();
        let mut url = format!(
            "{}?list-type=2&max-keys={max_keys}&prefix={}",
            self.url(bucket, None),
            enc(prefix)
        );
        if let Some(after) = start_after {
            url.push_str(&format!("&start-after={}", enc(after)));
        }
        let r = self.send(Method::GET, &url, &[], Bytes::new()).await?.ok("list")?;
        let text = String::from_utf8_lossy(&r.body);
        let keys = text
            .split("<Key>")
            .skip(1)
            .filter_map(|s| s.split("</Key>").next())
            .map(|k| {
                k.replace("&amp;", "&")
                    .replace("&lt;", "<")
                    .replace("&gt;", ">")
                    .replace("&quot;", "\"")
                    .replace("&apos;", "'")
            })
            .collect();
        Ok((keys, text.contains("<IsTruncated>true</IsTruncated>")))
    }
}
