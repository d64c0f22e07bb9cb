//! Browser-form (POST policy) uploads: authorized for the key they write, held to object lock.

use super::*;

/// An unsigned browser-form upload of `body` as file `file_name` with form field `key`.
fn anon_form(gw: &Gateway, bucket: &str, key: &str, file_name: &str, body: &[u8]) -> Answer {
    anon_form_with(gw, bucket, key, &[], file_name, body)
}

/// [`anon_form`] with more form fields before the file.
fn anon_form_with(
    gw: &Gateway,
    bucket: &str,
    key: &str,
    fields: &[(&str, &str)],
    file_name: &str,
    body: &[u8],
) -> Answer {
    let b = "----penstock-form";
    let mut form = format!("--{b}\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\n{key}\r\n");
    for (name, value) in fields {
        form += &format!("--{b}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n");
    }
    let mut form = format!(
        "{form}--{b}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{file_name}\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n"
    )
    .into_bytes();
    form.extend_from_slice(body);
    form.extend_from_slice(format!("\r\n--{b}--\r\n").as_bytes());
    let ct = format!("multipart/form-data; boundary={b}");
    Conn::open(gw).unsigned("POST", &format!("/{bucket}"), &[("Content-Type", &ct)], &form)
}

#[tokio::test]
async fn form_uploads_are_authorized_for_the_key_they_write() {
    let (gw, c) = Gateway::with_bucket("drop").await;
    // Anyone may upload under incoming/, except under incoming/private/.
    let policy = r#"{"Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::drop/incoming/*"},
        {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::drop/incoming/private/*"}]}"#;
    set_policy(&c, "drop", policy).await;
    assert_eq!(anon_form(&gw, "drop", "incoming/a.txt", "x", b"a").status, 204);
    assert_eq!(get(&c, "drop", "incoming/a.txt").await, b"a");
    // The key written is the one authorized: `${filename}` is replaced before the check.
    assert_eq!(anon_form(&gw, "drop", "incoming/${filename}", "b.txt", b"b").status, 204);
    assert_eq!(get(&c, "drop", "incoming/b.txt").await, b"b");
    // A path in the file's name is dropped, as S3 drops it: it cannot steer the key elsewhere.
    assert_eq!(anon_form(&gw, "drop", "incoming/${filename}", "private/d", b"d").status, 204);
    assert_eq!(get(&c, "drop", "incoming/d").await, b"d");
    for (key, file_name) in [
        ("incoming/private/c", "x"),
        ("elsewhere/e", "x"),
        ("${filename}", "incoming/private/f"),
        ("${filename}", "incoming\\g"),
    ] {
        let a = anon_form(&gw, "drop", key, file_name, b"no");
        assert_eq!((a.status, xml_code(&a).as_str()), (403, "AccessDenied"), "{key} as {file_name}");
    }
    let listed = c.list_objects_v2().bucket("drop").send().await.unwrap();
    let keys: Vec<&str> = listed.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(keys, ["incoming/a.txt", "incoming/b.txt", "incoming/d"], "refused uploads wrote nothing");
}

/// A form's object lock fields are the condition keys a PutObject's headers would be.
#[tokio::test]
async fn form_uploads_answer_to_object_lock_conditions() {
    let gw = Gateway::start();
    let c = gw.client();
    c.create_bucket().bucket("vault-drop").object_lock_enabled_for_bucket(true).send().await.unwrap();
    let policy = r#"{"Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::vault-drop/*"},
        {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::vault-drop/*",
         "Condition": {"StringEquals": {"s3:object-lock-mode": "COMPLIANCE"}}}]}"#;
    set_policy(&c, "vault-drop", policy).await;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let until = aws_sdk_s3::primitives::DateTime::from_secs(now + 300);
    let until = until.fmt(aws_sdk_s3::primitives::DateTimeFormat::DateTime).unwrap();
    let form = |mode: &str| {
        let fields = [("x-amz-object-lock-mode", mode), ("x-amz-object-lock-retain-until-date", until.as_str())];
        anon_form_with(&gw, "vault-drop", &format!("in/{mode}"), &fields, "x", b"locked")
    };
    let refused = form("COMPLIANCE");
    assert_eq!((refused.status, xml_code(&refused).as_str()), (403, "AccessDenied"));
    assert_eq!(form("GOVERNANCE").status, 204);
    let listed = c.list_objects_v2().bucket("vault-drop").send().await.unwrap();
    let keys: Vec<&str> = listed.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(keys, ["in/GOVERNANCE"]);
}
