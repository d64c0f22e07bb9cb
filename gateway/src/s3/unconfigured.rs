//! Bucket settings this gateway does not offer (encryption, website, logging, notifications,
//! object lock, transfer acceleration, requester pays, replication), read as never set.
//!
//! Tools that manage buckets read every setting of a bucket before they change one (Terraform's
//! AWS provider, console-like UIs, `aws s3api` scripts) and stop at `NotImplemented`. What S3
//! answers for a bucket where the setting was never made is true here, so that is the answer;
//! setting one stays `NotImplemented`, because nothing here would act on it.

use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result};

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

never_set! {
    /// GetBucketEncryption: no default encryption configured (S3 before 2023, and what a bucket
    /// here is: objects are plain files in the tenant's folder).
    get_bucket_encryption(GetBucketEncryptionInput) -> GetBucketEncryptionOutput => Err(no_encryption_configuration());
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
    /// GetObjectLockConfiguration: object lock not enabled.
    get_object_lock_configuration(GetObjectLockConfigurationInput) -> GetObjectLockConfigurationOutput =>
        Err(s3_error!(
            ObjectLockConfigurationNotFoundError,
            "Object Lock configuration does not exist for this bucket"
        ));
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
}
