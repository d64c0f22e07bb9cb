#!/usr/bin/env bash
# rclone: copy, check, sync, lsl. rclone rejects the AWS_CA_BUNDLE this environment sets.
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
step purge; rc purge "ps:$B"
echo "PASS: rclone"
