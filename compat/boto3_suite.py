"""The S3 operation list through boto3 with its default settings (so newer releases send
checksums as aws-chunked trailers), plus presigned GET/PUT/POST with SigV4 and SigV2.

Run by compat/boto3.sh against a fresh gateway (ENDPOINT and AWS_* in the environment)."""

import base64
import datetime
import hashlib
import hmac
import io
import json
import os
import sys
import time
import http.client as httpclient
import urllib.parse
import uuid

import boto3
import boto3.s3.transfer
import botocore
from botocore.config import Config
from botocore.exceptions import ClientError

ENDPOINT = os.environ["ENDPOINT"]


def client(**cfg):
    return boto3.client("s3", endpoint_url=ENDPOINT, config=Config(**cfg))


s3 = client(signature_version="s3v4", s3={"addressing_style": "path"})
failures = []


def check(name, cond, detail=""):
    if not cond:
        failures.append(f"{name}: {detail}")
        print(f"  x {name} {detail}")


def error_code(fn):
    try:
        fn()
    except ClientError as e:
        return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]
    return None, 200


def http(method, url, data=None, headers=None):
    # http.client sends exactly the headers given (urllib would add a Content-Type, which SigV2
    # signs).
    u = urllib.parse.urlsplit(url)
    conn = httpclient.HTTPConnection(u.hostname, u.port, timeout=60)
    path = u.path + ("?" + u.query if u.query else "")
    conn.request(method, path, body=data, headers=headers or {})
    r = conn.getresponse()
    body = r.read()
    conn.close()
    return r.status, body


B = "boto-" + uuid.uuid4().hex[:8]
B2 = B + "-dst"
print(f"boto3 {boto3.__version__}, botocore {botocore.__version__}")

# Buckets
s3.create_bucket(Bucket=B)
s3.create_bucket(Bucket=B2)
hb = s3.head_bucket(Bucket=B)["ResponseMetadata"]["HTTPHeaders"]
check("head bucket headers as S3 sends them",
      (hb.get("content-type"), hb.get("x-amz-bucket-region"), hb.get("x-amz-access-point-alias"))
      == ("application/xml", "us-east-1", "false"), hb)
names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
check("list_buckets", B in names and B2 in names, names)
s3.get_bucket_location(Bucket=B)
# ListBuckets pages (max-buckets, continuation token) and filters by prefix.
p1 = s3.list_buckets(Prefix=B, MaxBuckets=1)
p2 = s3.list_buckets(Prefix=B, MaxBuckets=1, ContinuationToken=p1.get("ContinuationToken", ""))
check("list_buckets pages", ([b["Name"] for b in p1["Buckets"]], [b["Name"] for b in p2["Buckets"]],
                             "ContinuationToken" in p1, "ContinuationToken" in p2) == ([B], [B2], True, False), (p1, p2))
unchecked = client(signature_version="s3v4", s3={"addressing_style": "path"}, parameter_validation=False)
check("list_buckets max-buckets 0", error_code(lambda: unchecked.list_buckets(MaxBuckets=0)) == ("InvalidArgument", 400))
# The gateway runs in us-east-1, where S3 lets you create your own bucket again (200).
s3.create_bucket(Bucket=B)
check("create dup (us-east-1)", B in [b["Name"] for b in s3.list_buckets()["Buckets"]])
check("missing bucket", error_code(lambda: s3.head_bucket(Bucket="no-such-bucket-x"))[1] == 404)

# Objects, default checksums (trailers on new botocore)
body = os.urandom(3 * 1024 * 1024 + 17)
r = s3.put_object(Bucket=B, Key="dir/obj.bin", Body=body, Metadata={"owner": "boto"}, ContentType="application/x-boto",
                  ContentEncoding="identity", ContentLanguage="en", CacheControl="no-cache")
check("put etag", r["ETag"] == '"%s"' % hashlib.md5(body).hexdigest(), r["ETag"])
g = s3.get_object(Bucket=B, Key="dir/obj.bin")
check("get bytes", g["Body"].read() == body)
h = s3.head_object(Bucket=B, Key="dir/obj.bin", ChecksumMode="ENABLED")
check("head meta", h["Metadata"] == {"owner": "boto"} and h["ContentType"] == "application/x-boto", h)
check("head lang", h.get("ContentLanguage") == "en" and h.get("CacheControl") == "no-cache", h)
check("checksum stored", any(k.startswith("Checksum") and k != "ChecksumType" for k in h), list(h))
rg = s3.get_object(Bucket=B, Key="dir/obj.bin", Range="bytes=10-19")
check("range", rg["Body"].read() == body[10:20] and rg["ResponseMetadata"]["HTTPStatusCode"] == 206)
check("if-none-match", error_code(lambda: s3.get_object(Bucket=B, Key="dir/obj.bin", IfNoneMatch=r["ETag"]))[1] == 304)

def failed_condition(call):
    """The `Condition` a 412 names (S3 writes it into the error document)."""
    try:
        call()
    except ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"].get("Condition")
    return None


check("if-match names its condition",
      failed_condition(lambda: s3.get_object(Bucket=B, Key="dir/obj.bin", IfMatch='"nope"')) == (412, "If-Match"))
check("conditional create names its condition",
      failed_condition(lambda: s3.put_object(Bucket=B, Key="dir/obj.bin", Body=b"x", IfNoneMatch="*"))
      == (412, "If-None-Match"))
check("conditional overwrite names its condition",
      failed_condition(lambda: s3.put_object(Bucket=B, Key="dir/obj.bin", Body=b"x", IfMatch='"0"'))
      == (412, "If-Match"))
check("if-match", error_code(lambda: s3.get_object(Bucket=B, Key="dir/obj.bin", IfMatch='"x"'))[1] == 412)
ov = s3.get_object(Bucket=B, Key="dir/obj.bin", ResponseContentType="text/plain", ResponseContentDisposition="inline")
check("response overrides", ov["ContentType"] == "text/plain" and ov["ContentDisposition"] == "inline")
# A Content-Disposition with a UTF-8 file name is stored and answered byte for byte, as S3 does
# (Python's HTTP client reads header bytes as Latin-1, hence the round trip below).
utf8_cd = 'attachment; filename="5小時接力起跑.jpg";'
def disposition(key):
    raw = s3.head_object(Bucket=B, Key=key)["ResponseMetadata"]["HTTPHeaders"].get("content-disposition", "")
    return raw.encode("latin-1").decode("utf-8")
s3.put_object(Bucket=B, Key="utf8/put", Body=b"u", ContentDisposition=utf8_cd, ChecksumAlgorithm="CRC32")
check("utf-8 content-disposition (put)", disposition("utf8/put") == utf8_cd, disposition("utf8/put"))
mpu = s3.create_multipart_upload(Bucket=B, Key="utf8/mpu", ContentDisposition=utf8_cd)["UploadId"]
part = s3.upload_part(Bucket=B, Key="utf8/mpu", UploadId=mpu, PartNumber=1, Body=b"m")
s3.complete_multipart_upload(Bucket=B, Key="utf8/mpu", UploadId=mpu,
                             MultipartUpload={"Parts": [{"ETag": part["ETag"], "PartNumber": 1}]})
check("utf-8 content-disposition (multipart)", disposition("utf8/mpu") == utf8_cd, disposition("utf8/mpu"))
s3.copy_object(Bucket=B, Key="utf8/copy", CopySource={"Bucket": B, "Key": "utf8/put"},
               MetadataDirective="REPLACE", ContentDisposition='inline; filename="é.txt"')
check("utf-8 content-disposition (copy)", disposition("utf8/copy") == 'inline; filename="é.txt"')
for algo in ["CRC32", "CRC32C", "SHA1", "SHA256", "CRC64NVME"]:
    rr = s3.put_object(Bucket=B, Key=f"sum/{algo}", Body=b"checksummed", ChecksumAlgorithm=algo)
    hh = s3.head_object(Bucket=B, Key=f"sum/{algo}", ChecksumMode="ENABLED")
    check(f"checksum {algo}", hh.get(f"Checksum{algo}") == rr.get(f"Checksum{algo}") is not None, (hh, rr))
check("bad md5", error_code(lambda: s3.put_object(Bucket=B, Key="bad", Body=b"abc", ContentMD5="1B2M2Y8AsgTpgAmY7PhCfg=="))[0] == "BadDigest")
check("bad md5 stored nothing", error_code(lambda: s3.head_object(Bucket=B, Key="bad"))[1] == 404)

# Copy
s3.copy_object(Bucket=B2, Key="copy.bin", CopySource={"Bucket": B, "Key": "dir/obj.bin"})
check("copy meta kept", s3.head_object(Bucket=B2, Key="copy.bin")["Metadata"] == {"owner": "boto"})
s3.copy_object(Bucket=B2, Key="copy2.bin", CopySource=f"{B}/dir/obj.bin", MetadataDirective="REPLACE",
               Metadata={"new": "1"}, ContentType="text/x-new")
h2 = s3.head_object(Bucket=B2, Key="copy2.bin")
check("copy replace", h2["Metadata"] == {"new": "1"} and h2["ContentType"] == "text/x-new", h2)
check("copy bytes", s3.get_object(Bucket=B2, Key="copy2.bin")["Body"].read() == body)
check("copy if-match", error_code(lambda: s3.copy_object(Bucket=B2, Key="c3", CopySource=f"{B}/dir/obj.bin",
                                                           CopySourceIfMatch='"nope"'))[1] == 412)

# Listing
keys = ["a.txt", "a/b", "a0", "sp ace", "at@sign", "pct%41", "uni/ö"]
for k in keys:
    s3.put_object(Bucket=B, Key="l/" + k, Body=b"x")
v2 = s3.list_objects_v2(Bucket=B, Prefix="l/")
got = [o["Key"] for o in v2["Contents"]]
check("list order", got == sorted("l/" + k for k in keys), got)
d = s3.list_objects_v2(Bucket=B, Prefix="l/", Delimiter="/")
check("delimiter", [p["Prefix"] for p in d.get("CommonPrefixes", [])] == ["l/a/", "l/uni/"], d.get("CommonPrefixes"))
pages = list(s3.get_paginator("list_objects_v2").paginate(Bucket=B, Prefix="l/", PaginationConfig={"PageSize": 2}))
check("v2 pagination", sum(len(p.get("Contents", [])) for p in pages) == len(keys) and len(pages) == 4, len(pages))
pages = list(s3.get_paginator("list_objects").paginate(Bucket=B, Prefix="l/", PaginationConfig={"PageSize": 3}))
check("v1 pagination", sum(len(p.get("Contents", [])) for p in pages) == len(keys), len(pages))
enc = s3.list_objects_v2(Bucket=B, Prefix="l/sp", EncodingType="url")
check("encoding-type url", enc["Contents"][0]["Key"] == "l/sp%20ace", enc["Contents"][0]["Key"])
fo = s3.list_objects_v2(Bucket=B, Prefix="l/a0", FetchOwner=True)
check("fetch-owner", "Owner" in fo["Contents"][0], fo["Contents"][0])
vers = s3.list_object_versions(Bucket=B, Prefix="l/")
check("versions", len(vers["Versions"]) == len(keys) and all(v["VersionId"] == "null" for v in vers["Versions"]))

# Tagging
s3.put_object_tagging(Bucket=B, Key="l/a0", Tagging={"TagSet": [{"Key": "k", "Value": "v"}]})
check("get tagging", s3.get_object_tagging(Bucket=B, Key="l/a0")["TagSet"] == [{"Key": "k", "Value": "v"}])
s3.delete_object_tagging(Bucket=B, Key="l/a0")
check("delete tagging", s3.get_object_tagging(Bucket=B, Key="l/a0")["TagSet"] == [])

# ACLs: read as the owner's full control (bucket owner enforced); only that ACL may be set.
acl = s3.get_bucket_acl(Bucket=B)
owner_id = acl["Owner"]["ID"]
check("bucket acl", [(g["Grantee"].get("ID"), g["Permission"]) for g in acl["Grants"]] == [(owner_id, "FULL_CONTROL")], acl)
oacl = s3.get_object_acl(Bucket=B, Key="l/a0")
check("object acl", [g["Permission"] for g in oacl["Grants"]] == ["FULL_CONTROL"], oacl)
s3.put_object_acl(Bucket=B, Key="l/a0", ACL="private")
check("public acl refused",
      error_code(lambda: s3.put_object_acl(Bucket=B, Key="l/a0", ACL="public-read")) == ("AccessControlListNotSupported", 400))
check("public-read upload refused",
      error_code(lambda: s3.put_object(Bucket=B, Key="public", Body=b"p", ACL="public-read")) == ("AccessControlListNotSupported", 400))
check("refused upload left nothing", error_code(lambda: s3.head_object(Bucket=B, Key="public"))[1] == 404)
check("ownership controls", s3.get_bucket_ownership_controls(Bucket=B)["OwnershipControls"]["Rules"]
      == [{"ObjectOwnership": "BucketOwnerEnforced"}])
check("unsupported operation", error_code(lambda: s3.put_bucket_website(
    Bucket=B, WebsiteConfiguration={"IndexDocument": {"Suffix": "index.html"}})) == ("NotImplemented", 501))

# Bucket policy: publish a prefix read-only to everyone, then take it back.
check("no policy yet", error_code(lambda: s3.get_bucket_policy(Bucket=B)) == ("NoSuchBucketPolicy", 404))
s3.put_object(Bucket=B, Key="pub/readme.txt", Body=b"open data")
anon_url = f"{ENDPOINT}/{B}/pub/readme.txt"
check("anonymous refused without a policy", http("GET", anon_url)[0] == 403)
policy = json.dumps({"Version": "2012-10-17", "Statement": [{
    "Sid": "PublicRead", "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
    "Resource": f"arn:aws:s3:::{B}/pub/*"}]})
s3.put_bucket_policy(Bucket=B, Policy=policy)
check("policy round trip", json.loads(s3.get_bucket_policy(Bucket=B)["Policy"]) == json.loads(policy))
check("policy status public", s3.get_bucket_policy_status(Bucket=B)["PolicyStatus"]["IsPublic"] is True)
check("anonymous GET allowed", http("GET", anon_url) == (200, b"open data"))
check("anonymous GET outside the prefix", http("GET", f"{ENDPOINT}/{B}/l/a0")[0] == 403)
check("anonymous PUT refused", http("PUT", f"{ENDPOINT}/{B}/pub/x", data=b"x")[0] == 403)
anon_s3 = boto3.client("s3", endpoint_url=ENDPOINT, config=Config(signature_version=botocore.UNSIGNED))
check("unsigned boto3 GET", anon_s3.get_object(Bucket=B, Key="pub/readme.txt")["Body"].read() == b"open data")
bad = json.dumps({"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                                 "Resource": f"arn:aws:s3:::{B}"}]})
check("malformed policy", error_code(lambda: s3.put_bucket_policy(Bucket=B, Policy=bad)) == ("MalformedPolicy", 400))
# A policy written for S3 may name actions of features not offered here; S3 takes it, and so must we.
deploy = json.dumps({"Version": "2012-10-17", "Statement": [{
    "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::123456789012:root"},
    "Action": ["s3:GetBucketWebsite", "s3:PutBucketWebsite", "s3:PutBucketLogging", "s3:GetInventoryConfiguration"],
    "Resource": f"arn:aws:s3:::{B}"}]})
check("policy naming actions not offered", s3.put_bucket_policy(Bucket=B, Policy=deploy)
      ["ResponseMetadata"]["HTTPStatusCode"] in (200, 204))
s3.put_bucket_policy(Bucket=B, Policy=policy)
s3.put_public_access_block(Bucket=B, PublicAccessBlockConfiguration={
    "BlockPublicAcls": True, "IgnorePublicAcls": True, "BlockPublicPolicy": True, "RestrictPublicBuckets": True})
check("public access block", s3.get_public_access_block(Bucket=B)["PublicAccessBlockConfiguration"]["RestrictPublicBuckets"])
check("restricted public bucket", http("GET", anon_url)[0] == 403)
check("public policy blocked", error_code(lambda: s3.put_bucket_policy(Bucket=B, Policy=policy))[0] == "AccessDenied")
s3.delete_public_access_block(Bucket=B)
s3.delete_bucket_policy(Bucket=B)
check("policy deleted", error_code(lambda: s3.get_bucket_policy(Bucket=B))[0] == "NoSuchBucketPolicy")
check("anonymous refused again", http("GET", anon_url)[0] == 403)
# ACLs: off under BucketOwnerEnforced (checked above), on under BucketOwnerPreferred.
s3.put_bucket_ownership_controls(Bucket=B, OwnershipControls={"Rules": [{"ObjectOwnership": "BucketOwnerPreferred"}]})
s3.put_object(Bucket=B, Key="pub/readme.txt", Body=b"open data", ACL="public-read")
check("public-read object served anonymously", http("GET", anon_url) == (200, b"open data"))
grants = s3.get_object_acl(Bucket=B, Key="pub/readme.txt")["Grants"]
check("object ACL shows AllUsers READ", any(g["Grantee"].get("URI", "").endswith("/global/AllUsers") and g["Permission"] == "READ"
                                             for g in grants), grants)
s3.put_object_acl(Bucket=B, Key="pub/readme.txt", ACL="private")
check("private again", http("GET", anon_url)[0] == 403)
# Grant headers and policy bodies grant exactly what they name (s3-tests' header-grant and
# revoke-all cases): a header grant to everyone reads back as that grant alone, no grants as none.
s3.put_object_acl(Bucket=B, Key="pub/readme.txt", GrantRead='uri="http://acs.amazonaws.com/groups/global/AllUsers"')
grants = s3.get_object_acl(Bucket=B, Key="pub/readme.txt")["Grants"]
check("header grant read back alone", [(g["Grantee"].get("URI"), g["Permission"]) for g in grants]
      == [("http://acs.amazonaws.com/groups/global/AllUsers", "READ")], grants)
check("owner reads its object without a grant", s3.get_object(Bucket=B, Key="pub/readme.txt")["Body"].read() == b"open data")
s3.put_object_acl(Bucket=B, Key="pub/readme.txt", ACL="private")
bucket_acl = s3.get_bucket_acl(Bucket=B)
s3.put_bucket_acl(Bucket=B, AccessControlPolicy={"Owner": bucket_acl["Owner"], "Grants": []})
check("revoked bucket ACL reads back empty", s3.get_bucket_acl(Bucket=B)["Grants"] == [])
check("owner still lists", s3.list_objects_v2(Bucket=B, MaxKeys=1)["KeyCount"] == 1)
check("policy without an owner id refused", error_code(lambda: s3.put_bucket_acl(
    Bucket=B, AccessControlPolicy={"Owner": {}, "Grants": bucket_acl["Grants"]}))[1] == 400)
s3.put_bucket_acl(Bucket=B, AccessControlPolicy={"Owner": bucket_acl["Owner"], "Grants": bucket_acl["Grants"]})
check("bucket ACL restored", s3.get_bucket_acl(Bucket=B)["Grants"] == bucket_acl["Grants"])
check("grant by e-mail refused", error_code(lambda: s3.put_bucket_acl(Bucket=B, GrantRead='emailAddress="x@example.com"'))[0]
      == "UnresolvableGrantByEmailAddress")
s3.delete_bucket_ownership_controls(Bucket=B)
check("ACLs off again", error_code(lambda: s3.put_object_acl(Bucket=B, Key="pub/readme.txt", ACL="public-read"))
      == ("AccessControlListNotSupported", 400))
s3.delete_object(Bucket=B, Key="pub/readme.txt")

attrs = s3.get_object_attributes(Bucket=B, Key="l/a0", ObjectAttributes=["ETag", "ObjectSize", "StorageClass"])
head = s3.head_object(Bucket=B, Key="l/a0")
check("object attributes (ETag unquoted, as S3 writes it there)", (attrs["ETag"], attrs["ObjectSize"], attrs["StorageClass"])
      == (head["ETag"].strip('"'), head["ContentLength"], "STANDARD"), attrs)

# Multipart, with the default checksum behaviour of this boto3
mp = s3.create_multipart_upload(Bucket=B, Key="mp/obj", Metadata={"m": "p"})
uid = mp["UploadId"]
p1, p2 = os.urandom(5 * 1024 * 1024), os.urandom(1024)
e1 = s3.upload_part(Bucket=B, Key="mp/obj", UploadId=uid, PartNumber=1, Body=p1)
e2 = s3.upload_part_copy(Bucket=B, Key="mp/obj", UploadId=uid, PartNumber=2, CopySource=f"{B}/dir/obj.bin",
                         CopySourceRange="bytes=0-1023")
lp = s3.list_parts(Bucket=B, Key="mp/obj", UploadId=uid)
check("list parts", [p["PartNumber"] for p in lp["Parts"]] == [1, 2])
check("list uploads", [u["UploadId"] for u in s3.list_multipart_uploads(Bucket=B)["Uploads"]] == [uid])
parts = [{"PartNumber": 1, "ETag": e1["ETag"]}, {"PartNumber": 2, "ETag": e2["CopyPartResult"]["ETag"]}]
for k in ("ChecksumCRC32", "ChecksumCRC32C", "ChecksumCRC64NVME", "ChecksumSHA1", "ChecksumSHA256"):
    if k in e1:
        parts[0][k] = e1[k]
        if k in e2["CopyPartResult"]:
            parts[1][k] = e2["CopyPartResult"][k]
done = s3.complete_multipart_upload(Bucket=B, Key="mp/obj", UploadId=uid, MultipartUpload={"Parts": parts})
check("mpu etag", done["ETag"].endswith('-2"'), done["ETag"])
again = s3.complete_multipart_upload(Bucket=B, Key="mp/obj", UploadId=uid, MultipartUpload={"Parts": parts})
check("retried complete", again["ETag"] == done["ETag"], again)
whole = s3.get_object(Bucket=B, Key="mp/obj")
check("mpu bytes", whole["Body"].read() == p1 + body[:1024] and whole["Metadata"] == {"m": "p"})
mp2 = s3.create_multipart_upload(Bucket=B, Key="mp/aborted")
s3.upload_part(Bucket=B, Key="mp/aborted", UploadId=mp2["UploadId"], PartNumber=1, Body=b"x")
s3.abort_multipart_upload(Bucket=B, Key="mp/aborted", UploadId=mp2["UploadId"])
check("abort", error_code(lambda: s3.list_parts(Bucket=B, Key="mp/aborted", UploadId=mp2["UploadId"]))[0] == "NoSuchUpload")
# High-level transfer (threads, multipart threshold 8 MiB).
big = os.urandom(20 * 1024 * 1024)
s3.upload_fileobj(io.BytesIO(big), B, "mp/transfer")
out = io.BytesIO()
s3.download_fileobj(B, "mp/transfer", out)
check("transfer manager", out.getvalue() == big)

# Presigned URLs: SigV4, and boto3's default (SigV2 query auth) with a custom endpoint.
for label, c in [("sigv4", s3), ("default", client(s3={"addressing_style": "path"}))]:
    url = c.generate_presigned_url("put_object", Params={"Bucket": B, "Key": f"pre/{label}"}, ExpiresIn=300)
    st, _ = http("PUT", url, data=b"presigned " + label.encode())
    check(f"presigned put {label}", st == 200, st)
    url = c.generate_presigned_url("get_object", Params={"Bucket": B, "Key": f"pre/{label}"}, ExpiresIn=300)
    st, data = http("GET", url)
    check(f"presigned get {label}", st == 200 and data == b"presigned " + label.encode(), (st, data[:100]))
    q = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
    sig = (q.get("X-Amz-Signature") or q.get("Signature"))[0]
    bad_sig = ("0" if sig[0] != "0" else "1") + sig[1:]
    st, _ = http("GET", url.replace(urllib.parse.quote(sig, safe=""), urllib.parse.quote(bad_sig, safe="")).replace(sig, bad_sig))
    check(f"tampered presigned {label}", st == 403, st)
    # Bucket-level presigned URLs: boto3's SigV2 signs `/bucket/` while it sends `/bucket?...`.
    for op in ("list_objects", "list_objects_v2"):
        url = c.generate_presigned_url(op, Params={"Bucket": B, "Prefix": f"pre/{label}"}, ExpiresIn=300)
        st, data = http("GET", url)
        check(f"presigned {op} {label}", st == 200 and f"<Key>pre/{label}</Key>".encode() in data, (st, data[:300]))
    url = c.generate_presigned_url("list_objects_v2", Params={"Bucket": B}, ExpiresIn=300)
    st, _ = http("GET", url.replace("Expires=", "Expires=1"))
    check(f"presigned list with a changed expiry {label}", st == 403, st)

# SigV4 presigned URLs live at most 7 days (S3: 400 AuthorizationQueryParametersError beyond).
for secs, want in [(604800, 200), (604801, 400), (10**9, 400)]:
    url = s3.generate_presigned_url("get_object", Params={"Bucket": B, "Key": "pre/sigv4"}, ExpiresIn=secs)
    st, data = http("GET", url)
    check(f"presigned lifetime {secs}", st == want and (want == 200 or b"AuthorizationQueryParametersError" in data),
          (st, data[:200]))
    st, data = http("GET", url, headers={"Range": "bytes=5-2"})
    check(f"presigned lifetime {secs} with an ignored Range", st == want, (st, data[:200]))

# POST policy upload (browser form).
post = s3.generate_presigned_post(B, "post/up.txt", ExpiresIn=300)
boundary = "----penstock" + uuid.uuid4().hex
parts = []
for k, v in post["fields"].items():
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode())
parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="up.txt"\r\n'
             f"Content-Type: text/plain\r\n\r\n".encode() + b"posted bytes\r\n")
parts.append(f"--{boundary}--\r\n".encode())
st, resp = http("POST", post["url"], data=b"".join(parts), headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
check("post policy", st in (200, 204), (st, resp[:300]))
check("post object", s3.get_object(Bucket=B, Key="post/up.txt")["Body"].read() == b"posted bytes")


def post_form(post, file_name, data):
    boundary = "----penstock" + uuid.uuid4().hex
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
             for k, v in post["fields"].items()]
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{file_name}"\r\n'
                 f"Content-Type: text/plain\r\n\r\n".encode() + data + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    u = urllib.parse.urlsplit(post["url"])
    conn = httpclient.HTTPConnection(u.hostname, u.port, timeout=60)
    conn.request("POST", u.path, body=b"".join(parts),
                 headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    r = conn.getresponse()
    answer = (r.status, r.headers, r.read())
    conn.close()
    return answer


# The default answer (204) carries the object's URL and ETag in headers, as S3's does.
st, hdrs, _ = post_form(s3.generate_presigned_post(B, "post/plain 204.txt"), "p.txt", b"plain")
check("post 204 headers", st == 204 and hdrs.get("Location") == f"{ENDPOINT}/{B}/post/plain%20204.txt"
      and hdrs.get("ETag") == s3.head_object(Bucket=B, Key="post/plain 204.txt")["ETag"], (st, dict(hdrs)))
# A storage class S3 does not know is refused in a form as in a header; a known one is taken.
for cls, want in (("BOGUS", 400), ("STANDARD_IA", 204)):
    post = s3.generate_presigned_post(B, f"post/class-{cls}", Fields={"x-amz-storage-class": cls},
                                      Conditions=[{"x-amz-storage-class": cls}])
    st, _, doc = post_form(post, "c.txt", b"classy")
    check(f"post storage class {cls}", st == want and (want != 400 or b"InvalidStorageClass" in doc), (st, doc[:300]))
check("post unknown storage class writes nothing",
      s3.list_objects_v2(Bucket=B, Prefix="post/class-BOGUS").get("KeyCount") == 0)

# `${filename}` in a form's key is the uploaded file's name, in the object and in the answer.
post = s3.generate_presigned_post(B, "post/${filename}", Fields={"success_action_status": "201"},
                                  Conditions=[["starts-with", "$key", "post/"], {"success_action_status": "201"}])
st, hdrs, doc = post_form(post, "a&b.txt", b"named")
check("post ${filename} 201", st == 201 and b"<Key>post/a&amp;b.txt</Key>" in doc, (st, doc[:300]))
# S3 names the object's URL in the answer's Location header, and in a 201's <Location>.
check("post 201 Location", hdrs.get("Location") == post["url"] + "/post/a%26b.txt"
      and f"<Location>{post['url']}/post/a%26b.txt</Location>".encode() in doc, (hdrs.get("Location"), doc[:300]))
check("post ${filename} object", s3.get_object(Bucket=B, Key="post/a&b.txt")["Body"].read() == b"named")
named_etag = s3.head_object(Bucket=B, Key="post/a&b.txt")["ETag"]
check("post 201 quotes the etag", f"<ETag>{named_etag}</ETag>".encode() in doc, (named_etag, doc[:300]))
st, _, doc = post_form(post, "C:\\Users\\me\\from-windows.txt", b"windows")
check("post ${filename} drops a browser's path", st == 201 and b"<Key>post/from-windows.txt</Key>" in doc
      and s3.get_object(Bucket=B, Key="post/from-windows.txt")["Body"].read() == b"windows", (st, doc[:300]))
post = s3.generate_presigned_post(B, "post/${filename}", Fields={"success_action_redirect": "http://example.com/done"},
                                  Conditions=[["starts-with", "$key", "post/"],
                                              {"success_action_redirect": "http://example.com/done"}])
st, hdrs, _ = post_form(post, "c d.txt", b"redirected")
location = hdrs.get("Location")
check("post ${filename} 303", st == 303 and "key=post%2Fc+d.txt" in (location or ""), (st, location))
check("post ${filename} 303 object", s3.get_object(Bucket=B, Key="post/c d.txt")["Body"].read() == b"redirected")
redirected_etag = s3.head_object(Bucket=B, Key="post/c d.txt")["ETag"].strip('"')
check("post 303 quotes the etag", (location or "").endswith(f"&etag=%22{redirected_etag}%22"), location)

# A form's `tagging` (an XML tag set) and `acl` fields are applied as a PUT's headers would be.
tag_doc = "<Tagging><TagSet><Tag><Key>team</Key><Value>caf&#233; a+b</Value></Tag></TagSet></Tagging>"
post = s3.generate_presigned_post(B, "post/tagged", Fields={"tagging": tag_doc, "acl": "private"},
                                  Conditions=[{"tagging": tag_doc}, {"acl": "private"}])
st, _, doc = post_form(post, "t.txt", b"tagged")
check("post tagging field", st == 204 and s3.get_object_tagging(Bucket=B, Key="post/tagged")["TagSet"]
      == [{"Key": "team", "Value": "café a+b"}], (st, doc[:300]))
post = s3.generate_presigned_post(B, "post/public", Fields={"acl": "public-read"}, Conditions=[{"acl": "public-read"}])
st, _, doc = post_form(post, "p.txt", b"public")
check("post public acl refused (ACLs off)", st == 400 and b"AccessControlListNotSupported" in doc, (st, doc[:300]))
check("post refused acl wrote nothing", error_code(lambda: s3.head_object(Bucket=B, Key="post/public"))[1] == 404)
# Digests a form states in its fields are checked as a PUT's headers are.
wrong = base64.b64encode(hashlib.sha256(b"other bytes").digest()).decode()
post = s3.generate_presigned_post(B, "post/digest", Fields={"x-amz-checksum-sha256": wrong},
                                  Conditions=[{"x-amz-checksum-sha256": wrong}])
st, _, doc = post_form(post, "d.txt", b"digested")
check("post wrong checksum field refused", st == 400, (st, doc[:300]))
check("post wrong checksum wrote nothing", error_code(lambda: s3.head_object(Bucket=B, Key="post/digest"))[1] == 404)
right = base64.b64encode(hashlib.sha256(b"digested").digest()).decode()
post = s3.generate_presigned_post(B, "post/digest", Fields={"x-amz-checksum-sha256": right},
                                  Conditions=[{"x-amz-checksum-sha256": right}])
st, _, doc = post_form(post, "d.txt", b"digested")
check("post checksum field kept", st == 204 and s3.head_object(Bucket=B, Key="post/digest", ChecksumMode="ENABLED")
      .get("ChecksumSHA256") == right, (st, doc[:300]))
# A field that breaks its policy's condition is refused as S3 refuses it (403), a missing key 400.
post = s3.generate_presigned_post(B, "post/x", Conditions=[["starts-with", "$key", "post/"]])
post["fields"]["key"] = "elsewhere/x"
st, _, doc = post_form(post, "x.txt", b"x")
check("post condition failed 403", st == 403 and b"AccessDenied" in doc, (st, doc[:300]))
del post["fields"]["key"]
st, _, doc = post_form(post, "x.txt", b"x")
check("post without key 400", st == 400 and b"InvalidArgument" in doc, (st, doc[:300]))
# S3 checks a policy's conditions against the key it writes, `${filename}` replaced.
post = s3.generate_presigned_post(B, "${filename}", Conditions=[["starts-with", "$key", "fn-"]])
st, _, doc = post_form(post, "fn-ok.txt", b"named by the file")
check("post ${filename} meets the key's condition", st == 204
      and s3.get_object(Bucket=B, Key="fn-ok.txt")["Body"].read() == b"named by the file", (st, doc[:300]))
st, _, doc = post_form(post, "other.txt", b"x")
check("post ${filename} breaks the key's condition", st == 403 and b"AccessDenied" in doc
      and error_code(lambda: s3.head_object(Bucket=B, Key="other.txt"))[1] == 404, (st, doc[:300]))
# A signed policy without its signature is refused as such (s3s took it for an anonymous form).
post = s3.generate_presigned_post(B, "post/unsigned")
del post["fields"]["x-amz-signature"]
st, _, doc = post_form(post, "u.txt", b"u")
check("post without signature 400", st == 400 and b"X-Amz-Signature" in doc
      and error_code(lambda: s3.head_object(Bucket=B, Key="post/unsigned"))[1] == 404, (st, doc[:300]))


def sign_policy(policy_doc, fields):
    """A form's policy field and its SigV4 signature, for the form's credential and date."""
    creds = boto3.Session().get_credentials()
    policy = base64.b64encode(json.dumps(policy_doc).encode()).decode()
    _, date, region, service, _ = fields["x-amz-credential"].split("/")
    key = ("AWS4" + creds.secret_key).encode()
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return policy, hmac.new(key, policy.encode(), hashlib.sha256).hexdigest()


# An expiration S3 does not read as ISO 8601 (a space for the `T`) is a malformed policy.
post = s3.generate_presigned_post(B, "post/loose")
doc = json.loads(base64.b64decode(post["fields"]["policy"]))
doc["expiration"] = doc["expiration"].replace("T", " ")
post["fields"]["policy"], post["fields"]["x-amz-signature"] = sign_policy(doc, post["fields"])
st, _, body_ = post_form(post, "l.txt", b"l")
check("post loose expiration 400", st == 400 and b"InvalidPolicyDocument" in body_
      and error_code(lambda: s3.head_object(Bucket=B, Key="post/loose"))[1] == 404, (st, body_[:300]))
doc["expiration"] = doc["expiration"].replace(" ", "T")
post["fields"]["policy"], post["fields"]["x-amz-signature"] = sign_policy(doc, post["fields"])
st, _, body_ = post_form(post, "l.txt", b"l")
check("post re-signed policy taken", st == 204, (st, body_[:300]))
# S3 counts the bucket among every form's fields: a policy with no condition on it leaves a
# field uncovered, 403 "Extra input fields: bucket", and nothing is written.
post = s3.generate_presigned_post(B, "post/no-bucket-condition")
doc = json.loads(base64.b64decode(post["fields"]["policy"]))
doc["conditions"] = [c for c in doc["conditions"] if not (isinstance(c, dict) and "bucket" in c)]
post["fields"]["policy"], post["fields"]["x-amz-signature"] = sign_policy(doc, post["fields"])
st, _, body_ = post_form(post, "nb.txt", b"nb")
check("post policy without a bucket condition 403", st == 403 and b"Extra input fields: bucket" in body_
      and error_code(lambda: s3.head_object(Bucket=B, Key="post/no-bucket-condition"))[1] == 404, (st, body_[:300]))

# Virtual-hosted-style addressing (`<bucket>.localhost`), signed like any client would, sent to
# the loopback address because *.localhost need not resolve here.
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
port = urllib.parse.urlsplit(ENDPOINT).port
vhost = f"{B}.localhost:{port}"
vreq = AWSRequest(method="GET", url=f"http://{vhost}/dir/obj.bin",
                  headers={"Host": vhost, "x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
SigV4Auth(boto3.Session().get_credentials(), "s3", "us-east-1").add_auth(vreq)
vconn = httpclient.HTTPConnection("127.0.0.1", port, timeout=60)
vconn.request("GET", "/dir/obj.bin", headers=dict(vreq.headers.items()))
vresp = vconn.getresponse()
check("virtual-hosted style", vresp.status == 200 and vresp.read() == body, vresp.status)

# Empty bodies: botocore sends `Expect: 100-continue` with them too, and misreads the next answer
# on the connection unless a `100 Continue` came first (the next PUT then hung for 60 s and was
# retried). One connection, no retries, a short read timeout: each PUT must answer at once.
import time
quick = boto3.client("s3", endpoint_url=ENDPOINT, config=Config(
    signature_version="s3v4", s3={"addressing_style": "path"}, read_timeout=5,
    retries={"total_max_attempts": 1}, max_pool_connections=1))
for i, b in enumerate([b"", io.BytesIO(b""), b"x = 1\n", io.BytesIO(b""), io.BytesIO(b"y = 2\n")]):
    t0 = time.monotonic()
    try:
        rr = quick.put_object(Bucket=B, Key=f"pkg/{i}.py", Body=b)
        dt = time.monotonic() - t0
        check(f"put {i} after empty puts", dt < 1 and rr["ResponseMetadata"]["RetryAttempts"] == 0,
              (dt, rr["ResponseMetadata"]))
    except Exception as e:  # a read timeout is the defect
        check(f"put {i} after empty puts", False, repr(e))
check("empty object", s3.head_object(Bucket=B, Key="pkg/1.py")["ContentLength"] == 0)

# A Range S3 ignores (reversed, several ranges, other units): 200 with the whole object.
for bad in ["bytes=5-2", "bytes=0-1,4-5", "items=0-1"]:
    rg = s3.get_object(Bucket=B, Key="dir/obj.bin", Range=bad)
    check(f"ignored range {bad}", rg["ResponseMetadata"]["HTTPStatusCode"] == 200 and rg["Body"].read() == body,
          rg["ResponseMetadata"]["HTTPStatusCode"])

# HEAD with a Range: 206 and the range's length (s3s alone answers every HEAD 200).
hr = s3.head_object(Bucket=B, Key="dir/obj.bin", Range="bytes=10-19")
check("head range", (hr["ResponseMetadata"]["HTTPStatusCode"], hr["ContentLength"], hr.get("ContentRange"))
      == (206, 10, f"bytes 10-19/{len(body)}"), hr["ResponseMetadata"])

# User metadata is limited to 2 KB (keys and values); more is 400 MetadataTooLarge, and nothing is written.
check("metadata too large", error_code(lambda: s3.put_object(Bucket=B, Key="meta-big", Body=b"m",
                                                             Metadata={"a": "x" * 2048}))
      == ("MetadataTooLarge", 400))
check("too large wrote nothing", error_code(lambda: s3.head_object(Bucket=B, Key="meta-big"))[1] == 404)
s3.put_object(Bucket=B, Key="meta-big", Body=b"m", Metadata={"a": "x" * 2047})
check("2 KB of metadata", len(s3.head_object(Bucket=B, Key="meta-big")["Metadata"]["a"]) == 2047)
check("metadata too large on copy", error_code(lambda: s3.copy_object(
    Bucket=B, Key="meta-big2", CopySource={"Bucket": B, "Key": "meta-big"}, MetadataDirective="REPLACE",
    Metadata={"a": "y" * 1500, "b": "z" * 1500})) == ("MetadataTooLarge", 400))
check("metadata too large on multipart", error_code(lambda: s3.create_multipart_upload(
    Bucket=B, Key="meta-big3", Metadata={"k" * 100: "v" * 2000}))[0] == "MetadataTooLarge")

# HEAD carries the tag count; `gzip, aws-chunked` (botocore's framing) is stored as gzip.
s3.put_object(Bucket=B, Key="tagged", Body=b"t", Tagging="a=1&b=2")
hh = s3.head_object(Bucket=B, Key="tagged")
check("head tag count", hh["ResponseMetadata"]["HTTPHeaders"].get("x-amz-tagging-count") == "2", hh)
s3.put_object(Bucket=B, Key="gz", Body=io.BytesIO(b"\x1f\x8b gzip bytes"), ContentEncoding="gzip")
check("content-encoding", s3.head_object(Bucket=B, Key="gz").get("ContentEncoding") == "gzip",
      s3.head_object(Bucket=B, Key="gz").get("ContentEncoding"))

# Errors: the request id of the header is the one in the body.
try:
    s3.get_object(Bucket=B, Key="no/such/key")
    check("missing key", False)
except ClientError as e:
    md = e.response["ResponseMetadata"]
    check("request id in body", md.get("RequestId") == md["HTTPHeaders"].get("x-amz-request-id") and md.get("RequestId"), md)
    check("missing key named", e.response["Error"].get("Key") == "no/such/key", e.response["Error"])
try:
    s3.list_objects_v2(Bucket="no-such-bucket-x")
    check("missing bucket named", False)
except ClientError as e:
    check("missing bucket named", e.response["Error"].get("BucketName") == "no-such-bucket-x", e.response["Error"])

# Part reads of a COMPOSITE multipart object carry that part's checksum, typed COMPOSITE.
mpc = s3.create_multipart_upload(Bucket=B, Key="mp/composite", ChecksumAlgorithm="SHA256")
cparts = []
for n, data in enumerate([os.urandom(5 * 1024 * 1024), os.urandom(5 * 1024 * 1024), os.urandom(100)], 1):
    pr = s3.upload_part(Bucket=B, Key="mp/composite", UploadId=mpc["UploadId"], PartNumber=n, Body=data,
                        ChecksumAlgorithm="SHA256")
    cparts.append({"PartNumber": n, "ETag": pr["ETag"], "ChecksumSHA256": pr["ChecksumSHA256"]})
s3.complete_multipart_upload(Bucket=B, Key="mp/composite", UploadId=mpc["UploadId"], MultipartUpload={"Parts": cparts})
for n in (1, 2, 3):
    ph = s3.head_object(Bucket=B, Key="mp/composite", PartNumber=n, ChecksumMode="ENABLED")
    check(f"composite part {n}", ph.get("ChecksumType") == "COMPOSITE"
          and ph.get("ChecksumSHA256") == cparts[n - 1]["ChecksumSHA256"], ph)
# Of a FULL_OBJECT object, a part has no checksum of its own to report when there are several
# (S3 gives none); the one part of a single-part upload gives the object's.
for count in (2, 1):
    key = f"mp/full-{count}"
    mpf = s3.create_multipart_upload(Bucket=B, Key=key, ChecksumAlgorithm="CRC32", ChecksumType="FULL_OBJECT")
    fparts = []
    for n in range(1, count + 1):
        pr = s3.upload_part(Bucket=B, Key=key, UploadId=mpf["UploadId"], PartNumber=n,
                            Body=os.urandom(5 * 1024 * 1024 if n < count else 100), ChecksumAlgorithm="CRC32")
        fparts.append({"PartNumber": n, "ETag": pr["ETag"], "ChecksumCRC32": pr["ChecksumCRC32"]})
    done = s3.complete_multipart_upload(Bucket=B, Key=key, UploadId=mpf["UploadId"],
                                        MultipartUpload={"Parts": fparts})
    for n in range(1, count + 1):
        for how in ("head", "get"):
            fn = s3.head_object if how == "head" else s3.get_object
            ph = fn(Bucket=B, Key=key, PartNumber=n, ChecksumMode="ENABLED")
            want = done["ChecksumCRC32"] if count == 1 else None
            check(f"full-object part {n} of {count} ({how})", ph.get("ChecksumCRC32") == want
                  and ph.get("ChecksumType") == ("FULL_OBJECT" if want else None), ph)

# A folder marker with a body (some tools write one byte or a JSON document).
s3.put_object(Bucket=B, Key="folder/", Body=b'{"kind": "folder"}', ContentType="application/json")
fm = s3.get_object(Bucket=B, Key="folder/")
check("marker body", fm["Body"].read() == b'{"kind": "folder"}' and fm["ContentType"] == "application/json", fm)
s3.put_object(Bucket=B, Key="folder/inside", Body=b"i")
lm = {o["Key"]: o["Size"] for o in s3.list_objects_v2(Bucket=B, Prefix="folder/")["Contents"]}
check("marker listed", lm == {"folder/": 18, "folder/inside": 1}, lm)

# SigV2 header authentication (signature_version="s3"), bucket operations included.
v2 = client(signature_version="s3", s3={"addressing_style": "path"})
B3 = B + "-v2"
try:
    v2.create_bucket(Bucket=B3)
    v2.put_object(Bucket=B3, Key="k", Body=b"v2 bytes")
    check("sigv2 list", [o["Key"] for o in v2.list_objects(Bucket=B3)["Contents"]] == ["k"])
    check("sigv2 list v2", v2.list_objects_v2(Bucket=B3)["KeyCount"] == 1)
    check("sigv2 get", v2.get_object(Bucket=B3, Key="k")["Body"].read() == b"v2 bytes")
    v2.head_bucket(Bucket=B3)
    v2.delete_object(Bucket=B3, Key="k")
    v2.delete_bucket(Bucket=B3)
    check("sigv2 bucket gone", B3 not in [b["Name"] for b in s3.list_buckets()["Buckets"]])
except ClientError as e:
    check("sigv2 bucket operations", False, e.response["Error"])
bad_v2 = boto3.client("s3", endpoint_url=ENDPOINT, aws_access_key_id=os.environ["AWS_ACCESS_KEY_ID"],
                      aws_secret_access_key="wrong-secret",
                      config=Config(signature_version="s3", s3={"addressing_style": "path"}))
check("sigv2 wrong secret", error_code(lambda: bad_v2.list_objects(Bucket=B))[0] == "SignatureDoesNotMatch")
# A V2 presigned URL carries the headers it signs in its query (botocore's HmacV1QueryAuth moves
# x-amz-*, Content-Type and Content-MD5 there): S3 reads them back as headers, signature and all.
for name, params in [("meta", {"Metadata": {"team": "a b"}}), ("type", {"ContentType": "text/x-v2"}),
                     ("acl", {"ACL": "private"})]:
    url = v2.generate_presigned_url("put_object", Params={"Bucket": B, "Key": f"v2url/{name}", **params},
                                    ExpiresIn=300)
    st, body_ = http("PUT", url, data=b"by url", headers={"Content-Length": "6"})
    check(f"sigv2 presigned put with {name} in its query", st == 200, (st, body_[:300]))
head = s3.head_object(Bucket=B, Key="v2url/meta")
check("sigv2 presigned metadata stored", head["Metadata"] == {"team": "a b"}, head["Metadata"])
check("sigv2 presigned content type stored",
      s3.head_object(Bucket=B, Key="v2url/type")["ContentType"] == "text/x-v2")
url = v2.generate_presigned_url("put_object", Params={"Bucket": B, "Key": "v2url/tampered",
                                                      "Metadata": {"team": "a"}}, ExpiresIn=300)
st, _ = http("PUT", url.replace("x-amz-meta-team=a", "x-amz-meta-team=b"), data=b"x",
             headers={"Content-Length": "1"})
check("sigv2 presigned query headers are signed", st == 403
      and error_code(lambda: s3.head_object(Bucket=B, Key="v2url/tampered"))[1] == 404, st)

# Versioning: versions by id, delete markers, restore, paged listing, suspended null versions
BV = B + "-ver"
s3.create_bucket(Bucket=BV)
check("never versioned", "Status" not in s3.get_bucket_versioning(Bucket=BV))
s3.put_object(Bucket=BV, Key="k", Body=b"null")
s3.put_bucket_versioning(Bucket=BV, VersioningConfiguration={"Status": "Enabled"})
check("versioning enabled", s3.get_bucket_versioning(Bucket=BV).get("Status") == "Enabled")
v1 = s3.put_object(Bucket=BV, Key="k", Body=b"one")["VersionId"]
v2 = s3.put_object(Bucket=BV, Key="k", Body=b"two")["VersionId"]
check("versions read by id", [s3.get_object(Bucket=BV, Key="k", VersionId=v)["Body"].read()
                              for v in ("null", v1, v2)] == [b"null", b"one", b"two"])
check("head names the version", s3.head_object(Bucket=BV, Key="k")["VersionId"] == v2)
dm = s3.delete_object(Bucket=BV, Key="k")
check("delete makes a marker", dm.get("DeleteMarker") is True and bool(dm.get("VersionId")), dm)
try:
    s3.get_object(Bucket=BV, Key="k")
    check("marker hides the key", False)
except ClientError as e:
    hdrs = e.response["ResponseMetadata"]["HTTPHeaders"]
    check("marker hides the key", e.response["Error"]["Code"] == "NoSuchKey"
          and hdrs.get("x-amz-delete-marker") == "true", e.response)
# S3 refuses a delete marker's tags (405 naming the resource) whether asked by id or as the
# newest version, and a GET of it by id says which method it allows.
for name, call in [("by id", lambda: s3.get_object_tagging(Bucket=BV, Key="k", VersionId=dm["VersionId"])),
                   ("newest", lambda: s3.get_object_tagging(Bucket=BV, Key="k")),
                   ("put", lambda: s3.put_object_tagging(Bucket=BV, Key="k", Tagging={"TagSet": []}))]:
    try:
        call()
        check(f"marker tags refused ({name})", False)
    except ClientError as e:
        check(f"marker tags refused ({name})", (e.response["Error"]["Code"], e.response["Error"].get("ResourceType"))
              == ("MethodNotAllowed", "DeleteMarker"), e.response)
try:
    s3.get_object(Bucket=BV, Key="k", VersionId=dm["VersionId"])
    check("marker read by id", False)
except ClientError as e:
    check("marker read by id", e.response["ResponseMetadata"]["HTTPStatusCode"] == 405
          and e.response["ResponseMetadata"]["HTTPHeaders"].get("allow") == "DELETE"
          and e.response["Error"].get("Method") == "GET", e.response)
check("copy of a marker by id refused", error_code(lambda: s3.copy_object(
    Bucket=BV, Key="c", CopySource={"Bucket": BV, "Key": "k", "VersionId": dm["VersionId"]})) == ("InvalidRequest", 400))
lv = s3.list_object_versions(Bucket=BV)
check("versions listed newest first", [v["VersionId"] for v in lv["Versions"]] == [v2, v1, "null"], lv)
check("marker listed as latest", [(m["VersionId"], m["IsLatest"]) for m in lv["DeleteMarkers"]]
      == [(dm["VersionId"], True)], lv)
s3.delete_object(Bucket=BV, Key="k", VersionId=dm["VersionId"])
check("deleting the marker restores", s3.get_object(Bucket=BV, Key="k")["Body"].read() == b"two")
pages = s3.get_paginator("list_object_versions").paginate(Bucket=BV, PaginationConfig={"PageSize": 1})
check("versions paged one by one", [v["VersionId"] for p in pages for v in p.get("Versions", [])] == [v2, v1, "null"])
s3.put_bucket_versioning(Bucket=BV, VersioningConfiguration={"Status": "Suspended"})
check("suspended writes name no version", "VersionId" not in s3.put_object(Bucket=BV, Key="k", Body=b"s"))
check("suspended writes are null", s3.head_object(Bucket=BV, Key="k")["VersionId"] == "null")
lv = s3.list_object_versions(Bucket=BV)
check("suspended put replaced the null version", [v["VersionId"] for v in lv["Versions"]] == ["null", v2, v1], lv)
# Lifecycle configuration
check("no lifecycle yet", error_code(lambda: s3.get_bucket_lifecycle_configuration(Bucket=BV))
      == ("NoSuchLifecycleConfiguration", 404))
rules = [
    {"ID": "tmp", "Status": "Enabled", "Filter": {"Prefix": "tmp/"}, "Expiration": {"Days": 1}},
    {"ID": "tagged", "Status": "Disabled",
     "Filter": {"And": {"Prefix": "logs/", "Tags": [{"Key": "t", "Value": "x"}], "ObjectSizeGreaterThan": 10}},
     "NoncurrentVersionExpiration": {"NoncurrentDays": 5, "NewerNoncurrentVersions": 2}},
    {"ID": "markers", "Status": "Enabled", "Filter": {"Prefix": "m/"},
     "Expiration": {"ExpiredObjectDeleteMarker": True},
     "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 3}},
]
s3.put_bucket_lifecycle_configuration(Bucket=BV, LifecycleConfiguration={"Rules": rules})
got = s3.get_bucket_lifecycle_configuration(Bucket=BV)["Rules"]
check("lifecycle rules round trip", got == rules, got)
r = s3.put_object(Bucket=BV, Key="tmp/x", Body=b"x")
check("expiration announced", 'rule-id="tmp"' in r.get("Expiration", ""), r.get("Expiration"))
check("expiration on head", s3.head_object(Bucket=BV, Key="tmp/x").get("Expiration") == r.get("Expiration"))
bad = [{"ID": "d", "Status": "Enabled", "Filter": {"Prefix": ""}, "Expiration": {"Date": "2030-01-01T12:00:00Z"}}]
check("date not at midnight refused",
      error_code(lambda: s3.put_bucket_lifecycle_configuration(Bucket=BV, LifecycleConfiguration={"Rules": bad}))
      == ("InvalidArgument", 400))
s3.delete_bucket_lifecycle(Bucket=BV)
check("lifecycle deleted", error_code(lambda: s3.get_bucket_lifecycle_configuration(Bucket=BV))[0]
      == "NoSuchLifecycleConfiguration")
check("versioned bucket not empty", error_code(lambda: s3.delete_bucket(Bucket=BV))[0] == "BucketNotEmpty")
for page in s3.get_paginator("list_object_versions").paginate(Bucket=BV):
    objs = [{"Key": v["Key"], "VersionId": v["VersionId"]} for v in page.get("Versions", []) + page.get("DeleteMarkers", [])]
    if objs:
        r = s3.delete_objects(Bucket=BV, Delete={"Objects": objs})
        check("versions deleted", not r.get("Errors"), r)
s3.delete_bucket(Bucket=BV)

# Bucket tagging: the whole set replaced, S3's limits, 404 NoSuchTagSet once deleted.
check("no bucket tags yet", error_code(lambda: s3.get_bucket_tagging(Bucket=B)) == ("NoSuchTagSet", 404))
tags = [{"Key": "team", "Value": "ml"}, {"Key": "cost center", "Value": ""}]
s3.put_bucket_tagging(Bucket=B, Tagging={"TagSet": tags})
# A tag set comes back in key order, however it was sent.
by_key = sorted(tags, key=lambda t: t["Key"])
check("bucket tags round trip", s3.get_bucket_tagging(Bucket=B)["TagSet"] == by_key)
too_many = [{"Key": f"k{i}", "Value": "v"} for i in range(51)]
for name, bad in [("51 tags", too_many), ("repeated key", tags + tags[:1]), ("aws: key", [{"Key": "aws:x", "Value": "v"}])]:
    check(f"bucket tags: {name} refused",
          error_code(lambda: s3.put_bucket_tagging(Bucket=B, Tagging={"TagSet": bad})) == ("InvalidTag", 400))
# Tags hold letters, numbers, spaces and `_ . : / = + - @` only; the refusal names the tag.
try:
    s3.put_bucket_tagging(Bucket=B, Tagging={"TagSet": [{"Key": "Key1", "Value": "Val1,Val2"}]})
    check("tag value with a comma refused", False)
except ClientError as e:
    check("tag value with a comma refused", (e.response["Error"]["Code"], e.response["Error"].get("TagValue"))
          == ("InvalidTag", "Val1,Val2"), e.response)
check("refused tags changed nothing", s3.get_bucket_tagging(Bucket=B)["TagSet"] == by_key)
for header in ["key1=val1&key1=val2", "key1=val1,key2=val2"]:
    check(f"x-amz-tagging {header} refused", error_code(
        lambda: s3.put_object(Bucket=B, Key="badtags", Body=b"x", Tagging=header)) == ("InvalidArgument", 400))
check("refused tagging header wrote nothing", error_code(lambda: s3.head_object(Bucket=B, Key="badtags"))[1] == 404)
s3.put_bucket_tagging(Bucket=B, Tagging={"TagSet": tags[:1]})
check("bucket tags replaced", s3.get_bucket_tagging(Bucket=B)["TagSet"] == tags[:1])
s3.delete_bucket_tagging(Bucket=B)
check("bucket tags deleted", error_code(lambda: s3.get_bucket_tagging(Bucket=B))[0] == "NoSuchTagSet")

# Settings not offered read as never set (what tools that read them all before a change expect);
# setting one is 501.
for name, fn, want in [
    ("encryption", s3.get_bucket_encryption, ("ServerSideEncryptionConfigurationNotFoundError", 404)),
    ("website", s3.get_bucket_website, ("NoSuchWebsiteConfiguration", 404)),
    ("object lock", s3.get_object_lock_configuration, ("ObjectLockConfigurationNotFoundError", 404)),
    ("replication", s3.get_bucket_replication, ("ReplicationConfigurationNotFoundError", 404)),
]:
    check(f"no {name} configuration", error_code(lambda: fn(Bucket=B)) == want, error_code(lambda: fn(Bucket=B)))
check("logging off", "LoggingEnabled" not in s3.get_bucket_logging(Bucket=B))
n = s3.get_bucket_notification_configuration(Bucket=B)
check("no notifications", not any(k.endswith("Configurations") for k in n), n)
check("no acceleration", "Status" not in s3.get_bucket_accelerate_configuration(Bucket=B))
check("owner pays", s3.get_bucket_request_payment(Bucket=B).get("Payer") == "BucketOwner")
for name, fn, key in [
    ("analytics", s3.list_bucket_analytics_configurations, "AnalyticsConfigurationList"),
    ("inventory", s3.list_bucket_inventory_configurations, "InventoryConfigurationList"),
    ("metrics", s3.list_bucket_metrics_configurations, "MetricsConfigurationList"),
    ("intelligent tiering", s3.list_bucket_intelligent_tiering_configurations, "IntelligentTieringConfigurationList"),
]:
    got = fn(Bucket=B)
    check(f"no {name} configurations", got.get("IsTruncated") is False and not got.get(key), got)
# Deleting one leaves it unset: 204, as S3 answers for a bucket without it.
for name, fn in [("encryption", s3.delete_bucket_encryption), ("website", s3.delete_bucket_website),
                 ("replication", s3.delete_bucket_replication)]:
    check(f"delete {name} configuration", fn(Bucket=B)["ResponseMetadata"]["HTTPStatusCode"] == 204)
check("missing bucket's settings", error_code(lambda: s3.get_bucket_encryption(Bucket="no-such-bucket-x"))
      == ("NoSuchBucket", 404))
sse = {"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]}
check("setting encryption not offered",
      error_code(lambda: s3.put_bucket_encryption(Bucket=B, ServerSideEncryptionConfiguration=sse))
      == ("NotImplemented", 501))
ssec_key = b"k" * 32
ssec = dict(SSECustomerAlgorithm="AES256", SSECustomerKey=base64.b64encode(ssec_key).decode(),
            SSECustomerKeyMD5=base64.b64encode(hashlib.md5(ssec_key).digest()).decode())
# SSE-C: stored under the client's key, read only with it (s3-tests' encryption cases).
other = b"o" * 32
ssec_other = dict(SSECustomerAlgorithm="AES256", SSECustomerKey=base64.b64encode(other).decode(),
                  SSECustomerKeyMD5=base64.b64encode(hashlib.md5(other).digest()).decode())
for size in (1, 13, 1024, 1024 * 1024):
    data = os.urandom(size)
    put = s3.put_object(Bucket=B, Key=f"ssec/{size}", Body=data, **ssec)
    check(f"SSE-C put {size}", put.get("SSECustomerKeyMD5") == ssec["SSECustomerKeyMD5"], put)
    got = s3.get_object(Bucket=B, Key=f"ssec/{size}", **ssec)
    check(f"SSE-C get {size}", got["Body"].read() == data and got.get("SSECustomerAlgorithm") == "AES256")
check("SSE-C head without the key", error_code(lambda: s3.head_object(Bucket=B, Key="ssec/13"))[1] == 400)
check("SSE-C get without the key",
      error_code(lambda: s3.get_object(Bucket=B, Key="ssec/13")) == ("InvalidRequest", 400))
check("SSE-C get with another key",
      error_code(lambda: s3.get_object(Bucket=B, Key="ssec/13", **ssec_other)) == ("AccessDenied", 403))
check("SSE-C key for a plain object",
      error_code(lambda: s3.get_object(Bucket=B, Key="dir/obj.bin", **ssec)) == ("InvalidRequest", 400))
check("SSE-C invalid MD5", error_code(lambda: s3.put_object(
      Bucket=B, Key="ssec/bad", Body=b"x", **{**ssec, "SSECustomerKeyMD5": "AAAAAAAAAAAAAAAAAAAAAA=="}))
      == ("InvalidArgument", 400))
check("SSE-C invalid MD5 left nothing", error_code(lambda: s3.head_object(Bucket=B, Key="ssec/bad"))[1] == 404)
big = os.urandom(12 * 1024 * 1024 + 5)
cfg = boto3.s3.transfer.TransferConfig(multipart_threshold=5 * 1024 * 1024, multipart_chunksize=5 * 1024 * 1024)
s3.upload_fileobj(io.BytesIO(big), B, "ssec/multi", ExtraArgs=ssec, Config=cfg)
out = io.BytesIO()
s3.download_fileobj(B, "ssec/multi", out, ExtraArgs=ssec, Config=cfg)
check("SSE-C multipart upload and ranged download", out.getvalue() == big)
rg = s3.get_object(Bucket=B, Key="ssec/multi", Range="bytes=5242870-10485770", **ssec)["Body"].read()
check("SSE-C range across parts", rg == big[5242870:10485771])
s3.copy_object(Bucket=B, Key="ssec/copied", CopySource=f"{B}/ssec/multi", CopySourceSSECustomerAlgorithm="AES256",
               CopySourceSSECustomerKey=ssec["SSECustomerKey"], CopySourceSSECustomerKeyMD5=ssec["SSECustomerKeyMD5"],
               **ssec_other)
check("SSE-C copy under another key",
      s3.get_object(Bucket=B, Key="ssec/copied", **ssec_other)["Body"].read() == big)
post = s3.generate_presigned_post(B, "ssec/form", Fields={
    "x-amz-server-side-encryption-customer-algorithm": "AES256",
    "x-amz-server-side-encryption-customer-key": ssec["SSECustomerKey"],
    "x-amz-server-side-encryption-customer-key-MD5": ssec["SSECustomerKeyMD5"]}, Conditions=[
    ["starts-with", "$x-amz-server-side-encryption-customer-algorithm", ""],
    ["starts-with", "$x-amz-server-side-encryption-customer-key", ""],
    ["starts-with", "$x-amz-server-side-encryption-customer-key-MD5", ""]])
check("SSE-C form upload", post_form(post, "f.txt", b"bar")[0] == 204)
check("SSE-C form upload read with the key",
      s3.get_object(Bucket=B, Key="ssec/form", **ssec)["Body"].read() == b"bar")
check("SSE-C form upload needs the key", error_code(lambda: s3.get_object(Bucket=B, Key="ssec/form"))[1] == 400)

# Object lock: a locked version is not deleted by id (the bypass lets GOVERNANCE go, never a legal
# hold or COMPLIANCE); deletes without an id leave a marker over it.
L = B + "-lock"
s3.create_bucket(Bucket=L, ObjectLockEnabledForBucket=True)
check("object lock versions its bucket", s3.get_bucket_versioning(Bucket=L).get("Status") == "Enabled")
lock_conf = {"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}}
s3.put_object_lock_configuration(Bucket=L, ObjectLockConfiguration=lock_conf)
check("object lock configuration", s3.get_object_lock_configuration(Bucket=L)["ObjectLockConfiguration"] == lock_conf)
check("object lock keeps versioning on",
      error_code(lambda: s3.put_bucket_versioning(Bucket=L, VersioningConfiguration={"Status": "Suspended"}))
      == ("InvalidBucketState", 409))
lv = s3.put_object(Bucket=L, Key="k", Body=b"kept")["VersionId"]
check("default retention applied", s3.head_object(Bucket=L, Key="k").get("ObjectLockMode") == "GOVERNANCE")
check("locked version not deleted",
      error_code(lambda: s3.delete_object(Bucket=L, Key="k", VersionId=lv)) == ("AccessDenied", 403))
s3.put_object_legal_hold(Bucket=L, Key="k", LegalHold={"Status": "ON"})
check("legal hold", s3.get_object_legal_hold(Bucket=L, Key="k")["LegalHold"] == {"Status": "ON"})
r = s3.delete_objects(Bucket=L, Delete={"Objects": [{"Key": "k", "VersionId": lv}]}, BypassGovernanceRetention=True)
check("legal hold beats the bypass", [e["Code"] for e in r.get("Errors", [])] == ["AccessDenied"], r)
s3.put_object_legal_hold(Bucket=L, Key="k", LegalHold={"Status": "OFF"})
until = datetime.datetime(2031, 1, 1, tzinfo=datetime.timezone.utc)
s3.put_object_retention(Bucket=L, Key="k", Retention={"Mode": "GOVERNANCE", "RetainUntilDate": until})
check("retention", s3.get_object_retention(Bucket=L, Key="k")["Retention"]["RetainUntilDate"] == until)
check("bypass deletes governance", s3.delete_object(Bucket=L, Key="k", VersionId=lv,
                                                    BypassGovernanceRetention=True)["ResponseMetadata"]["HTTPStatusCode"] == 204)
# A browser form's lock fields lock what it uploads.
lock_fields = {"x-amz-object-lock-mode": "COMPLIANCE", "x-amz-object-lock-retain-until-date": "2000-01-01T00:00:00Z",
               "x-amz-object-lock-legal-hold": "ON"}
post = s3.generate_presigned_post(L, "form", Fields=dict(lock_fields),
                                  Conditions=[{k: v} for k, v in lock_fields.items()])
check("form with a past retain-until date refused", post_form(post, "f.txt", b"x")[0] == 400)
lock_fields["x-amz-object-lock-retain-until-date"] = (
    datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
post = s3.generate_presigned_post(L, "form", Fields=dict(lock_fields),
                                  Conditions=[{k: v} for k, v in lock_fields.items()])
check("form upload with a lock", post_form(post, "f.txt", b"form bytes")[0] == 204)
h = s3.head_object(Bucket=L, Key="form")
check("form's lock applied", (h.get("ObjectLockMode"), h.get("ObjectLockLegalHoldStatus")) == ("COMPLIANCE", "ON"), h)
s3.put_object_legal_hold(Bucket=L, Key="form", LegalHold={"Status": "OFF"})
s3.delete_object(Bucket=L, Key="form")
owner = s3.get_bucket_acl(Bucket=B)["Owner"]["ID"]
check("expected owner", "Contents" in s3.list_objects_v2(Bucket=B, ExpectedBucketOwner=owner))
check("unexpected owner refused",
      error_code(lambda: s3.list_objects_v2(Bucket=B, ExpectedBucketOwner=owner + "0")) == ("AccessDenied", 403))

# Delete
r = s3.delete_objects(Bucket=B, Delete={"Objects": [{"Key": "l/" + k} for k in keys] + [{"Key": "ghost"}]})
check("delete_objects", len(r["Deleted"]) == len(keys) + 1, r)
s3.delete_object(Bucket=B, Key="dir/obj.bin")
check("deleted", error_code(lambda: s3.head_object(Bucket=B, Key="dir/obj.bin"))[1] == 404)
check("bucket not empty", error_code(lambda: s3.delete_bucket(Bucket=B))[0] == "BucketNotEmpty")
time.sleep(5)  # the form's COMPLIANCE retention ends
for bucket in (B, B2, L):
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
        objs = [{"Key": v["Key"], "VersionId": v["VersionId"]}
                for v in page.get("Versions", []) + page.get("DeleteMarkers", [])]
        if objs:
            s3.delete_objects(Bucket=bucket, Delete={"Objects": objs})
    s3.delete_bucket(Bucket=bucket)
check("buckets gone", B not in [b["Name"] for b in s3.list_buckets()["Buckets"]])

if failures:
    print(f"boto3: {len(failures)} check(s) failed")
    sys.exit(1)
print("PASS: boto3")
