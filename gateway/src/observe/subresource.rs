//! Sub-resources (`?acl`, `?tagging`, `?renameObject`, ...) that name an operation s3s does not
//! route, or no operation at all for the method sent.
//!
//! s3s picks an operation from the method, the path and the query parameters it knows; a
//! request whose sub-resource it does not know falls through to the resource's plain operation.
//! For reads that only gives a wrong answer (`GET /bucket?abac` lists the bucket), but for
//! writes it destroys data: `DELETE /bucket?metadataConfiguration` (S3's
//! DeleteBucketMetadataConfiguration) deleted the bucket, `PUT /bucket/key?renameObject`
//! (RenameObject) replaced the object with an empty one, and so would a client's mistaken
//! `DELETE /bucket/key?retention`. So before s3s sees a request:
//!
//! - a sub-resource of an S3 operation s3s does not route is 501 `NotImplemented` naming the
//!   operation, whatever the method (S3 has the operation; this gateway does not);
//! - a PUT or DELETE naming a sub-resource S3 has no operation for with that method, on that
//!   kind of resource, is 405 `MethodNotAllowed`, as S3 answers (`DELETE /bucket?acl`: there is
//!   no DeleteBucketAcl);
//! - a PUT of an object naming only one of `uploadId` and `partNumber` is refused as S3 refuses
//!   it (s3s would take it for a PutObject; see [`judge`]).
//!
//! Reads naming a sub-resource that has no GET keep s3s's answer, as do HEAD and OPTIONS, and
//! other POSTs are held to S3's operations by `early::refused_method`. Other parameters that are
//! not sub-resources (`versionId`, `x-id`, listing parameters) play no part. The table follows
//! S3's API model (botocore's `service-2.json` for S3, each operation's `requestUri`); s3s's
//! routing is `s3s::ops::generated::resolve_route`.

/// A sub-resource: the methods S3 has an operation for on a bucket and on an object, and the
/// operations among those that s3s does not route, as `(bucket?, method, operation)`.
struct SubResource {
    name: &'static str,
    bucket: &'static [&'static str],
    object: &'static [&'static str],
    unrouted: &'static [(bool, &'static str, &'static str)],
}

/// A sub-resource S3 has operations for with `bucket`'s methods on a bucket and `object`'s on an
/// object, all of which s3s routes.
const fn sub(name: &'static str, bucket: &'static [&'static str], object: &'static [&'static str]) -> SubResource {
    SubResource {
        name,
        bucket,
        object,
        unrouted: &[],
    }
}

/// `s` with the operations among its own that s3s does not route.
const fn routed_not(s: SubResource, unrouted: &'static [(bool, &'static str, &'static str)]) -> SubResource {
    SubResource { unrouted, ..s }
}

const GPD: &[&str] = &["GET", "PUT", "DELETE"];
const GP: &[&str] = &["GET", "PUT"];
const G: &[&str] = &["GET"];
const NONE: &[&str] = &[];

/// Every query parameter that selects an S3 operation on a bucket or an object.
const SUB_RESOURCES: &[SubResource] = &[
    routed_not(
        sub("abac", GP, NONE),
        &[(true, "GET", "GetBucketAbac"), (true, "PUT", "PutBucketAbac")],
    ),
    sub("accelerate", GP, NONE),
    sub("acl", GP, GP),
    sub("analytics", GPD, NONE),
    sub("attributes", NONE, G),
    sub("cors", GPD, NONE),
    sub("delete", &["POST"], NONE),
    routed_not(
        sub("encryption", GPD, &["PUT"]),
        &[(false, "PUT", "UpdateObjectEncryption")],
    ),
    sub("intelligent-tiering", GPD, NONE),
    sub("inventory", GPD, NONE),
    sub("legal-hold", NONE, GP),
    sub("lifecycle", GPD, NONE),
    sub("location", G, NONE),
    sub("logging", GP, NONE),
    routed_not(
        sub("metadataConfiguration", &["GET", "DELETE", "POST"], NONE),
        &[
            (true, "GET", "GetBucketMetadataConfiguration"),
            (true, "DELETE", "DeleteBucketMetadataConfiguration"),
            (true, "POST", "CreateBucketMetadataConfiguration"),
        ],
    ),
    routed_not(
        sub("metadataInventoryTable", &["PUT"], NONE),
        &[(true, "PUT", "UpdateBucketMetadataInventoryTableConfiguration")],
    ),
    routed_not(
        sub("metadataJournalTable", &["PUT"], NONE),
        &[(true, "PUT", "UpdateBucketMetadataJournalTableConfiguration")],
    ),
    sub("metadataTable", &["GET", "DELETE", "POST"], NONE),
    sub("metrics", GPD, NONE),
    sub("notification", GP, NONE),
    sub("object-lock", GP, NONE),
    sub("ownershipControls", GPD, NONE),
    sub("policy", GPD, NONE),
    sub("policyStatus", G, NONE),
    sub("publicAccessBlock", GPD, NONE),
    routed_not(sub("renameObject", NONE, &["PUT"]), &[(false, "PUT", "RenameObject")]),
    sub("replication", GPD, NONE),
    sub("requestPayment", GP, NONE),
    sub("restore", NONE, &["POST"]),
    sub("retention", NONE, GP),
    sub("select", NONE, &["POST"]),
    sub("session", G, NONE),
    sub("tagging", GPD, GPD),
    sub("torrent", NONE, G),
    sub("uploads", G, &["POST"]),
    sub("versioning", GP, NONE),
    sub("versions", G, NONE),
    sub("website", GPD, NONE),
];

/// What to answer instead of letting s3s route the request, if anything.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Refusal {
    /// 501 `NotImplemented`: S3's operation of this name, which this gateway does not have.
    NotImplemented(&'static str),
    /// 405 `MethodNotAllowed`: S3 has no operation for the method on this sub-resource; the
    /// methods it has one for (S3 lists them in `Allow`).
    MethodNotAllowed(&'static [&'static str]),
    /// 405 `MethodNotAllowed` with `<ResourceType>UPLOAD</ResourceType>` and `Allow: DELETE,
    /// POST, GET`: a PUT of an object naming an `uploadId` but no `partNumber`, which S3 reads as
    /// addressing the upload itself (abort, complete, list parts), not a part of it.
    UploadMethodNotAllowed,
    /// 400 `InvalidArgument` ("This operation does not accept partNumber without uploadId"): a
    /// PUT of an object naming a `partNumber` but no `uploadId`.
    PartNumberWithoutUpload,
}

/// Judges a request by its method, whether it addresses a bucket (`false`: an object) and its
/// query's parameter names. Requests to the service root have no sub-resources to judge.
/// s3s takes a PUT of an object that names only one of `uploadId` and `partNumber` for a
/// PutObject (or a CopyObject), which would replace the object with what was meant for a part;
/// S3 refuses both, as the last two refusals (answers as S3 gives them, recorded in versitygw's
/// issues 1236 and 1237).
pub(super) fn judge(method: &str, bucket: bool, names: &[&str]) -> Option<Refusal> {
    if method == "PUT" && !bucket {
        match (names.contains(&"uploadId"), names.contains(&"partNumber")) {
            (true, false) => return Some(Refusal::UploadMethodNotAllowed),
            (false, true) => return Some(Refusal::PartNumberWithoutUpload),
            _ => {}
        }
    }
    for name in names {
        let Some(s) = SUB_RESOURCES.iter().find(|s| s.name == *name) else {
            continue;
        };
        if let Some((_, _, op)) = s.unrouted.iter().find(|(b, m, _)| *b == bucket && *m == method) {
            return Some(Refusal::NotImplemented(op));
        }
        let allowed = if bucket { s.bucket } else { s.object };
        if matches!(method, "PUT" | "DELETE") && !allowed.contains(&method) {
            return Some(Refusal::MethodNotAllowed(allowed));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_s3s_does_not_route_are_not_implemented() {
        let ni = |m, b, n: &[&str]| match judge(m, b, n) {
            Some(Refusal::NotImplemented(op)) => op,
            other => panic!("{m} {n:?}: {other:?}"),
        };
        assert_eq!(
            ni("DELETE", true, &["metadataConfiguration"]),
            "DeleteBucketMetadataConfiguration"
        );
        assert_eq!(ni("GET", true, &["abac"]), "GetBucketAbac");
        assert_eq!(ni("PUT", true, &["abac"]), "PutBucketAbac");
        assert_eq!(ni("PUT", false, &["renameObject"]), "RenameObject");
        assert_eq!(ni("PUT", false, &["x-id", "encryption"]), "UpdateObjectEncryption");
        assert_eq!(
            ni("PUT", true, &["metadataJournalTable"]),
            "UpdateBucketMetadataJournalTableConfiguration"
        );
    }

    #[test]
    fn writes_s3_has_no_operation_for_are_not_allowed() {
        for (m, b, n) in [
            ("DELETE", true, "acl"),
            ("DELETE", true, "versioning"),
            ("DELETE", true, "logging"),
            ("DELETE", false, "retention"),
            ("DELETE", false, "legal-hold"),
            ("DELETE", false, "acl"),
            ("PUT", false, "uploads"),
            ("PUT", false, "restore"),
            ("PUT", false, "attributes"),
            ("PUT", true, "location"),
            ("PUT", true, "versions"),
        ] {
            assert!(
                matches!(judge(m, b, &[n]), Some(Refusal::MethodNotAllowed(_))),
                "{m} {b} {n}"
            );
        }
        assert_eq!(
            judge("DELETE", true, &["acl"]),
            Some(Refusal::MethodNotAllowed(&["GET", "PUT"]))
        );
    }

    #[test]
    fn part_uploads_name_both_the_upload_and_the_part() {
        assert_eq!(
            judge("PUT", false, &["uploadId"]),
            Some(Refusal::UploadMethodNotAllowed)
        );
        assert_eq!(
            judge("PUT", false, &["partNumber"]),
            Some(Refusal::PartNumberWithoutUpload)
        );
        assert_eq!(judge("PUT", false, &["partNumber", "uploadId"]), None);
        for m in ["GET", "DELETE", "POST"] {
            assert_eq!(judge(m, false, &["uploadId"]), None, "{m}");
        }
        assert_eq!(judge("GET", false, &["partNumber"]), None, "GetObject reads parts");
    }

    #[test]
    fn s3s_routes_the_rest() {
        for (m, b, n) in [
            ("DELETE", true, &[][..]),
            ("DELETE", false, &["versionId"][..]),
            ("DELETE", false, &["uploadId"][..]),
            ("DELETE", false, &["tagging", "versionId"][..]),
            ("DELETE", true, &["publicAccessBlock"][..]),
            ("DELETE", true, &["metadataTable"][..]),
            ("PUT", false, &["partNumber", "uploadId"][..]),
            ("PUT", false, &["x-id"][..]),
            ("PUT", false, &["retention"][..]),
            ("PUT", true, &["object-lock"][..]),
            ("PUT", true, &["encryption"][..]),
            ("GET", true, &["delete"][..]),
            ("GET", false, &["torrent"][..]),
            ("HEAD", false, &["renameObject"][..]),
            ("POST", false, &["uploads"][..]),
        ] {
            assert_eq!(judge(m, b, n), None, "{m} {b} {n:?}");
        }
    }
}
