"""Penstock with boto3: connect, create a bucket, upload, list, download, presign.

    scripts/serve &    # prints the dev credentials
    AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... python3 examples/boto3_quickstart.py http://127.0.0.1:9000
"""
import sys
import urllib.request

import boto3
from botocore.config import Config

endpoint = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:9000"
bucket = sys.argv[2] if len(sys.argv) > 2 else "quickstart"

# Path-style addressing works under any host name; credentials come from the environment.
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}))

existing = [b["Name"] for b in s3.list_buckets()["Buckets"]]
if bucket not in existing:
    s3.create_bucket(Bucket=bucket)

# Objects are plain files in the bucket's folder: "notes/hello.txt" is a file in a directory.
s3.put_object(Bucket=bucket, Key="notes/hello.txt", Body=b"hello, penstock\n",
              ContentType="text/plain", Metadata={"author": "quickstart"})
s3.upload_fileobj(__import__("io").BytesIO(b"x" * (12 << 20)), bucket, "data/blob.bin")  # multipart

for obj in s3.list_objects_v2(Bucket=bucket)["Contents"]:
    print(f"{obj['Key']:<20} {obj['Size']:>10} {obj['ETag']}")

got = s3.get_object(Bucket=bucket, Key="notes/hello.txt")
assert got["Body"].read() == b"hello, penstock\n"
assert got["Metadata"] == {"author": "quickstart"}

# A presigned URL lets anyone holding it GET the object for an hour, without credentials.
url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "notes/hello.txt"}, ExpiresIn=3600)
with urllib.request.urlopen(url) as r:
    assert r.read() == b"hello, penstock\n"
print("presigned GET ok:", url.split("?")[0])
