//! The table of S3 operations this gateway offers: for each, the handler it routes to and what
//! the caller needs to run it. Router and permissions come from this one list, so an operation
//! cannot be routed without a permission, and an operation missing here is refused as
//! `NotImplemented` by the access check before any handler runs.

use s3s::dto::*;
use s3s::{S3Request, S3Response, S3Result, S3};

use penstock_metadata::Perm;

use super::Gateway;

/// What an S3 operation needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Not bucket-scoped (ListBuckets, CreateBucket): any authenticated user.
    Authenticated,
    /// At least this permission on the bucket's folder.
    Folder(Perm),
    /// Not offered by this gateway: answered `NotImplemented`.
    Unsupported,
}

/// The `S3` trait object handed to s3s.
#[derive(Clone)]
pub(crate) struct S3Gateway(pub(crate) std::sync::Arc<Gateway>);

/// `Name => handler(Input) -> Output, need;` for each operation: `Name` as s3s names it, the
/// [`Gateway`] method that serves it, and its [`Need`] (`any`, `ro`, `rw` or `wd`).
macro_rules! operations {
    ($($name:ident => $method:ident($input:ty) -> $output:ty, $need:ident;)*) => {
        #[async_trait::async_trait]
        impl S3 for S3Gateway {
            $(
                async fn $method(&self, req: S3Request<$input>) -> S3Result<S3Response<$output>> {
                    self.0.$method(req).await
                }
            )*
        }

        /// What the operation s3s names `op` needs; `Unsupported` for any not in the table.
        pub fn required(op: &str) -> Need {
            match op {
                // s3s names a browser-form upload PostObject and serves it with put_object.
                "PostObject" => required("PutObject"),
                $(stringify!($name) => operations!(@need $need),)*
                _ => Need::Unsupported,
            }
        }

        /// Every operation in the table: its s3s name and its handler's name.
        #[cfg(test)]
        const ALL: &[(&str, &str)] = &[$((stringify!($name), stringify!($method))),*];
    };
    (@need any) => { Need::Authenticated };
    (@need ro) => { Need::Folder(Perm::Ro) };
    (@need rw) => { Need::Folder(Perm::Rw) };
    (@need wd) => { Need::Folder(Perm::Wd) };
}

operations! {
    ListBuckets => list_buckets(ListBucketsInput) -> ListBucketsOutput, any;
    CreateBucket => create_bucket(CreateBucketInput) -> CreateBucketOutput, any;
    HeadBucket => head_bucket(HeadBucketInput) -> HeadBucketOutput, ro;
    DeleteBucket => delete_bucket(DeleteBucketInput) -> DeleteBucketOutput, wd;
    GetBucketLocation => get_bucket_location(GetBucketLocationInput) -> GetBucketLocationOutput, ro;
    GetBucketVersioning => get_bucket_versioning(GetBucketVersioningInput) -> GetBucketVersioningOutput, ro;
    PutBucketVersioning => put_bucket_versioning(PutBucketVersioningInput) -> PutBucketVersioningOutput, wd;
    GetBucketLifecycleConfiguration => get_bucket_lifecycle_configuration(GetBucketLifecycleConfigurationInput)
        -> GetBucketLifecycleConfigurationOutput, ro;
    PutBucketLifecycleConfiguration => put_bucket_lifecycle_configuration(PutBucketLifecycleConfigurationInput)
        -> PutBucketLifecycleConfigurationOutput, wd;
    DeleteBucketLifecycle => delete_bucket_lifecycle(DeleteBucketLifecycleInput) -> DeleteBucketLifecycleOutput, wd;
    GetBucketAcl => get_bucket_acl(GetBucketAclInput) -> GetBucketAclOutput, ro;
    PutBucketAcl => put_bucket_acl(PutBucketAclInput) -> PutBucketAclOutput, wd;
    GetBucketOwnershipControls => get_bucket_ownership_controls(GetBucketOwnershipControlsInput)
        -> GetBucketOwnershipControlsOutput, ro;
    GetBucketPolicy => get_bucket_policy(GetBucketPolicyInput) -> GetBucketPolicyOutput, ro;
    PutBucketPolicy => put_bucket_policy(PutBucketPolicyInput) -> PutBucketPolicyOutput, wd;
    DeleteBucketPolicy => delete_bucket_policy(DeleteBucketPolicyInput) -> DeleteBucketPolicyOutput, wd;
    GetBucketPolicyStatus => get_bucket_policy_status(GetBucketPolicyStatusInput) -> GetBucketPolicyStatusOutput, ro;
    GetPublicAccessBlock => get_public_access_block(GetPublicAccessBlockInput) -> GetPublicAccessBlockOutput, ro;
    PutPublicAccessBlock => put_public_access_block(PutPublicAccessBlockInput) -> PutPublicAccessBlockOutput, wd;
    DeletePublicAccessBlock => delete_public_access_block(DeletePublicAccessBlockInput)
        -> DeletePublicAccessBlockOutput, wd;
    GetBucketCors => get_bucket_cors(GetBucketCorsInput) -> GetBucketCorsOutput, ro;
    PutBucketCors => put_bucket_cors(PutBucketCorsInput) -> PutBucketCorsOutput, wd;
    DeleteBucketCors => delete_bucket_cors(DeleteBucketCorsInput) -> DeleteBucketCorsOutput, wd;
    GetBucketTagging => get_bucket_tagging(GetBucketTaggingInput) -> GetBucketTaggingOutput, ro;
    PutBucketTagging => put_bucket_tagging(PutBucketTaggingInput) -> PutBucketTaggingOutput, wd;
    DeleteBucketTagging => delete_bucket_tagging(DeleteBucketTaggingInput) -> DeleteBucketTaggingOutput, wd;
    // Settings not offered here, read as never set and deleted as no-ops (`unconfigured.rs`);
    // setting them stays NotImplemented.
    GetBucketEncryption => get_bucket_encryption(GetBucketEncryptionInput) -> GetBucketEncryptionOutput, ro;
    // Served where volumes encrypt at rest (SSE-S3 only), NotImplemented elsewhere.
    PutBucketEncryption => put_bucket_encryption(PutBucketEncryptionInput) -> PutBucketEncryptionOutput, wd;
    GetBucketWebsite => get_bucket_website(GetBucketWebsiteInput) -> GetBucketWebsiteOutput, ro;
    GetBucketLogging => get_bucket_logging(GetBucketLoggingInput) -> GetBucketLoggingOutput, ro;
    GetBucketNotificationConfiguration => get_bucket_notification_configuration(
        GetBucketNotificationConfigurationInput) -> GetBucketNotificationConfigurationOutput, ro;
    GetBucketAccelerateConfiguration => get_bucket_accelerate_configuration(GetBucketAccelerateConfigurationInput)
        -> GetBucketAccelerateConfigurationOutput, ro;
    GetBucketRequestPayment => get_bucket_request_payment(GetBucketRequestPaymentInput)
        -> GetBucketRequestPaymentOutput, ro;
    GetBucketReplication => get_bucket_replication(GetBucketReplicationInput) -> GetBucketReplicationOutput, ro;
    ListBucketAnalyticsConfigurations => list_bucket_analytics_configurations(
        ListBucketAnalyticsConfigurationsInput) -> ListBucketAnalyticsConfigurationsOutput, ro;
    ListBucketInventoryConfigurations => list_bucket_inventory_configurations(
        ListBucketInventoryConfigurationsInput) -> ListBucketInventoryConfigurationsOutput, ro;
    ListBucketMetricsConfigurations => list_bucket_metrics_configurations(
        ListBucketMetricsConfigurationsInput) -> ListBucketMetricsConfigurationsOutput, ro;
    ListBucketIntelligentTieringConfigurations => list_bucket_intelligent_tiering_configurations(
        ListBucketIntelligentTieringConfigurationsInput) -> ListBucketIntelligentTieringConfigurationsOutput, ro;
    GetBucketAnalyticsConfiguration => get_bucket_analytics_configuration(GetBucketAnalyticsConfigurationInput)
        -> GetBucketAnalyticsConfigurationOutput, ro;
    GetBucketInventoryConfiguration => get_bucket_inventory_configuration(GetBucketInventoryConfigurationInput)
        -> GetBucketInventoryConfigurationOutput, ro;
    GetBucketMetricsConfiguration => get_bucket_metrics_configuration(GetBucketMetricsConfigurationInput)
        -> GetBucketMetricsConfigurationOutput, ro;
    GetBucketIntelligentTieringConfiguration => get_bucket_intelligent_tiering_configuration(
        GetBucketIntelligentTieringConfigurationInput) -> GetBucketIntelligentTieringConfigurationOutput, ro;
    DeleteBucketAnalyticsConfiguration => delete_bucket_analytics_configuration(
        DeleteBucketAnalyticsConfigurationInput) -> DeleteBucketAnalyticsConfigurationOutput, wd;
    DeleteBucketInventoryConfiguration => delete_bucket_inventory_configuration(
        DeleteBucketInventoryConfigurationInput) -> DeleteBucketInventoryConfigurationOutput, wd;
    DeleteBucketMetricsConfiguration => delete_bucket_metrics_configuration(
        DeleteBucketMetricsConfigurationInput) -> DeleteBucketMetricsConfigurationOutput, wd;
    DeleteBucketIntelligentTieringConfiguration => delete_bucket_intelligent_tiering_configuration(
        DeleteBucketIntelligentTieringConfigurationInput) -> DeleteBucketIntelligentTieringConfigurationOutput, wd;
    DeleteBucketEncryption => delete_bucket_encryption(DeleteBucketEncryptionInput)
        -> DeleteBucketEncryptionOutput, wd;
    DeleteBucketWebsite => delete_bucket_website(DeleteBucketWebsiteInput) -> DeleteBucketWebsiteOutput, wd;
    DeleteBucketReplication => delete_bucket_replication(DeleteBucketReplicationInput)
        -> DeleteBucketReplicationOutput, wd;
    PutBucketOwnershipControls => put_bucket_ownership_controls(PutBucketOwnershipControlsInput)
        -> PutBucketOwnershipControlsOutput, wd;
    DeleteBucketOwnershipControls => delete_bucket_ownership_controls(DeleteBucketOwnershipControlsInput)
        -> DeleteBucketOwnershipControlsOutput, wd;
    GetObjectAcl => get_object_acl(GetObjectAclInput) -> GetObjectAclOutput, ro;
    PutObjectAcl => put_object_acl(PutObjectAclInput) -> PutObjectAclOutput, rw;
    // Object lock (`object_lock.rs`): removing a lock's protection (bypass) needs `wd` as well.
    GetObjectLockConfiguration => get_object_lock_configuration(GetObjectLockConfigurationInput)
        -> GetObjectLockConfigurationOutput, ro;
    PutObjectLockConfiguration => put_object_lock_configuration(PutObjectLockConfigurationInput)
        -> PutObjectLockConfigurationOutput, wd;
    GetObjectRetention => get_object_retention(GetObjectRetentionInput) -> GetObjectRetentionOutput, ro;
    PutObjectRetention => put_object_retention(PutObjectRetentionInput) -> PutObjectRetentionOutput, rw;
    GetObjectLegalHold => get_object_legal_hold(GetObjectLegalHoldInput) -> GetObjectLegalHoldOutput, ro;
    PutObjectLegalHold => put_object_legal_hold(PutObjectLegalHoldInput) -> PutObjectLegalHoldOutput, rw;
    PutObject => put_object(PutObjectInput) -> PutObjectOutput, rw;
    GetObject => get_object(GetObjectInput) -> GetObjectOutput, ro;
    HeadObject => head_object(HeadObjectInput) -> HeadObjectOutput, ro;
    GetObjectAttributes => get_object_attributes(GetObjectAttributesInput) -> GetObjectAttributesOutput, ro;
    DeleteObject => delete_object(DeleteObjectInput) -> DeleteObjectOutput, wd;
    DeleteObjects => delete_objects(DeleteObjectsInput) -> DeleteObjectsOutput, wd;
    CopyObject => copy_object(CopyObjectInput) -> CopyObjectOutput, rw;
    ListObjects => list_objects(ListObjectsInput) -> ListObjectsOutput, ro;
    ListObjectsV2 => list_objects_v2(ListObjectsV2Input) -> ListObjectsV2Output, ro;
    ListObjectVersions => list_object_versions(ListObjectVersionsInput) -> ListObjectVersionsOutput, ro;
    GetObjectTagging => get_object_tagging(GetObjectTaggingInput) -> GetObjectTaggingOutput, ro;
    PutObjectTagging => put_object_tagging(PutObjectTaggingInput) -> PutObjectTaggingOutput, rw;
    RestoreObject => restore_object(RestoreObjectInput) -> RestoreObjectOutput, rw;
    DeleteObjectTagging => delete_object_tagging(DeleteObjectTaggingInput) -> DeleteObjectTaggingOutput, rw;
    CreateMultipartUpload => create_multipart_upload(CreateMultipartUploadInput) -> CreateMultipartUploadOutput, rw;
    UploadPart => upload_part(UploadPartInput) -> UploadPartOutput, rw;
    UploadPartCopy => upload_part_copy(UploadPartCopyInput) -> UploadPartCopyOutput, rw;
    CompleteMultipartUpload => complete_multipart_upload(CompleteMultipartUploadInput)
        -> CompleteMultipartUploadOutput, rw;
    AbortMultipartUpload => abort_multipart_upload(AbortMultipartUploadInput) -> AbortMultipartUploadOutput, rw;
    ListParts => list_parts(ListPartsInput) -> ListPartsOutput, ro;
    ListMultipartUploads => list_multipart_uploads(ListMultipartUploadsInput) -> ListMultipartUploadsOutput, ro;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_operation_has_its_permission() {
        assert_eq!(required("GetObject"), Need::Folder(Perm::Ro));
        assert_eq!(required("UploadPart"), Need::Folder(Perm::Rw));
        assert_eq!(required("PostObject"), Need::Folder(Perm::Rw));
        assert_eq!(required("DeleteObjects"), Need::Folder(Perm::Wd));
        assert_eq!(required("PutBucketAcl"), Need::Folder(Perm::Wd));
        assert_eq!(required("ListBuckets"), Need::Authenticated);
        assert_eq!(required("PutBucketPolicy"), Need::Folder(Perm::Wd));
        assert_eq!(required("PutBucketCors"), Need::Folder(Perm::Wd));
        assert_eq!(required("PutObjectLockConfiguration"), Need::Folder(Perm::Wd));
        assert_eq!(required("GetObjectLockConfiguration"), Need::Folder(Perm::Ro));
        assert_eq!(required("PutBucketTagging"), Need::Folder(Perm::Wd));
        assert_eq!(required("PutBucketEncryption"), Need::Folder(Perm::Wd));
        assert_eq!(required("PutBucketWebsite"), Need::Unsupported);
        assert!(ALL.iter().all(|(op, _)| required(op) != Need::Unsupported));
    }

    /// Every operation maps to a policy action S3 knows, so a policy can name each (a policy
    /// naming an unknown action is malformed).
    #[test]
    fn every_operation_has_a_policy_action() {
        for (op, _) in ALL.iter().chain(&[("BypassGovernanceRetention", "")]) {
            for versioned in [false, true] {
                let a = super::super::policy::action_of(op, versioned);
                assert!(super::super::policy::known_action(&a), "{op}: {a}");
            }
        }
    }

    /// s3s names each operation as its `S3` method in PascalCase (`list_objects_v2` is
    /// `ListObjectsV2`); a name in the table that breaks the rule would route its handler but
    /// have every request to it refused as not implemented.
    #[test]
    fn names_are_the_s3s_names() {
        for (op, method) in ALL {
            let pascal: String = method
                .split('_')
                .map(|w| w[..1].to_ascii_uppercase() + &w[1..])
                .collect();
            assert_eq!(pascal, *op, "{method} is served as {op}");
        }
    }
}
