//! Browser-form uploads (POST object): the key a request is authorized for, and `${filename}`.
//!
//! s3s parses the form and serves it as a PutObject, but its access check sees only the bucket
//! (the key is a form field, not part of the path), it keeps the file part's name to itself, and
//! it answers with the key as the form spelled it. So the pieces are put together here:
//! - the HTTP layer watches the body as s3s reads it (`watch.rs`, [`watch`]): it holds the
//!   form's fields until the file part's headers, and puts the file's name in place of
//!   `${filename}` in the `key` field, so s3s checks the policy's conditions on the key written;
//! - the POST access hook (`auth.rs`) refuses incomplete signing ([`FormUpload::check_signing`]),
//!   puts the name in place where the watch could not (fields past its 1 MiB), and only then
//!   authorizes the request, for the key that will be written (a bucket policy's Deny on a
//!   prefix holds for form uploads as for PUTs, and its Allow of a prefix admits anonymous form
//!   uploads there);
//! - the answer (`answer.rs`, [`form_answer`]) gives policy refusals as S3 words them, names the
//!   key written with the ETag quoted as S3 quotes it, and a 200/201/204 names the object's URL
//!   in `Location`.
//!
//! The same watch reads the two form fields s3s leaves out of the PutObject it makes of a form:
//! `acl` (s3s reads `x-amz-acl` only) and `tagging` (an XML tag set; s3s reads only the header
//! form `x-amz-tagging`). The hook applies them, so a form's ACL is applied or refused and its
//! tags are kept, as S3 does, instead of being dropped without a word.

use std::sync::OnceLock;

use s3s::dto::{ObjectCannedACL, PostObjectInput, Tagging};
use s3s::{s3_error, S3Result};

mod answer;
mod watch;

pub(crate) use answer::{form_answer, xml_escape};
pub(crate) use watch::watch;

/// What S3 replaces with the uploaded file's name in a form's `key`.
const FILENAME: &str = "${filename}";

/// One form upload, shared by the body watch, the access hook and the answer.
#[derive(Default)]
pub(crate) struct FormUpload {
    /// The file part's `filename` (`None` when the part names none), once its headers went by.
    file_name: OnceLock<Option<String>>,
    /// The key as the form spelled it, and as written, when `${filename}` was replaced.
    renamed: OnceLock<(String, String)>,
    /// The fields s3s does not read, as the form gave them before its file part.
    fields: OnceLock<FormFields>,
    /// The key written, once the access hook settled it.
    written: OnceLock<String>,
    /// Where the form was sent: `scheme://host/bucket` (path style) or `scheme://host` (the
    /// Host names the bucket); the object's URL is this and its key.
    base: OnceLock<String>,
}

/// Form fields s3s leaves out of the PutObject it makes of a form (see the module's doc), and
/// what the form says of its signing, which s3s reads more leniently than S3.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct FormFields {
    acl: Option<String>,
    tagging: Option<String>,
    /// The `policy` field (base64 of the policy document).
    policy: Option<String>,
    /// The signature field the form carries: `Signature` (V2) or `X-Amz-Signature` (V4).
    signature: Option<Signing>,
    /// The signer the form names: `AWSAccessKeyId` (V2) or `X-Amz-Credential` (V4).
    credential: Option<Signing>,
}

/// The signature version a form's signing field belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Signing {
    V2,
    V4,
}

impl FormFields {
    /// Keeps the value of part `name` if it is one of these fields (names in any case, as s3s
    /// reads a form's field names).
    fn keep(&mut self, name: &str, value: &[u8]) {
        let text = || String::from_utf8_lossy(value).into_owned();
        match name.to_ascii_lowercase().as_str() {
            "acl" => self.acl = Some(text()),
            "tagging" => self.tagging = Some(text()),
            "policy" => self.policy = Some(text()),
            "signature" => self.signature = Some(Signing::V2),
            "x-amz-signature" => self.signature = Some(Signing::V4),
            "awsaccesskeyid" => self.credential = Some(Signing::V2),
            "x-amz-credential" => self.credential = Some(Signing::V4),
            _ => {}
        }
    }

    /// S3's refusal of a form whose signing or policy it refuses where s3s would go on: a form
    /// that names a signer or carries a policy but has no signature (s3s takes it for an
    /// anonymous upload, and checks the policy's conditions first); an expiration that is RFC
    /// 3339 but not the ISO 8601 S3 reads (`2026-11-26 12:00:00Z`, with a space, parses for
    /// s3s); and a policy with no condition on `bucket`. S3 counts the bucket as one of every
    /// form's fields, so a policy that does not name it leaves a field uncovered: 403 "Extra
    /// input fields: bucket" (ceph's s3-tests and MinIO expect the refusal too). s3s checks a
    /// `bucket` condition where there is one, but lets a policy without one through.
    fn signing_refusal(&self) -> Option<(&'static str, String)> {
        if self.signature.is_none() && (self.policy.is_some() || self.credential.is_some()) {
            let field = match self.credential {
                Some(Signing::V4) => "X-Amz-Signature",
                _ => "Signature",
            };
            return Some((
                "InvalidArgument",
                format!("Bucket POST must contain a field named '{field}'.  If it is specified, please check the order of the fields."),
            ));
        }
        let doc = self.policy.as_deref().and_then(policy_document)?;
        let expiration = doc.get("expiration")?.as_str()?;
        if expiration.as_bytes().get(10) != Some(&b'T') {
            return Some((
                "InvalidPolicyDocument",
                format!("Invalid Policy: Invalid 'expiration' value: '{expiration}'"),
            ));
        }
        (!covers_bucket(&doc)).then(|| {
            (
                "AccessDenied",
                "Invalid according to Policy: Extra input fields: bucket".to_owned(),
            )
        })
    }
}

/// A base64 policy document as JSON, if it decodes.
fn policy_document(policy: &str) -> Option<serde_json::Value> {
    use base64::Engine;
    let doc = base64::engine::general_purpose::STANDARD.decode(policy.trim()).ok()?;
    serde_json::from_slice(&doc).ok()
}

/// Whether a policy document has a condition on the `bucket` field, in either of its forms:
/// `{"bucket": "name"}` or `["eq", "$bucket", "name"]` (`starts-with` too, which S3 then judges).
fn covers_bucket(doc: &serde_json::Value) -> bool {
    use serde_json::Value;
    let Some(conditions) = doc.get("conditions").and_then(Value::as_array) else {
        return false;
    };
    conditions.iter().any(|c| match c {
        Value::Object(m) => m.keys().any(|k| k.eq_ignore_ascii_case("bucket")),
        Value::Array(a) => a
            .get(1)
            .and_then(Value::as_str)
            .is_some_and(|f| f.eq_ignore_ascii_case("$bucket")),
        _ => false,
    })
}

/// The file name in a file part's `filename`, without the path some browsers send with it
/// (`C:\Program Files\a.txt` and `dir/a.txt` are `a.txt`), as S3 puts it in place of
/// `${filename}`.
fn base_name(name: &str) -> &str {
    name.rsplit(['/', '\\']).next().unwrap_or(name)
}

impl FormUpload {
    /// The key to write for the form's `key`: `${filename}` replaced by the file part's name,
    /// without any path a browser put before it ([`base_name`]). Records the change for the
    /// answer.
    pub(crate) fn key_for(&self, form_key: &str) -> String {
        let key = match self.file_name.get() {
            Some(Some(name)) if form_key.contains(FILENAME) => {
                let key = form_key.replace(FILENAME, base_name(name));
                let _ = self.renamed.set((form_key.to_owned(), key.clone()));
                key
            }
            _ => form_key.to_owned(),
        };
        let _ = self.written.set(key.clone());
        key
    }

    /// Records where the form was sent (see `base`): `scheme` and the request's `Host`, and the
    /// bucket when the path names it rather than the Host.
    pub(crate) fn sent_to(&self, scheme: &str, host: &str, path_bucket: Option<&str>) {
        let base = match path_bucket {
            Some(b) => format!("{scheme}://{host}/{b}"),
            None => format!("{scheme}://{host}"),
        };
        let _ = self.base.set(base);
    }

    /// The URL of the object written, as S3 gives it in a form answer's `Location` header (and
    /// the 201 document's `<Location>`): the key percent-encoded, its `/` kept.
    fn object_url(&self) -> Option<String> {
        let (base, key) = (self.base.get()?, self.written.get()?);
        Some(format!("{base}/{}", super::list::enc(true, key)))
    }

    /// S3's refusal of the form's signing, if it has one for it (see
    /// [`FormFields::signing_refusal`]), as an error to answer with.
    pub(crate) fn check_signing(&self) -> S3Result<()> {
        match self.fields.get().and_then(FormFields::signing_refusal) {
            Some(("InvalidArgument", message)) => Err(s3_error!(InvalidArgument, "{message}")),
            Some(("AccessDenied", message)) => Err(s3_error!(AccessDenied, "{message}")),
            Some((_, message)) => Err(s3_error!(InvalidPolicyDocument, "{message}")),
            None => Ok(()),
        }
    }

    /// Puts the form's `acl` and `tagging` fields into the upload s3s made of the form, where
    /// it has none of its own (from `x-amz-acl`, `x-amz-tagging`). A tag set that is not XML
    /// is `MalformedXML`; the ACL and the tags are then checked as a PUT's are.
    pub(crate) fn apply_fields(&self, input: &mut PostObjectInput) -> S3Result<()> {
        let Some(fields) = self.fields.get() else {
            return Ok(());
        };
        if let (Some(acl), None) = (&fields.acl, &input.acl) {
            input.acl = Some(ObjectCannedACL::from(acl.trim().to_owned()));
        }
        if let (Some(doc), None) = (&fields.tagging, &input.tagging) {
            input.tagging = Some(tag_header(doc)?);
        }
        Ok(())
    }
}

/// A form's `tagging` document as the `x-amz-tagging` header would carry it
/// (`key=value&...`, percent-encoded).
fn tag_header(doc: &str) -> S3Result<String> {
    use s3s::xml::Deserialize;
    let mut d = s3s::xml::Deserializer::new(doc.trim().as_bytes());
    let tagging = Tagging::deserialize(&mut d)
        .and_then(|t| d.expect_eof().map(|()| t))
        .map_err(|_| s3_error!(MalformedXML, "The tagging form field is not a valid Tagging document"))?;
    let tags: Vec<(String, String)> = tagging
        .tag_set
        .into_iter()
        .map(|t| (t.key.unwrap_or_default(), t.value.unwrap_or_default()))
        .collect();
    // Judged here, as a tag set (`InvalidTag` naming the tag), not later as the header it
    // becomes, which the form never sent.
    super::object::validate_object_tags(&tags)?;
    let enc = |s: &str| percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string();
    let pairs: Vec<String> = tags.iter().map(|(k, v)| format!("{}={}", enc(k), enc(v))).collect();
    Ok(pairs.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) const FORM: &[u8] = b"--XyZ\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nup/${filename}\r\n\
--XyZ\r\nContent-Disposition: form-data; name=\"ACL\"\r\n\r\npublic-read\r\n\
--XyZ\r\nContent-Disposition: form-data; name=\"tagging\"\r\n\r\n<Tagging><TagSet><Tag><Key>a b</Key><Value>1+2</Value></Tag></TagSet></Tagging>\r\n\
--XyZ\r\ncontent-disposition: form-data; name=\"File\"; filename=\"photo 1.jpg\"\r\nContent-Type: image/jpeg\r\n\r\n\
bytes--XyZ--\r\n";

    pub(super) fn form_fields() -> FormFields {
        FormFields {
            acl: Some("public-read".into()),
            tagging: Some("<Tagging><TagSet><Tag><Key>a b</Key><Value>1+2</Value></Tag></TagSet></Tagging>".into()),
            ..FormFields::default()
        }
    }

    #[test]
    fn form_fields_become_the_upload_s_acl_and_tags() {
        let upload = FormUpload::default();
        let _ = upload.fields.set(form_fields());
        let mut input = PostObjectInput::builder()
            .bucket("b".into())
            .key("k".into())
            .build()
            .unwrap();
        upload.apply_fields(&mut input).unwrap();
        assert_eq!(input.acl.as_ref().map(ObjectCannedACL::as_str), Some("public-read"));
        assert_eq!(input.tagging.as_deref(), Some("a%20b=1%2B2"));
        let bad = FormUpload::default();
        let _ = bad.fields.set(FormFields {
            tagging: Some("<Tagging><TagSet>".into()),
            ..FormFields::default()
        });
        input.tagging = None;
        let e = bad.apply_fields(&mut input).unwrap_err();
        assert_eq!(e.code().as_str(), "MalformedXML");
        let refused = FormUpload::default();
        let _ = refused.fields.set(FormFields {
            tagging: Some("<Tagging><TagSet><Tag><Key>k</Key><Value>1&amp;2</Value></Tag></TagSet></Tagging>".into()),
            ..FormFields::default()
        });
        let e = refused.apply_fields(&mut input).unwrap_err();
        assert_eq!(e.code().as_str(), "InvalidTag", "`&` is no tag's to hold");
    }

    #[test]
    fn incomplete_signing_and_loose_expirations_are_refused() {
        use base64::Engine;
        let policy = |exp: &str| {
            base64::engine::general_purpose::STANDARD
                .encode(format!(r#"{{"expiration":"{exp}","conditions":[{{"bucket":"b"}}]}}"#))
        };
        let fields = |policy: Option<String>, signature, credential| FormFields {
            policy,
            signature,
            credential,
            ..FormFields::default()
        };
        let good = Some(policy("2030-01-01T00:00:00.000Z"));
        assert_eq!(
            fields(good.clone(), Some(Signing::V2), Some(Signing::V2)).signing_refusal(),
            None
        );
        assert_eq!(
            fields(None, None, None).signing_refusal(),
            None,
            "anonymous forms are the access check's"
        );
        let missing = fields(good.clone(), None, Some(Signing::V2)).signing_refusal().unwrap();
        assert_eq!(missing.0, "InvalidArgument");
        assert!(missing.1.contains("named 'Signature'"), "{}", missing.1);
        let v4 = fields(good.clone(), None, Some(Signing::V4)).signing_refusal().unwrap();
        assert!(v4.1.contains("'X-Amz-Signature'"), "{}", v4.1);
        assert!(
            fields(good, None, None).signing_refusal().is_some(),
            "a policy needs a signature"
        );
        let loose = fields(
            Some(policy("2030-01-01 00:00:00+00:00")),
            Some(Signing::V2),
            Some(Signing::V2),
        );
        assert_eq!(loose.signing_refusal().unwrap().0, "InvalidPolicyDocument");
    }

    #[test]
    fn a_policy_must_name_the_bucket() {
        use base64::Engine;
        let refusal = |conditions: &str| {
            let doc = format!(r#"{{"expiration":"2030-01-01T00:00:00Z","conditions":{conditions}}}"#);
            FormFields {
                policy: Some(base64::engine::general_purpose::STANDARD.encode(doc)),
                signature: Some(Signing::V4),
                credential: Some(Signing::V4),
                ..FormFields::default()
            }
            .signing_refusal()
        };
        for named in [
            r#"[{"bucket":"b"},["starts-with","$key",""]]"#,
            r#"[["eq","$bucket","b"]]"#,
            r#"[["starts-with","$key","a"],["starts-with","$Bucket","b"]]"#,
            r#"[{"Bucket":"b"}]"#,
        ] {
            assert_eq!(refusal(named), None, "{named}");
        }
        for unnamed in [
            r#"[["starts-with","$key",""],{"acl":"private"}]"#,
            r#"[]"#,
            r#"[["eq","bucket","b"]]"#,
        ] {
            let (code, message) = refusal(unnamed).expect(unnamed);
            assert_eq!(code, "AccessDenied", "{unnamed}");
            assert!(message.ends_with("Extra input fields: bucket"), "{message}");
        }
    }

    #[test]
    fn the_key_names_the_file_only_where_the_form_asks() {
        let u = FormUpload::default();
        u.file_name.set(Some("a&b.txt".into())).unwrap();
        assert_eq!(u.key_for("plain"), "plain");
        assert!(u.renamed.get().is_none());
        assert_eq!(u.key_for("up/${filename}"), "up/a&b.txt");
        assert_eq!(u.renamed.get().unwrap().1, "up/a&b.txt");
        let unnamed = FormUpload::default();
        unnamed.file_name.set(None).unwrap();
        assert_eq!(unnamed.key_for("up/${filename}"), "up/${filename}");
        for path in ["C:\\Program Files\\dir\\file.txt", "home/me/file.txt", "file.txt"] {
            let u = FormUpload::default();
            u.file_name.set(Some(path.into())).unwrap();
            assert_eq!(u.key_for("up/${filename}"), "up/file.txt", "{path}");
        }
    }
}
