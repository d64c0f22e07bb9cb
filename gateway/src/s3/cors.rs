//! CORS: Put/Get/DeleteBucketCors, the answer to a browser's preflight `OPTIONS`, and the
//! `Access-Control-*` headers on the actual responses (errors included), as S3 gives them.
//!
//! Preflights carry no credentials, so the bucket is found by name: first in the anonymous
//! domain, then in the others (bucket names are unique per domain only; see docs/sharing.md).

use std::sync::Arc;

use http::{HeaderMap, HeaderValue, Method, StatusCode};
use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result};

use penstock_metadata::{BucketRecord, CorsRule};

use super::policy::glob;
use super::{caller, meta_err, Gateway};

/// Methods a CORS rule may allow.
const METHODS: &[&str] = &["GET", "PUT", "HEAD", "POST", "DELETE"];
/// Most rules a configuration may hold (S3's limit).
const MAX_RULES: usize = 100;

fn one_wildcard(what: &str, v: &str) -> S3Result<()> {
    if v.matches('*').count() > 1 {
        return Err(s3_error!(
            InvalidRequest,
            "{what} \"{v}\" can not have more than one wildcard."
        ));
    }
    Ok(())
}

/// Checks a configuration as S3 does and turns it into records.
fn rules_of(conf: &CORSConfiguration) -> S3Result<Vec<CorsRule>> {
    if conf.cors_rules.is_empty() || conf.cors_rules.len() > MAX_RULES {
        return Err(s3_error!(
            MalformedXML,
            "A CORS configuration holds 1 to {MAX_RULES} rules"
        ));
    }
    conf.cors_rules
        .iter()
        .map(|r| {
            if r.allowed_methods.is_empty() || r.allowed_origins.is_empty() {
                return Err(s3_error!(
                    MalformedXML,
                    "A CORS rule needs an AllowedMethod and an AllowedOrigin"
                ));
            }
            for m in &r.allowed_methods {
                if !METHODS.contains(&m.as_str()) {
                    return Err(s3_error!(
                        InvalidRequest,
                        "Found unsupported HTTP method in CORS config. Unsupported method is {m}"
                    ));
                }
            }
            for o in &r.allowed_origins {
                one_wildcard("AllowedOrigin", o)?;
            }
            for h in r.allowed_headers.iter().flatten() {
                one_wildcard("AllowedHeader", h)?;
            }
            if r.id.as_ref().is_some_and(|id| id.len() > 255) {
                return Err(s3_error!(InvalidArgument, "A CORS rule ID is at most 255 characters"));
            }
            Ok(CorsRule {
                id: r.id.clone(),
                allowed_origins: r.allowed_origins.clone(),
                allowed_methods: r.allowed_methods.clone(),
                allowed_headers: r.allowed_headers.clone().unwrap_or_default(),
                expose_headers: r.expose_headers.clone().unwrap_or_default(),
                max_age_secs: r.max_age_seconds,
            })
        })
        .collect()
}

/// The first rule that admits `origin`, `method` and every one of `headers`.
fn matching<'a>(rules: &'a [CorsRule], origin: &str, method: &str, headers: &[String]) -> Option<&'a CorsRule> {
    rules.iter().find(|r| {
        r.allowed_origins.iter().any(|o| glob(o, origin))
            && r.allowed_methods.iter().any(|m| m == method)
            && headers.iter().all(|h| {
                r.allowed_headers
                    .iter()
                    .any(|a| glob(&a.to_ascii_lowercase(), &h.to_ascii_lowercase()))
            })
    })
}

fn set(h: &mut HeaderMap, name: &'static str, v: &str) {
    if let Ok(v) = HeaderValue::from_str(v) {
        h.insert(name, v);
    }
}

/// The `Access-Control-*` headers of a rule's answer to `origin`.
fn allow(h: &mut HeaderMap, rule: &CorsRule, origin: &str) {
    if rule.allowed_origins.iter().any(|o| o == "*") {
        set(h, "access-control-allow-origin", "*");
    } else {
        set(h, "access-control-allow-origin", origin);
        set(h, "access-control-allow-credentials", "true");
    }
    set(h, "access-control-allow-methods", &rule.allowed_methods.join(", "));
    if !rule.expose_headers.is_empty() {
        set(h, "access-control-expose-headers", &rule.expose_headers.join(", "));
    }
    if let Some(age) = rule.max_age_secs {
        set(h, "access-control-max-age", &age.to_string());
    }
}

/// A CORS error body as S3 writes one: 400 `BadRequest`, or 403 `AccessForbidden` naming the
/// method asked for and whether the bucket or an object was asked (`refused`).
fn refusal(
    status: StatusCode,
    code: &str,
    msg: &str,
    refused: Option<(&str, bool)>,
) -> (StatusCode, HeaderMap, String) {
    let detail = refused
        .map(|(method, object)| {
            format!(
                "<Method>{}</Method><ResourceType>{}</ResourceType>",
                super::post_form::xml_escape(method),
                if object { "OBJECT" } else { "BUCKET" }
            )
        })
        .unwrap_or_default();
    let body = super::error_document(code, msg, &detail);
    let mut h = HeaderMap::new();
    set(&mut h, "content-type", "application/xml");
    (status, h, body)
}

/// The headers a browser asks to send (`Access-Control-Request-Headers`), one name each.
pub(crate) fn asked_headers(req: &HeaderMap) -> Vec<String> {
    req.get("access-control-request-headers")
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(',')
                .map(|h| h.trim().to_owned())
                .filter(|h| !h.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

impl Gateway {
    /// The bucket a browser's request names, found as docs/sharing.md says.
    pub(crate) async fn cors_bucket(&self, name: &str) -> S3Result<Option<BucketRecord>> {
        if let Some(b) = self.meta.bucket(&self.anonymous_domain, name).await.map_err(meta_err)? {
            return Ok(Some(b));
        }
        for d in self.meta.domains().await.map_err(meta_err)? {
            if d.name == self.anonymous_domain {
                continue;
            }
            if let Some(b) = self.meta.bucket(&d.name, name).await.map_err(meta_err)? {
                return Ok(Some(b));
            }
        }
        Ok(None)
    }

    /// The answer to a preflight `OPTIONS` on bucket `name` (on one of its objects when
    /// `object`): status, headers and XML body.
    ///
    /// Without an `Origin` it is no CORS request: 400, as S3 answers. With one, a bucket that
    /// does not exist or has no rules is 403 `AccessForbidden` whatever else is asked (S3's
    /// answers, recorded in LocalStack's AWS-validated snapshots); a bucket with rules needs
    /// the method asked for too, and is 400 without it (RGW's answer, which ceph's s3-tests
    /// expect; S3 defines none for a preflight that asks for no method).
    pub(crate) async fn preflight(
        &self,
        name: Option<&str>,
        object: bool,
        req: &HeaderMap,
    ) -> (StatusCode, HeaderMap, String) {
        let text = |n: &str| req.get(n).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let insufficient = || {
            refusal(
                StatusCode::BAD_REQUEST,
                "BadRequest",
                "Insufficient information. Origin request header needed.",
                None,
            )
        };
        let Some(origin) = text("origin") else {
            return insufficient();
        };
        let method = text("access-control-request-method");
        let rec = match name {
            Some(n) => self.cors_bucket(n).await.ok().flatten(),
            None => None,
        };
        let asked_method = method.as_deref().unwrap_or("OPTIONS");
        let Some(rec) = rec else {
            let msg = match name {
                Some(_) => "CORSResponse: Bucket not found",
                None => "CORSResponse: CORS is not enabled for this bucket.",
            };
            return refusal(
                StatusCode::FORBIDDEN,
                "AccessForbidden",
                msg,
                Some((asked_method, false)),
            );
        };
        if rec.cors.is_empty() {
            return refusal(
                StatusCode::FORBIDDEN,
                "AccessForbidden",
                "CORSResponse: CORS is not enabled for this bucket.",
                Some((asked_method, false)),
            );
        }
        let Some(method) = method else {
            return insufficient();
        };
        let asked = asked_headers(req);
        let Some(rule) = matching(&rec.cors, &origin, &method, &asked) else {
            return refusal(
                StatusCode::FORBIDDEN,
                "AccessForbidden",
                "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, \
                 request method / Access-Control-Request-Method or Access-Control-Request-Headers are not \
                 whitelisted by the resource's CORS spec.",
                Some((&method, object)),
            );
        };
        let mut h = HeaderMap::new();
        allow(&mut h, rule, &origin);
        if !asked.is_empty() {
            set(&mut h, "access-control-allow-headers", &asked.join(", "));
        }
        set(
            &mut h,
            "vary",
            "Origin, Access-Control-Request-Headers, Access-Control-Request-Method",
        );
        (StatusCode::OK, h, String::new())
    }

    /// Adds the `Access-Control-*` headers to the response of a request from `origin` to bucket
    /// `name` with `method`, whatever its status: from `found`, the record the access check
    /// looked up, or else (a request refused before that) a lookup by name. A request that
    /// carries a preflight's questions is judged by them, as S3 judges it: `method` is then
    /// the one `Access-Control-Request-Method` names, and every header in `asked`
    /// (`Access-Control-Request-Headers`) must be allowed too.
    pub(crate) async fn decorate(
        &self,
        found: Option<Arc<BucketRecord>>,
        name: &str,
        origin: &str,
        (method, asked): (&Method, &[String]),
        out: &mut HeaderMap,
    ) {
        let rec = match found.filter(|r| r.name == name) {
            Some(r) => r,
            None => match self.cors_bucket(name).await {
                Ok(Some(r)) => Arc::new(r),
                _ => return,
            },
        };
        if rec.cors.is_empty() {
            return;
        }
        // Browsers send HEAD's and GET's preflights alike; a rule for GET does not cover HEAD.
        if let Some(rule) = matching(&rec.cors, origin, method.as_str(), asked) {
            allow(out, rule, origin);
        }
        out.append(
            "vary",
            HeaderValue::from_static("Origin, Access-Control-Request-Headers, Access-Control-Request-Method"),
        );
    }

    /// PutBucketCors.
    pub(crate) async fn put_bucket_cors(
        &self,
        req: S3Request<PutBucketCorsInput>,
    ) -> S3Result<S3Response<PutBucketCorsOutput>> {
        let b = self.bucket(&caller(&req)?, &req.input.bucket).await?;
        let rules = rules_of(&req.input.cors_configuration)?;
        self.update_bucket(&b.rec, move |r| r.cors = rules.clone()).await?;
        Ok(S3Response::new(PutBucketCorsOutput::default()))
    }

    /// GetBucketCors.
    pub(crate) async fn get_bucket_cors(
        &self,
        req: S3Request<GetBucketCorsInput>,
    ) -> S3Result<S3Response<GetBucketCorsOutput>> {
        let b = self.bucket(&caller(&req)?, &req.input.bucket).await?;
        if b.rec.cors.is_empty() {
            return Err(s3_error!(
                NoSuchCORSConfiguration,
                "The CORS configuration does not exist"
            ));
        }
        let rules = b
            .rec
            .cors
            .iter()
            .map(|r| CORSRule {
                id: r.id.clone(),
                allowed_origins: r.allowed_origins.clone(),
                allowed_methods: r.allowed_methods.clone(),
                allowed_headers: (!r.allowed_headers.is_empty()).then(|| r.allowed_headers.clone()),
                expose_headers: (!r.expose_headers.is_empty()).then(|| r.expose_headers.clone()),
                max_age_seconds: r.max_age_secs,
            })
            .collect();
        Ok(S3Response::new(GetBucketCorsOutput {
            cors_rules: Some(rules),
        }))
    }

    /// DeleteBucketCors: 204 whether or not there was one.
    pub(crate) async fn delete_bucket_cors(
        &self,
        req: S3Request<DeleteBucketCorsInput>,
    ) -> S3Result<S3Response<DeleteBucketCorsOutput>> {
        let b = self.bucket(&caller(&req)?, &req.input.bucket).await?;
        if !b.rec.cors.is_empty() {
            self.update_bucket(&b.rec, |r| r.cors.clear()).await?;
        }
        Ok(S3Response::with_status(
            DeleteBucketCorsOutput::default(),
            StatusCode::NO_CONTENT,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(origins: &[&str], methods: &[&str], headers: &[&str]) -> CorsRule {
        CorsRule {
            allowed_origins: origins.iter().map(|s| (*s).to_owned()).collect(),
            allowed_methods: methods.iter().map(|s| (*s).to_owned()).collect(),
            allowed_headers: headers.iter().map(|s| (*s).to_owned()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn rules_match_origin_method_and_every_header() {
        let rules = [
            rule(
                &["https://app.example.com"],
                &["PUT", "GET"],
                &["content-type", "x-amz-*"],
            ),
            rule(&["http://*.lab.org"], &["GET"], &[]),
        ];
        let h = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(matching(
            &rules,
            "https://app.example.com",
            "PUT",
            &h(&["Content-Type", "x-amz-date"])
        )
        .is_some());
        assert!(matching(&rules, "https://app.example.com", "PUT", &h(&["authorization"])).is_none());
        assert!(matching(&rules, "https://app.example.com", "DELETE", &[]).is_none());
        assert!(matching(&rules, "https://evil.example.com", "GET", &[]).is_none());
        assert_eq!(
            matching(&rules, "http://gpu1.lab.org", "GET", &[]).map(|r| r.allowed_origins[0].as_str()),
            Some("http://*.lab.org")
        );
        assert!(matching(&rules, "http://gpu1.lab.org", "GET", &h(&["x-custom"])).is_none());
    }

    #[test]
    fn configurations_are_validated_as_s3_does() {
        let conf = |methods: Vec<&str>, origin: &str| CORSConfiguration {
            cors_rules: vec![CORSRule {
                allowed_methods: methods.into_iter().map(str::to_owned).collect(),
                allowed_origins: vec![origin.to_owned()],
                ..Default::default()
            }],
        };
        assert!(rules_of(&conf(vec!["GET", "PUT"], "https://*.example.com")).is_ok());
        let e = rules_of(&conf(vec!["PATCH"], "*")).unwrap_err();
        assert!(e.message().unwrap().contains("Unsupported method is PATCH"));
        let e = rules_of(&conf(vec!["GET"], "https://*.*.com")).unwrap_err();
        assert!(e.message().unwrap().contains("more than one wildcard"));
        assert!(rules_of(&CORSConfiguration { cors_rules: vec![] }).is_err());
    }
}
