//! On the wire: interim responses, what is answered before a body is read, how the signature
//! of a path or an `Authorization` header is read, and how answers and documents are spelled.

use super::*;

/// botocore sends `Expect: 100-continue` on every PUT with a file-like body, empty ones too,
/// and misreads the next answer on the connection unless an interim response came first.
#[tokio::test]
async fn expect_continue_gets_an_interim_response_even_without_a_body() {
    let (gw, c) = Gateway::with_bucket("cont").await;
    let empty = c.put_object().bucket("cont").key("pkg/__init__.py").presigned(presigning()).await.unwrap();
    let full = c.put_object().bucket("cont").key("pkg/a.py").presigned(presigning()).await.unwrap();
    let read = c.get_object().bucket("cont").key("pkg/a.py").presigned(presigning()).await.unwrap();
    let mut conn = Conn::open(&gw);
    let expect = ("Expect", "100-continue".to_owned());

    conn.send_head(&empty, &[("Content-Length", "0".into()), expect.clone()]);
    assert_eq!(conn.answer(false).status, 100);
    let a = conn.answer(false);
    assert_eq!(a.status, 200);
    assert_eq!(a.header("etag"), Some("\"d41d8cd98f00b204e9800998ecf8427e\""));

    // The same connection carries on, a body after the interim response as usual.
    conn.send_head(&full, &[("Content-Length", "5".into()), expect.clone()]);
    assert_eq!(conn.answer(false).status, 100);
    conn.send(b"hello");
    assert_eq!(conn.answer(false).status, 200);
    conn.send_head(&read, &[]);
    let a = conn.answer(false);
    assert_eq!((a.status, a.body.as_slice()), (200, &b"hello"[..]));

    // Without the expectation there is no interim response; a refused empty request gets one
    // before its error (the connection stays in step).
    conn.send_head(&empty, &[("Content-Length", "0".into())]);
    assert_eq!(conn.answer(false).status, 200);
    let denied = gw
        .client_with("NOSUCHKEY", "nosuchsecret")
        .put_object()
        .bucket("cont")
        .key("x")
        .presigned(presigning())
        .await
        .unwrap();
    conn.send_head(&denied, &[("Content-Length", "0".into()), expect]);
    assert_eq!(conn.answer(false).status, 100);
    assert_eq!(conn.answer(false).status, 403);
    conn.send_head(&read, &[]);
    assert_eq!(conn.answer(false).status, 200);
}

/// A client that waits for `100 Continue` before it sends a body is refused before it sends it:
/// the access check answers first, for small uploads too (botocore waits on every PUT), and an
/// upload the caller may make gets the interim response and then its answer.
#[tokio::test]
async fn refused_uploads_are_answered_before_their_body() {
    let (gw, c) = Gateway::with_bucket("guarded").await;
    let mut conn = Conn::open(&gw);
    let head = "PUT /guarded/obj HTTP/1.1\r\nHost: x\r\nContent-Length: 123\r\nExpect: 100-continue\r\n\r\n";
    conn.send(head.as_bytes());
    let a = conn.answer(false);
    assert_eq!(a.status, 403, "no 100 Continue for an anonymous upload to a private bucket");
    // The same addressed virtual-hosted style (the Host names the bucket, the path is the key).
    let mut conn = Conn::open(&gw);
    let head = "PUT /obj HTTP/1.1\r\nHost: guarded.localhost\r\nContent-Length: 123\r\nExpect: 100-continue\r\n\r\n";
    conn.send(head.as_bytes());
    assert_eq!(conn.answer(false).status, 403, "virtual-hosted style too");

    let put = c.put_object().bucket("guarded").key("obj").presigned(presigning()).await.unwrap();
    let mut conn = Conn::open(&gw);
    conn.send_head(&put, &[("Content-Length", "5".into()), ("Expect", "100-continue".into())]);
    assert_eq!(conn.answer(false).status, 100);
    conn.send(b"hello");
    assert_eq!(conn.answer(false).status, 200);
    assert_eq!(get(&c, "guarded", "obj").await, b"hello");
}

/// A `+` sent unencoded in the path: S3 reads it as a space, and clients written against S3
/// (aws4fetch) sign it so; clients that sign the `+` itself get a plus, as before. The signature
/// decides, for header-signed and presigned requests; a signature that holds for neither is
/// refused and writes nothing.
#[tokio::test]
async fn a_plus_in_the_path_is_read_as_the_client_signed_it() {
    use aws_sigv4::http_request::SignableBody;
    use penstock_tests::sigv4::Signer;

    let (gw, c) = Gateway::with_bucket("plus").await;
    let host = gw.endpoint.trim_start_matches("http://").to_owned();
    // PUT `body` on the wire at `wire`, signed for `signed` (the paths differ only in escapes).
    let put_as = |wire: &str, signed: &str, body: &[u8], tamper: bool| {
        let url = format!("{}{signed}", gw.endpoint);
        let signer = Signer::admin().path_as_written();
        let (added, _) = signer.sign("PUT", &url, &[("host", host.as_str())], SignableBody::Bytes(body));
        let added: Vec<(String, String)> = added
            .into_iter()
            .map(|(k, v)| {
                if !(tamper && k.eq_ignore_ascii_case("authorization")) {
                    return (k, v);
                }
                // The signature's last hex digit changed.
                let flipped = if v.ends_with('0') { '1' } else { '0' };
                let v = format!("{}{flipped}", &v[..v.len() - 1]);
                (k, v)
            })
            .collect();
        let headers: Vec<(&str, &str)> = added.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        Conn::open(&gw).unsigned("PUT", wire, &headers, body)
    };
    assert_eq!(put_as("/plus/a+b", "/plus/a%20b", b"space", false).status, 200);
    assert_eq!(put_as("/plus/c+d", "/plus/c%2Bd", b"plus", false).status, 200);
    let refused = put_as("/plus/e+f", "/plus/e%20f", b"x", true);
    assert_eq!(refused.status, 403, "{}", String::from_utf8_lossy(&refused.body));
    let keys: Vec<String> = c
        .list_objects_v2()
        .bucket("plus")
        .send()
        .await
        .unwrap()
        .contents()
        .iter()
        .filter_map(|o| o.key().map(str::to_owned))
        .collect();
    assert_eq!(keys, ["a b", "c+d"]);
    assert_eq!(get(&c, "plus", "a b").await, b"space");
    assert_eq!(get(&c, "plus", "c+d").await, b"plus");

    // Presigned GETs whose path came with `+` for the SDK's escape: `%20` is read as a space
    // only where the URL was signed so, `%2B` stays a plus.
    for (key, escape, body) in [("a b", "%20", &b"space"[..]), ("c+d", "%2B", &b"plus"[..])] {
        let url = c.get_object().bucket("plus").key(key).presigned(presigning()).await.unwrap();
        let uri: http::Uri = url.uri().parse().unwrap();
        let path = uri.path().replace(escape, "+");
        let mut conn = Conn::open(&gw);
        conn.send(format!("GET {path}?{} HTTP/1.1\r\nHost: {host}\r\n\r\n", uri.query().unwrap()).as_bytes());
        let a = conn.answer(false);
        assert_eq!((a.status, a.body.as_slice()), (200, body), "{key}: {}", String::from_utf8_lossy(&a.body));
    }
}

/// GDAL's `/vsis3/` in path style signs its bucket listing (`GET /`) for the canonical URI `//`:
/// the listing is answered to the key whose signature that is, and refused to a wrong one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bucket_listing_signed_as_gdal_signs_it_is_answered() {
    use aws_sigv4::http_request::SignableBody;
    use penstock_tests::sigv4::Signer;

    let (gw, _c) = Gateway::with_bucket("listed-for-gdal").await;
    let host = gw.endpoint.trim_start_matches("http://").to_owned();
    let list_signed_for = |signed: &str, tamper: bool| {
        let url = format!("{}{signed}", gw.endpoint);
        let (added, _) =
            Signer::admin().path_as_written().sign("GET", &url, &[("host", host.as_str())], SignableBody::Bytes(b""));
        let added: Vec<(String, String)> = added
            .into_iter()
            .map(|(k, v)| match tamper && k.eq_ignore_ascii_case("authorization") {
                true => (k, format!("{}{}", &v[..v.len() - 1], if v.ends_with('0') { '1' } else { '0' })),
                false => (k, v),
            })
            .collect();
        let headers: Vec<(&str, &str)> = added.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        Conn::open(&gw).unsigned("GET", "/", &headers, b"")
    };
    for signed in ["/", "//"] {
        let a = list_signed_for(signed, false);
        let body = String::from_utf8_lossy(&a.body);
        assert_eq!(a.status, 200, "{signed}: {body}");
        assert!(body.contains("<Name>listed-for-gdal</Name>"), "{signed}: {body}");
        let refused = list_signed_for(signed, true);
        let body = String::from_utf8_lossy(&refused.body);
        assert_eq!(refused.status, 403, "{signed}: {body}");
        assert!(body.contains("SignatureDoesNotMatch"), "{signed}: {body}");
    }
}

/// HTTP/1.1 answers spell header names as S3 does: HTSlib (samtools), Fluent Bit and the AWS SDK
/// for Java 1.7-1.10 search an upload part's answer for `ETag: "` and abort the upload without
/// it. The `x-amz-*` names and user metadata stay in lower case, as S3 writes them.
#[tokio::test]
async fn answers_spell_header_names_as_s3_does() {
    let (gw, c) = Gateway::with_bucket("spelt").await;
    let put = c.put_object().bucket("spelt").key("k").presigned(presigning()).await.unwrap();
    let read = c.get_object().bucket("spelt").key("k").presigned(presigning()).await.unwrap();
    let mut conn = Conn::open(&gw);
    conn.send_head(&put, &[("Content-Length", "3".into())]);
    conn.send(b"abc");
    let names = |a: &penstock_tests::raw::Answer| a.headers.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
    let a = conn.answer(false);
    assert_eq!(a.status, 200);
    for want in ["ETag", "Content-Length", "Date", "x-amz-request-id"] {
        assert!(names(&a).iter().any(|n| n == want), "{want} in {:?}", names(&a));
    }
    conn.send_head(&read, &[]);
    let a = conn.answer(false);
    assert_eq!((a.status, a.body.as_slice()), (200, &b"abc"[..]));
    for want in ["ETag", "Last-Modified", "Content-Type", "Accept-Ranges", "x-amz-request-id"] {
        assert!(names(&a).iter().any(|n| n == want), "{want} in {:?}", names(&a));
    }
    // Errors too.
    let missing = c.get_object().bucket("spelt").key("none").presigned(presigning()).await.unwrap();
    conn.send_head(&missing, &[]);
    let a = conn.answer(false);
    assert_eq!(a.status, 404);
    assert!(names(&a).iter().any(|n| n == "Content-Type"), "{:?}", names(&a));
}

/// A key holding a carriage return lists as itself: XML parsers read a literal CR in text as a
/// line feed, so listings, deletes' results and upload documents write it as `&#13;` (rclone's
/// encoding tests listed `\rkey` as `\nkey`, and then found no such object).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn carriage_returns_in_keys_survive_xml() {
    use aws_sdk_s3::types::{Delete, ObjectIdentifier};
    use aws_sigv4::http_request::SignableBody;
    use penstock_tests::sigv4::Signer;

    let (gw, c) = Gateway::with_bucket("crs").await;
    let keys = ["\rlead", "trail\r", "mid\rdle/inner", "line\r\nend"];
    for k in keys {
        put(&c, "crs", k, b"x").await;
    }
    let host = gw.endpoint.trim_start_matches("http://").to_owned();
    let raw = |method: &str, query: &str, body: &[u8]| {
        let url = format!("{}/crs?{query}", gw.endpoint);
        let (added, _) = Signer::admin().sign(method, &url, &[("host", host.as_str())], SignableBody::Bytes(body));
        let headers: Vec<(&str, &str)> = added.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        Conn::open(&gw).unsigned(method, &format!("/crs?{query}"), &headers, body)
    };
    for query in ["list-type=2", "list-type=2&delimiter=%2F", "delimiter=%2F", "versions", "uploads"] {
        let a = raw("GET", query, b"");
        assert_eq!(a.status, 200, "{query}: {}", String::from_utf8_lossy(&a.body));
        assert!(!a.body.contains(&b'\r'), "{query}: a literal CR: {}", String::from_utf8_lossy(&a.body));
    }
    let listed = raw("GET", "list-type=2", b"");
    let text = String::from_utf8_lossy(&listed.body);
    assert!(text.contains("<Key>&#13;lead</Key>") && text.contains("<Key>line&#13;\nend</Key>"), "{text}");
    let grouped = raw("GET", "list-type=2&delimiter=%2F", b"");
    assert!(String::from_utf8_lossy(&grouped.body).contains("<Prefix>mid&#13;dle/</Prefix>"));

    // The SDK reads each key back as written, and reaches the object by it.
    let out = c.list_objects_v2().bucket("crs").send().await.unwrap();
    let mut listed: Vec<String> = out.contents().iter().filter_map(|o| o.key().map(str::to_owned)).collect();
    listed.sort();
    let mut want: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    want.sort();
    assert_eq!(listed, want);
    for k in &listed {
        assert_eq!(get(&c, "crs", k).await, b"x", "{k:?}");
    }

    // Upload documents and a multi-delete's answer name the key the same way.
    let created = c.create_multipart_upload().bucket("crs").key("\rpart").send().await.unwrap();
    assert_eq!(created.key(), Some("\rpart"));
    let parts = raw("GET", "uploads&prefix=%0Dpart", b"");
    assert!(String::from_utf8_lossy(&parts.body).contains("<Key>&#13;part</Key>"));
    let objects: Vec<ObjectIdentifier> =
        keys.iter().map(|k| ObjectIdentifier::builder().key(*k).build().unwrap()).collect();
    let deleted = c
        .delete_objects()
        .bucket("crs")
        .delete(Delete::builder().set_objects(Some(objects)).build().unwrap())
        .send()
        .await
        .unwrap();
    let mut gone: Vec<&str> = deleted.deleted().iter().filter_map(|d| d.key()).collect();
    gone.sort();
    assert_eq!(gone, want.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(c.list_objects_v2().bucket("crs").send().await.unwrap().key_count(), Some(0));
}

/// ListBuckets names the owner before the buckets, where S3 writes it: the AWS SDK for Java v1
/// gives each bucket the owner read before it (`Bucket.getOwner()`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bucket_lists_name_the_owner_before_the_buckets() {
    use aws_sigv4::http_request::SignableBody;
    use penstock_tests::sigv4::Signer;

    let (gw, _c) = Gateway::with_bucket("owned").await;
    let host = gw.endpoint.trim_start_matches("http://").to_owned();
    let url = format!("{}/", gw.endpoint);
    let (added, _) = Signer::admin().sign("GET", &url, &[("host", host.as_str())], SignableBody::Bytes(b""));
    let headers: Vec<(&str, &str)> = added.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let a = Conn::open(&gw).unsigned("GET", "/", &headers, b"");
    let doc = String::from_utf8_lossy(&a.body).into_owned();
    assert_eq!(a.status, 200, "{doc}");
    let (owner, buckets) = (doc.find("<Owner>").expect(&doc), doc.find("<Buckets>").expect(&doc));
    assert!(owner < buckets, "{doc}");
    assert!(doc.contains("<Name>owned</Name>"), "{doc}");
}

/// `Authorization` headers S3 cannot read as a signature get S3's codes (s3s answers them all
/// 400 `InvalidRequest`), and a PUT so refused writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreadable_authorization_headers_get_s3_s_codes() {
    let (gw, c) = Gateway::with_bucket("authz").await;
    for (auth, want) in [
        ("Basic dXNlcjpwYXNz", "InvalidArgument"),
        ("AWS HAHAHA", "InvalidArgument"),
        ("AWS4-HMAC-SHA256 garbage", "AuthorizationHeaderMalformed"),
        ("AWS4-HMAC-SHA256 Credential=AKIA/20261129/us-east-1/s3/aws4_request", "AuthorizationHeaderMalformed"),
    ] {
        let a = Conn::open(&gw).unsigned("PUT", "/authz/k", &[("authorization", auth), ("content-length", "1")], b"x");
        let doc = String::from_utf8_lossy(&a.body).into_owned();
        assert_eq!(a.status, 400, "{auth}: {doc}");
        assert!(doc.contains(&format!("<Code>{want}</Code>")), "{auth}: {doc}");
    }
    let e = c.head_object().bucket("authz").key("k").send().await.unwrap_err();
    assert_eq!(e.raw_response().map(|r| r.status().as_u16()), Some(404), "nothing was written");
}
