"""TensorStore (Google's array storage library, under JAX/Orbax checkpoints and Neuroglancer) on a
bucket through its own S3 key-value store, an HTTP client of its own in C++ (not an AWS SDK),
against the gateway named by ENDPOINT and BUCKET.

Arrays are written and read as TensorStore does it: zarr v2 chunks one object each; zarr v3
shards, whose index TensorStore reads with a suffix range and whose chunks with ranges;
partial writes that read, merge and write back a chunk. The key-value layer underneath is
checked call by call: generations (ETags) and the If-Match writes made with them, a stale
generation refused without writing, conditional reads, byte ranges, listings, a range of
keys deleted, a transaction of several keys. Every value is compared."""

import os

import numpy as np
import tensorstore as ts

from scenario import check, step

ENDPOINT, BUCKET = os.environ["ENDPOINT"], os.environ["BUCKET"]
KV = {
    "driver": "s3",
    "bucket": BUCKET,
    "endpoint": ENDPOINT,
    "aws_region": os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
}




def kv(path=""):
    return dict(KV, path=path)


rng = np.random.default_rng(7)
store = ts.KvStore.open(kv()).result()

step("zarr v2: a 1000 x 1000 float32 array in 100 x 100 chunks, one object each")
spec = {"driver": "zarr", "kvstore": kv("v2/")}
arr = ts.open(
    spec,
    create=True,
    dtype=ts.float32,
    shape=[1000, 1000],
    chunk_layout=ts.ChunkLayout(read_chunk_shape=[100, 100]),
).result()
data = rng.random((1000, 1000), dtype=np.float32)
arr[...] = data
again = ts.open(spec).result()
check(np.array_equal(again.read().result(), data), "zarr v2 array read back differs")
check(np.array_equal(again[250:380, 910:1000].read().result(), data[250:380, 910:1000]), "zarr v2 slice differs")
keys = store.list(ts.KvStore.KeyRange("v2/", "v20")).result()
check(len(keys) == 101 and b"v2/.zarray" in keys, f"zarr v2 keys: {len(keys)}")

step("zarr v2: a partial write merges into existing chunks (read, change, write back)")
patch = rng.random((30, 170), dtype=np.float32)
again[95:125, 15:185] = patch
data[95:125, 15:185] = patch
check(np.array_equal(ts.open(spec).result().read().result(), data), "merged chunks differ")

step("zarr v3 sharded: shard index read with a suffix range, inner chunks with ranges")
spec3 = {"driver": "zarr3", "kvstore": kv("v3/")}
codecs = ts.CodecSpec(
    {
        "driver": "zarr3",
        "codecs": [
            {
                "name": "sharding_indexed",
                "configuration": {
                    "chunk_shape": [64, 64],
                    "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
                    "index_codecs": [
                        {"name": "bytes", "configuration": {"endian": "little"}},
                        {"name": "crc32c"},
                    ],
                    "index_location": "end",
                },
            }
        ],
    }
)
a3 = ts.open(
    spec3,
    create=True,
    dtype=ts.uint16,
    shape=[512, 512],
    chunk_layout=ts.ChunkLayout(write_chunk_shape=[256, 256]),
    codec=codecs,
).result()
d3 = rng.integers(0, 65535, size=(512, 512), dtype=np.uint16)
a3[...] = d3
r3 = ts.open(spec3).result()
check(np.array_equal(r3[300:340, 17:99].read().result(), d3[300:340, 17:99]), "sharded slice differs")
check(np.array_equal(r3.read().result(), d3), "sharded array differs")
shards = store.list(ts.KvStore.KeyRange("v3/c/", "v3/c0")).result()
check(len(shards) == 4, f"expected 4 shard objects, found {len(shards)}")

step("a 48 MiB chunk in one object")
spec_big = {"driver": "zarr3", "kvstore": kv("big/")}
big = ts.open(
    spec_big,
    create=True,
    dtype=ts.uint8,
    shape=[96 << 20],
    chunk_layout=ts.ChunkLayout(read_chunk_shape=[48 << 20]),
).result()
dbig = rng.integers(0, 256, size=[96 << 20], dtype=np.uint8)
big[...] = dbig
check(np.array_equal(ts.open(spec_big).result().read().result(), dbig), "48 MiB chunks differ")

step("key-value: values, generations, If-Match writes, stale generations refused")
store["kv/a"] = b"one"
first = store.read("kv/a").result()
check(first.state == "value" and first.value == b"one", f"read: {first}")
gen = first.stamp.generation
written = store.write("kv/a", b"two", if_equal=gen).result()
check(written.generation not in (b"", gen), f"conditional write with the current generation: {written}")
refused = store.write("kv/a", b"three", if_equal=gen).result()
check(refused.generation == b"", f"a write with a stale generation was not refused: {refused}")
check(store["kv/a"] == b"two", "a refused conditional write changed the value")
same = store.read("kv/a", if_not_equal=written.generation).result()
check(same.state == "unspecified", f"read if not equal to the current generation: {same.state}")
changed = store.read("kv/a", if_not_equal=gen).result()
check(changed.state == "value" and changed.value == b"two", f"read if not equal to an old one: {changed}")
check(store.read("kv/missing").result().state == "missing", "a missing key reads as present")

step("key-value: byte ranges")
body = bytes(range(256)) * 64
store["kv/r"] = body
for lo, hi in [(0, 1), (100, 4000), (16000, None), (-300, None), (None, 10)]:
    got = store.read("kv/r", byte_range=slice(lo, hi)).result().value
    check(got == body[lo:hi], f"range {lo}:{hi}: {len(got)} bytes")

step("key-value: listing, deleting one key and a range of keys")
for i in range(30):
    store[f"kv/list/{i:03}"] = str(i).encode()
listed = store.list(ts.KvStore.KeyRange("kv/list/", "kv/list0")).result()
check(sorted(listed) == [f"kv/list/{i:03}".encode() for i in range(30)], f"listed {len(listed)}")
del store["kv/list/000"]
check(store.read("kv/list/000").result().state == "missing", "a deleted key is still there")
store.delete_range(ts.KvStore.KeyRange("kv/list/010", "kv/list/020")).result()
left = store.list(ts.KvStore.KeyRange("kv/list/", "kv/list0")).result()
check(sorted(left) == [f"kv/list/{i:03}".encode() for i in range(1, 30) if not 10 <= i < 20], f"left {left}")

step("key-value: a transaction of three keys")
txn = ts.Transaction()
t = ts.KvStore.open(kv("kv/txn/")).result().with_transaction(txn)
for name in ("x", "y", "z"):
    t[name] = name.encode() * 3
txn.commit_async().result()
check([store[f"kv/txn/{n}"] for n in "xyz"] == [b"xxx", b"yyy", b"zzz"], "transaction's keys differ")

step("everything removed")
store.delete_range(ts.KvStore.KeyRange()).result()
check(store.list().result() == [], "keys left after deleting every range")
print("tensorstore scenario passed")
