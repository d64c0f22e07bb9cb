//! The `x-amz-rdma-token` data path end to end, over the software transport: a real gateway
//! process, the Rust client's software target as the client's registered memory.

use std::io::{Read, Write};
use std::time::Duration;

use http::Method;
use penstock_client::rdma::{SoftwareTarget, REPLY_HEADER};
use penstock_client::Client;
use penstock_tests::{pattern, Gateway, ACCESS_KEY, SECRET_KEY};

const DC: &str = "00007f3a2c000000:00100000:0001a2b3:0000:00c0de:1:00000000000000000000ffffc0a80a07";

async fn setup(gw: &Gateway) -> (Client, SoftwareTarget) {
    let c = Client::new(&gw.endpoint, ACCESS_KEY, SECRET_KEY);
    c.create_bucket("gpu").await.unwrap();
    let t = SoftwareTarget::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    (c, t)
}

fn header<'a>(r: &'a penstock_client::Reply, name: &str) -> Option<&'a str> {
    r.headers.get(name).and_then(|v| v.to_str().ok())
}

fn code(r: &penstock_client::Reply) -> String {
    let s = String::from_utf8_lossy(&r.body);
    s.split("<Code>").nth(1).and_then(|x| x.split("</Code>").next()).unwrap_or("").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn token_get_put_range_part_and_multipart_are_byte_exact() {
    let gw = Gateway::start();
    let (c, target) = setup(&gw).await;
    let data = pattern(1, 9 << 20 | 12345);
    c.put_object("gpu", "obj", data.clone().into()).await.unwrap();

    // Whole object into a window at an offset of a larger registration.
    let region = target.register(32 << 20);
    let r = c.get_into("gpu", "obj", &region.token(4096, 16 << 20).unwrap(), None).await.unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.rdma_reply, Some(200));
    assert_eq!(r.bytes, data.len() as u64);
    assert!(r.reply.body.is_empty());
    assert_eq!(header(&r.reply, "content-length"), Some("0"));
    assert!(r.etag.is_some());
    assert_eq!(region.to_vec(4096, data.len()), data);
    assert_eq!(region.to_vec(0, 4096), vec![0; 4096], "nothing before the window");
    assert!(region.to_vec(4096 + data.len(), 4096).iter().all(|&b| b == 0), "nothing after the object");

    // A range.
    let w = region.token(20 << 20, 1 << 20).unwrap();
    let r = c.get_into("gpu", "obj", &w, Some("bytes=1000-500999")).await.unwrap();
    assert_eq!((r.status.as_u16(), r.rdma_reply, r.bytes), (206, Some(206), 500_000));
    assert_eq!(header(&r.reply, "content-range"), Some(&*format!("bytes 1000-500999/{}", data.len())));
    assert_eq!(region.to_vec(20 << 20, 500_000), data[1000..501_000]);

    // PUT from a window, with a checksum the gateway verifies over the bytes it read.
    let src = pattern(2, 6 << 20);
    region.write(0, &src);
    let crc = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(crc32c::crc32c(&src).to_be_bytes())
    };
    let r = c
        .put_from("gpu", "put", &region.token(0, src.len() as u64).unwrap(), &[("x-amz-checksum-crc32c", &crc)])
        .await
        .unwrap();
    assert_eq!((r.rdma_reply, r.bytes), (Some(200), src.len() as u64));
    assert_eq!(&c.get_object("gpu", "put").await.unwrap()[..], &src[..]);

    // A wrong checksum stores nothing.
    let bad = c
        .send(
            Method::PUT,
            &c.url("gpu", Some("bad")),
            &[("x-amz-rdma-token", &region.token(0, 1 << 20).unwrap().to_string()), ("x-amz-checksum-crc32c", &crc)],
            bytes::Bytes::new(),
        )
        .await
        .unwrap();
    assert_eq!(bad.status, 400, "{}", String::from_utf8_lossy(&bad.body));
    assert_eq!(c.head_object("gpu", "bad").await.unwrap(), None);

    // Multipart with one token per part, then a token GET of part 2 (partNumber).
    let big = pattern(3, 13 << 20);
    let up = target.register(big.len());
    up.write(0, &big);
    let etag = c.put_multipart_from("gpu", "multi", &up, 0, big.len() as u64, 5 << 20, 3).await.unwrap();
    assert!(etag.ends_with("-3\""), "{etag}");
    assert_eq!(&c.get_object("gpu", "multi").await.unwrap()[..], &big[..]);
    let dst = target.register(8 << 20);
    let url = format!("{}?partNumber=2", c.url("gpu", Some("multi")));
    let r = c
        .send(
            Method::GET,
            &url,
            &[("x-amz-rdma-token", &dst.token(0, 8 << 20).unwrap().to_string())],
            bytes::Bytes::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 206);
    assert_eq!(header(&r, REPLY_HEADER), Some("206"));
    assert_eq!(dst.to_vec(0, 5 << 20), big[5 << 20..10 << 20]);

    // HEAD ignores the token.
    let r = c
        .send(Method::HEAD, &c.url("gpu", Some("obj")), &[("x-amz-rdma-token", DC)], bytes::Bytes::new())
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(header(&r, "content-length"), Some(&*data.len().to_string()));

    // Payload bytes are counted on the software path.
    let metrics = gw.admin_get("/metrics").1;
    assert!(metrics.contains("penstock_payload_bytes_total{path=\"software\",direction=\"out\"}"), "{metrics}");
}

/// `[rdma] depth` at its two ends: one operation at a time, and more in flight than the object
/// has chunks. Both must move every byte to its place, both ways, for a payload of several
/// chunks and for one under a chunk (a PUT reads it in shares, the last one shorter).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn token_transfers_are_byte_exact_at_every_depth() {
    use penstock_rdma::transport::CHUNK;
    for depth in [1, 16] {
        let gw = Gateway::start_with_config(&format!("[rdma]\ndepth = {depth}\n"));
        let (c, target) = setup(&gw).await;
        for len in [5 * CHUNK + 777, CHUNK - 12345] {
            let data = pattern(depth as u64 + len as u64, len);
            let region = target.register(2 * data.len());
            region.write(0, &data);
            let r = c.put_from("gpu", "o", &region.token(0, data.len() as u64).unwrap(), &[]).await.unwrap();
            assert_eq!((r.rdma_reply, r.bytes), (Some(200), data.len() as u64), "depth {depth}, {len}");
            assert_eq!(&c.get_object("gpu", "o").await.unwrap()[..], &data[..], "depth {depth}, {len}");
            let md5 = penstock_tests::md5_hex(&data);
            assert_eq!(r.etag.as_deref().map(|e| e.trim_matches('"')), Some(&*md5), "depth {depth}, {len}");
            let back = region.token(data.len() as u64, data.len() as u64).unwrap();
            let r = c.get_into("gpu", "o", &back, None).await.unwrap();
            assert_eq!((r.rdma_reply, r.bytes), (Some(200), data.len() as u64), "depth {depth}, {len}");
            assert_eq!(region.to_vec(data.len(), data.len()), data, "depth {depth}, {len}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bad_tokens_small_windows_and_failed_transfers_move_nothing() {
    let gw = Gateway::start();
    let (c, target) = setup(&gw).await;
    let data = pattern(4, 3 << 20);
    c.put_object("gpu", "obj", data.clone().into()).await.unwrap();
    let region = target.register(4 << 20);
    let url = c.url("gpu", Some("obj"));

    // Malformed: 400 InvalidRDMAToken, no reply header.
    let r = c.send(Method::GET, &url, &[("x-amz-rdma-token", "0000:zz")], bytes::Bytes::new()).await.unwrap();
    assert_eq!((r.status.as_u16(), code(&r).as_str()), (400, "InvalidRDMAToken"));
    assert_eq!(header(&r, REPLY_HEADER), None);

    // DC tokens: no verbs device here, so 501 with the reply header.
    let r = c.send(Method::GET, &url, &[("x-amz-rdma-token", DC)], bytes::Bytes::new()).await.unwrap();
    assert_eq!((r.status.as_u16(), code(&r).as_str()), (501, "RDMANotSupported"));
    assert_eq!(header(&r, REPLY_HEADER), Some("501"));

    // A window smaller than the object: a clear error and not one byte moved.
    let small = region.token(0, (3 << 20) - 1).unwrap();
    let r = c.send(Method::GET, &url, &[("x-amz-rdma-token", &small.to_string())], bytes::Bytes::new()).await.unwrap();
    assert_eq!((r.status.as_u16(), code(&r).as_str()), (400, "RDMAWindowTooSmall"));
    assert!(region.to_vec(0, 4 << 20).iter().all(|&b| b == 0));

    // A transfer the client's target refuses midway (forged key): 500 and, for PUT, no object.
    let mut forged = region.token(0, 4 << 20).unwrap();
    forged.key[3] ^= 0x40;
    let r = c.send(Method::GET, &url, &[("x-amz-rdma-token", &forged.to_string())], bytes::Bytes::new()).await.unwrap();
    assert_eq!((r.status.as_u16(), code(&r).as_str()), (500, "RDMATransferFailed"));
    let r = c
        .send(
            Method::PUT,
            &c.url("gpu", Some("forged")),
            &[("x-amz-rdma-token", &forged.to_string())],
            bytes::Bytes::new(),
        )
        .await
        .unwrap();
    assert_eq!((r.status.as_u16(), code(&r).as_str()), (500, "RDMATransferFailed"));
    assert_eq!(c.head_object("gpu", "forged").await.unwrap(), None);

    // A token pointing the gateway at an address other than the client's own is refused.
    let mut elsewhere = region.token(0, 1 << 20).unwrap();
    elsewhere.endpoint = "127.0.0.2:9".parse().unwrap();
    let r =
        c.send(Method::GET, &url, &[("x-amz-rdma-token", &elsewhere.to_string())], bytes::Bytes::new()).await.unwrap();
    assert_eq!((r.status.as_u16(), code(&r).as_str()), (403, "AccessDenied"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn strict_and_fallback_declines() {
    for (mode, get_status) in [("strict", 501), ("fallback", 200)] {
        let gw = Gateway::start_with_config(&format!("[rdma]\ndecline = \"{mode}\"\nsoftware = false\n"));
        let (c, target) = setup(&gw).await;
        let data = pattern(5, 100_000);
        c.put_object("gpu", "obj", data.clone().into()).await.unwrap();
        let region = target.register(1 << 20);
        let tok = region.token(0, 1 << 20).unwrap().to_string();
        let r = c
            .send(Method::GET, &c.url("gpu", Some("obj")), &[("x-amz-rdma-token", &tok)], bytes::Bytes::new())
            .await
            .unwrap();
        assert_eq!(r.status.as_u16(), get_status, "{mode}");
        assert_eq!(header(&r, REPLY_HEADER), Some("501"), "{mode}");
        if mode == "fallback" {
            assert_eq!(&r.body[..], &data[..], "fallback serves the object in the body");
        } else {
            assert_eq!(code(&r), "RDMANotSupported");
        }
        assert!(region.to_vec(0, 1 << 20).iter().all(|&b| b == 0));
        // PUT cannot fall back: the client must resend with a body.
        let r = c
            .send(Method::PUT, &c.url("gpu", Some("new")), &[("x-amz-rdma-token", &tok)], bytes::Bytes::new())
            .await
            .unwrap();
        assert_eq!((r.status.as_u16(), code(&r).as_str()), (501, "RDMANotSupported"), "{mode}");
        assert_eq!(c.head_object("gpu", "new").await.unwrap(), None);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn put_declaring_a_length_it_never_sends_then_a_new_connection() {
    let gw = Gateway::start();
    let (c, target) = setup(&gw).await;
    let src = pattern(6, 2 << 20);
    let region = target.register(src.len());
    region.write(0, &src);
    let tok = region.token(0, src.len() as u64).unwrap().to_string();
    let url = c.url("gpu", Some("lmcache@1@0@abc@bfloat16"));
    let len = src.len().to_string();
    let headers = c.signed_headers(Method::PUT, &url, &[("x-amz-rdma-token", &tok), ("content-length", &len)]).unwrap();

    let addr = gw.endpoint.trim_start_matches("http://").to_owned();
    let path = url.splitn(4, '/').nth(3).unwrap();
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut req = format!("PUT /{path} HTTP/1.1\r\n");
    for (k, v) in &headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if !headers.iter().any(|(k, _)| k == "host") {
        req.push_str(&format!("host: {addr}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    // No body follows. The gateway must answer anyway, then close the connection.
    let mut resp = Vec::new();
    s.read_to_end(&mut resp).expect("the gateway closes the connection after answering");
    let text = String::from_utf8_lossy(&resp).to_ascii_lowercase();
    assert!(text.starts_with("http/1.1 200"), "{text}");
    assert!(text.contains("x-amz-rdma-reply: 200"), "{text}");
    assert!(text.contains(&format!("x-amz-rdma-bytes-transferred: {len}")), "{text}");
    assert!(text.contains("connection: close"), "{text}");

    // The next request, on a new connection, works, and the object is the window's bytes.
    assert_eq!(&c.get_object("gpu", "lmcache@1@0@abc@bfloat16").await.unwrap()[..], &src[..]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_token_gets_into_distinct_windows_of_one_registration() {
    let gw = Gateway::start();
    let (c, target) = setup(&gw).await;
    let n = 16usize;
    let size = (1 << 20) + 777;
    let mut objects = Vec::new();
    for i in 0..n {
        let d = pattern(100 + i as u64, size);
        c.put_object("gpu", &format!("kv/{i}"), d.clone().into()).await.unwrap();
        objects.push(d);
    }
    let stride = 2 << 20;
    let region = std::sync::Arc::new(target.register(n * stride));
    let mut tasks = Vec::new();
    for i in 0..n {
        let (c, region) = (c.clone(), region.clone());
        tasks.push(tokio::spawn(async move {
            let tok = region.token((i * stride) as u64, stride as u64).unwrap();
            c.get_into("gpu", &format!("kv/{i}"), &tok, None).await.unwrap().bytes
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap(), size as u64);
    }
    for (i, d) in objects.iter().enumerate() {
        assert_eq!(&region.to_vec(i * stride, size), d, "window {i}");
        assert!(region.to_vec(i * stride + size, stride - size).iter().all(|&b| b == 0));
    }
}

/// A file truncated while a token GET reads it (a compute session rewriting it in the folder):
/// the GET fails with 500 `InternalError`; it must not report a short transfer as the object.
/// A target of the test's own (the wire format of docs/rdma.md) truncates the file before it
/// acknowledges the first operation, so the operations after the first four read past the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_file_that_shrinks_during_a_token_get_fails_the_get() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    let gw = Gateway::start();
    let c = Client::new(&gw.endpoint, ACCESS_KEY, SECRET_KEY);
    c.create_bucket("gpu").await.unwrap();
    let chunk = penstock_rdma::transport::CHUNK;
    let data = pattern(6, 6 * chunk);
    c.put_object("gpu", "big", data.clone().into()).await.unwrap();
    let file = gw.folder_dir("big").join("big");

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let truncated = Arc::new(AtomicBool::new(false));
    let t = truncated.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let (mut s, file, t) = (conn.unwrap(), file.clone(), t.clone());
            std::thread::spawn(move || {
                let mut h = [0u8; 48];
                while s.read_exact(&mut h).is_ok() {
                    assert_eq!((&h[..4], h[4]), (&b"PSW1"[..], 1), "the gateway only writes on a GET");
                    let len = u64::from_le_bytes(h[40..48].try_into().unwrap()) as usize;
                    let mut payload = vec![0; len];
                    s.read_exact(&mut payload).unwrap();
                    if !t.swap(true, Ordering::SeqCst) {
                        std::fs::OpenOptions::new().write(true).open(&file).unwrap().set_len(1 << 20).unwrap();
                    }
                    s.write_all(&[0; 8]).unwrap();
                }
            });
        }
    });
    let token = format!("swt1:127.0.0.1:{port}:{:016x}:{}:{:016x}:{:016x}", 1, "0".repeat(32), 0, data.len());
    let r = c
        .send(Method::GET, &c.url("gpu", Some("big")), &[("x-amz-rdma-token", &token)], bytes::Bytes::new())
        .await
        .unwrap();
    assert!(truncated.load(Ordering::SeqCst), "the target never saw an operation");
    assert_eq!((r.status.as_u16(), code(&r).as_str()), (500, "InternalError"), "{:?}", r.headers);
}

/// Objects stored with a customer key (SSE-C) move through tokens too: a token PUT with the key
/// is stored encrypted, a token GET with it fills the window with the plaintext, one without it
/// is refused before anything moves.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn customer_keyed_objects_move_through_tokens() {
    use base64::Engine as _;
    use md5::Digest as _;
    let gw = Gateway::start();
    let (c, target) = setup(&gw).await;
    let b64 = base64::engine::general_purpose::STANDARD;
    let (key, key_md5) = (b64.encode([5u8; 32]), b64.encode(md5::Md5::digest([5u8; 32])));
    let sse = [
        ("x-amz-server-side-encryption-customer-algorithm", "AES256"),
        ("x-amz-server-side-encryption-customer-key", key.as_str()),
        ("x-amz-server-side-encryption-customer-key-md5", key_md5.as_str()),
    ];
    let region = target.register(8 << 20);
    let src = pattern(3, 3 << 20 | 7);
    region.write(0, &src);
    let r = c.put_from("gpu", "sealed", &region.token(0, src.len() as u64).unwrap(), &sse).await.unwrap();
    assert_eq!((r.rdma_reply, r.bytes), (Some(200), src.len() as u64));
    let on_disk = std::fs::read(gw.folder_dir("sealed").join("sealed")).unwrap();
    assert_eq!(on_disk.len(), src.len());
    assert_ne!(on_disk[..4096], src[..4096], "stored encrypted");

    let window = region.token(4 << 20, 4 << 20).unwrap().to_string();
    let url = c.url("gpu", Some("sealed"));
    let refused = c.send(Method::GET, &url, &[("x-amz-rdma-token", &window)], bytes::Bytes::new()).await.unwrap();
    assert_eq!((refused.status.as_u16(), code(&refused).as_str()), (400, "InvalidRequest"));
    assert!(region.to_vec(4 << 20, 4096).iter().all(|&b| b == 0), "nothing moved");
    let mut headers = vec![("x-amz-rdma-token", window.as_str())];
    headers.extend(sse);
    let r = c.send(Method::GET, &url, &headers, bytes::Bytes::new()).await.unwrap();
    assert_eq!(r.status.as_u16(), 200);
    assert_eq!(header(&r, REPLY_HEADER), Some("200"));
    assert_eq!(region.to_vec(4 << 20, src.len()), src, "the plaintext in the window");
}
