#!/usr/bin/env bash
# Mountpoint for Amazon S3 (mountpoint-s3-fs 0.11 over its CRT client, compat/suites/mountpoint;
# what AWS offers for reading training data and writing checkpoints through a file system):
# a bucket written by the aws cli is mounted and listed (1,100 files, past a listing page),
# read whole, at random offsets and by four readers at once; files are written through the
# mount (30 MiB in 8 MiB parts with CRC32C checksums, small, empty, odd names), overwritten,
# removed, and read back with the aws cli; a file a compute session writes into the folder
# appears in the mount; a reader of an object overwritten meanwhile gets ESTALE, never mixed
# bytes; then a read-only mount with a disk cache serves the same bytes and refuses writes.
source "$(dirname "$0")/lib.sh"
suite=$COMPAT_ROOT/compat/suites/mountpoint
[ -e /dev/fuse ] || fail "/dev/fuse missing"
command -v fusermount3 >/dev/null || fail "fusermount3 missing (apt-get install fuse3)"
step build
# A target directory of its own beside the gateway's: scenarios run two at a time, and a shared one
# would hold this build behind the other Rust suite's lock, inside this scenario's time limit.
target=${CARGO_TARGET_DIR:+${CARGO_TARGET_DIR%/}-mountpoint}
export CARGO_TARGET_DIR=${target:-$suite/target}
cargo build -q --release --locked --manifest-path "$suite/Cargo.toml" || fail "cannot build the Mountpoint driver"
MOUNT_S3=$CARGO_TARGET_DIR/release/mountpoint-compat
aws_() { aws --endpoint-url "$ENDPOINT" "$@"; }

B=mountpoint-$RANDOM
aws_ s3 mb "s3://$B" >/dev/null
SRC=$WORK/src MNT=$WORK/mnt
mkdir -p "$SRC/a/b" "$SRC/many" "$MNT"
echo hello >"$SRC/a/b/c.txt"
echo odd >"$SRC/with space é.txt"
head -c $((20 * 1024 * 1024 + 12345)) /dev/urandom >"$SRC/big.bin"
for i in $(seq -w 1 1100); do echo "$i" >"$SRC/many/f$i"; done
step "upload with the aws cli"
aws_ s3 cp --recursive "$SRC" "s3://$B/" --only-show-errors
aws_ s3api put-object --bucket "$B" --key 'marker/' >/dev/null

MP_PID=
mount_mp() { # options
  "$MOUNT_S3" "$ENDPOINT" "$B" "$MNT" "$@" >>"$WORK/mountpoint.log" 2>&1 &
  MP_PID=$!
  for _ in $(seq 1 100); do
    mountpoint -q "$MNT" && return 0
    kill -0 "$MP_PID" 2>/dev/null || { cat "$WORK/mountpoint.log"; fail "Mountpoint exited before mounting"; }
    sleep 0.1
  done
  cat "$WORK/mountpoint.log"; fail "Mountpoint never mounted"
}
unmount_mp() {
  fusermount3 -u "$MNT"
  wait "$MP_PID" || { cat "$WORK/mountpoint.log"; fail "Mountpoint exited with an error"; }
}
CLEANUP_HOOKS+=("fusermount3 -u '$MNT' 2>/dev/null")

step "mount (deletes and overwrites allowed)"
mount_mp --allow-delete --allow-overwrite
step "list"
n=$(ls "$MNT/many" | wc -l)
[ "$n" -eq 1100 ] || fail "$n files listed in many/, expected 1100"
[ -d "$MNT/marker" ] || fail "the directory marker marker/ is not a directory"
[ "$(stat -c %s "$MNT/big.bin")" -eq $((20 * 1024 * 1024 + 12345)) ] || fail "big.bin's size"
[ "$(cat "$MNT/a/b/c.txt")" = hello ] || fail "a/b/c.txt"
[ "$(cat "$MNT/with space é.txt")" = odd ] || fail "a key with a space and a non-ASCII letter"
[ "$(cat "$MNT"/many/* | wc -l)" -eq 1100 ] || fail "reading every file of many/"
step "read whole, at random offsets, four readers at once"
cmp "$MNT/big.bin" "$SRC/big.bin" || fail "big.bin read whole differs"
python3 - "$MNT/big.bin" "$SRC/big.bin" <<'EOF' || fail "random reads differ"
import random, sys
want = open(sys.argv[2], 'rb').read()
with open(sys.argv[1], 'rb') as f:
    for _ in range(60):
        off, n = random.randrange(len(want)), random.randrange(1, 400_000)
        f.seek(off)
        assert f.read(n) == want[off:off + n], (off, n)
EOF
pids=()
for i in 1 2 3 4; do cmp "$MNT/big.bin" "$SRC/big.bin" & pids+=($!); done
for p in "${pids[@]}"; do wait "$p" || fail "a concurrent reader got other bytes"; done

step "write 30 MiB (multipart, CRC32C), small, empty and odd names"
head -c $((30 * 1024 * 1024 + 7)) /dev/urandom >"$WORK/w.bin"
mkdir "$MNT/new"
cp "$WORK/w.bin" "$MNT/new/w.bin"
aws_ s3 cp "s3://$B/new/w.bin" - | cmp - "$WORK/w.bin" || fail "the 30 MiB file written through the mount differs"
aws_ s3api head-object --bucket "$B" --key new/w.bin --checksum-mode ENABLED >"$WORK/head.json"
python3 - "$WORK/head.json" <<'EOF' || fail "new/w.bin: $(cat "$WORK/head.json")"
import json, sys
h = json.load(open(sys.argv[1]))
assert h["ContentLength"] == 30 * 1024 * 1024 + 7
assert h["ETag"].endswith('-4"'), h["ETag"]  # four 8 MiB parts
assert h.get("ChecksumCRC32C", "").endswith("-4"), h  # Mountpoint's part checksums, kept
EOF
echo small >"$MNT/new/s.txt"
: >"$MNT/new/empty"
for name in 'p+lus' 'pct%20x' 'hash#1' 'q?x' 'amp&y' 'ü-ñ' 'two  spaces'; do
  echo "$name" >"$MNT/new/$name" || fail "writing new/$name"
  [ "$(aws_ s3 cp "s3://$B/new/$name" -)" = "$name" ] || fail "new/$name read with the aws cli"
done
[ "$(aws_ s3api head-object --bucket "$B" --key new/empty --query ContentLength)" = 0 ] || fail "new/empty"
step "overwrite, remove, make and remove a directory"
echo second >"$MNT/new/s.txt"
[ "$(aws_ s3 cp "s3://$B/new/s.txt" -)" = second ] || fail "the overwrite is not what S3 answers"
rm "$MNT/new/w.bin"
aws_ s3api head-object --bucket "$B" --key new/w.bin >/dev/null 2>&1 && fail "new/w.bin still there after rm"
mkdir "$MNT/d1" && rmdir "$MNT/d1" || fail "mkdir and rmdir of an empty directory"

step "a file a compute session writes into the folder"
folder=$(dirname "$(find "$WORK/data/volumes" -path '*/a/b/c.txt' | head -1)")
folder=${folder%/a/b}
[ -f "$folder/big.bin" ] || fail "the bucket's folder not found under $WORK/data/volumes"
mkdir -p "$folder/session"
head -c 3000000 /dev/urandom >"$folder/session/out.bin"
sleep 1.2 # Mountpoint's metadata cache: a second
cmp "$MNT/session/out.bin" "$folder/session/out.bin" || fail "a file the session wrote reads otherwise"

step "a reader of an object overwritten meanwhile"
python3 - "$MNT/big.bin" "$SRC/big.bin" "$ENDPOINT" "$B" <<'EOF' || fail "reading across an overwrite"
import errno, subprocess, sys
path, src, endpoint, bucket = sys.argv[1:]
want = open(src, 'rb').read()
with open(path, 'rb') as f:
    assert f.read(1 << 20) == want[:1 << 20]
    subprocess.run(f"head -c 25000000 /dev/urandom | aws --endpoint-url {endpoint} s3 cp - s3://{bucket}/big.bin",
                   shell=True, check=True)
    f.seek(15_000_000)
    try:
        got = f.read(1 << 20)
    except OSError as e:
        # Mountpoint reads with If-Match on the ETag it opened; S3 answers 412 and it says so.
        assert e.errno == errno.ESTALE, e
        print("    ESTALE after the overwrite")
    else:
        # Only bytes it had already fetched may come, and those are the first writer's.
        assert got == want[15_000_000:15_000_000 + len(got)], "bytes of another writer"
        print(f"    {len(got)} bytes fetched before the overwrite, the first writer's")
EOF
aws_ s3 cp "$SRC/big.bin" "s3://$B/big.bin" --only-show-errors
unmount_mp

step "read-only mount with a disk cache"
mkdir -p "$WORK/cache"
mount_mp --read-only --cache "$WORK/cache"
cmp "$MNT/big.bin" "$SRC/big.bin" || fail "big.bin through the cache differs"
cached=$(du -sm "$WORK/cache" | cut -f1)
[ "$cached" -ge 20 ] || fail "the disk cache holds $cached MiB after a 20 MiB read"
cmp "$MNT/big.bin" "$SRC/big.bin" || fail "big.bin from the cache differs"
[ "$(cat "$MNT/new/s.txt")" = second ] || fail "new/s.txt on the read-only mount"
(echo x >"$MNT/new/refused") 2>/dev/null && fail "a write on a read-only mount was taken"
unmount_mp
grep -E ' ERROR ' "$WORK/mountpoint.log" | grep -v 'PreconditionFailed' && fail "Mountpoint logged errors"
echo "PASS: Mountpoint for Amazon S3"
