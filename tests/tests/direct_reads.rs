//! Plain reads answered by `gateway/src/s3/direct.rs` against the same reads answered through
//! s3s (`direct_reads = false`), over the same data: every status, header (but the date and the
//! request id), and body must be the same, refusals included.

use std::collections::BTreeMap;

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{BucketVersioningStatus, ChecksumAlgorithm, VersioningConfiguration};
use penstock_tests::raw::Conn;
use penstock_tests::{mkbucket, pattern, put, Gateway, ACCESS_KEY, SECRET_KEY};

/// One answer, as compared.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    status: u16,
    headers: BTreeMap<String, String>,
    body: Vec<u8>,
}

/// Who signs a request, and how.
#[derive(Clone, Copy)]
enum Signer<'a> {
    Key(&'a str, &'a str),
    /// Signed ten minutes outside the allowed skew.
    Stale,
    /// A valid signature with one character changed.
    Tampered,
    Anonymous,
}

/// The head of a SigV4 header-signed request (`extra` headers signed too).
fn head(gw: &Gateway, method: &str, path: &str, extra: &[(&str, &str)], signer: Signer<'_>) -> String {
    use std::time::{Duration, SystemTime};

    let host = gw.endpoint.trim_start_matches("http://").to_owned();
    let mut lines = format!("{method} {path} HTTP/1.1\r\nhost: {host}\r\nuser-agent: direct-reads-test\r\n");
    for (k, v) in extra {
        lines.push_str(&format!("{k}: {v}\r\n"));
    }
    let (ak, sk, when) = match signer {
        Signer::Key(ak, sk) => (ak, sk, SystemTime::now()),
        Signer::Tampered => (ACCESS_KEY, SECRET_KEY, SystemTime::now()),
        Signer::Stale => (ACCESS_KEY, SECRET_KEY, SystemTime::now() - Duration::from_secs(1500)),
        Signer::Anonymous => return lines + "\r\n",
    };
    let mut signed: Vec<(&str, &str)> = vec![("host", host.as_str())];
    signed.extend_from_slice(extra);
    let url = format!("{}{path}", gw.endpoint);
    let body = aws_sigv4::http_request::SignableBody::Bytes(b"");
    let (added, _) = penstock_tests::sigv4::Signer::new(ak, sk, when).sign(method, &url, &signed, body);
    for (k, v) in added {
        let v = if k.eq_ignore_ascii_case("authorization") && matches!(signer, Signer::Tampered) {
            let last = v.chars().last().unwrap();
            format!("{}{}", &v[..v.len() - 1], if last == '0' { '1' } else { '0' })
        } else {
            v
        };
        lines.push_str(&format!("{k}: {v}\r\n"));
    }
    lines + "\r\n"
}

/// Sends one request on a fresh connection and reads its answer, minus what differs by
/// request (the date, the request id, in headers and in error documents; a refused signature's
/// texts).
fn ask(gw: &Gateway, method: &str, path: &str, extra: &[(&str, &str)], signer: Signer<'_>) -> Seen {
    let mut conn = Conn::open(gw);
    conn.send(head(gw, method, path, extra, signer).as_bytes());
    let a = conn.answer(method == "HEAD");
    let headers = a
        .headers
        .iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v.clone()))
        .filter(|(k, _)| k != "date" && k != "x-amz-request-id")
        .collect();
    let mut body = String::from_utf8_lossy(&a.body).into_owned();
    // A refused signature's texts and a refused time's hold the signing time or the server's,
    // which differ by request too.
    for tag in [
        "RequestId",
        "RequestTime",
        "ServerTime",
        "StringToSign",
        "SignatureProvided",
        "StringToSignBytes",
        "CanonicalRequest",
        "CanonicalRequestBytes",
    ] {
        let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
        if let (Some(s), Some(e)) = (body.find(&open), body.find(&close)) {
            body.replace_range(s..e, &open);
        }
    }
    let body = if a.status >= 300 { body.into_bytes() } else { a.body };
    Seen { status: a.status, headers, body }
}

/// `penstock_direct_reads_total` from the admin API's metrics.
fn direct_reads(gw: &Gateway) -> u64 {
    let (_, m) = gw.admin_get("/metrics");
    m.lines()
        .find_map(|l| l.strip_prefix("penstock_direct_reads_total "))
        .expect("penstock_direct_reads_total in /metrics")
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn direct_reads_answer_as_s3s_does() {
    let mut gw = Gateway::start();
    let c = gw.client();
    mkbucket(&c, "plain").await;
    put(&c, "plain", "small.bin", &pattern(1, 4096)).await;
    put(&c, "plain", "empty", b"").await;
    put(&c, "plain", "big.bin", &pattern(2, 300 << 10)).await;
    put(&c, "plain", "dir/", b"").await;
    c.put_object()
        .bucket("plain")
        .key("attrs/doc.txt")
        .body(ByteStream::from_static(b"hello, plain reads"))
        .content_type("text/plain")
        .cache_control("max-age=60")
        .content_disposition("attachment; filename=doc.txt")
        .content_encoding("identity")
        .content_language("en")
        .expires(aws_sdk_s3::primitives::DateTime::from_secs(1_900_000_000))
        .metadata("color", "blue")
        .metadata("n", "1")
        .tagging("a=1&b=2")
        .send()
        .await
        .unwrap();
    // s3s encodes non-ASCII metadata (RFC 2047): such reads are left to it.
    c.put_object()
        .bucket("plain")
        .key("unicode.txt")
        .body(ByteStream::from_static(b"x"))
        .metadata("name", "caf\u{e9}")
        .send()
        .await
        .unwrap();
    c.put_object()
        .bucket("plain")
        .key("sum.bin")
        .body(ByteStream::from(pattern(3, 1000)))
        .checksum_algorithm(ChecksumAlgorithm::Crc32)
        .send()
        .await
        .unwrap();
    let up = c.create_multipart_upload().bucket("plain").key("mp.bin").send().await.unwrap();
    let id = up.upload_id().unwrap();
    let mut parts = Vec::new();
    for (n, body) in [(1, pattern(4, 5 << 20)), (2, pattern(5, 10))] {
        let p = c
            .upload_part()
            .bucket("plain")
            .key("mp.bin")
            .upload_id(id)
            .part_number(n)
            .body(ByteStream::from(body))
            .send()
            .await
            .unwrap();
        parts.push(aws_sdk_s3::types::CompletedPart::builder().part_number(n).e_tag(p.e_tag().unwrap()).build());
    }
    c.complete_multipart_upload()
        .bucket("plain")
        .key("mp.bin")
        .upload_id(id)
        .multipart_upload(aws_sdk_s3::types::CompletedMultipartUpload::builder().set_parts(Some(parts)).build())
        .send()
        .await
        .unwrap();
    mkbucket(&c, "kept").await;
    c.put_bucket_versioning()
        .bucket("kept")
        .versioning_configuration(VersioningConfiguration::builder().status(BucketVersioningStatus::Enabled).build())
        .send()
        .await
        .unwrap();
    put(&c, "kept", "v.txt", b"one").await;
    put(&c, "kept", "v.txt", b"two").await;
    // A user of another domain, who may not read these buckets.
    gw.admin(&["domain", "create", "elsewhere"]);
    let u = gw.admin(&["user", "create", "--domain", "elsewhere", "--role", "user", "mallory"]);
    let kp = gw.admin(&["keypair", "create", u["id"].as_str().unwrap()]);
    let (other_ak, other_sk) =
        (kp["access_key"].as_str().unwrap().to_owned(), kp["secret_key"].as_str().unwrap().to_owned());

    let me = Signer::Key(ACCESS_KEY, SECRET_KEY);
    let keys = [
        "/plain/small.bin",
        "/plain/empty",
        "/plain/big.bin",
        "/plain/dir/",
        "/plain/attrs/doc.txt",
        "/plain/unicode.txt",
        "/plain/sum.bin",
        "/plain/mp.bin",
        "/kept/v.txt",
        "/plain/missing",
        "/nobucket/k",
    ];
    let mode = [("x-amz-checksum-mode", "ENABLED")];
    let run = |gw: &Gateway| {
        let mut seen = Vec::new();
        for k in keys {
            for method in ["GET", "HEAD"] {
                seen.push(((method, k.to_owned(), "plain"), ask(gw, method, k, &[], me)));
                seen.push(((method, k.to_owned(), "checksum mode"), ask(gw, method, k, &mode, me)));
            }
            seen.push((
                ("GET", format!("{k}?x-id=GetObject"), "sdk query"),
                ask(gw, "GET", &format!("{k}?x-id=GetObject"), &[], me),
            ));
        }
        // Ranges: within, suffix, open, past the end (refused), and ones S3 ignores.
        for k in ["/plain/small.bin", "/plain/big.bin", "/plain/empty", "/plain/mp.bin", "/plain/dir/"] {
            for r in ["bytes=0-9", "bytes=-5", "bytes=100-", "bytes=5000-6000", "bytes=0-1,3-4", "bytes=x-y"] {
                for method in ["GET", "HEAD"] {
                    seen.push(((method, k.to_owned(), r), ask(gw, method, k, &[("range", r)], me)));
                }
            }
        }
        let k = "/plain/small.bin";
        for (what, signer) in [
            ("stale", Signer::Stale),
            ("tampered", Signer::Tampered),
            ("anonymous", Signer::Anonymous),
            ("unknown key", Signer::Key("NOSUCHKEY0000000", SECRET_KEY)),
            ("other domain", Signer::Key(&other_ak, &other_sk)),
        ] {
            seen.push((("GET", k.to_owned(), what), ask(gw, "GET", k, &[], signer)));
        }
        seen
    };

    let before = direct_reads(&gw);
    let direct = run(&gw);
    let served = direct_reads(&gw) - before;
    // Every success but those with non-ASCII metadata took the direct path.
    // Ranges that do not parse are S3's to ignore; s3s answers those.
    let ignored = |what: &str| matches!(what, "bytes=0-1,3-4" | "bytes=x-y");
    let expected =
        direct.iter().filter(|((_, k, what), s)| s.status < 300 && !k.contains("unicode") && !ignored(what)).count()
            as u64;
    assert!(expected > 30, "{expected} direct answers expected");
    assert_eq!(served, expected, "reads answered directly");
    for ((_, _, what), s) in &direct {
        let body = String::from_utf8_lossy(&s.body);
        match *what {
            "stale" | "tampered" | "anonymous" | "unknown key" => assert_eq!(s.status, 403, "{what}: {body}"),
            // Bucket names are per domain: theirs has none of that name.
            "other domain" => assert!(s.status == 404 && body.contains("NoSuchBucket"), "{what}: {body}"),
            _ => {}
        }
    }

    gw.restart_with_config("direct_reads = false\n");
    let through_s3s = run(&gw);
    assert_eq!(direct_reads(&gw), 0, "no direct reads when turned off");
    assert_eq!(direct.len(), through_s3s.len());
    for ((req, a), (_, b)) in direct.iter().zip(&through_s3s) {
        assert_eq!(a, b, "{req:?}: direct (left) and through s3s (right) differ");
    }
}
