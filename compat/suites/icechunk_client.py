"""Icechunk (a transactional storage engine for Zarr: commits, branches and tags over object
storage) on a bucket through its S3 storage, the AWS SDK for Rust, against the gateway named by
ENDPOINT and BUCKET.

Icechunk's consistency rests on the store's conditional writes: a branch moves by a PUT with
If-Match on its ref, a new ref or config is created with If-None-Match: *. Two writers commit
on the same branch from the same parent: the second must be refused (a conflict), rebased and
committed. Commits, tags and branches are read back value by value, and expiring snapshots and
collecting garbage list and delete objects."""

import datetime
import os

import icechunk as ic
import numpy as np
import zarr

from scenario import check, step

ENDPOINT, BUCKET = os.environ["ENDPOINT"], os.environ["BUCKET"]




def storage(prefix):
    return ic.s3_storage(
        bucket=BUCKET,
        prefix=prefix,
        region=os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
        endpoint_url=ENDPOINT,
        allow_http=ENDPOINT.startswith("http://"),
        force_path_style=True,
        access_key_id=os.environ["AWS_ACCESS_KEY_ID"],
        secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"],
    )


rng = np.random.default_rng(11)
st = storage("repo")

step("a repository created, an array written and committed")
repo = ic.Repository.create(st)
check(ic.Repository.exists(st), "the repository does not exist after creating it")
try:
    ic.Repository.create(st)
    check(False, "a second repository was created over the first (If-None-Match ignored)")
except ic.IcechunkError:
    pass
s = repo.writable_session("main")
a = zarr.group(s.store).create_array("a", shape=(600, 600), chunks=(100, 100), dtype="f4")
first = rng.random((600, 600), dtype=np.float32)
a[:] = first
snap1 = s.commit("first")

step("a second commit changing some chunks; a tag and a branch on the first")
s = repo.writable_session("main")
zarr.open_group(s.store)["a"][0:10, :] = 7
second = first.copy()
second[0:10, :] = 7
s.commit("second")
repo.create_tag("v1", snap1)
repo.create_branch("dev", snap1)

step("two writers on one branch: the second commit is refused, rebased and committed")
wa, wb = repo.writable_session("main"), repo.writable_session("main")
zarr.open_group(wa.store)["a"][300, 300] = 1
zarr.open_group(wb.store)["a"][500, 500] = 2
wa.commit("writer a")
try:
    wb.commit("writer b")
    check(False, "a commit from a stale parent was accepted (If-Match on the branch ref ignored)")
except ic.ConflictError:
    pass
wb.rebase(ic.ConflictDetector())
wb.commit("writer b, rebased")
second[300, 300], second[500, 500] = 1, 2

step("a new repository handle reads every commit, tag and branch back")
again = ic.Repository.open(st)
main = zarr.open_group(again.readonly_session(branch="main").store, mode="r")["a"][:]
check(np.array_equal(main, second), "main differs")
tagged = zarr.open_group(again.readonly_session(tag="v1").store, mode="r")["a"][:]
check(np.array_equal(tagged, first), "tag v1 differs")
dev = zarr.open_group(again.readonly_session(branch="dev").store, mode="r")["a"][:]
check(np.array_equal(dev, first), "branch dev differs")
messages = [c.message for c in again.ancestry(branch="main")]
check(
    messages == ["writer b, rebased", "writer a", "second", "first", "Repository initialized"],
    f"history: {messages}",
)
check(again.list_branches() == {"main", "dev"} and again.list_tags() == {"v1"}, "branches or tags differ")

step("a branch deleted and reset; snapshots expired and garbage collected")
again.delete_branch("dev")
check(again.list_branches() == {"main"}, "the deleted branch is still listed")
s = again.writable_session("main")
zarr.open_group(s.store)["a"][:] = 0
s.commit("zeros")
before_zeros = list(again.ancestry(branch="main"))[1]
check(before_zeros.message == "writer b, rebased", f"parent of the last commit: {before_zeros.message}")
again.reset_branch("main", before_zeros.id)
check(np.array_equal(zarr.open_group(again.readonly_session(branch="main").store, mode="r")["a"][:], second), "reset branch differs")
again.delete_tag("v1")
future = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)
expired = again.expire_snapshots(future)
check(len(expired) >= 1, f"nothing expired: {expired}")
summary = again.garbage_collect(future)
check(summary.chunks_deleted > 0, f"garbage collection deleted no chunks: {summary}")
final = zarr.open_group(ic.Repository.open(st).readonly_session(branch="main").store, mode="r")["a"][:]
check(np.array_equal(final, second), "main differs after garbage collection")
print("icechunk scenario passed")
