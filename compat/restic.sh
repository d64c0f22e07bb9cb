#!/usr/bin/env bash
# restic (Debian's, with minio-go inside): a backup repository in a bucket. init, a first and an
# incremental backup, snapshots (ListObjectsV2 and V1), check --read-data (every pack read back
# and verified), restore compared byte for byte, forget and prune with repacking (packs deleted
# and rewritten), rebuild-index, a second key, locks listed and removed, stats.
source "$(dirname "$0")/lib.sh"
command -v restic >/dev/null || fail "restic not installed (apt-get install restic)"
B=restic-$RANDOM
aws --endpoint-url "$ENDPOINT" s3 mb "s3://$B" >/dev/null
export RESTIC_PASSWORD=compat-restic RESTIC_REPOSITORY="s3:$ENDPOINT/$B/repo"
export RESTIC_CACHE_DIR="$WORK/cache"
r() { restic --quiet "$@"; }

src="$WORK/src"
mkdir -p "$src/docs" "$src/data"
for i in $(seq 1 120); do head -c $((i * 701)) /dev/urandom >"$src/docs/f$i"; done
head -c $((24 * 1024 * 1024)) /dev/urandom >"$src/data/big.bin"
printf 'same bytes\n' >"$src/data/a.txt"; cp "$src/data/a.txt" "$src/data/b.txt"

step init; r init >/dev/null
step backup; r backup "$src" >/dev/null
rm "$src"/docs/f1[0-9]
head -c 5000 /dev/urandom >"$src/docs/new"
step "incremental backup"; r backup "$src" >/dev/null
n=$(r snapshots --json | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))')
[ "$n" = 2 ] || fail "snapshots lists $n, expected 2"
n=$(r -o s3.list-objects-v1=true snapshots --json | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))')
[ "$n" = 2 ] || fail "snapshots over ListObjects V1 lists $n, expected 2"
step "check --read-data"; r check --read-data >"$WORK/check" 2>&1 || { cat "$WORK/check"; fail "check"; }
step restore
r restore latest --target "$WORK/restore" >/dev/null
diff -r "$src" "$WORK/restore$src" || fail "restored tree differs"
step "forget and prune (repack)"
r forget --keep-last 1 >/dev/null
r prune --max-unused 0 >"$WORK/prune" 2>&1 || { cat "$WORK/prune"; fail prune; }
r check --read-data >"$WORK/check" 2>&1 || { cat "$WORK/check"; fail "check after prune"; }
step rebuild-index; r rebuild-index >/dev/null
step "second key"
printf 'second\n' >"$WORK/pw2"
r key add --new-password-file "$WORK/pw2" >/dev/null
RESTIC_PASSWORD=second r snapshots --json >/dev/null || fail "the second key does not open the repository"
step locks
r list locks >/dev/null
r unlock --remove-all >/dev/null
r stats --mode raw-data >/dev/null
rm -rf "$WORK/restore"
r restore latest --target "$WORK/restore" >/dev/null
diff -r "$src" "$WORK/restore$src" || fail "tree restored after prune differs"
echo "PASS: restic"
