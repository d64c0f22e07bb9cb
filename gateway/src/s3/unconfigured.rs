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

impl Gateway {
    /// GetBucketEncryption: no default encryption configured (S3 before 2023, and what a bucket
    /// here is: objects are plain files in the tenant's folder).
    pub(crate) async fn get_bucket_encryption(
        &self,
        req: S3Request<GetBucketEncryptionInput>,
    ) -> S3Result<S3Response<GetBucketEncryptionOutput>> {
        self.bucket(&caller(&req)?, &req.input.bucket).await?;
        Err(no_encryption_configuration())
    }

    /// GetBucketWebsite: no website configuration.
    pub(crate) async fn get_bucket_website(
        &self,
        req: S3Request<GetBucketWebsiteInput>,
    ) -> S3Result<S3Response<GetBucketWebsiteOutput>> {
        self.bucket(&caller(&req)?, &req.input.bucket).await?;
        Err(s3_error!(
            NoSuchWebsiteConfiguration,
            "The specified bucket does not have a website configuration"
        ))
    }

    /// GetBucketLogging: logging off (an empty `BucketLoggingStatus`).
    pub(crate) async fn get_bucket_logging(
        &self,
        req: S3Request<GetBucketLoggingInput>,
    ) -> S3Result<S3Response<GetBucketLoggingOutput>> {
        self.bucket(&caller(&req)?, &req.input.bucket).await?;
        Ok(S3Response::new(GetBucketLoggingOutput::default()))
    }

    /// GetBucketNotificationConfiguration: no notifications (an empty configuration).
    pub(crate) async fn get_bucket_notification_configuration(
        &self,
        req: S3Request<GetBucketNotificationConfigurationInput>,
    ) -> S3Result<S3Response<GetBucketNotificationConfigurationOutput>> {
        self.bucket(&caller(&req)?, &req.input.bucket).await?;
        Ok(S3Response::new(GetBucketNotificationConfigurationOutput::default()))
    }

    /// GetObjectLockConfiguration: object lock not enabled.
    pub(crate) async fn get_object_lock_configuration(
        &self,
        req: S3Request<GetObjectLockConfigurationInput>,
    ) -> S3Result<S3Response<GetObjectLockConfigurationOutput>> {
        self.bucket(&caller(&req)?, &req.input.bucket).await?;
        Err(s3_error!(
            ObjectLockConfigurationNotFoundError,
            "Object Lock configuration does not exist for this bucket"
        ))
    }

    /// GetBucketAccelerateConfiguration: never set (no `Status`, as S3 answers then).
    pub(crate) async fn get_bucket_accelerate_configuration(
        &self,
        req: S3Request<GetBucketAccelerateConfigurationInput>,
    ) -> S3Result<S3Response<GetBucketAccelerateConfigurationOutput>> {
        self.bucket(&caller(&req)?, &req.input.bucket).await?;
        Ok(S3Response::new(GetBucketAccelerateConfigurationOutput::default()))
    }

    /// GetBucketRequestPayment: the bucket owner pays, S3's default and the only mode here.
    pub(crate) async fn get_bucket_request_payment(
        &self,
        req: S3Request<GetBucketRequestPaymentInput>,
    ) -> S3Result<S3Response<GetBucketRequestPaymentOutput>> {
        self.bucket(&caller(&req)?, &req.input.bucket).await?;
        Ok(S3Response::new(GetBucketRequestPaymentOutput {
            payer: Some(Payer::from_static(Payer::BUCKET_OWNER)),
        }))
    }

    /// GetBucketReplication: no replication configuration.
    pub(crate) async fn get_bucket_replication(
        &self,
        req: S3Request<GetBucketReplicationInput>,
    ) -> S3Result<S3Response<GetBucketReplicationOutput>> {
        self.bucket(&caller(&req)?, &req.input.bucket).await?;
        Err(s3_error!(
            ReplicationConfigurationNotFoundError,
            "The replication configuration was not found"
        ))
    }
}
