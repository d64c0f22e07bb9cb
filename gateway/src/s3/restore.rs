//! RestoreObject for objects of the archive storage classes, and the `x-amz-restore` S3 answers
//! about a restored copy.
//!
//! A storage class is a label here (`docs/versioning.md`, "Lifecycle"): an object in `GLACIER`
//! or `DEEP_ARCHIVE` reads at once. Clients written for S3 still ask for a restore before they
//! read one (the AWS CLI refuses to download an archived object whose HEAD does not say it is
//! restored), so a restore is granted at once and recorded: HEAD and GET then carry
//! `x-amz-restore: ongoing-request="false", expiry-date="…"` until the days asked for are over.

use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result};

use penstock_metadata::ObjectAttrs;

use super::object::{format_http_date, now_ms, parse_key, ts_ms};
use super::{caller, Gateway};

/// The classes whose objects S3 serves only once restored.
fn archived(attrs: &ObjectAttrs) -> bool {
    matches!(
        attrs.storage_class.as_deref(),
        Some(StorageClass::GLACIER | StorageClass::DEEP_ARCHIVE)
    )
}

/// Until when an archived object is restored, if a restore is in force.
fn restored_until(attrs: &ObjectAttrs) -> Option<i64> {
    attrs.restored_until_ms.filter(|t| *t > now_ms() && archived(attrs))
}

/// `x-amz-restore` of an archived object restored until a time still to come.
pub(crate) fn restore_header(attrs: &ObjectAttrs) -> Option<String> {
    let date = format_http_date(&ts_ms(restored_until(attrs)?))?;
    Some(format!("ongoing-request=\"false\", expiry-date=\"{date}\""))
}

/// A listing's `RestoreStatus` of an object (when the request asks for it with
/// `x-amz-optional-object-attributes: RestoreStatus`): only for one restored now, as S3 answers.
pub(crate) fn restore_status(asked: bool, attrs: &ObjectAttrs) -> Option<RestoreStatus> {
    if !asked {
        return None;
    }
    let until = restored_until(attrs)?;
    Some(RestoreStatus {
        is_restore_in_progress: Some(false),
        restore_expiry_date: Some(ts_ms(until)),
    })
}

/// Whether a listing asks for each object's `RestoreStatus`.
pub(crate) fn asks_restore_status(attrs: Option<&OptionalObjectAttributesList>) -> bool {
    attrs.is_some_and(|l| l.iter().any(|a| a.as_str() == OptionalObjectAttributes::RESTORE_STATUS))
}

/// What a RestoreObject found.
enum Verdict {
    /// Not in an archive class: nothing to restore.
    NotArchived,
    /// Restored by this request (202).
    Restored,
    /// Already restored; its expiry moved (200).
    Extended,
}

impl Gateway {
    /// RestoreObject: a restore of an archived object (current, or the version named) for the
    /// days asked, granted at once; 202 when it was not restored, 200 when it was (its expiry
    /// moves to the new one, as S3 does). Objects of other classes: 403 `InvalidObjectState`.
    pub(crate) async fn restore_object(
        &self,
        req: S3Request<RestoreObjectInput>,
    ) -> S3Result<S3Response<RestoreObjectOutput>> {
        let i = &req.input;
        parse_key(&i.key)?;
        let r = i.restore_request.as_ref().ok_or_else(|| {
            s3_error!(
                MalformedXML,
                "The XML you provided was not well-formed or did not validate against our published schema"
            )
        })?;
        if r.type_.is_some() || r.select_parameters.is_some() || r.output_location.is_some() {
            return Err(s3_error!(
                NotImplemented,
                "Restores that run a SELECT query are not supported"
            ));
        }
        let days = match r.days {
            Some(d) if d > 0 => d as u32,
            Some(_) => return Err(s3_error!(InvalidArgument, "'Days' must be a positive integer")),
            None => {
                return Err(s3_error!(
                    InvalidArgument,
                    "'Days' is required to restore an archived object"
                ))
            }
        };
        let b = self.bucket(&caller(&req)?, &i.bucket).await?;
        // S3 keeps a restored copy until midnight UTC after the days (shortened days are not
        // rounded, as for lifecycle rules).
        let until = self.lifecycle.after_days(now_ms(), days);
        let mut verdict = Verdict::NotArchived;
        let version_id = self
            .edit_record_in(&b, &i.key, i.version_id.as_deref(), |rec| {
                if !archived(&rec.attrs) {
                    return Ok(false);
                }
                verdict = match restore_header(&rec.attrs) {
                    Some(_) => Verdict::Extended,
                    None => Verdict::Restored,
                };
                rec.attrs.restored_until_ms = Some(until);
                Ok(true)
            })
            .await?;
        let status = match verdict {
            Verdict::NotArchived => {
                return Err(s3_error!(
                    InvalidObjectState,
                    "Restore is not allowed for the object's current storage class"
                ))
            }
            Verdict::Restored => http::StatusCode::ACCEPTED,
            Verdict::Extended => http::StatusCode::OK,
        };
        let mut resp = S3Response::new(RestoreObjectOutput::default());
        // s3s answers RestoreObject 200 whatever the handler says: the status goes through.
        resp.extensions.insert(super::AnswerStatus(status));
        if let super::tagging::Edited::Done { version_id: Some(v) } = version_id {
            if let Ok(v) = http::HeaderValue::from_str(&v) {
                resp.headers.insert("x-amz-version-id", v);
            }
        }
        Ok(resp)
    }
}
