//! ACLs. Buckets behave as S3 buckets whose Object Ownership is "bucket owner enforced" (the
//! S3 default for new buckets since 2023): who may do what is the folder's permissions (see
//! `auth`), an ACL reads as the owner's full control, and setting one succeeds only when it asks
//! for exactly that; any other ACL is refused with `AccessControlListNotSupported`, as S3 refuses
//! it on such buckets.

use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result};

use super::object::parse_key;
use super::{caller, owner_of, BucketCtx, Gateway};

/// The one ACL there is: the owner's full control.
fn owner_acl(owner: &Owner) -> Grants {
    vec![Grant {
        grantee: Some(Grantee {
            display_name: owner.display_name.clone(),
            email_address: None,
            id: owner.id.clone(),
            type_: Type::from_static(Type::CANONICAL_USER),
            uri: None,
        }),
        permission: Some(Permission::from_static(Permission::FULL_CONTROL)),
    }]
}

/// What a PutBucketAcl or PutObjectAcl asks for, from whichever of its three forms it used.
struct Requested<'a> {
    canned: Option<&'a str>,
    grant_headers: [Option<&'a str>; 5],
    policy: Option<&'a AccessControlPolicy>,
}

/// The [`Requested`] of a PutBucketAcl or PutObjectAcl input (both carry the same fields).
macro_rules! acl_request {
    ($i:expr, $canned:ty) => {
        Requested {
            canned: $i.acl.as_ref().map(<$canned>::as_str),
            grant_headers: [
                $i.grant_full_control.as_deref(),
                $i.grant_read.as_deref(),
                $i.grant_read_acp.as_deref(),
                $i.grant_write.as_deref(),
                $i.grant_write_acp.as_deref(),
            ],
            policy: $i.access_control_policy.as_ref(),
        }
    };
}

impl Requested<'_> {
    /// Whether the request grants the owner full control and nothing else.
    fn is_owner_only(&self, owner: &Owner) -> bool {
        let owner_id = owner.id.as_deref().unwrap_or_default();
        if let Some(c) = self.canned {
            return matches!(c, "private" | "bucket-owner-full-control");
        }
        if self.grant_headers.iter().any(Option::is_some) {
            let [full, rest @ ..] = &self.grant_headers;
            // `x-amz-grant-full-control: id="<owner>"`, alone.
            let only_owner = full.is_some_and(|v| {
                v.split(',').all(|g| {
                    let g = g.trim();
                    g.strip_prefix("id=").is_some_and(|id| id.trim_matches('"') == owner_id)
                })
            });
            return only_owner && rest.iter().all(Option::is_none);
        }
        match self.policy.and_then(|p| p.grants.as_deref()) {
            None | Some([]) => false,
            Some(grants) => grants.iter().all(|g| {
                let to_owner = g
                    .grantee
                    .as_ref()
                    .is_some_and(|e| e.type_.as_str() == Type::CANONICAL_USER && e.id.as_deref() == Some(owner_id));
                to_owner
                    && g.permission
                        .as_ref()
                        .is_some_and(|p| p.as_str() == Permission::FULL_CONTROL)
            }),
        }
    }
}

/// Refuses anything but the owner's full control, as S3 does on buckets without ACLs.
fn check_requested(asked: &Requested<'_>, owner: &Owner) -> S3Result<()> {
    if asked.canned.is_none() && asked.grant_headers.iter().all(Option::is_none) && asked.policy.is_none() {
        return Err(s3_error!(
            MissingSecurityHeader,
            "Your request was missing a required header: x-amz-acl, x-amz-grant-* or an AccessControlPolicy body"
        ));
    }
    if asked.canned.is_some() && asked.grant_headers.iter().any(Option::is_some) {
        return Err(s3_error!(
            InvalidRequest,
            "Specifying both Canned ACLs and Header Grants is not allowed"
        ));
    }
    if asked.is_owner_only(owner) {
        Ok(())
    } else {
        Err(s3_error!(
            AccessControlListNotSupported,
            "The bucket does not allow ACLs"
        ))
    }
}

/// The `x-amz-grant-*` headers of an object write (PutObject, CopyObject,
/// CreateMultipartUpload): full control, read, read ACP, write ACP.
macro_rules! write_grants {
    ($input:expr) => {
        [
            $input.grant_full_control.as_deref(),
            $input.grant_read.as_deref(),
            $input.grant_read_acp.as_deref(),
            $input.grant_write_acp.as_deref(),
        ]
    };
}
pub(crate) use write_grants;

/// Checks the ACL an object write asks for: none, or the bucket owner's full control. Anything
/// else is refused before a byte is written, as S3 refuses it on buckets without ACLs; accepting
/// it silently would leave a client believing an object public that is not.
pub(crate) fn check_write_acl(
    b: &BucketCtx,
    canned: Option<&ObjectCannedACL>,
    grants: [Option<&str>; 4],
) -> S3Result<()> {
    let [full, read, read_acp, write_acp] = grants;
    let asked = Requested {
        canned: canned.map(ObjectCannedACL::as_str),
        grant_headers: [full, read, read_acp, None, write_acp],
        policy: None,
    };
    if asked.canned.is_none() && asked.grant_headers.iter().all(Option::is_none) {
        return Ok(());
    }
    check_requested(&asked, &owner_of(&b.rec))
}

fn check_version(v: Option<&str>) -> S3Result<()> {
    match v {
        None | Some("null") => Ok(()),
        Some(_) => Err(s3_error!(NoSuchVersion, "The specified version does not exist.")),
    }
}

impl Gateway {
    /// GetBucketAcl: the owner's full control.
    pub(crate) async fn get_bucket_acl(
        &self,
        req: S3Request<GetBucketAclInput>,
    ) -> S3Result<S3Response<GetBucketAclOutput>> {
        let b = self.bucket(&caller(&req)?, &req.input.bucket).await?;
        let owner = owner_of(&b.rec);
        Ok(S3Response::new(GetBucketAclOutput {
            grants: Some(owner_acl(&owner)),
            owner: Some(owner),
        }))
    }

    /// PutBucketAcl: accepted when it sets what is already there, else refused.
    pub(crate) async fn put_bucket_acl(
        &self,
        req: S3Request<PutBucketAclInput>,
    ) -> S3Result<S3Response<PutBucketAclOutput>> {
        let i = &req.input;
        let b = self.bucket(&caller(&req)?, &i.bucket).await?;
        check_requested(&acl_request!(i, BucketCannedACL), &owner_of(&b.rec))?;
        Ok(S3Response::new(PutBucketAclOutput::default()))
    }

    /// GetObjectAcl: the bucket owner's full control, for an object that exists.
    pub(crate) async fn get_object_acl(
        &self,
        req: S3Request<GetObjectAclInput>,
    ) -> S3Result<S3Response<GetObjectAclOutput>> {
        let i = &req.input;
        parse_key(&i.key)?;
        check_version(i.version_id.as_deref())?;
        let b = self.bucket(&caller(&req)?, &i.bucket).await?;
        self.open_object(&b, &i.key).await?;
        let owner = owner_of(&b.rec);
        Ok(S3Response::new(GetObjectAclOutput {
            grants: Some(owner_acl(&owner)),
            owner: Some(owner),
            ..Default::default()
        }))
    }

    /// PutObjectAcl: accepted for an existing object when it sets what is already there.
    pub(crate) async fn put_object_acl(
        &self,
        req: S3Request<PutObjectAclInput>,
    ) -> S3Result<S3Response<PutObjectAclOutput>> {
        let i = &req.input;
        parse_key(&i.key)?;
        check_version(i.version_id.as_deref())?;
        let b = self.bucket(&caller(&req)?, &i.bucket).await?;
        self.open_object(&b, &i.key).await?;
        check_requested(&acl_request!(i, ObjectCannedACL), &owner_of(&b.rec))?;
        Ok(S3Response::new(PutObjectAclOutput::default()))
    }

    /// GetBucketOwnershipControls: bucket owner enforced.
    pub(crate) async fn get_bucket_ownership_controls(
        &self,
        req: S3Request<GetBucketOwnershipControlsInput>,
    ) -> S3Result<S3Response<GetBucketOwnershipControlsOutput>> {
        self.bucket(&caller(&req)?, &req.input.bucket).await?;
        Ok(S3Response::new(GetBucketOwnershipControlsOutput {
            ownership_controls: Some(OwnershipControls {
                rules: vec![OwnershipControlsRule {
                    object_ownership: ObjectOwnership::from_static(ObjectOwnership::BUCKET_OWNER_ENFORCED),
                }],
            }),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner() -> Owner {
        Owner {
            id: Some("abc123".into()),
            display_name: Some("user:abc".into()),
        }
    }

    fn grant(id: &str, perm: &str) -> Grant {
        Grant {
            grantee: Some(Grantee {
                display_name: None,
                email_address: None,
                id: Some(id.into()),
                type_: Type::from_static(Type::CANONICAL_USER),
                uri: None,
            }),
            permission: Some(Permission::from(perm.to_owned())),
        }
    }

    fn asked<'a>(
        canned: Option<&'a str>,
        headers: [Option<&'a str>; 5],
        policy: Option<&'a AccessControlPolicy>,
    ) -> bool {
        Requested {
            canned,
            grant_headers: headers,
            policy,
        }
        .is_owner_only(&owner())
    }

    #[test]
    fn only_the_owners_full_control_is_accepted() {
        assert!(!asked(None, [None; 5], None));
        assert!(asked(Some("private"), [None; 5], None));
        assert!(asked(Some("bucket-owner-full-control"), [None; 5], None));
        assert!(!asked(Some("public-read"), [None; 5], None));
        assert!(!asked(Some("authenticated-read"), [None; 5], None));
        assert!(asked(None, [Some("id=\"abc123\""), None, None, None, None], None));
        assert!(asked(None, [Some("id=abc123"), None, None, None, None], None));
        assert!(!asked(None, [Some("id=\"someone\""), None, None, None, None], None));
        assert!(!asked(
            None,
            [Some("id=abc123, id=other"), None, None, None, None],
            None
        ));
        assert!(!asked(
            None,
            [
                None,
                Some("uri=\"http://acs.amazonaws.com/groups/global/AllUsers\""),
                None,
                None,
                None
            ],
            None
        ));
        let mine = AccessControlPolicy {
            grants: Some(vec![grant("abc123", "FULL_CONTROL")]),
            owner: Some(owner()),
        };
        assert!(asked(None, [None; 5], Some(&mine)));
        let shared = AccessControlPolicy {
            grants: Some(vec![grant("abc123", "FULL_CONTROL"), grant("other", "READ")]),
            owner: Some(owner()),
        };
        assert!(!asked(None, [None; 5], Some(&shared)));
        let weaker = AccessControlPolicy {
            grants: Some(vec![grant("abc123", "READ")]),
            owner: Some(owner()),
        };
        assert!(!asked(None, [None; 5], Some(&weaker)));
        let none = AccessControlPolicy {
            grants: Some(vec![]),
            owner: Some(owner()),
        };
        assert!(
            !asked(None, [None; 5], Some(&none)),
            "an ACL that grants no one is not the owner's"
        );
    }
}
