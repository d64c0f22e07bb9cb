#!/usr/bin/env bash
# s3backer (Debian's): a block device whose blocks are objects, through FUSE. Mounted with SigV4,
# written with dd, an ext4 file system made and checked on it, unmounted, mounted again with no
# block cache and the non-zero blocks listed from the bucket, read back, then erased.
source "$(dirname "$0")/lib.sh"
command -v s3backer >/dev/null || fail "s3backer not installed (apt-get install s3backer)"
[ -e /dev/fuse ] || fail "/dev/fuse missing"
B=s3backer-$RANDOM
aws --endpoint-url "$ENDPOINT" s3 mb "s3://$B" >/dev/null
MNT="$WORK/mnt"; mkdir -p "$MNT"
opts=(--blockSize=64k --size=32M --accessId="$AWS_ACCESS_KEY_ID" --accessKey="$AWS_SECRET_ACCESS_KEY"
  --baseURL="$ENDPOINT/" --authVersion=aws4 --timeout=10 --initialRetryPause=100 --maxRetryPause=2000)
# In the foreground (-f) so that an unmount can wait for s3backer's last writes (its dirty blocks
# and the mounted flag it clears) before the next mount.
S3B_PID=
mount_s3b() { # extra options
  s3backer -f "${opts[@]}" "$@" "$B" "$MNT" >>"$WORK/s3backer.log" 2>&1 &
  S3B_PID=$!
  for _ in $(seq 1 100); do
    [ -e "$MNT/file" ] && return 0
    kill -0 "$S3B_PID" 2>/dev/null || { cat "$WORK/s3backer.log"; fail "s3backer mount"; }
    sleep 0.1
  done
  cat "$WORK/s3backer.log"; fail "s3backer never showed its file"
}
unmount_s3b() {
  fusermount -u "$MNT"
  wait "$S3B_PID" || { cat "$WORK/s3backer.log"; fail "s3backer exited with an error"; }
}
CLEANUP_HOOKS+=("fusermount -u '$MNT' 2>/dev/null")

step mount; mount_s3b
head -c $((5 * 1024 * 1024 + 4321)) /dev/urandom >"$WORK/blocks"
step "dd"; dd if="$WORK/blocks" of="$MNT/file" bs=64k conv=notrunc,fsync status=none
cmp <(head -c $((5 * 1024 * 1024 + 4321)) "$MNT/file") "$WORK/blocks" || fail "blocks read back differ"
n=$(aws --endpoint-url "$ENDPOINT" s3 ls "s3://$B" | wc -l)
[ "$n" -ge 81 ] || fail "$n block objects in the bucket, expected at least 81"
step "mkfs.ext4 and e2fsck"
mkfs.ext4 -q -F "$MNT/file"
e2fsck -fn "$MNT/file" >"$WORK/fsck" 2>&1 || { cat "$WORK/fsck"; fail "e2fsck found errors"; }
unmount_s3b
step "mount again: no cache, blocks listed"
mount_s3b --blockCacheSize=0 --listBlocks
grep -q "auto-detected block size=64k and total size=32m" "$WORK/s3backer.log" || { cat "$WORK/s3backer.log"; fail "size not detected from the bucket"; }
e2fsck -fn "$MNT/file" >"$WORK/fsck" 2>&1 || { cat "$WORK/fsck"; fail "e2fsck after remount found errors"; }
unmount_s3b
step erase
s3backer "${opts[@]}" --erase --force "$B" >>"$WORK/s3backer.log" 2>&1 || { cat "$WORK/s3backer.log"; fail erase; }
n=$(aws --endpoint-url "$ENDPOINT" s3 ls "s3://$B" | wc -l)
[ "$n" -eq 0 ] || fail "$n objects left after erase"
echo "PASS: s3backer"
