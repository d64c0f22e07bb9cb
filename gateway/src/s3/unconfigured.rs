//! Bucket settings this gateway does not offer (encryption, website, logging, notifications,
//! transfer acceleration, requester pays, replication), read as never set.
//!
//! Tools that manage buckets read every setting of a bucket before they change one (Terraform's
//! AWS provider, console-like UIs, `aws s3api` scripts) and stop at `NotImplemented`. What S3
//! answers for a bucket where the setting was never made is true here, so that is the answer,
//! to reads and to deletes (which leave it unset); setting one stays `NotImplemented`, because
//! nothing here would act on it.
//!
//! The same holds for requests that ask for one of these features per object (server-side
//! encryption headers naming the gateway's keys): they are refused, never served as if the
//! feature had been applied, so no client believes an object encrypted that is not.
//!
//! Encryption at rest is the exception when the operator attests it (`encrypted_at_rest`: every
//! volume encrypts what it stores): then every object is what S3 calls SSE-S3 encrypted, and
//! the gateway answers as S3 has since 2023, where every object is. Object answers say
//! `x-amz-server-side-encryption: AES256`, GetBucketEncryption names AES256 as every bucket's
//! default, and requests for SSE-S3 (the header on a write, PutBucketEncryption with AES256) are
//! served; nothing needs recording but whether a bucket blocks SSE-C (its configuration's
//! `BlockedEncryptionTypes`). SSE-KMS stays refused: no key here could honour it. SSE-C brings
//! its own key and is served either way (`sse_c.rs`).

use s3s::dto::*;
use s3s::{s3_error, S3Error, S3Request, S3Response, S3Result};

use http::HeaderMap;

use super::error::no_encryption_configuration;
use super::{caller, Gateway};

/// `method(Input) -> Output => answer;` for each setting: the handler checks that the bucket
/// exists (NoSuchBucket otherwise; the access check has already admitted the caller to it), then
/// gives the answer S3 gives for a bucket where the setting was never made.
macro_rules! never_set {
    ($($(#[$doc:meta])* $method:ident($input:ty) -> $output:ty => $answer:expr;)*) => {
        impl Gateway {
            $(
                $(#[$doc])*
                pub(crate) async fn $method(&self, req: S3Request<$input>) -> S3Result<S3Response<$output>> {
                    self.bucket(&caller(&req)?, &req.input.bucket).await?;
                    $answer
                }
            )*
        }
    };
}

impl Gateway {
    /// `AES256` when every volume encrypts at rest (`encrypted_at_rest`), for the
    /// `x-amz-server-side-encryption` of object answers; `None` otherwise.
    pub(crate) fn at_rest(&self) -> Option<ServerSideEncryption> {
        self.at_rest.clone()
    }

    /// GetBucketEncryption: with volumes encrypted at rest, SSE-S3 by default, as S3 answers for
    /// every bucket since 2023; otherwise no default encryption configured (S3 before 2023, and
    /// what a bucket here is then: objects are plain files in the tenant's folder).
    pub(crate) async fn get_bucket_encryption(
        &self,
        req: S3Request<GetBucketEncryptionInput>,
    ) -> S3Result<S3Response<GetBucketEncryptionOutput>> {
        let b = self.bucket(&caller(&req)?, &req.input.bucket).await?;
        let algorithm = self.at_rest.clone().ok_or_else(no_encryption_configuration)?;
        let rule = ServerSideEncryptionRule {
            apply_server_side_encryption_by_default: Some(ServerSideEncryptionByDefault {
                sse_algorithm: algorithm,
                kms_master_key_id: None,
            }),
            bucket_key_enabled: Some(false),
        };
        let mut resp = S3Response::new(GetBucketEncryptionOutput {
            server_side_encryption_configuration: Some(ServerSideEncryptionConfiguration { rules: vec![rule] }),
        });
        if b.rec.sse_c_blocked {
            // s3s's schema has no `BlockedEncryptionTypes`: the element is written into the
            // serialized document (`observe::errors::blocked_sse_c`), told so by this mark.
            resp.headers
                .insert(SSE_C_BLOCKED_MARK, http::HeaderValue::from_static("1"));
        }
        Ok(resp)
    }

    /// DeleteBucketEncryption: 204, as S3 answers for a bucket without one (scripts and tools
    /// that reset a bucket's settings delete each of them); with volumes encrypted at rest the
    /// bucket stays SSE-S3, as an S3 bucket does once its configuration is deleted, and takes
    /// customer keys again.
    pub(crate) async fn delete_bucket_encryption(
        &self,
        req: S3Request<DeleteBucketEncryptionInput>,
    ) -> S3Result<S3Response<DeleteBucketEncryptionOutput>> {
        let b = self.bucket(&caller(&req)?, &req.input.bucket).await?;
        if b.rec.sse_c_blocked {
            self.update_bucket(&b.rec, |r| r.sse_c_blocked = false).await?;
        }
        Ok(S3Response::with_status(
            DeleteBucketEncryptionOutput::default(),
            http::StatusCode::NO_CONTENT,
        ))
    }

    /// PutBucketEncryption: with volumes encrypted at rest, a configuration whose every rule is
    /// SSE-S3 (AES256) is what the bucket already does, and is answered 200; one asking for
    /// SSE-KMS is 501 `NotImplemented`. Without encryption at rest, every configuration is 501.
    pub(crate) async fn put_bucket_encryption(
        &self,
        req: S3Request<PutBucketEncryptionInput>,
    ) -> S3Result<S3Response<PutBucketEncryptionOutput>> {
        let b = self.bucket(&caller(&req)?, &req.input.bucket).await?;
        let rules = &req.input.server_side_encryption_configuration.rules;
        check_encryption_rules(rules)?;
        if self.at_rest.is_none() {
            return Err(s3_error!(
                NotImplemented,
                "Default encryption is not implemented by this gateway: its volumes are not declared encrypted at rest"
            ));
        }
        let sse_s3 = rules.iter().all(|r| {
            r.apply_server_side_encryption_by_default.as_ref().is_some_and(|d| {
                d.sse_algorithm.as_str() == ServerSideEncryption::AES256 && d.kms_master_key_id.is_none()
            })
        });
        if !sse_s3 {
            return Err(s3_error!(
                NotImplemented,
                "Server-side encryption with AWS KMS keys is not implemented by this gateway; AES256 (SSE-S3) is"
            ));
        }
        // A configuration replaces the one before: SSE-C is blocked exactly when this one says.
        let blocked = req.extensions.get::<BlocksSseC>().is_some();
        if blocked != b.rec.sse_c_blocked {
            self.update_bucket(&b.rec, move |r| r.sse_c_blocked = blocked).await?;
        }
        Ok(S3Response::new(PutBucketEncryptionOutput::default()))
    }
}

never_set! {
    /// GetBucketWebsite: no website configuration.
    get_bucket_website(GetBucketWebsiteInput) -> GetBucketWebsiteOutput => Err(s3_error!(
        NoSuchWebsiteConfiguration,
        "The specified bucket does not have a website configuration"
    ));
    /// GetBucketLogging: logging off (an empty `BucketLoggingStatus`).
    get_bucket_logging(GetBucketLoggingInput) -> GetBucketLoggingOutput =>
        Ok(S3Response::new(GetBucketLoggingOutput::default()));
    /// GetBucketNotificationConfiguration: no notifications (an empty configuration).
    get_bucket_notification_configuration(GetBucketNotificationConfigurationInput)
        -> GetBucketNotificationConfigurationOutput =>
        Ok(S3Response::new(GetBucketNotificationConfigurationOutput::default()));
    /// GetBucketAccelerateConfiguration: never set (no `Status`, as S3 answers then).
    get_bucket_accelerate_configuration(GetBucketAccelerateConfigurationInput)
        -> GetBucketAccelerateConfigurationOutput =>
        Ok(S3Response::new(GetBucketAccelerateConfigurationOutput::default()));
    /// GetBucketRequestPayment: the bucket owner pays, S3's default and the only mode here.
    get_bucket_request_payment(GetBucketRequestPaymentInput) -> GetBucketRequestPaymentOutput =>
        Ok(S3Response::new(GetBucketRequestPaymentOutput {
            payer: Some(Payer::from_static(Payer::BUCKET_OWNER)),
        }));
    /// GetBucketReplication: no replication configuration.
    get_bucket_replication(GetBucketReplicationInput) -> GetBucketReplicationOutput => Err(s3_error!(
        ReplicationConfigurationNotFoundError,
        "The replication configuration was not found"
    ));
    /// ListBucketAnalyticsConfigurations: none (S3's answer for a bucket where none was made).
    list_bucket_analytics_configurations(ListBucketAnalyticsConfigurationsInput)
        -> ListBucketAnalyticsConfigurationsOutput =>
        Ok(S3Response::new(ListBucketAnalyticsConfigurationsOutput {
            is_truncated: Some(false),
            ..Default::default()
        }));
    /// ListBucketInventoryConfigurations: none.
    list_bucket_inventory_configurations(ListBucketInventoryConfigurationsInput)
        -> ListBucketInventoryConfigurationsOutput =>
        Ok(S3Response::new(ListBucketInventoryConfigurationsOutput {
            is_truncated: Some(false),
            ..Default::default()
        }));
    /// ListBucketMetricsConfigurations: none.
    list_bucket_metrics_configurations(ListBucketMetricsConfigurationsInput)
        -> ListBucketMetricsConfigurationsOutput =>
        Ok(S3Response::new(ListBucketMetricsConfigurationsOutput {
            is_truncated: Some(false),
            ..Default::default()
        }));
    /// ListBucketIntelligentTieringConfigurations: none.
    list_bucket_intelligent_tiering_configurations(ListBucketIntelligentTieringConfigurationsInput)
        -> ListBucketIntelligentTieringConfigurationsOutput =>
        Ok(S3Response::new(ListBucketIntelligentTieringConfigurationsOutput {
            is_truncated: Some(false),
            ..Default::default()
        }));
    /// GetBucketAnalyticsConfiguration: none has the id (the listing above has none).
    get_bucket_analytics_configuration(GetBucketAnalyticsConfigurationInput)
        -> GetBucketAnalyticsConfigurationOutput => Err(no_such_configuration());
    /// GetBucketInventoryConfiguration: none has the id.
    get_bucket_inventory_configuration(GetBucketInventoryConfigurationInput)
        -> GetBucketInventoryConfigurationOutput => Err(no_such_configuration());
    /// GetBucketMetricsConfiguration: none has the id.
    get_bucket_metrics_configuration(GetBucketMetricsConfigurationInput)
        -> GetBucketMetricsConfigurationOutput => Err(no_such_configuration());
    /// GetBucketIntelligentTieringConfiguration: none has the id.
    get_bucket_intelligent_tiering_configuration(GetBucketIntelligentTieringConfigurationInput)
        -> GetBucketIntelligentTieringConfigurationOutput => Err(no_such_configuration());
    /// DeleteBucketAnalyticsConfiguration: none has the id, so none is deleted (S3's 404).
    delete_bucket_analytics_configuration(DeleteBucketAnalyticsConfigurationInput)
        -> DeleteBucketAnalyticsConfigurationOutput => Err(no_such_configuration());
    /// DeleteBucketInventoryConfiguration: none has the id.
    delete_bucket_inventory_configuration(DeleteBucketInventoryConfigurationInput)
        -> DeleteBucketInventoryConfigurationOutput => Err(no_such_configuration());
    /// DeleteBucketMetricsConfiguration: none has the id.
    delete_bucket_metrics_configuration(DeleteBucketMetricsConfigurationInput)
        -> DeleteBucketMetricsConfigurationOutput => Err(no_such_configuration());
    /// DeleteBucketIntelligentTieringConfiguration: none has the id.
    delete_bucket_intelligent_tiering_configuration(DeleteBucketIntelligentTieringConfigurationInput)
        -> DeleteBucketIntelligentTieringConfigurationOutput => Err(no_such_configuration());
    /// DeleteBucketWebsite: 204, as for a bucket without a website configuration.
    delete_bucket_website(DeleteBucketWebsiteInput) -> DeleteBucketWebsiteOutput =>
        Ok(S3Response::with_status(DeleteBucketWebsiteOutput::default(), http::StatusCode::NO_CONTENT));
    /// DeleteBucketReplication: 204, as for a bucket without replication.
    delete_bucket_replication(DeleteBucketReplicationInput) -> DeleteBucketReplicationOutput =>
        Ok(S3Response::with_status(DeleteBucketReplicationOutput::default(), http::StatusCode::NO_CONTENT));
}

/// A PutBucketEncryption body judged as S3 judges it, before anything about what this gateway
/// offers: exactly one rule, with a default of a known algorithm, else 400 `MalformedXML`; a KMS
/// key beside an algorithm that is not KMS, 400 `InvalidArgument` (S3's answers as LocalStack's
/// AWS-validated `test_s3_default_bucket_encryption_exc` records them).
fn check_encryption_rules(rules: &[ServerSideEncryptionRule]) -> S3Result<()> {
    let malformed = || {
        s3_error!(
            MalformedXML,
            "The XML you provided was not well-formed or did not validate against our published schema"
        )
    };
    let [rule] = rules else {
        return Err(malformed());
    };
    let default = rule
        .apply_server_side_encryption_by_default
        .as_ref()
        .ok_or_else(malformed)?;
    let algorithm = default.sse_algorithm.as_str();
    if !["AES256", "aws:kms", "aws:kms:dsse"].contains(&algorithm) {
        return Err(malformed());
    }
    if !algorithm.starts_with("aws:kms") && default.kms_master_key_id.is_some() {
        return Err(super::error::with_detail(
            s3_error!(
                InvalidArgument,
                "a KMSMasterKeyID is not applicable if the default sse algorithm is not aws:kms or aws:kms:dsse"
            ),
            "<ArgumentName>ApplyServerSideEncryptionByDefault</ArgumentName>",
        ));
    }
    Ok(())
}

/// 404 `NoSuchConfiguration`: S3's answer to a read or removal of an analytics, inventory, metrics
/// or Intelligent-Tiering configuration by an id the bucket has none of, as here it has none.
fn no_such_configuration() -> S3Error {
    super::error::custom(
        "NoSuchConfiguration",
        http::StatusCode::NOT_FOUND,
        "The specified configuration does not exist.",
    )
}

/// Operations that only read an object: SSE-C headers there name a key for an object that was
/// never encrypted with one.
const READS: [&str; 3] = ["GetObject", "HeadObject", "GetObjectAttributes"];

/// Operations that write object data, where encryption headers would apply.
/// Other operations take no notice of them, as on S3.
const WRITES: [&str; 6] = [
    "PutObject",
    "PostObject",
    "CreateMultipartUpload",
    "UploadPart",
    "CopyObject",
    "UploadPartCopy",
];

/// 501 `NotImplemented` for a request asking for `what` (server-side encryption):
/// S3's answer to a header that implies functionality it does not implement.
fn not_offered(what: &str) -> S3Error {
    s3_error!(
        NotImplemented,
        "A header you provided implies functionality that is not implemented: {what}"
    )
}

/// What a request asks for of encryption, from its headers or (for a browser form) its
/// fields.
#[derive(Debug, Default)]
pub(crate) struct Unoffered {
    /// Any server-side encryption (SSE-C, SSE-KMS, SSE-S3).
    pub sse: bool,
    /// A customer-provided key (SSE-C).
    pub customer_key: bool,
    /// A customer-provided key for a copy's source.
    pub source_customer_key: bool,
    /// The `x-amz-server-side-encryption` header (the method: `AES256`, `aws:kms`, ...), as
    /// sent; `Some("")` when it is not text.
    pub method: Option<String>,
    /// SSE-KMS parameters (`-aws-kms-key-id`, `-context`, `-bucket-key-enabled`), which S3 reads
    /// only with the method `aws:kms`.
    pub kms_params: bool,
}

impl Unoffered {
    fn of_headers(headers: &HeaderMap) -> Self {
        let mut asked = Self::default();
        for name in headers.keys() {
            let n = name.as_str();
            asked.source_customer_key |= n.starts_with("x-amz-copy-source-server-side-encryption-customer-");
            if let Some(rest) = n.strip_prefix("x-amz-server-side-encryption") {
                asked.sse = true;
                asked.customer_key |= rest.starts_with("-customer-");
                asked.kms_params |= matches!(rest, "-aws-kms-key-id" | "-context" | "-bucket-key-enabled");
                if rest.is_empty() {
                    let v = headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default();
                    asked.method = Some(v.to_owned());
                }
            }
        }
        asked
    }

    /// Refuses what is asked of operation `op` that the gateway does not offer or S3 would
    /// refuse as malformed:
    /// - a customer key (SSE-C) on a read or a write, or for a copy's source: served, the
    ///   handlers judging the key (`sse_c.rs`); for a copy's source on a write that is no copy,
    ///   400 `InvalidRequest`, as S3 answers;
    /// - any other server-side encryption header on a read: 400 `InvalidArgument`, as S3
    ///   answers (it names a method only for writes);
    /// - a malformed encryption request on a write (a method S3 does not know, a customer key
    ///   with a method, SSE-KMS parameters without the `aws:kms` method): 400
    ///   `InvalidArgument`, as S3 answers;
    /// - SSE-S3 on a write (the method `AES256` alone) where volumes encrypt at rest
    ///   (`at_rest`): served, since every object is so encrypted;
    /// - any other server-side encryption on a write: 501 `NotImplemented` ([`not_offered`]).
    ///
    /// Other operations take no notice, as on S3.
    pub(crate) fn refuse(&self, op: &str, at_rest: bool) -> S3Result<()> {
        let write = WRITES.contains(&op);
        let copy = matches!(op, "CopyObject" | "UploadPartCopy");
        if self.source_customer_key && write && !copy {
            return Err(super::sse_c::not_applicable());
        }
        // A customer key alone: what the handlers serve.
        let other_sse = self.method.is_some() || self.kms_params;
        if READS.contains(&op) && other_sse {
            return Err(s3_error!(
                InvalidArgument,
                "x-amz-server-side-encryption header is not supported for this operation."
            ));
        }
        if write && self.sse {
            let kms = self.method.as_deref().is_some_and(|m| m.starts_with("aws:kms"));
            if let Some(m) = self.method.as_deref() {
                if !matches!(m, "AES256" | "aws:kms" | "aws:kms:dsse") {
                    return Err(s3_error!(
                        InvalidArgument,
                        "The encryption method specified is not supported"
                    ));
                }
            }
            if self.customer_key && self.method.is_some() {
                return Err(s3_error!(
                    InvalidArgument,
                    "Server Side Encryption with Customer provided key is incompatible with the encryption method specified"
                ));
            }
            if self.kms_params && !kms {
                return Err(s3_error!(
                    InvalidArgument,
                    "Server Side Encryption with AWS KMS managed key requires HTTP header x-amz-server-side-encryption : aws:kms"
                ));
            }
            // What is left is a method alone, or a customer key alone, or KMS with its parameters.
            if at_rest && self.method.as_deref() == Some("AES256") {
                return Ok(());
            }
            if self.customer_key && !other_sse {
                return Ok(());
            }
            return Err(not_offered(if kms {
                "server-side encryption with AWS KMS keys"
            } else {
                "server-side encryption"
            }));
        }
        Ok(())
    }
}

/// Marks a PutBucketEncryption whose document names `BlockedEncryptionTypes`: s3s's schema
/// predates the element (S3 added it in 2025; botocore's own integration suite sends it,
/// blocking `NONE`) and refuses the whole document as `MalformedXML` for it. Such a request takes
/// a second pass once its signature and payload hash are verified (`ignored_headers.rs`), with
/// the document [`without_blocked_encryption_types`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct BlockedEncryptionTypes;

/// The response header by which GetBucketEncryption tells the response layer that the bucket
/// blocks SSE-C; taken out before the answer leaves.
pub(crate) const SSE_C_BLOCKED_MARK: &str = "x-penstock-sse-c-blocked";

/// Marks a PutBucketEncryption whose rules name `SSE-C` among their `BlockedEncryptionTypes`
/// (found as the second pass takes the element out for s3s): the bucket then refuses writes
/// with a customer-provided key.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BlocksSseC;

/// Whether a PutBucketEncryption document names `SSE-C` in a `BlockedEncryptionTypes` element.
pub(crate) fn blocks_sse_c(doc: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(doc) else {
        return false;
    };
    text.split("<BlockedEncryptionTypes>").skip(1).any(|tail| {
        let inner = tail.split("</BlockedEncryptionTypes>").next().unwrap_or_default();
        inner
            .split("<EncryptionType>")
            .skip(1)
            .any(|t| t.split("</EncryptionType>").next().is_some_and(|v| v.trim() == "SSE-C"))
    })
}

/// How the element opens, with or without content (`<BlockedEncryptionTypes/>`).
const BLOCKED_TYPES_TAG: &str = "<BlockedEncryptionTypes";

/// Whether a PutBucketEncryption document names `BlockedEncryptionTypes`.
pub(crate) fn names_blocked_encryption_types(doc: &[u8]) -> bool {
    doc.windows(BLOCKED_TYPES_TAG.len())
        .any(|w| w == BLOCKED_TYPES_TAG.as_bytes())
}

/// A PutBucketEncryption document without its rules' `BlockedEncryptionTypes`, for s3s to parse.
/// The types S3 names are `NONE` and `SSE-C`, and both lists are what the gateway does anyway:
/// SSE-C is refused on every write. An element holding anything else is left in place, so s3s
/// refuses the document as S3 refuses one it cannot read.
pub(crate) fn without_blocked_encryption_types(doc: bytes::Bytes) -> bytes::Bytes {
    const OPEN: &str = "<BlockedEncryptionTypes>";
    const CLOSE: &str = "</BlockedEncryptionTypes>";
    const EMPTY: &str = "<BlockedEncryptionTypes/>";
    let Ok(text) = std::str::from_utf8(&doc) else {
        return doc;
    };
    if !text.contains(BLOCKED_TYPES_TAG) {
        return doc;
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(BLOCKED_TYPES_TAG) {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix(EMPTY) {
            rest = after;
            continue;
        }
        let inner = tail
            .strip_prefix(OPEN)
            .and_then(|t| t.find(CLOSE).map(|end| (&t[..end], &t[end + CLOSE.len()..])));
        match inner {
            Some((types, after)) if only_known_types(types) => rest = after,
            _ => return doc,
        }
    }
    out.push_str(rest);
    bytes::Bytes::from(out)
}

/// Whether `inner` is a sequence of `<EncryptionType>` elements naming `NONE` or `SSE-C`, with
/// whitespace between them.
fn only_known_types(mut inner: &str) -> bool {
    loop {
        inner = inner.trim_start();
        if inner.is_empty() {
            return true;
        }
        let Some(t) = inner.strip_prefix("<EncryptionType>") else {
            return false;
        };
        let Some((value, after)) = t.split_once("</EncryptionType>") else {
            return false;
        };
        if !matches!(value.trim(), "NONE" | "SSE-C") {
            return false;
        }
        inner = after;
    }
}

/// The storage classes S3 names. Every object here is stored alike (and listed as `STANDARD`),
/// but a class S3 knows is a placement hint a client may send to any S3; one it does not know is
/// a mistake S3 refuses, and so does this gateway.
const STORAGE_CLASSES: [&str; 13] = [
    "STANDARD",
    "REDUCED_REDUNDANCY",
    "STANDARD_IA",
    "ONEZONE_IA",
    "INTELLIGENT_TIERING",
    "GLACIER",
    "DEEP_ARCHIVE",
    "OUTPOSTS",
    "GLACIER_IR",
    "SNOW",
    "EXPRESS_ONEZONE",
    "FSX_OPENZFS",
    "FSX_ONTAP",
];

/// [`Unoffered::refuse`] for what a request's headers ask (`at_rest`: volumes encrypt at rest), and 400 `InvalidStorageClass` for an
/// `x-amz-storage-class` S3 does not know on an operation that creates an object; the headers
/// are not read for operations that neither read nor write object data.
pub(crate) fn refuse_unoffered(op: &str, headers: &HeaderMap, at_rest: bool) -> S3Result<()> {
    if !WRITES.contains(&op) && !READS.contains(&op) {
        return Ok(());
    }
    if matches!(op, "PutObject" | "CreateMultipartUpload" | "CopyObject") {
        if let Some(class) = headers.get("x-amz-storage-class") {
            refuse_unknown_storage_class(class.as_bytes())?;
        }
    }
    Unoffered::of_headers(headers).refuse(op, at_rest)
}

/// 400 `InvalidStorageClass` unless `class` is one of [`STORAGE_CLASSES`] (from a header, or a
/// form upload's field).
pub(crate) fn refuse_unknown_storage_class(class: &[u8]) -> S3Result<()> {
    if STORAGE_CLASSES.iter().any(|c| c.as_bytes() == class) {
        return Ok(());
    }
    // S3's document names the class asked for.
    Err(super::error::with_detail(
        s3_error!(InvalidStorageClass, "The storage class you specified is not valid"),
        &format!(
            "<StorageClassRequested>{}</StorageClassRequested>",
            super::post_form::xml_escape(&String::from_utf8_lossy(class))
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(op: &str, headers: &[(&'static str, &'static str)]) -> Option<(String, u16)> {
        answer_where(false, op, headers)
    }

    /// What `op` with `headers` is answered where volumes encrypt at rest (`at_rest`) or not.
    fn answer_where(at_rest: bool, op: &str, headers: &[(&'static str, &'static str)]) -> Option<(String, u16)> {
        let mut h = HeaderMap::new();
        for (k, v) in headers {
            h.insert(*k, v.parse().unwrap());
        }
        let e = refuse_unoffered(op, &h, at_rest).err()?;
        Some((e.code().as_str().to_owned(), e.status_code().map_or(0, |s| s.as_u16())))
    }

    #[test]
    fn blocked_encryption_types_are_taken_out_for_s3s() {
        let strip = |s: &'static str| String::from_utf8(without_blocked_encryption_types(s.into()).to_vec()).unwrap();
        let by_default = "<ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault>";
        let doc = format!(
            "<ServerSideEncryptionConfiguration><Rule>{by_default}<BlockedEncryptionTypes><EncryptionType>NONE</EncryptionType></BlockedEncryptionTypes></Rule></ServerSideEncryptionConfiguration>"
        );
        let plain =
            format!("<ServerSideEncryptionConfiguration><Rule>{by_default}</Rule></ServerSideEncryptionConfiguration>");
        assert_eq!(strip(doc.leak()), plain);
        let doc = format!(
            "<ServerSideEncryptionConfiguration><Rule>{by_default}<BlockedEncryptionTypes>\n  <EncryptionType>SSE-C</EncryptionType>\n  <EncryptionType>NONE</EncryptionType>\n</BlockedEncryptionTypes><BucketKeyEnabled>false</BucketKeyEnabled></Rule><Rule><BlockedEncryptionTypes/></Rule></ServerSideEncryptionConfiguration>"
        );
        assert_eq!(
            strip(doc.leak()),
            format!("<ServerSideEncryptionConfiguration><Rule>{by_default}<BucketKeyEnabled>false</BucketKeyEnabled></Rule><Rule></Rule></ServerSideEncryptionConfiguration>")
        );
        // What S3 would not read stays, for s3s to refuse.
        for odd in [
            "<Rule><BlockedEncryptionTypes><EncryptionType>SSE-KMS</EncryptionType></BlockedEncryptionTypes></Rule>",
            "<Rule><BlockedEncryptionTypes><Other/></BlockedEncryptionTypes></Rule>",
            "<Rule><BlockedEncryptionTypes><EncryptionType>NONE</EncryptionType></Rule>",
        ] {
            assert_eq!(strip(odd), odd);
        }
        assert_eq!(strip(plain.clone().leak()), plain);
    }

    #[test]
    fn sse_s3_alone_is_served_where_volumes_encrypt_at_rest() {
        let sse_s3 = ("x-amz-server-side-encryption", "AES256");
        for op in WRITES {
            assert_eq!(answer_where(true, op, &[sse_s3]), None, "{op}");
            assert_eq!(
                answer_where(false, op, &[sse_s3]),
                Some(("NotImplemented".to_owned(), 501)),
                "{op}"
            );
        }
        let not_impl = Some(("NotImplemented".to_owned(), 501));
        let argument = Some(("InvalidArgument".to_owned(), 400));
        let kms = ("x-amz-server-side-encryption", "aws:kms");
        let key_id = ("x-amz-server-side-encryption-aws-kms-key-id", "testkey-1");
        let ssec = ("x-amz-server-side-encryption-customer-algorithm", "AES256");
        // No key here could honour SSE-KMS; SSE-C brings its own.
        assert_eq!(answer_where(true, "PutObject", &[kms]), not_impl);
        assert_eq!(answer_where(true, "PutObject", &[kms, key_id]), not_impl);
        assert_eq!(
            answer_where(true, "PutObject", &[("x-amz-server-side-encryption", "aws:kms:dsse")]),
            not_impl
        );
        assert_eq!(answer_where(true, "PutObject", &[ssec]), None);
        // Malformed requests and methods on reads are refused as before.
        assert_eq!(answer_where(true, "PutObject", &[sse_s3, key_id]), argument);
        assert_eq!(answer_where(true, "PutObject", &[sse_s3, ssec]), argument);
        assert_eq!(
            answer_where(true, "PutObject", &[("x-amz-server-side-encryption", "aes256")]),
            argument
        );
        assert_eq!(answer_where(true, "GetObject", &[sse_s3]), argument);
        assert_eq!(answer_where(true, "HeadObject", &[sse_s3]), argument);
    }

    #[test]
    fn encryption_requests_are_refused_as_s3_refuses_them() {
        let not_impl = Some(("NotImplemented".to_owned(), 501));
        let invalid = Some(("InvalidRequest".to_owned(), 400));
        let ssec = ("x-amz-server-side-encryption-customer-algorithm", "AES256");
        // A customer key is judged by the handlers (`sse_c.rs`), on reads and writes alike.
        for op in WRITES.iter().chain(&READS) {
            assert_eq!(answer(op, &[ssec]), None, "{op}");
        }
        assert_eq!(
            answer("PutObject", &[("x-amz-server-side-encryption", "aws:kms")]),
            not_impl
        );
        assert_eq!(
            answer("CreateMultipartUpload", &[("x-amz-server-side-encryption", "AES256")]),
            not_impl
        );
        let argument = Some(("InvalidArgument".to_owned(), 400));
        let kms = ("x-amz-server-side-encryption", "aws:kms");
        let key_id = ("x-amz-server-side-encryption-aws-kms-key-id", "testkey-1");
        assert_eq!(answer("GetObject", &[kms, key_id]), argument, "a method on a read");
        assert_eq!(answer("HeadObject", &[kms]), argument);
        assert_eq!(answer("PutObject", &[key_id]), argument, "a KMS key without aws:kms");
        assert_eq!(
            answer("PutObject", &[("x-amz-server-side-encryption", "AES255")]),
            argument
        );
        assert_eq!(answer("PutObject", &[kms, key_id]), not_impl);
        assert_eq!(
            answer("PutObject", &[ssec, kms]),
            argument,
            "a customer key and a method"
        );
        assert_eq!(
            answer("PutObject", &[ssec, ("x-amz-server-side-encryption", "AES256")]),
            argument
        );
        let src = ("x-amz-copy-source-server-side-encryption-customer-key", "k");
        assert_eq!(answer("CopyObject", &[src]), None);
        assert_eq!(answer("UploadPartCopy", &[src]), None);
        assert_eq!(answer("PutObject", &[src]), invalid, "no source to name a key of");
        // Object lock is judged with the bucket (`object_lock.rs`), not here.
        assert_eq!(answer("PutObject", &[("x-amz-object-lock-legal-hold", "ON")]), None);
        // What asks for nothing unoffered passes, and operations that neither read nor write
        // object data take no notice of these headers.
        assert_eq!(
            answer("DeleteObject", &[("x-amz-server-side-encryption", "AES256")]),
            None
        );
        assert_eq!(answer("ListObjectsV2", &[ssec]), None);
        assert_eq!(answer("PutObject", &[("x-amz-meta-server-side-encryption", "x")]), None);
        assert_eq!(answer("PutObject", &[("content-type", "text/plain")]), None);
    }

    #[test]
    fn storage_classes_s3_does_not_know_are_refused() {
        let invalid = Some(("InvalidStorageClass".to_owned(), 400));
        for op in ["PutObject", "CreateMultipartUpload", "CopyObject"] {
            assert_eq!(
                answer(op, &[("x-amz-storage-class", "INVALID_STORAGE_CLASS")]),
                invalid,
                "{op}"
            );
            assert_eq!(answer(op, &[("x-amz-storage-class", "standard")]), invalid, "{op}");
            assert_eq!(answer(op, &[("x-amz-storage-class", "STANDARD_IA")]), None, "{op}");
            assert_eq!(
                answer(op, &[("x-amz-storage-class", "REDUCED_REDUNDANCY")]),
                None,
                "{op}"
            );
        }
        // A part or a read takes no notice, as on S3.
        assert_eq!(answer("UploadPart", &[("x-amz-storage-class", "BOGUS")]), None);
        assert_eq!(answer("GetObject", &[("x-amz-storage-class", "BOGUS")]), None);
        // Every class S3 names is taken (FSX_ONTAP the newest); a refusal names what was asked.
        assert!(refuse_unknown_storage_class(b"FSX_ONTAP").is_ok());
        let e = refuse_unknown_storage_class(b"B<G").unwrap_err();
        let detail = e.headers().and_then(|h| h.get(crate::s3::DETAIL_HEADER)).unwrap();
        assert_eq!(detail, "<StorageClassRequested>B&lt;G</StorageClassRequested>");
    }
}
