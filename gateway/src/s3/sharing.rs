//! Sharing a bucket beyond its tenancy: bucket policies (Put/Get/DeleteBucketPolicy,
//! GetBucketPolicyStatus), the public access block (Put/Get/DeletePublicAccessBlock) and the
//! access decision that combines them with the folder permissions (`docs/sharing.md`).

use std::collections::HashMap;
use std::sync::Arc;

use http::{HeaderMap, StatusCode, Uri};
use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result};

use penstock_metadata::{AclGrant, BucketRecord, PublicAccessBlock as Block, Role};

use super::acl::acls_enabled;
use super::error::custom;
use super::policy::{action_of, principal_names, Ctx, Decision, Policy};
use super::{caller, meta_err, Gateway};
use crate::auth::Caller;

/// Bucket policies as parsed, by folder, so a request (or each key of a DeleteObjects) does not
/// parse the stored text again. An entry holds for as long as the bucket's name and policy text
/// are the ones it was parsed from: the record each request reads decides, so a policy changed
/// by another gateway is seen as soon as its record is.
#[derive(Default)]
pub(crate) struct ParsedPolicies {
    by_folder: std::sync::Mutex<HashMap<uuid::Uuid, Parsed>>,
}

struct Parsed {
    name: String,
    text: String,
    /// `None`: the stored text does not parse (warned once, then ignored as no policy).
    policy: Option<Arc<Policy>>,
}

/// Entries kept before the table starts over; each is a policy of at most 20 KiB.
const MAX_PARSED_POLICIES: usize = 4096;

impl ParsedPolicies {
    /// The policy of bucket `rec`, parsed; `None` when it has none (or one that does not parse).
    pub(crate) fn of(&self, rec: &BucketRecord) -> Option<Arc<Policy>> {
        let text = rec.policy.as_deref()?;
        let mut table = self.by_folder.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = table.get(&rec.folder_id) {
            if p.text == text && p.name == rec.name {
                return p.policy.clone();
            }
        }
        let policy = match Policy::parse(text, &rec.name) {
            Ok(p) => Some(Arc::new(p)),
            Err(e) => {
                tracing::warn!(bucket = %rec.name, error = %e, "stored bucket policy does not parse; ignored");
                None
            }
        };
        if table.len() >= MAX_PARSED_POLICIES {
            table.clear();
        }
        let entry = Parsed {
            name: rec.name.clone(),
            text: text.to_owned(),
            policy: policy.clone(),
        };
        table.insert(rec.folder_id, entry);
        policy
    }
}

/// What the access check knows of a request, for policy conditions.
pub(crate) struct RequestFacts<'a> {
    pub op: &'a str,
    pub key: Option<&'a str>,
    /// A version the request names outside its query: a key's `VersionId` in a DeleteObjects
    /// document (a `versionId` in the query counts too).
    pub version: Option<&'a str>,
    pub uri: &'a Uri,
    pub headers: &'a HeaderMap,
    pub peer: Option<std::net::IpAddr>,
}

fn query_pairs(uri: &Uri) -> impl Iterator<Item = (String, String)> + '_ {
    let decode = |s: &str| {
        let s = s.replace('+', " ");
        percent_encoding::percent_decode_str(&s)
            .decode_utf8_lossy()
            .into_owned()
    };
    uri.query()
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
        .map(move |p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
}

/// The ACL permission an operation needs, and whether of the object (else of the bucket).
fn acl_need(op: &str) -> Option<(bool, &'static str)> {
    Some(match op {
        "ListObjects" | "ListObjectsV2" | "ListObjectVersions" | "ListMultipartUploads" | "HeadBucket" => {
            (false, "READ")
        }
        "PutObject"
        | "PostObject"
        | "CreateMultipartUpload"
        | "UploadPart"
        | "UploadPartCopy"
        | "CompleteMultipartUpload"
        | "AbortMultipartUpload"
        | "ListParts"
        | "DeleteObject"
        | "DeleteObjects"
        | "CopyObject" => (false, "WRITE"),
        "GetBucketAcl" => (false, "READ_ACP"),
        "PutBucketAcl" => (false, "WRITE_ACP"),
        "GetObject" | "HeadObject" => (true, "READ"),
        "GetObjectAcl" => (true, "READ_ACP"),
        "PutObjectAcl" => (true, "WRITE_ACP"),
        _ => return None,
    })
}

/// Header-borne condition keys of S3, by header name.
const HEADER_KEYS: &[&str] = &[
    "x-amz-acl",
    "x-amz-copy-source",
    "x-amz-metadata-directive",
    "x-amz-storage-class",
    "x-amz-content-sha256",
    "x-amz-grant-full-control",
    "x-amz-grant-read",
    "x-amz-grant-read-acp",
    "x-amz-grant-write",
    "x-amz-grant-write-acp",
    // Encryption keys: uploads that carry them are refused (s3/unconfigured.rs), but policies
    // written for S3 name them ("deny uploads without encryption") and must be accepted and
    // mean what they say.
    "x-amz-server-side-encryption",
    "x-amz-server-side-encryption-aws-kms-key-id",
    "x-amz-server-side-encryption-customer-algorithm",
    // Conditional writes (`s3:if-match`, `s3:if-none-match`): policies that demand them.
    "if-match",
    "if-none-match",
];

/// `s3:signatureAge`: milliseconds since the request was signed, from its SigV4 date
/// (`X-Amz-Date` in a presigned URL's query, else the `x-amz-date` header); `None` for requests
/// without one (anonymous, SigV2).
fn signature_age_ms(facts: &RequestFacts<'_>, now: time::OffsetDateTime) -> Option<i128> {
    let signed = query_pairs(facts.uri)
        .find(|(k, _)| k == "X-Amz-Date")
        .map(|(_, v)| v)
        .or_else(|| facts.headers.get("x-amz-date")?.to_str().ok().map(str::to_owned))?;
    let format = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    let at = time::PrimitiveDateTime::parse(&signed, &format).ok()?.assume_utc();
    Some(((now - at).whole_milliseconds()).max(0))
}

/// Object lock's condition keys, by the header that carries each (requests whose body carries
/// them are authorized with their values in these headers: `auth.rs`).
pub(crate) const LOCK_KEYS: [(&str, &str); 3] = [
    ("x-amz-object-lock-mode", "s3:object-lock-mode"),
    (
        "x-amz-object-lock-retain-until-date",
        "s3:object-lock-retain-until-date",
    ),
    ("x-amz-object-lock-legal-hold", "s3:object-lock-legal-hold"),
];

/// Whole days from `now` until a retain-until date (ISO 8601), a started day counting as one,
/// so that a policy's "no more than N days" refuses N days and a second; none for a date that
/// does not parse, zero for one that has passed.
fn remaining_days(until: &str, now: time::OffsetDateTime) -> Option<i64> {
    let until = time::OffsetDateTime::parse(until, &time::format_description::well_known::Rfc3339).ok()?;
    let ms = (until - now).whole_milliseconds().max(0);
    Some(((ms + 86_399_999) / 86_400_000) as i64)
}

impl Gateway {
    /// The condition keys of a request, lower-cased.
    async fn condition_keys(
        &self,
        who: &Caller,
        rec: &BucketRecord,
        facts: &RequestFacts<'_>,
        tags: bool,
    ) -> S3Result<HashMap<String, Vec<String>>> {
        let mut k: HashMap<String, Vec<String>> = HashMap::new();
        let mut put = |key: &str, v: String| k.entry(key.to_owned()).or_default().push(v);
        let now = time::OffsetDateTime::now_utc();
        put(
            "aws:currenttime",
            now.format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default(),
        );
        put("aws:epochtime", now.unix_timestamp().to_string());
        put("aws:securetransport", self.secure.to_string());
        if let Some(ip) = facts.peer {
            put("aws:sourceip", ip.to_string());
        }
        for (key, h) in [("aws:useragent", "user-agent"), ("aws:referer", "referer")] {
            if let Some(v) = facts.headers.get(h).and_then(|v| v.to_str().ok()) {
                put(key, v.to_owned());
            }
        }
        if who.is_anonymous() {
            put("aws:principaltype", "Anonymous".to_owned());
        } else {
            put("aws:principaltype", "User".to_owned());
            put("aws:username", who.user.name.clone());
            put("aws:userid", who.user.id.simple().to_string());
            // The account is the user's domain, as principals name it (`principal_names`).
            put("aws:principalaccount", who.user.domain.clone());
            put(
                "aws:principalarn",
                format!("arn:aws:iam::{}:user/{}", who.user.domain, who.user.name),
            );
        }
        for (name, v) in query_pairs(facts.uri) {
            match name.as_str() {
                "prefix" | "delimiter" | "max-keys" => put(&format!("s3:{name}"), v),
                "versionId" => put("s3:versionid", v),
                _ => {}
            }
        }
        if let Some(v) = facts.version {
            put("s3:versionid", v.to_owned());
        }
        for h in HEADER_KEYS {
            if let Some(v) = facts.headers.get(*h).and_then(|v| v.to_str().ok()) {
                put(&format!("s3:{h}"), v.to_owned());
            }
        }
        let presigned = facts
            .uri
            .query()
            .is_some_and(|q| q.contains("X-Amz-Signature=") || q.contains("Signature="));
        let v4 = facts.uri.query().is_some_and(|q| q.contains("X-Amz-Algorithm="))
            || facts
                .headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|a| a.starts_with("AWS4-"));
        if !who.is_anonymous() {
            put(
                "s3:signatureversion",
                if v4 { "AWS4-HMAC-SHA256" } else { "AWS" }.to_owned(),
            );
            let auth = if facts.op == "PostObject" {
                "POST"
            } else if presigned {
                "REST-QUERY-STRING"
            } else {
                "REST-HEADER"
            };
            put("s3:authtype", auth.to_owned());
        }
        // Object lock asked for by PutObject's headers, or by the document of PutObjectRetention
        // or PutObjectLegalHold (which the access check turns into these headers first).
        for (h, key) in LOCK_KEYS {
            if let Some(v) = facts.headers.get(h).and_then(|v| v.to_str().ok()) {
                put(key, v.to_owned());
            }
        }
        if let Some(days) = facts
            .headers
            .get("x-amz-object-lock-retain-until-date")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| remaining_days(v, now))
        {
            put("s3:object-lock-remaining-retention-days", days.to_string());
        }
        if let Some(t) = facts.headers.get("x-amz-tagging").and_then(|v| v.to_str().ok()) {
            let uri: Uri = format!("/?{t}").parse().unwrap_or_default();
            for (tk, tv) in query_pairs(&uri) {
                put(&format!("s3:requestobjecttag/{tk}"), tv);
                put("s3:requestobjecttagkeys", tk);
            }
        }
        // The bucket's account: its domain, as principals name it (`arn:aws:iam::<domain>:root`).
        put("s3:resourceaccount", rec.domain.clone());
        if let Some(age) = signature_age_ms(facts, now) {
            put("s3:signatureage", age.to_string());
        }
        if tags {
            if let Some(key) = facts.key {
                let found = self.meta.object(rec.folder_id, key).await.map_err(meta_err)?;
                for (tk, tv) in found.map(|r| r.tags).unwrap_or_default() {
                    put(&format!("s3:existingobjecttag/{tk}"), tv);
                }
            }
        }
        Ok(k)
    }

    /// Whether `who` may run the request on bucket `rec`, `tenancy` being what the folder
    /// permissions say: a policy's explicit Deny refuses (except to administrators, and except a
    /// holder of `wd` managing the policy itself, so no owner locks themself out); its Allow
    /// admits callers tenancy would not, unless the public access block restricts a public
    /// policy to the bucket's own domain.
    pub(crate) async fn permits(
        &self,
        who: &Caller,
        rec: &BucketRecord,
        tenancy: bool,
        facts: &RequestFacts<'_>,
    ) -> S3Result<bool> {
        let admin =
            who.user.role == Role::Superadmin || (who.user.role == Role::DomainAdmin && who.user.domain == rec.domain);
        if admin {
            return Ok(tenancy);
        }
        let Some(policy) = self.policies.of(rec) else {
            return Ok(tenancy || self.acl_allows(who, rec, facts).await?);
        };
        let keys = self.condition_keys(who, rec, facts, policy.reads_object_tags()).await?;
        let principal = if who.is_anonymous() {
            Vec::new()
        } else {
            principal_names(&who.user.domain, &who.user.name, &who.user.id)
        };
        let versioned = facts.version.is_some() || query_pairs(facts.uri).any(|(k, _)| k == "versionId");
        let resource = match facts.key {
            Some(k) => format!("arn:aws:s3:::{}/{k}", rec.name),
            None => format!("arn:aws:s3:::{}", rec.name),
        };
        let decision = policy.evaluate(&Ctx {
            principal: &principal,
            action: &action_of(facts.op, versioned),
            resource: &resource,
            keys: &keys,
        });
        Ok(match decision {
            Decision::Deny => {
                tenancy
                    && matches!(facts.op, "GetBucketPolicy" | "PutBucketPolicy" | "DeleteBucketPolicy")
                    && who.may(rec, penstock_metadata::Perm::Wd)
            }
            Decision::Allow => {
                let restricted =
                    rec.public_access_block.is_some_and(|b| b.restrict_public_buckets) && policy.is_public();
                tenancy || !restricted || (!who.is_anonymous() && who.user.domain == rec.domain)
            }
            Decision::Silent => tenancy || self.acl_allows(who, rec, facts).await?,
        })
    }

    /// Whether `key` names an object of the bucket now: a file (a session's files are objects
    /// without records) or a directory marker. A key that cannot be a path names none.
    pub(crate) async fn key_exists(&self, rec: &BucketRecord, key: &str) -> S3Result<bool> {
        let Ok(path) = penstock_backends::ObjectPath::parse(key) else {
            return Ok(false);
        };
        let stat = self
            .folder_of(rec)
            .await?
            .stat(&path)
            .await
            .map_err(super::error::backend_err)?;
        Ok(stat.is_some_and(|st| (st.kind == penstock_backends::EntryKind::Dir) == key.ends_with('/')))
    }

    /// Whether the bucket's or the object's ACL grants the request (buckets with ACLs enabled);
    /// public grants count unless the public access block ignores them. An object's grants are
    /// those of its current version.
    async fn acl_allows(&self, who: &Caller, rec: &BucketRecord, facts: &RequestFacts<'_>) -> S3Result<bool> {
        if !acls_enabled(rec) {
            return Ok(false);
        }
        let Some((on_object, perm)) = acl_need(facts.op) else {
            return Ok(false);
        };
        let ignore_public = rec.public_access_block.is_some_and(|b| b.ignore_public_acls);
        let my_id = who.user.id.simple().to_string();
        let me = format!("id:{my_id}");
        let holds = |grants: &[AclGrant]| {
            grants.iter().any(|g| {
                let who_matches = match g.grantee.as_str() {
                    "AllUsers" => !ignore_public,
                    "AuthenticatedUsers" => !ignore_public && !who.is_anonymous(),
                    id => !who.is_anonymous() && id == me,
                };
                who_matches && (g.permission == perm || g.permission == "FULL_CONTROL")
            })
        };
        if !on_object {
            return Ok(holds(&rec.acl));
        }
        let Some(key) = facts.key else { return Ok(false) };
        let found = self.meta.object(rec.folder_id, key).await.map_err(meta_err)?;
        // An object's owner (its writer, where that is not the bucket owner) has full control
        // of it, as on S3.
        let owns = |r: &penstock_metadata::ObjectRecord| {
            !who.is_anonymous() && r.attrs.owner.as_deref() == Some(my_id.as_str())
        };
        Ok(found.is_some_and(|r| owns(&r) || holds(&r.attrs.acl)))
    }

    /// PutBucketPolicy: validated as S3 validates it, refused when the public access block
    /// blocks public policies and this one is public.
    pub(crate) async fn put_bucket_policy(
        &self,
        req: S3Request<PutBucketPolicyInput>,
    ) -> S3Result<S3Response<PutBucketPolicyOutput>> {
        let i = &req.input;
        let b = self.bucket(&caller(&req)?, &i.bucket).await?;
        let policy = Policy::parse(&i.policy, &b.rec.name).map_err(|why| s3_error!(MalformedPolicy, "{why}"))?;
        if b.rec.public_access_block.is_some_and(|p| p.block_public_policy) && policy.is_public() {
            return Err(s3_error!(
                AccessDenied,
                "Access Denied: the public access block of this bucket blocks public policies"
            ));
        }
        let text = i.policy.clone();
        self.update_bucket(&b.rec, move |r| r.policy = Some(text.clone()))
            .await?;
        Ok(S3Response::with_status(
            PutBucketPolicyOutput::default(),
            StatusCode::NO_CONTENT,
        ))
    }

    /// GetBucketPolicy: the document as it was put.
    pub(crate) async fn get_bucket_policy(
        &self,
        req: S3Request<GetBucketPolicyInput>,
    ) -> S3Result<S3Response<GetBucketPolicyOutput>> {
        let b = self.bucket(&caller(&req)?, &req.input.bucket).await?;
        let policy = b
            .rec
            .policy
            .clone()
            .ok_or_else(|| s3_error!(NoSuchBucketPolicy, "The bucket policy does not exist"))?;
        Ok(S3Response::new(GetBucketPolicyOutput { policy: Some(policy) }))
    }

    /// DeleteBucketPolicy: 204 whether or not there was one, as S3 answers.
    pub(crate) async fn delete_bucket_policy(
        &self,
        req: S3Request<DeleteBucketPolicyInput>,
    ) -> S3Result<S3Response<DeleteBucketPolicyOutput>> {
        let b = self.bucket(&caller(&req)?, &req.input.bucket).await?;
        if b.rec.policy.is_some() {
            self.update_bucket(&b.rec, |r| r.policy = None).await?;
        }
        Ok(S3Response::with_status(
            DeleteBucketPolicyOutput::default(),
            StatusCode::NO_CONTENT,
        ))
    }

    /// GetBucketPolicyStatus: whether the policy makes the bucket public.
    pub(crate) async fn get_bucket_policy_status(
        &self,
        req: S3Request<GetBucketPolicyStatusInput>,
    ) -> S3Result<S3Response<GetBucketPolicyStatusOutput>> {
        let b = self.bucket(&caller(&req)?, &req.input.bucket).await?;
        let text = b
            .rec
            .policy
            .clone()
            .ok_or_else(|| s3_error!(NoSuchBucketPolicy, "The bucket policy does not exist"))?;
        let public = Policy::parse(&text, &b.rec.name).is_ok_and(|p| p.is_public());
        Ok(S3Response::new(GetBucketPolicyStatusOutput {
            policy_status: Some(PolicyStatus {
                is_public: Some(public),
            }),
        }))
    }

    /// PutPublicAccessBlock: the four switches (absent ones are off).
    pub(crate) async fn put_public_access_block(
        &self,
        req: S3Request<PutPublicAccessBlockInput>,
    ) -> S3Result<S3Response<PutPublicAccessBlockOutput>> {
        let i = &req.input;
        let b = self.bucket(&caller(&req)?, &i.bucket).await?;
        let c = &i.public_access_block_configuration;
        let block = Block {
            block_public_acls: c.block_public_acls.unwrap_or(false),
            ignore_public_acls: c.ignore_public_acls.unwrap_or(false),
            block_public_policy: c.block_public_policy.unwrap_or(false),
            restrict_public_buckets: c.restrict_public_buckets.unwrap_or(false),
        };
        self.update_bucket(&b.rec, move |r| r.public_access_block = Some(block))
            .await?;
        Ok(S3Response::new(PutPublicAccessBlockOutput::default()))
    }

    /// GetPublicAccessBlock.
    pub(crate) async fn get_public_access_block(
        &self,
        req: S3Request<GetPublicAccessBlockInput>,
    ) -> S3Result<S3Response<GetPublicAccessBlockOutput>> {
        let b = self.bucket(&caller(&req)?, &req.input.bucket).await?;
        let block = b.rec.public_access_block.ok_or_else(|| {
            custom(
                "NoSuchPublicAccessBlockConfiguration",
                StatusCode::NOT_FOUND,
                "The public access block configuration was not found",
            )
        })?;
        Ok(S3Response::new(GetPublicAccessBlockOutput {
            public_access_block_configuration: Some(PublicAccessBlockConfiguration {
                block_public_acls: Some(block.block_public_acls),
                ignore_public_acls: Some(block.ignore_public_acls),
                block_public_policy: Some(block.block_public_policy),
                restrict_public_buckets: Some(block.restrict_public_buckets),
            }),
        }))
    }

    /// DeletePublicAccessBlock: 204 whether or not there was one.
    pub(crate) async fn delete_public_access_block(
        &self,
        req: S3Request<DeletePublicAccessBlockInput>,
    ) -> S3Result<S3Response<DeletePublicAccessBlockOutput>> {
        let b = self.bucket(&caller(&req)?, &req.input.bucket).await?;
        if b.rec.public_access_block.is_some() {
            self.update_bucket(&b.rec, |r| r.public_access_block = None).await?;
        }
        Ok(S3Response::with_status(
            DeletePublicAccessBlockOutput::default(),
            StatusCode::NO_CONTENT,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use penstock_metadata::QuotaScope;

    fn bucket(name: &str, policy: Option<&str>) -> BucketRecord {
        let scope = QuotaScope::user(uuid::Uuid::from_u128(1));
        let mut rec = BucketRecord::new(
            name.into(),
            "lab".into(),
            uuid::Uuid::from_u128(7),
            "v".into(),
            scope,
            0,
        );
        rec.policy = policy.map(str::to_owned);
        rec
    }

    fn public_read(bucket: &str) -> String {
        format!(
            r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Principal":"*",
                "Action":"s3:GetObject","Resource":"arn:aws:s3:::{bucket}/*"}}]}}"#
        )
    }

    #[test]
    fn remaining_retention_days_count_a_started_day_as_one() {
        let now = time::macros::datetime!(2026-11-27 12:00 UTC);
        assert_eq!(remaining_days("2026-12-07T12:00:00Z", now), Some(10));
        assert_eq!(remaining_days("2026-12-07T12:00:01Z", now), Some(11));
        assert_eq!(remaining_days("2026-11-27T12:00:00.001Z", now), Some(1));
        assert_eq!(remaining_days("2026-11-01T00:00:00Z", now), Some(0), "passed");
        assert_eq!(remaining_days("next week", now), None);
    }

    #[test]
    fn a_parsed_policy_is_reused_only_while_name_and_text_are_those_parsed() {
        let cache = ParsedPolicies::default();
        assert!(cache.of(&bucket("data", None)).is_none());

        let text = public_read("data");
        let first = cache.of(&bucket("data", Some(&text))).expect("parses");
        let again = cache.of(&bucket("data", Some(&text))).expect("parses");
        assert!(Arc::ptr_eq(&first, &again), "the same text is parsed once");

        // Another gateway changed the policy: the record read now carries new text.
        let changed = text.replace("s3:GetObject", "s3:PutObject");
        let now = cache.of(&bucket("data", Some(&changed))).expect("parses");
        assert!(!Arc::ptr_eq(&first, &now));

        // A renamed bucket's resources no longer name it: parsed again, and refused.
        assert!(cache.of(&bucket("other", Some(&text))).is_none());
        // Text that does not parse reads as no policy, and stays so.
        assert!(cache.of(&bucket("data", Some("{"))).is_none());
        assert!(cache.of(&bucket("data", Some("{"))).is_none());
    }
}
