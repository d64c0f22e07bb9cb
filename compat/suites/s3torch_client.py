"""The S3 client of the Amazon S3 Connector for PyTorch (s3torchconnectorclient: Mountpoint's
CRT-based client, which the connector's datasets, checkpoints and Lightning plugin read and
write through), driven as they drive it, against the gateway named by ENDPOINT and BUCKET.

Datasets list a prefix page by page and read each object whole or in ranges; checkpoints are
written as one stream of odd-sized writes (this client uploads every object in parts) and
read back in parallel ranged GETs (the CRT splits a large GET by part size). Every read is
checked byte for byte."""

import hashlib
import os

from s3torchconnectorclient import S3Exception
from s3torchconnectorclient._mountpoint_s3_client import MountpointS3Client

from scenario import fail, step

ENDPOINT, BUCKET = os.environ["ENDPOINT"], os.environ["BUCKET"]
PART = 8 * 1024 * 1024
client = MountpointS3Client(
    region=os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
    endpoint=ENDPOINT,
    force_path_style=True,
    part_size=PART,
    max_attempts=2,
)




def payload(seed, size):
    """Deterministic bytes: a read that comes back wrong anywhere is noticed."""
    out = bytearray()
    block = hashlib.sha256(str(seed).encode()).digest() * 2048  # 64 KiB
    while len(out) < size:
        out += block
    return bytes(out[:size])


def multipart_etag(data):
    """The ETag S3 gives what this client uploads: it always uploads in parts of PART bytes."""
    parts = [data[i:i + PART] for i in range(0, len(data), PART)] or [b""]
    digests = b"".join(hashlib.md5(p).digest() for p in parts)
    return f"{hashlib.md5(digests).hexdigest()}-{len(parts)}"


def put(key, data, chunks):
    stream = client.put_object(BUCKET, key)
    at = 0
    for n in chunks:
        stream.write(data[at:at + n])
        at += n
    stream.write(data[at:])
    stream.close()


def get(key, start=None, end=None):
    return b"".join(client.get_object(BUCKET, key, start=start, end=end))


step("a dataset of small samples, written and listed page by page")
samples = {f"train/shard-{i // 50:02d}/sample-{i:04d}.bin": payload(i, 1000 + 37 * i) for i in range(120)}
for key, data in samples.items():
    put(key, data, [])
listed = {}
for page in client.list_objects(BUCKET, prefix="train/", max_keys=25):
    if len(page.object_info) > 25:
        fail(f"a page of {len(page.object_info)} objects for max_keys=25")
    for info in page.object_info:
        listed[info.key] = info.size
if listed != {k: len(v) for k, v in samples.items()}:
    fail(f"listing differs: {len(listed)} objects listed, {len(samples)} written")
shards = set()
for page in client.list_objects(BUCKET, prefix="train/", delimiter="/"):
    shards.update(page.common_prefixes)
    if page.object_info:
        fail("objects listed beside the shard prefixes")
if shards != {"train/shard-00/", "train/shard-01/", "train/shard-02/"}:
    fail(f"shard prefixes: {sorted(shards)}")

step("samples read whole and in ranges")
for key, data in list(samples.items())[::7]:
    if get(key) != data:
        fail(f"{key} read back differs")
    if get(key, 100, 600) != data[100:600]:
        fail(f"{key} bytes 100-600 differ")
    if get(key, len(data) - 10) != data[-10:]:
        fail(f"{key}: the last 10 bytes differ")
    head = client.head_object(BUCKET, key)
    if head.size != len(data) or head.etag.strip('"') != multipart_etag(data):
        fail(f"{key}: head says {head.size} bytes, etag {head.etag}")

step("a checkpoint of 3.5 parts in odd-sized writes, read back in parallel ranges")
ckpt = payload("ckpt", 3 * PART + PART // 2 + 12345)
put("checkpoints/epoch-1.pt", ckpt, [1, 4095, 1 << 20, 3 * (1 << 20) + 7, PART, 17])
head = client.head_object(BUCKET, "checkpoints/epoch-1.pt")
if head.size != len(ckpt) or head.etag.strip('"') != multipart_etag(ckpt):
    fail(f"checkpoint: {head.size} bytes, etag {head.etag}, not {multipart_etag(ckpt)}")
if hashlib.sha256(get("checkpoints/epoch-1.pt")).digest() != hashlib.sha256(ckpt).digest():
    fail("the checkpoint read back differs")
mid = get("checkpoints/epoch-1.pt", PART - 5, 2 * PART + 5)
if mid != ckpt[PART - 5:2 * PART + 5]:
    fail("a range across part boundaries differs")

step("an empty object, a copy, an overwrite, deletes")
put("empty", b"", [])
if get("empty") != b"" or client.head_object(BUCKET, "empty").size != 0:
    fail("the empty object is not empty")
client.copy_object(BUCKET, "checkpoints/epoch-1.pt", BUCKET, "checkpoints/latest.pt")
if hashlib.md5(get("checkpoints/latest.pt")).digest() != hashlib.md5(ckpt).digest():
    fail("the copy differs")
put("checkpoints/latest.pt", b"newer", [])
if get("checkpoints/latest.pt") != b"newer":
    fail("the overwrite is not read")
for key in ["checkpoints/latest.pt", "empty"]:
    client.delete_object(BUCKET, key)
client.delete_object(BUCKET, "never-written")  # S3 answers 204 for a missing key too

step("missing objects and buckets are errors the client names")
for call in (
    lambda: client.head_object(BUCKET, "empty"),
    lambda: get("empty"),
    lambda: client.head_object("no-such-bucket-here", "k"),
):
    try:
        call()
    except S3Exception as e:
        text = str(e)
        if not any(w in text for w in ("NoSuchKey", "NoSuchBucket", "Service error", "not found")):
            fail(f"unexpected error text: {text}")
    else:
        fail("a missing object or bucket was answered")
print("PASS: s3torchconnectorclient")
