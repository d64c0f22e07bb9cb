//! Operations: Prometheus metrics after a scripted workload, request ids from response to log,
//! JSON logs without secrets, health and readiness, and start-up config validation.

use aws_sdk_s3::operation::RequestId;
use aws_sdk_s3::primitives::ByteStream;
use penstock_tests::{Gateway, ACCESS_KEY, SECRET_KEY};

/// The value of one sample line, e.g. `penstock_s3_requests_total{operation="PutObject",status="200"}`.
fn sample(metrics: &str, series: &str) -> f64 {
    metrics.lines().find_map(|l| l.strip_prefix(series).and_then(|rest| rest.trim().parse::<f64>().ok())).unwrap_or(0.0)
}

#[tokio::test]
async fn metrics_follow_a_scripted_workload() {
    let (gw, c) = Gateway::with_bucket("metered").await;
    let sizes = [1000usize, 20_000, 300_000];
    for (i, n) in sizes.iter().enumerate() {
        c.put_object()
            .bucket("metered")
            .key(format!("k{i}"))
            .body(ByteStream::from(vec![1u8; *n]))
            .send()
            .await
            .unwrap();
    }
    for i in 0..2 {
        c.get_object().bucket("metered").key(format!("k{i}")).send().await.unwrap().body.collect().await.unwrap();
    }
    assert!(c.get_object().bucket("metered").key("absent").send().await.is_err());
    c.create_multipart_upload().bucket("metered").key("open").send().await.unwrap();

    let (status, m) = gw.admin_get("/metrics");
    assert_eq!(status, 200);
    let put = sample(&m, "penstock_s3_requests_total{operation=\"PutObject\",status=\"200\"}");
    assert_eq!(put, 3.0, "{m}");
    assert_eq!(sample(&m, "penstock_s3_requests_total{operation=\"GetObject\",status=\"200\"}"), 2.0);
    assert_eq!(sample(&m, "penstock_s3_requests_total{operation=\"GetObject\",status=\"404\"}"), 1.0);
    assert_eq!(sample(&m, "penstock_s3_errors_total{code=\"NoSuchKey\"}"), 1.0);
    let bytes_in = sample(&m, "penstock_payload_bytes_total{path=\"http\",direction=\"in\"}");
    assert_eq!(bytes_in, sizes.iter().sum::<usize>() as f64);
    let bytes_out = sample(&m, "penstock_payload_bytes_total{path=\"http\",direction=\"out\"}");
    assert_eq!(bytes_out, (sizes[0] + sizes[1]) as f64);
    assert_eq!(sample(&m, "penstock_s3_request_duration_seconds_count{operation=\"PutObject\"}"), 3.0);
    assert_eq!(sample(&m, "penstock_multipart_uploads_open"), 1.0);
    assert_eq!(sample(&m, "penstock_s3_requests_in_flight"), 0.0);
    // A PUT's sync, rename and the metadata writes around them are one blocking call.
    assert!(m.contains("penstock_backend_io_duration_seconds_count{volume=\"local\",op=\"publish\"}"), "{m}");
    assert!(m.contains("penstock_rocksdb_property{property=\"cur_size_all_mem_tables\"}"));
    let usage =
        m.lines().find(|l| l.starts_with("penstock_quota_usage_bytes{scope=\"user:")).expect("quota usage series");
    assert!(usage.ends_with(&format!(" {}", sizes.iter().sum::<usize>())), "{usage}");

    let (status, body) = gw.admin_get("/health");
    assert_eq!((status, body.contains("ok")), (200, true));
    let (status, body) = gw.admin_get("/ready");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("volume:local"));
    let (status, _) = gw.admin_get("/v1/domains");
    assert_eq!(status, 401, "management routes need the token");
}

#[tokio::test]
async fn request_ids_reach_json_logs_and_secrets_do_not() {
    let gw = Gateway::start_with_config("log_format = \"json\"\n");
    let c = gw.client();
    c.create_bucket().bucket("traced").send().await.unwrap();
    let put = c.put_object().bucket("traced").key("a/b.txt").body(ByteStream::from_static(b"x")).send().await.unwrap();
    let id = put.request_id().expect("x-amz-request-id").to_owned();
    assert_eq!(id.len(), 16);
    // Presigned and header-signed requests both carry signatures; none may be logged.
    let _ = c.get_object().bucket("traced").key("missing").send().await;
    std::thread::sleep(std::time::Duration::from_millis(200));
    let log = gw.log();
    let line = log.lines().find(|l| l.contains(&id)).unwrap_or_else(|| panic!("request id {id} not in log:\n{log}"));
    let v: serde_json::Value = serde_json::from_str(line).expect("JSON log line");
    let span = &v["span"];
    assert_eq!(span["request_id"], id.as_str(), "{line}");
    assert_eq!(span["operation"], "PutObject", "{line}");
    assert_eq!(span["bucket"], "traced");
    assert_eq!(span["key"], "a/b.txt");
    assert_eq!(span["status"], 200);
    assert!(span["tenant"].as_str().unwrap().contains(ACCESS_KEY));
    assert!(!log.contains(SECRET_KEY), "secret key in log");
    assert!(!log.contains("Signature="), "signature in log");
    assert!(!log.to_ascii_lowercase().contains("authorization"), "authorization header in log");
    assert!(log.contains("NoSuchKey"));
}

#[test]
fn bad_config_fails_start_up_with_a_precise_message() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("fsync = \"yes\"\n", "fsync"),
        ("listen = \"not an address\"\n", "listen"),
        ("lissten = \"127.0.0.1:1\"\n", "lissten"),
        ("default_volume = \"nope\"\n", "default_volume"),
        ("[[volumes]]\nname = \"v\"\nbackend = \"ceph\"\npath = \"/x\"\n", "ceph"),
        ("[[volumes]]\nname = \"v\"\nbackend = \"nfs\"\npath = \"/x\"\n", "url"),
        ("master_key = \"c2hvcnQ=\"\n", "master key"),
        ("[metadata]\nengine = \"postgres\"\n", "PENSTOCK_METADATA_URL"),
        ("[metadata]\nengine = \"mysql\"\n", "mysql"),
        ("[metadata]\nheartbeat_secs = 10.0\ngone_after_secs = 5.0\n", "gone_after_secs"),
        ("heap_release_mib = -1\n", "heap_release_mib"),
    ];
    for (i, (toml, needle)) in cases.iter().enumerate() {
        let cfg = dir.path().join(format!("bad{i}.toml"));
        std::fs::write(&cfg, toml).unwrap();
        let check =
            std::process::Command::new(penstock_tests::binary()).args(["config", "check"]).arg(&cfg).output().unwrap();
        let serve = std::process::Command::new(penstock_tests::binary())
            .args(["serve", "--config"])
            .arg(&cfg)
            .arg("--data-dir")
            .arg(dir.path().join(format!("data{i}")))
            .args(["--listen", "127.0.0.1:1", "--admin-listen", "127.0.0.1:1"])
            .output()
            .unwrap();
        for (what, out) in [("check", &check), ("serve", &serve)] {
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{what} accepted {toml:?}");
            assert!(err.contains(needle), "{what} {toml:?}: message does not name {needle:?}: {err}");
            assert!(!err.contains("backtrace"), "{err}");
        }
    }
}

/// The thread that hands freed heap back to the system runs by default (glibc) and not with
/// `heap_release_mib = 0`.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn the_heap_release_thread_follows_its_setting() {
    let on = Gateway::start();
    let names = on.thread_names();
    assert_eq!(names.iter().filter(|n| *n == "heap-release").count(), 1, "{names:?}");
    let off = Gateway::start_with_config("heap_release_mib = 0\n");
    let names = off.thread_names();
    assert!(!names.iter().any(|n| n == "heap-release"), "{names:?}");
}

/// Reads the server's opening HTTP/2 frames over h2c and checks that a sender's per-stream window
/// can never run out before its connection window does: with a stream window of at least twice
/// the connection window, a stream's remaining window stays above half of it minus the
/// connection window. awscrt's HTTP/2 client crashes on a stream WINDOW_UPDATE that arrives after
/// it sent a whole body with its stream window used up (see `H2_STREAM_WINDOW` in
/// gateway/src/server.rs; compat/awscrt.sh's 1 MiB phase crashed it every run before).
#[test]
fn h2_stream_windows_never_bind_before_the_connection_window() {
    use std::io::{Read, Write};
    let gw = Gateway::start();
    let addr = gw.endpoint.trim_start_matches("http://");
    let mut sock = std::net::TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
    sock.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").unwrap();
    sock.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).unwrap(); // our empty SETTINGS

    const DEFAULT_WINDOW: u64 = 65_535;
    let (mut stream_window, mut conn_window) = (None, DEFAULT_WINDOW);
    let (mut saw_settings, mut saw_conn_update) = (false, false);
    while !(saw_settings && saw_conn_update) {
        let mut head = [0u8; 9];
        sock.read_exact(&mut head).expect("the server's opening frames");
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let (kind, flags) = (head[3], head[4]);
        let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
        let mut payload = vec![0u8; len];
        sock.read_exact(&mut payload).unwrap();
        match kind {
            4 if flags & 1 == 0 => {
                saw_settings = true;
                for entry in payload.chunks_exact(6) {
                    if u16::from_be_bytes([entry[0], entry[1]]) == 4 {
                        stream_window = Some(u32::from_be_bytes([entry[2], entry[3], entry[4], entry[5]]) as u64);
                    }
                }
            }
            8 if stream == 0 => {
                saw_conn_update = true;
                conn_window +=
                    (u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]) & 0x7fff_ffff) as u64;
            }
            _ => {}
        }
    }
    let stream_window = stream_window.unwrap_or(DEFAULT_WINDOW);
    assert!(conn_window >= 1 << 20, "connection window {conn_window} throttles multi-MiB uploads");
    assert!(
        stream_window >= 2 * conn_window + 512,
        "stream window {stream_window} can bind before the connection window {conn_window}"
    );
}
