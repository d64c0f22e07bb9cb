//! The crash workload shared by the kill -9 test (`reliability.rs`) and the power-cut test
//! (`power_loss.rs`): workers overwrite, delete and complete multipart uploads of their own keys
//! until the gateway goes away, keeping a ledger of what was acknowledged; after the restart
//! [`settle`] checks each key and the listing against the ledgers.

use std::collections::HashMap;

use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use md5::{Digest, Md5};

use crate::{md5_hex, pattern};

/// What a key should hold: absent, or one write's bytes and metadata.
#[derive(Clone, Debug, PartialEq)]
pub enum State {
    /// No object at the key.
    Absent,
    /// One write's bytes (their MD5 and length), ETag and `x-amz-meta-v`.
    Present { etag: String, md5: String, len: usize, v: u64 },
}

/// What the gateway answers for a key now.
pub async fn observe(c: &aws_sdk_s3::Client, bucket: &str, key: &str) -> Result<State, String> {
    match c.get_object().bucket(bucket).key(key).send().await {
        Ok(o) => {
            let etag = o.e_tag().unwrap_or_default().to_owned();
            if o.content_type() != Some("application/x-qa") {
                return Err(format!("{key}: content type {:?}", o.content_type()));
            }
            let v = o
                .metadata()
                .and_then(|m| m.get("v"))
                .and_then(|v| v.parse().ok())
                .ok_or(format!("{key}: metadata lost (ETag {etag})"))?;
            let body = o.body.collect().await.unwrap().into_bytes();
            Ok(State::Present { etag, md5: md5_hex(&body), len: body.len(), v })
        }
        Err(e) if e.code() == Some("NoSuchKey") => Ok(State::Absent),
        Err(e) => Err(format!("{key}: GET failed: {e:?}")),
    }
}

/// One worker's keys: what was acknowledged, and the write in flight when the gateway died.
#[derive(Default)]
pub struct Ledger {
    /// The state of each key after its last acknowledged write.
    pub acked: HashMap<String, State>,
    /// The write that was under way when the gateway went away.
    pub in_flight: Option<(String, State)>,
}

/// Writes to its own keys (PUT, overwrite, multipart, delete) until the gateway goes away.
/// `keys(w, round, seq)` names the key of the worker's `seq`th write in `round`.
pub async fn worker(
    c: aws_sdk_s3::Client,
    bucket: String,
    keys: fn(u64, u64, u64) -> String,
    w: u64,
    round: u64,
    mut ledger: Ledger,
) -> Ledger {
    let mut seq = 0u64;
    loop {
        seq += 1;
        let v = (round << 40) | (w << 32) | seq;
        let key = keys(w, round, seq);
        let op = seq % 7;
        let (expect, result) = if op == 6 {
            ledger.in_flight = Some((key.clone(), State::Absent));
            let r = c.delete_object().bucket(&bucket).key(&key).send().await.map(|_| ());
            (State::Absent, r.map_err(|e| format!("{e:?}")))
        } else if op == 5 {
            // A one-part multipart upload.
            let body = pattern(v, 100_000 + (seq as usize % 5) * 1000);
            let part_md5 = Md5::digest(&body);
            let mut all = Md5::new();
            all.update(part_md5);
            let etag = format!("\"{}-1\"", hex::encode(all.finalize()));
            let state = State::Present { etag, md5: md5_hex(&body), len: body.len(), v };
            ledger.in_flight = Some((key.clone(), state.clone()));
            let r = async {
                let up = c
                    .create_multipart_upload()
                    .bucket(&bucket)
                    .key(&key)
                    .content_type("application/x-qa")
                    .metadata("v", v.to_string())
                    .send()
                    .await
                    .map_err(|e| format!("{e:?}"))?;
                let id = up.upload_id().unwrap().to_owned();
                let p = c
                    .upload_part()
                    .bucket(&bucket)
                    .key(&key)
                    .upload_id(&id)
                    .part_number(1)
                    .body(ByteStream::from(body))
                    .send()
                    .await
                    .map_err(|e| format!("{e:?}"))?;
                let parts = CompletedMultipartUpload::builder()
                    .parts(CompletedPart::builder().part_number(1).e_tag(p.e_tag().unwrap()).build())
                    .build();
                c.complete_multipart_upload()
                    .bucket(&bucket)
                    .key(&key)
                    .upload_id(&id)
                    .multipart_upload(parts)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| format!("{e:?}"))
            }
            .await;
            (state, r)
        } else {
            let len = [0usize, 1, 4096, 70_000, 1 << 20][(seq % 5) as usize];
            let body = pattern(v, len);
            let state = State::Present { etag: format!("\"{}\"", md5_hex(&body)), md5: md5_hex(&body), len, v };
            ledger.in_flight = Some((key.clone(), state.clone()));
            let r = c
                .put_object()
                .bucket(&bucket)
                .key(&key)
                .content_type("application/x-qa")
                .metadata("v", v.to_string())
                .body(ByteStream::from(body))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| format!("{e:?}"));
            (state, r)
        };
        match result {
            Ok(()) => {
                ledger.acked.insert(key, expect);
                ledger.in_flight = None;
            }
            // The gateway was killed: this write may or may not have happened.
            Err(_) => return ledger,
        }
    }
}

/// After a restart: every worker's keys hold their acknowledged state (or, for the one write in
/// flight per worker, either outcome, which then counts as acknowledged), and the bucket's listing
/// shows exactly the present keys with their ETags. Answers what is wrong.
pub async fn settle(c: &aws_sdk_s3::Client, bucket: &str, round: u64, ledgers: &mut [Ledger]) -> Vec<String> {
    let mut problems = Vec::new();
    for l in ledgers.iter_mut() {
        let mut keys: Vec<String> = l.acked.keys().cloned().collect();
        if let Some((k, _)) = &l.in_flight {
            keys.push(k.clone());
        }
        keys.sort();
        keys.dedup();
        for key in keys {
            let now = match observe(c, bucket, &key).await {
                Ok(s) => s,
                Err(e) => {
                    problems.push(e);
                    continue;
                }
            };
            let acked = l.acked.get(&key).cloned().unwrap_or(State::Absent);
            let pending = l.in_flight.as_ref().filter(|(k, _)| *k == key).map(|(_, s)| s.clone());
            let fits = |s: &State| match (s, &now) {
                (State::Absent, State::Absent) => true,
                (State::Present { etag, md5, len, v }, State::Present { etag: e2, md5: m2, len: l2, v: v2 }) => {
                    etag == e2 && md5 == m2 && len == l2 && v == v2
                }
                _ => false,
            };
            if fits(&acked) {
                continue;
            }
            match pending {
                Some(p) if fits(&p) => {
                    // The write in flight landed: it is now the acknowledged state.
                    l.acked.insert(key.clone(), p);
                }
                _ => problems.push(format!(
                    "round {round}: {key} is {now:?}, acknowledged {acked:?}, in flight {:?}",
                    l.in_flight
                )),
            }
        }
        l.in_flight = None;
    }
    // Listings show exactly the keys that are present, with their records' ETags.
    let listed = c.list_objects_v2().bucket(bucket).send().await.unwrap();
    let mut present: HashMap<String, String> = HashMap::new();
    for l in ledgers.iter() {
        for (k, s) in &l.acked {
            if let State::Present { etag, .. } = s {
                present.insert(k.clone(), etag.clone());
            }
        }
    }
    let seen: HashMap<String, String> = listed
        .contents()
        .iter()
        .map(|o| (o.key().unwrap().to_owned(), o.e_tag().unwrap_or_default().to_owned()))
        .collect();
    if seen != present {
        problems.push(format!("round {round}: listing {seen:?} != present {present:?}"));
    }
    problems
}

/// Keys in directories that each round makes anew (`w1/r3/d2/k0`), for [`worker`]: a power cut
/// then also finds directories created since the last one, and keys of earlier rounds are
/// checked again later.
pub fn key_in_new_dirs(w: u64, round: u64, seq: u64) -> String {
    format!("w{w}/r{round}/d{}/k{}", seq % 3, seq % 4)
}

/// `c` without retries: it fails at once when the gateway is gone, so a worker stops at the kill.
pub fn without_retries(c: &aws_sdk_s3::Client) -> aws_sdk_s3::Client {
    let conf = c.config().to_builder().retry_config(aws_sdk_s3::config::retry::RetryConfig::disabled()).build();
    aws_sdk_s3::Client::from_conf(conf)
}

/// A number from the environment (how many rounds, how many seconds), else `default`.
pub fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}
