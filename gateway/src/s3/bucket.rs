//! Bucket operations: a bucket is a vfolder in the caller's user quota scope.

use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result};
use uuid::Uuid;

use penstock_backends::{FolderLocation, QuotaScope};
use penstock_metadata::{BucketRecord, Perm, UploadQuery, VersionQuery};

use super::error::backend_err;
use super::object::{now_ms, ts_ms};
use super::{caller, location, meta_err, Gateway};

/// Prefixes and suffixes S3 reserves for its own kinds of names (access point aliases, Object
/// Lambda, Multi-Region Access Points, directory and table buckets), which a general purpose
/// bucket may not take. s3s's name check covers the rest of the rules (and `xn--`).
const RESERVED_PREFIXES: [&str; 2] = ["sthree-", "amzn-s3-demo-"];
const RESERVED_SUFFIXES: [&str; 5] = ["-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"];

/// The region where S3 lets CreateBucket of a bucket you already own succeed.
const LEGACY_REGION: &str = "us-east-1";

/// The names a request may address, as s3s's path parser is told to check them: S3's legacy
/// (us-east-1) rules, 3 to 255 letters of either case, digits, `.`, `-` and `_`. A name within
/// them that no bucket has is looked up like any other and answers 404 NoSuchBucket, as S3 does
/// (clients such as s3transfer's tests rely on that); only CreateBucket holds a name to the
/// strict DNS rules, in `refused_bucket_name`. Anything else still answers 400
/// InvalidBucketName before any lookup.
pub(crate) struct LookupNames;

impl s3s::validation::NameValidation for LookupNames {
    fn validate_bucket_name(&self, name: &str) -> bool {
        (3..=255).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
    }
}

/// Why `name` may not be given to a new bucket: S3's naming rules (s3s's check: 3 to 63
/// lower-case letters, digits, dots and hyphens, no IP address, no `xn--`), then a reserved
/// prefix or suffix, or a dot next to a hyphen (each dot-separated label of a DNS name starts and
/// ends with a letter or digit; S3 refuses `foo.-bar` and `foo-.bar`).
pub(crate) fn refused_bucket_name(name: &str) -> Option<String> {
    if !s3s::path::check_bucket_name(name) {
        return Some(
            "names are 3 to 63 lower-case letters, digits, dots and hyphens, starting and ending \
             with a letter or digit"
                .to_owned(),
        );
    }
    if name.contains(".-") || name.contains("-.") {
        return Some("a period may not be next to a hyphen".to_owned());
    }
    if let Some(p) = RESERVED_PREFIXES.iter().find(|p| name.starts_with(*p)) {
        return Some(format!("bucket names may not start with {p:?}"));
    }
    let s = RESERVED_SUFFIXES.iter().find(|s| name.ends_with(*s))?;
    Some(format!("bucket names may not end with {s:?}"))
}

impl Gateway {
    /// CreateBucket: a new folder on the default volume, owned by the caller.
    pub(crate) async fn create_bucket(
        &self,
        req: S3Request<CreateBucketInput>,
    ) -> S3Result<S3Response<CreateBucketOutput>> {
        let who = caller(&req)?;
        let name = req.input.bucket.clone();
        if let Some(why) = refused_bucket_name(&name) {
            return Err(s3_error!(InvalidBucketName, "The specified bucket is not valid: {why}"));
        }
        let (d, n) = (who.user.domain.clone(), name.clone());
        if let Some(existing) = self.meta.bucket(&d, &n).await.map_err(meta_err)? {
            if existing.quota_scope != QuotaScope::user(who.user.id) {
                return Err(s3_error!(
                    BucketAlreadyExists,
                    "The requested bucket name is not available."
                ));
            }
            // S3 answers a repeated CreateBucket of your own bucket with success in us-east-1
            // (its legacy region) and with BucketAlreadyOwnedByYou everywhere else; clients
            // written against either expect that, so the configured region decides, and a
            // request naming another region is answered as that region would (minio-go's
            // tests create in eu-central-1 twice and expect the 409).
            let asked = req
                .input
                .create_bucket_configuration
                .as_ref()
                .and_then(|c| c.location_constraint.as_ref())
                .map(|l| l.as_str())
                .filter(|l| !l.is_empty());
            if self.region == LEGACY_REGION && asked.is_none_or(|l| l == LEGACY_REGION) {
                return Ok(S3Response::new(CreateBucketOutput {
                    location: Some(format!("/{name}")),
                }));
            }
            return Err(s3_error!(
                BucketAlreadyOwnedByYou,
                "Your previous request to create the named bucket succeeded and you already own it."
            ));
        }
        let loc = FolderLocation {
            scope: QuotaScope::user(who.user.id),
            id: Uuid::new_v4(),
        };
        let volume = self.volume(&self.default_volume)?.clone();
        let mut rec = BucketRecord::new(
            name.clone(),
            who.user.domain.clone(),
            loc.id,
            volume.name().to_owned(),
            loc.scope,
            now_ms(),
        );
        self.creation_acl(&mut rec, &req.input).await?;
        // A bucket made with object lock is versioned from the start, as on S3.
        if req.input.object_lock_enabled_for_bucket == Some(true) {
            rec.versioning = Some(penstock_metadata::Versioning::Enabled);
            rec.object_lock = Some(penstock_metadata::ObjectLock::default());
        }
        // Folder and record are made, or the folder undone, in a task of its own: a client that
        // disconnects midway (dropping this future) must not leave a folder without a record.
        let meta = self.meta.clone();
        let created = tokio::spawn(async move {
            volume.create_folder(&loc).await.map_err(backend_err)?;
            match meta.create_bucket(&rec).await.map_err(meta_err) {
                Ok(true) => Ok(true),
                outcome => {
                    // Lost a race for the name, or the record could not be written.
                    let _ = volume.delete_folder(&loc).await;
                    outcome
                }
            }
        })
        .await
        .map_err(super::internal)??;
        if !created {
            return Err(s3_error!(
                BucketAlreadyExists,
                "The requested bucket name is not available."
            ));
        }
        tracing::info!(bucket = %name, folder = %loc.id, scope = %loc.scope, "bucket created");
        Ok(S3Response::new(CreateBucketOutput {
            location: Some(format!("/{name}")),
        }))
    }

    /// HeadBucket.
    pub(crate) async fn head_bucket(&self, req: S3Request<HeadBucketInput>) -> S3Result<S3Response<HeadBucketOutput>> {
        self.bucket(&caller(&req)?, &req.input.bucket).await?;
        let mut resp = S3Response::new(HeadBucketOutput {
            bucket_region: Some(self.region.clone()),
            access_point_alias: Some(false),
            ..Default::default()
        });
        // S3 labels the (bodiless) answer as XML, like its other bucket answers.
        resp.headers.insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/xml"),
        );
        Ok(resp)
    }

    /// DeleteBucket: only an empty folder can go, with no noncurrent versions or delete markers.
    pub(crate) async fn delete_bucket(
        &self,
        req: S3Request<DeleteBucketInput>,
    ) -> S3Result<S3Response<DeleteBucketOutput>> {
        let b = self.bucket(&caller(&req)?, &req.input.bucket).await?;
        let any_version = VersionQuery {
            prefix: "",
            after: None,
            limit: 1,
        };
        let versions = self
            .meta
            .list_versions(b.rec.folder_id, any_version)
            .await
            .map_err(meta_err)?;
        if !versions.is_empty() || !b.folder.is_empty().await.map_err(backend_err)? {
            return Err(s3_error!(BucketNotEmpty, "The bucket you tried to delete is not empty"));
        }
        let loc = location(&b.rec);
        // Parts of unfinished uploads are charged to the scope and go away with the folder.
        let released = self.upload_bytes(b.rec.folder_id).await?;
        self.volume(&b.rec.volume)?
            .delete_folder(&loc)
            .await
            .map_err(backend_err)?;
        let rec = b.rec.clone();
        self.meta.delete_bucket(&rec).await.map_err(meta_err)?;
        self.charge(&b.rec.quota_scope, -(released as i64)).await?;
        tracing::info!(bucket = %b.rec.name, "bucket deleted");
        Ok(S3Response::new(DeleteBucketOutput::default()))
    }

    /// ListBuckets: the buckets the caller may use.
    pub(crate) async fn list_buckets(
        &self,
        req: S3Request<ListBucketsInput>,
    ) -> S3Result<S3Response<ListBucketsOutput>> {
        let who = caller(&req)?;
        let i = &req.input;
        // A page is at most `max-buckets` (1..=10000, as on S3); without it, every bucket.
        let most = match i.max_buckets {
            None => usize::MAX,
            Some(n @ 1..=10_000) => n as usize,
            Some(_) => {
                return Err(s3_error!(
                    InvalidArgument,
                    "max-buckets must be an integer between 1 and 10000"
                ))
            }
        };
        let prefix = i.prefix.as_deref().unwrap_or_default();
        // The token is the last name of the previous page (names are unique in the domain and
        // listed in order, so the next page starts after it).
        let after = i.continuation_token.as_deref().unwrap_or_default();
        // Every bucket here is in the gateway's one region; asking for another lists none.
        let here = i.bucket_region.as_deref().is_none_or(|r| r == self.region);
        let all = self.meta.buckets().await.map_err(meta_err)?;
        let mut listed = all.into_iter().filter(|b| {
            here && b.domain == who.user.domain
                && b.name.starts_with(prefix)
                && b.name.as_str() > after
                && who.may(b, Perm::Ro)
        });
        let buckets: Vec<Bucket> = listed
            .by_ref()
            .take(most)
            .map(|b| Bucket {
                name: Some(b.name),
                creation_date: Some(ts_ms(b.created_ms)),
                bucket_region: Some(self.region.clone()),
            })
            .collect();
        let continuation_token = match listed.next() {
            Some(_) => buckets.last().and_then(|b| b.name.clone()),
            None => None,
        };
        Ok(S3Response::new(ListBucketsOutput {
            buckets: Some(buckets),
            owner: Some(Owner {
                // The same ID and name as the owner of the caller's own buckets (`owner_of`),
                // so ListBuckets and the ACLs name one owner one way.
                id: Some(who.user.id.simple().to_string()),
                display_name: Some(QuotaScope::user(who.user.id).to_string()),
            }),
            prefix: i.prefix.clone(),
            continuation_token,
        }))
    }

    /// GetBucketLocation: empty for us-east-1, as S3 answers.
    pub(crate) async fn get_bucket_location(
        &self,
        req: S3Request<GetBucketLocationInput>,
    ) -> S3Result<S3Response<GetBucketLocationOutput>> {
        self.bucket(&caller(&req)?, &req.input.bucket).await?;
        let loc = (self.region != "us-east-1").then(|| BucketLocationConstraint::from(self.region.clone()));
        Ok(S3Response::new(GetBucketLocationOutput {
            location_constraint: loc,
        }))
    }

    /// Bytes of the parts of every unfinished upload of a folder: charged to its scope, they go
    /// away with the folder.
    async fn upload_bytes(&self, folder: Uuid) -> S3Result<u64> {
        let mut sum = 0;
        let mut after: Option<(String, String)> = None;
        loop {
            let pos = after.as_ref().map(|(k, id)| (k.as_str(), id.as_str()));
            let q = UploadQuery {
                prefix: "",
                after: pos,
                limit: 1000,
            };
            let page = self.meta.uploads(folder, q).await.map_err(meta_err)?;
            for u in &page {
                sum += self
                    .meta
                    .parts(&u.upload_id)
                    .await
                    .map_err(meta_err)?
                    .iter()
                    .map(|p| p.size)
                    .sum::<u64>();
            }
            match page.last() {
                Some(u) if page.len() == 1000 => after = Some((u.key.clone(), u.upload_id.to_string())),
                _ => return Ok(sum),
            }
        }
    }
}
