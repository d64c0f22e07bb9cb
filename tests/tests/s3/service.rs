//! The service as a whole: authentication and graceful shutdown.

use penstock_tests::{code, Gateway, ACCESS_KEY};

#[tokio::test]
async fn authentication() {
    let gw = Gateway::start();
    let bad_secret = gw.client_with(ACCESS_KEY, "wrong-secret");
    let e = bad_secret.list_buckets().send().await.unwrap_err();
    assert_eq!(code(&e), "SignatureDoesNotMatch");
    let unknown = gw.client_with("NOSUCHKEY", "whatever");
    let e = unknown.list_buckets().send().await.unwrap_err();
    assert_eq!(code(&e), "InvalidAccessKeyId");
}

#[tokio::test]
async fn graceful_shutdown() {
    let (gw, _c) = Gateway::with_bucket("bye").await;
    let st = gw.terminate();
    assert!(st.success(), "exit status {st:?}");
}
