//! Atomic publish under concurrency and crashes, through a real SDK and raw sockets.

use std::io::Write;
use std::time::Duration;

use aws_sdk_s3::presigning::PresigningConfig;
use aws_sdk_s3::primitives::ByteStream;
use md5::{Digest, Md5};
use penstock_tests::Gateway;

/// Concurrent PUTs of one key: the object is exactly one writer's bytes, with that writer's ETag.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn last_writer_wins_never_a_mix() {
    let (_gw, c) = Gateway::with_bucket("race").await;
    for round in 0..3 {
        let mut tasks = Vec::new();
        for w in 0..8u8 {
            let c = c.clone();
            tasks.push(tokio::spawn(async move {
                let body = vec![w.wrapping_add(round * 10); 1 << 20];
                c.put_object().bucket("race").key("k").body(ByteStream::from(body)).send().await.unwrap();
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let o = c.get_object().bucket("race").key("k").send().await.unwrap();
        let etag = o.e_tag().unwrap().to_owned();
        let bytes = o.body.collect().await.unwrap().into_bytes();
        assert_eq!(bytes.len(), 1 << 20);
        assert!(bytes.iter().all(|b| *b == bytes[0]), "bytes of several writers mixed");
        assert_eq!(etag, format!("\"{}\"", hex::encode(Md5::digest(&bytes))), "record and bytes disagree");
    }
}

/// A crash in the middle of an upload exposes nothing; the leftover staging file is swept on
/// restart; acknowledged writes survive.
#[tokio::test]
async fn crash_mid_upload_exposes_nothing() {
    let mut gw = Gateway::start();
    let c = gw.client();
    c.create_bucket().bucket("crash").send().await.unwrap();
    c.put_object().bucket("crash").key("acked").body(ByteStream::from_static(b"durable")).send().await.unwrap();
    let url = c
        .put_object()
        .bucket("crash")
        .key("partial")
        .presigned(PresigningConfig::expires_in(Duration::from_secs(300)).unwrap())
        .await
        .unwrap();
    let uri: http::Uri = url.uri().parse().unwrap();
    let mut sock = std::net::TcpStream::connect(uri.authority().unwrap().as_str()).unwrap();
    let total = 8 << 20;
    write!(
        sock,
        "PUT {} HTTP/1.1\r\nHost: {}\r\nContent-Length: {total}\r\n\r\n",
        uri.path_and_query().unwrap(),
        uri.authority().unwrap()
    )
    .unwrap();
    sock.write_all(&vec![7u8; total / 2]).unwrap();
    sock.flush().unwrap();
    // Wait until the staging file holds data, then crash.
    let tmp = gw.folder_dir("acked").join(".penstock/tmp");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::fs::read_dir(&tmp).unwrap().next().is_none() {
        assert!(std::time::Instant::now() < deadline, "no staging file appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    gw.crash_and_restart();
    drop(sock);

    let c = gw.client();
    let e = c.head_object().bucket("crash").key("partial").send().await.unwrap_err();
    assert_eq!(e.raw_response().unwrap().status().as_u16(), 404);
    let acked = c.get_object().bucket("crash").key("acked").send().await.unwrap();
    assert_eq!(acked.body.collect().await.unwrap().into_bytes().as_ref(), b"durable");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::fs::read_dir(&tmp).unwrap().next().is_some() {
        assert!(std::time::Instant::now() < deadline, "staging leftovers were not swept");
        std::thread::sleep(Duration::from_millis(50));
    }
}
