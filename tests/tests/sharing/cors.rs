//! CORS: bucket rules answer preflights and mark every response to an allowed origin.

use super::*;

#[tokio::test]
async fn cors_rules_answer_preflights_and_mark_every_response() {
    use aws_sdk_s3::types::{CorsConfiguration, CorsRule};
    let (gw, c) = Gateway::with_bucket("web").await;
    put(&c, "web", "page.txt", b"hi").await;
    let pre = |origin: &'static str, method: &'static str| {
        let h = [
            ("Origin", origin),
            ("Access-Control-Request-Method", method),
            ("Access-Control-Request-Headers", "content-type, x-amz-date"),
        ];
        Conn::open(&gw).unsigned("OPTIONS", "/web/page.txt", &h, b"")
    };
    let a = pre("https://app.lab", "PUT");
    assert_eq!((a.status, xml_code(&a).as_str()), (403, "AccessForbidden"), "no rules, no CORS");
    let rule = CorsRule::builder()
        .allowed_origins("https://*.lab")
        .allowed_methods("GET")
        .allowed_methods("PUT")
        .allowed_headers("*")
        .expose_headers("ETag")
        .max_age_seconds(300)
        .build()
        .unwrap();
    let conf = CorsConfiguration::builder().cors_rules(rule).build().unwrap();
    c.put_bucket_cors().bucket("web").cors_configuration(conf).send().await.unwrap();
    let a = pre("https://app.lab", "PUT");
    assert_eq!(a.status, 200);
    assert_eq!(a.header("access-control-allow-origin"), Some("https://app.lab"));
    assert_eq!(a.header("access-control-allow-headers"), Some("content-type, x-amz-date"));
    assert_eq!(a.header("access-control-max-age"), Some("300"));
    assert_eq!(pre("https://app.other", "PUT").status, 403);
    assert_eq!(pre("https://app.lab", "DELETE").status, 403);
    let a = Conn::open(&gw).unsigned("OPTIONS", "/web/page.txt", &[("Origin", "https://app.lab")], b"");
    assert_eq!((a.status, xml_code(&a).as_str()), (400, "BadRequest"), "a preflight names its method");

    // Actual responses, errors included, carry the headers for an allowed origin only.
    let get =
        |origin: &'static str, path: &'static str| Conn::open(&gw).unsigned("GET", path, &[("Origin", origin)], b"");
    let a = get("https://app.lab", "/web/page.txt");
    assert_eq!(a.status, 403, "anonymous, no policy");
    assert_eq!(a.header("access-control-allow-origin"), Some("https://app.lab"));
    assert_eq!(a.header("access-control-expose-headers"), Some("ETag"));
    assert!(a.header("vary").is_some_and(|v| v.contains("Origin")));
    let a = get("https://evil.example", "/web/page.txt");
    assert_eq!(a.header("access-control-allow-origin"), None);
    // A rule is matched on the request's method, or on the one an Access-Control-Request-Method
    // header names where an actual request carries one (as RGW does; browsers never send it so).
    let send = |method: &'static str, asked: Option<&'static str>| {
        let mut h = vec![("Origin", "https://app.lab")];
        h.extend(asked.map(|m| ("Access-Control-Request-Method", m)));
        Conn::open(&gw).unsigned(method, "/web/page.txt", &h, b"")
    };
    assert_eq!(send("DELETE", None).header("access-control-allow-origin"), None, "no rule allows DELETE");
    let a = send("DELETE", Some("GET"));
    assert_eq!(a.header("access-control-allow-origin"), Some("https://app.lab"));
    assert_eq!(send("GET", Some("DELETE")).header("access-control-allow-origin"), None);
    let rules = c.get_bucket_cors().bucket("web").send().await.unwrap();
    assert_eq!(rules.cors_rules()[0].allowed_origins(), ["https://*.lab"]);
    c.delete_bucket_cors().bucket("web").send().await.unwrap();
    let e = c.get_bucket_cors().bucket("web").send().await.unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("NoSuchCORSConfiguration", 404));
    // Named by its bucket, as S3 names a bucket's missing configuration.
    let doc = penstock_tests::error_doc(&e);
    assert!(doc.contains("<BucketName>web</BucketName>"), "{doc}");
    assert_eq!(pre("https://app.lab", "PUT").status, 403);
}

/// The text of element `tag` in an answer's XML body, empty where it has none.
fn xml_element(a: &Answer, tag: &str) -> String {
    penstock_tests::xml_element(&String::from_utf8_lossy(&a.body), tag).unwrap_or_default()
}

/// Refused preflights answer as S3 does (LocalStack's AWS-validated CORS snapshots): a bucket
/// that is not there, or has no rules, is 403 whether or not a method is asked for, and every
/// 403 names the method asked for and whether a bucket or an object was asked. An actual request
/// that carries a preflight's header question is judged by it.
#[tokio::test]
async fn cors_refusals_name_the_method_and_resource_as_s3_does() {
    use aws_sdk_s3::types::{CorsConfiguration, CorsRule};
    let (gw, c) = Gateway::with_bucket("site").await;
    put(&c, "site", "a.txt", b"hi").await;
    let ask =
        |path: &'static str, h: &[(&'static str, &'static str)]| Conn::open(&gw).unsigned("OPTIONS", path, h, b"");
    let refused = |a: &Answer| {
        (a.status, xml_code(a), xml_element(a, "Message"), xml_element(a, "Method"), xml_element(a, "ResourceType"))
    };
    let origin = ("Origin", "https://app.lab");
    let no_rules = "CORSResponse: CORS is not enabled for this bucket.";
    let a = ask("/site/a.txt", &[origin]);
    assert_eq!(refused(&a), (403, "AccessForbidden".into(), no_rules.into(), "OPTIONS".into(), "BUCKET".into()));
    let a = ask("/site/a.txt", &[origin, ("Access-Control-Request-Method", "PUT")]);
    assert_eq!(refused(&a), (403, "AccessForbidden".into(), no_rules.into(), "PUT".into(), "BUCKET".into()));
    let a = ask("/nowhere/a.txt", &[origin]);
    assert_eq!(
        refused(&a),
        (403, "AccessForbidden".into(), "CORSResponse: Bucket not found".into(), "OPTIONS".into(), "BUCKET".into())
    );
    let a = ask("/nowhere/a.txt", &[]);
    assert_eq!((a.status, xml_code(&a).as_str()), (400, "BadRequest"), "no Origin, no CORS request");

    let rule = CorsRule::builder()
        .allowed_origins("https://app.lab")
        .allowed_methods("GET")
        .allowed_headers("x-amz-meta-tag")
        .build()
        .unwrap();
    let conf = CorsConfiguration::builder().cors_rules(rule).build().unwrap();
    c.put_bucket_cors().bucket("site").cors_configuration(conf).send().await.unwrap();
    for (path, resource) in [("/site/a.txt", "OBJECT"), ("/site", "BUCKET"), ("/site/", "BUCKET")] {
        let a = ask(path, &[origin, ("Access-Control-Request-Method", "DELETE")]);
        let (status, code, _, method, kind) = refused(&a);
        assert_eq!(
            (status, code.as_str(), method.as_str(), kind.as_str()),
            (403, "AccessForbidden", "DELETE", resource),
            "{path}"
        );
    }
    let a = ask(
        "/site/a.txt",
        &[origin, ("Access-Control-Request-Method", "GET"), ("Access-Control-Request-Headers", "x-amz-meta-TAG")],
    );
    assert_eq!(a.status, 200, "allowed headers are matched without regard to case");
    let a = ask(
        "/site/a.txt",
        &[origin, ("Access-Control-Request-Method", "GET"), ("Access-Control-Request-Headers", "x-amz-request-payer")],
    );
    assert_eq!((a.status, xml_element(&a, "Method").as_str()), (403, "GET"));

    // Actual GETs: allowed, unless they ask a preflight's question the rules refuse.
    let get = |h: &[(&'static str, &'static str)]| Conn::open(&gw).unsigned("GET", "/site/a.txt", h, b"");
    assert_eq!(get(&[origin]).header("access-control-allow-origin"), Some("https://app.lab"));
    let a = get(&[origin, ("Access-Control-Request-Headers", "x-amz-request-payer")]);
    assert_eq!(a.header("access-control-allow-origin"), None);
    let a = get(&[origin, ("Access-Control-Request-Headers", "x-amz-meta-tag")]);
    assert_eq!(a.header("access-control-allow-origin"), Some("https://app.lab"));
}
