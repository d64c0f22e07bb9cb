//! Sharing beyond tenancy, through aws-sdk-s3 and unsigned HTTP: bucket policies and the public
//! access block (`policy`), ACLs (`acl`), CORS (`cors`) and browser-form uploads (`forms`).

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::PublicAccessBlockConfiguration;
use aws_sdk_s3::Client;
use penstock_tests::raw::{Answer, Conn};
use penstock_tests::s3::{code, mkbucket, status};
use penstock_tests::{get, put, Gateway};

mod acl;
mod cors;
mod forms;
mod policy;

fn anon(gw: &Gateway, method: &str, path: &str) -> Answer {
    Conn::open(gw).unsigned(method, path, &[], b"")
}

fn anon_put(gw: &Gateway, path: &str, body: &[u8]) -> Answer {
    Conn::open(gw).unsigned("PUT", path, &[], body)
}

/// The S3 error code in an XML error body.
fn xml_code(a: &Answer) -> String {
    let b = String::from_utf8_lossy(&a.body);
    b.split("<Code>").nth(1).and_then(|r| r.split("</Code>").next()).unwrap_or_default().to_owned()
}

async fn set_policy(c: &Client, bucket: &str, policy: &str) {
    c.put_bucket_policy().bucket(bucket).policy(policy).send().await.unwrap();
}

fn public_read(bucket: &str, prefix: &str) -> String {
    format!(
        r#"{{"Version": "2012-10-17", "Statement": [{{"Sid": "PublicRead", "Effect": "Allow", "Principal": "*",
            "Action": "s3:GetObject", "Resource": "arn:aws:s3:::{bucket}/{prefix}*"}}]}}"#
    )
}
