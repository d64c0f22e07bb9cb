#!/usr/bin/env bash
# rclone: copy, check, sync, lsl; a multipart upload with its MD5 kept as metadata (hashsum),
# ranged reads (cat --offset/--count), server-side copyto and moveto, a streamed upload of
# unknown size (rcat), modification times set by touch, old versions listed (--s3-versions) and
# cleaned up, a FUSE mount (vfs-cache-mode writes) read, written, renamed and deleted through,
# purge. rclone rejects the AWS_CA_BUNDLE this environment sets.
source "$(dirname "$0")/lib.sh"
command -v rclone >/dev/null || fail "rclone not installed (apt-get install rclone)"
unset AWS_CA_BUNDLE
export RCLONE_CONFIG_PS_TYPE=s3 RCLONE_CONFIG_PS_PROVIDER=Other RCLONE_CONFIG_PS_ENDPOINT="$ENDPOINT" \
  RCLONE_CONFIG_PS_ACCESS_KEY_ID="$AWS_ACCESS_KEY_ID" RCLONE_CONFIG_PS_SECRET_ACCESS_KEY="$AWS_SECRET_ACCESS_KEY" \
  RCLONE_CONFIG_PS_REGION=us-east-1 RCLONE_CONFIG_PS_FORCE_PATH_STYLE=true
rc() { rclone --config /dev/null "$@"; }
B=rclone-$RANDOM
mkdir -p "$WORK/src/a/b" "$WORK/src/c"
for i in 1 2 3; do head -c $((i * 70000)) /dev/urandom >"$WORK/src/a/b/f$i"; echo "c$i" >"$WORK/src/c/g$i.txt"; done
head -c $((30 * 1024 * 1024)) /dev/urandom >"$WORK/src/large.bin"
step mkdir; rc mkdir "ps:$B"
step copy; rc copy "$WORK/src" "ps:$B/tree"
step check; rc check "$WORK/src" "ps:$B/tree"
step lsl; n=$(rc lsl "ps:$B/tree" | wc -l); [ "$n" -eq 7 ] || fail "lsl lists $n objects, expected 7"
step sync; rm "$WORK/src/c/g1.txt"; echo changed >"$WORK/src/c/g2.txt"
rc sync "$WORK/src" "ps:$B/tree"
rc check "$WORK/src" "ps:$B/tree"
n=$(rc lsf -R --files-only "ps:$B/tree" | wc -l); [ "$n" -eq 6 ] || fail "after sync $n objects, expected 6"
mkdir -p "$WORK/back"; rc copy "ps:$B/tree" "$WORK/back"; diff -r "$WORK/src" "$WORK/back" || fail "copy back differs"
step "multipart upload, hashsum"
head -c $((23 * 1000 * 1000)) /dev/urandom >"$WORK/big"
rc copyto "$WORK/big" "ps:$B/big" --s3-upload-cutoff 5M --s3-chunk-size 5M
want=$(md5sum <"$WORK/big" | cut -d' ' -f1)
got=$(rc hashsum MD5 "ps:$B/big" | cut -d' ' -f1)
[ "$got" = "$want" ] || fail "hashsum of the multipart object: $got, expected $want"
step "cat --offset --count"
cmp <(rc cat "ps:$B/big" --offset 1234567 --count 4096) <(tail -c +1234568 "$WORK/big" | head -c 4096) || fail "ranged read differs"
step "server-side copyto, moveto"
rc copyto "ps:$B/big" "ps:$B/copied"
rc moveto "ps:$B/copied" "ps:$B/moved"
rc lsf "ps:$B" | has "^moved$" || fail "moveto: no moved object"
rc lsf "ps:$B" | has "^copied$" && fail "moveto left its source"
cmp <(rc cat "ps:$B/moved") "$WORK/big" || fail "moved object differs"
step "rcat (streamed, unknown size)"
rc rcat "ps:$B/streamed" --s3-chunk-size 5M <"$WORK/big" 2>/dev/null
cmp <(rc cat "ps:$B/streamed") "$WORK/big" || fail "streamed object differs"
step "touch sets the modification time"
rc touch "ps:$B/big" -t 2020-01-02T03:04:05
rc lsl "ps:$B/big" | has "2020-01-02 03:04:05" || fail "modification time not kept: $(rc lsl "ps:$B/big")"
step "versions"
aws --endpoint-url "$ENDPOINT" s3api put-bucket-versioning --bucket "$B" --versioning-configuration Status=Enabled
echo v1 | rc rcat "ps:$B/ver"; echo v2 | rc rcat "ps:$B/ver"
[ "$(rc cat "ps:$B/ver")" = v2 ] || fail "latest version is not v2"
n=$(rc lsf --s3-versions "ps:$B" | grep -c "^ver")
[ "$n" -eq 2 ] || fail "--s3-versions lists $n versions of ver, expected 2"
rc backend cleanup-hidden "ps:$B" 2>/dev/null
n=$(rc lsf --s3-versions "ps:$B" | grep -c "^ver")
[ "$n" -eq 1 ] || fail "after cleanup-hidden $n versions of ver, expected 1"
step "mount (vfs-cache-mode writes)"
MNT="$WORK/mnt"; mkdir -p "$MNT"
CLEANUP_HOOKS+=("fusermount -u '$MNT' 2>/dev/null")
rc mount "ps:$B" "$MNT" --vfs-cache-mode writes --vfs-write-back 1s --cache-dir "$WORK/vfs" --dir-cache-time 1s --daemon
for _ in $(seq 1 100); do [ -e "$MNT/big" ] && break; sleep 0.1; done
cmp "$MNT/big" "$WORK/big" || fail "read through the mount differs"
cmp <(dd if="$MNT/big" bs=4096 skip=1000 count=3 status=none) <(dd if="$WORK/big" bs=4096 skip=1000 count=3 status=none) || fail "seek-and-read through the mount differs"
mkdir "$MNT/newdir"
echo hello >"$MNT/newdir/h.txt"
cp "$WORK/big" "$MNT/newdir/copy.bin"
mv "$MNT/newdir/h.txt" "$MNT/newdir/h2.txt"
echo more >>"$MNT/newdir/h2.txt"
# Files written through the VFS cache are uploaded a second after they are closed.
want=$(printf 'hello\nmore')
for _ in $(seq 1 150); do [ "$(rc cat "ps:$B/newdir/h2.txt" 2>/dev/null)" = "$want" ] && break; sleep 0.2; done
[ "$(rc cat "ps:$B/newdir/h2.txt")" = "$want" ] || fail "file written through the mount: $(rc cat "ps:$B/newdir/h2.txt")"
for _ in $(seq 1 150); do rc lsf "ps:$B/newdir" | has "^copy.bin$" && break; sleep 0.2; done
fusermount -u "$MNT"
cmp <(rc cat "ps:$B/newdir/copy.bin") "$WORK/big" || fail "file copied through the mount differs"
rc lsf "ps:$B/newdir" | has "^h.txt$" && fail "rename through the mount left the old name"
step purge; rc purge "ps:$B"
echo "PASS: rclone"
