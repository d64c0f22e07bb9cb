//! Connection limits and timeouts (issue #16): slow, idle and stalled connections are closed,
//! the cap holds, and the admin listener answers throughout.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use aws_sdk_s3::presigning::PresigningConfig;
use penstock_tests::raw::Conn;
use penstock_tests::Gateway;

/// A PutObject of `key` in bucket `slow`, presigned for 10 minutes.
async fn presigned_put(c: &aws_sdk_s3::Client, key: &str) -> aws_sdk_s3::presigning::PresignedRequest {
    c.put_object()
        .bucket("slow")
        .key(key)
        .presigned(PresigningConfig::expires_in(Duration::from_secs(600)).unwrap())
        .await
        .unwrap()
}

/// Reads from `s` until EOF or error; true when the peer closed within `limit`.
fn closed_within(s: &mut TcpStream, limit: Duration) -> bool {
    s.set_read_timeout(Some(limit)).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut => {
                return false
            }
            Err(_) => return true,
        }
    }
}

fn metric(gw: &Gateway, name: &str) -> f64 {
    let mut s = TcpStream::connect(gw.admin_addr()).unwrap();
    write!(s, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text.lines().filter(|l| l.starts_with(name)).filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok()).sum()
}

fn open_fds(gw: &Gateway) -> usize {
    std::fs::read_dir(format!("/proc/{}/fd", gw.pid())).unwrap().count()
}

/// Slowloris heads, idle keep-alive connections and stalled bodies are closed; a slow upload
/// that keeps sending is not; at the connection cap the gateway stops accepting (descriptors
/// stay bounded) and serves again as soon as connections go away; the admin listener answers
/// throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_idle_and_stalled_connections_are_closed() {
    limits_hold("").await;
}

/// The same with connections on two connection threads of their own (`threads = 2`): every limit
/// holds there too, and the threads are the ones serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_hold_on_connection_threads() {
    let gw = limits_hold("threads = 2\n").await;
    let names: Vec<String> = gw.thread_names().into_iter().filter(|n| n.starts_with("penstock-conn")).collect();
    assert_eq!(names.len(), 2, "connection threads: {names:?}");
}

async fn limits_hold(extra: &str) -> Gateway {
    let gw = Gateway::start_with_config(&format!(
        "[connections]\nmax = 16\nheader_read_timeout_secs = 1\nidle_timeout_secs = 2\nbody_stall_timeout_secs = 1\n{extra}"
    ));
    let c = gw.client();
    c.create_bucket().bucket("slow").send().await.unwrap();
    let host = gw.endpoint.trim_start_matches("http://").to_owned();

    // A request head that trickles in is cut off.
    let mut slow = TcpStream::connect(&host).unwrap();
    slow.write_all(b"GET /slow HTTP/1.1\r\nHo").unwrap();
    assert!(closed_within(&mut slow, Duration::from_secs(4)), "a slowloris head was kept");

    // An idle keep-alive connection is closed after its request.
    let url = presigned_put(&c, "k").await;
    let mut conn = Conn::open(&gw);
    conn.send_head(&url, &[("Content-Length", "3".into())]);
    conn.send(b"abc");
    assert_eq!(conn.answer(false).status, 200);
    assert!(closed_within(&mut conn.w, Duration::from_secs(5)), "an idle connection was kept");

    // A body that stops arriving fails with RequestTimeout and stores nothing.
    let url = presigned_put(&c, "stalled").await;
    let mut conn = Conn::open(&gw);
    conn.send_head(&url, &[("Content-Length", "100".into())]);
    conn.send(b"0123456789");
    let a = conn.answer(false);
    assert_eq!(a.status, 400, "{}", String::from_utf8_lossy(&a.body));
    assert!(String::from_utf8_lossy(&a.body).contains("RequestTimeout"));
    assert!(c.head_object().bucket("slow").key("stalled").send().await.is_err());

    // A slow body that keeps coming (a byte every 0.4 s against a 1 s stall limit) is stored.
    let url = presigned_put(&c, "trickle").await;
    let mut conn = Conn::open(&gw);
    conn.send_head(&url, &[("Content-Length", "8".into())]);
    for b in b"trickled" {
        std::thread::sleep(Duration::from_millis(400));
        conn.send(&[*b]);
    }
    assert_eq!(conn.answer(false).status, 200);
    assert_eq!(penstock_tests::get(&c, "slow", "trickle").await, b"trickled");

    // 40 silent connections against a cap of 16: descriptors stay bounded, the admin listener
    // answers, and a real request gets through once the silent ones time out.
    let before = open_fds(&gw);
    let idle: Vec<TcpStream> = (0..40).map(|_| TcpStream::connect(&host).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(300));
    let during = open_fds(&gw);
    assert!(during <= before + 16 + 2, "descriptors grew from {before} to {during} past the cap");
    let mut health = TcpStream::connect(gw.admin_addr()).unwrap();
    write!(health, "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut h = String::new();
    health.read_to_string(&mut h).unwrap();
    assert!(h.starts_with("HTTP/1.1 200"), "health: {h}");
    let started = Instant::now();
    let body = penstock_tests::get(&c, "slow", "k").await;
    assert_eq!(body, b"abc");
    assert!(started.elapsed() < Duration::from_secs(15));
    drop(idle);

    assert!(metric(&gw, "penstock_connections_closed_by_gateway_total{reason=\"header_timeout\"}") >= 1.0);
    assert!(metric(&gw, "penstock_connections_closed_by_gateway_total{reason=\"body_stall\"}") >= 1.0);
    assert!(metric(&gw, "penstock_connections_deferred_total") >= 1.0);
    assert!(metric(&gw, "penstock_connections_open") >= 0.0);
    gw
}
