#!/usr/bin/env bash
# s3fs-fuse mount: mkdir, write, cp 100 MiB, ls, mv, append, rm, rmdir, unmount.
# Every file operation runs under `timeout` so a misbehaving gateway fails the test, not hangs it.
source "$(dirname "$0")/lib.sh"
command -v s3fs >/dev/null || fail "s3fs not installed (apt-get install s3fs)"
[ -e /dev/fuse ] || fail "/dev/fuse missing"
B=s3fs-$RANDOM
aws --endpoint-url "$ENDPOINT" s3 mb "s3://$B" >/dev/null
MNT="$WORK/mnt"; mkdir -p "$MNT"
echo "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" >"$WORK/passwd"; chmod 600 "$WORK/passwd"
s3fs "$B" "$MNT" -o url="$ENDPOINT" -o use_path_request_style -o passwd_file="$WORK/passwd" \
  -o dbglevel=warn -o logfile="$WORK/s3fs.log" -o allow_other -o nonempty 2>/dev/null \
  || s3fs "$B" "$MNT" -o url="$ENDPOINT" -o use_path_request_style -o passwd_file="$WORK/passwd" -o logfile="$WORK/s3fs.log"
CLEANUP_HOOKS+=("timeout 20 fusermount -u '$MNT' 2>/dev/null || umount -l '$MNT' 2>/dev/null")
for _ in $(seq 1 100); do mountpoint -q "$MNT" && break; sleep 0.1; done
mountpoint -q "$MNT" || fail "s3fs did not mount"
T="timeout 60"
step mkdir; $T mkdir "$MNT/dir" || fail mkdir
$T test -d "$MNT/dir" || fail "dir not visible"
step write; $T sh -c "echo hello >'$MNT/dir/hello.txt'" || fail write
[ "$($T cat "$MNT/dir/hello.txt")" = hello ] || fail "read back"
step "cp 100 MiB"; head -c $((100 * 1024 * 1024)) /dev/urandom >"$WORK/big"
$T cp "$WORK/big" "$MNT/dir/big" || fail "cp big"
$T cmp "$WORK/big" "$MNT/dir/big" || fail "big differs through the mount"
aws --endpoint-url "$ENDPOINT" s3 cp "s3://$B/dir/big" "$WORK/big.s3" --only-show-errors
cmp "$WORK/big" "$WORK/big.s3" || fail "big differs through S3"
step ls; $T ls -la "$MNT/dir" | has hello.txt || fail "ls"
step mv; $T mv "$MNT/dir/hello.txt" "$MNT/dir/renamed.txt" || fail mv
$T test ! -e "$MNT/dir/hello.txt" || fail "old name still there"
[ "$($T cat "$MNT/dir/renamed.txt")" = hello ] || fail "renamed content"
step append; $T sh -c "echo world >>'$MNT/dir/renamed.txt'" || fail append
[ "$($T cat "$MNT/dir/renamed.txt")" = "$(printf 'hello\nworld')" ] || fail "appended content"
step chmod; $T chmod 600 "$MNT/dir/renamed.txt" || fail chmod
step rm; $T rm "$MNT/dir/renamed.txt" "$MNT/dir/big" || fail rm
step rmdir; $T rmdir "$MNT/dir" || fail rmdir
$T test ! -e "$MNT/dir" || fail "dir still there"
[ -z "$(aws --endpoint-url "$ENDPOINT" s3 ls "s3://$B" --recursive)" ] || fail "objects left in the bucket"
step unmount; timeout 20 fusermount -u "$MNT" || timeout 20 umount "$MNT" || fail unmount
echo "PASS: s3fs"
