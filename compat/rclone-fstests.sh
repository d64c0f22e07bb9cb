#!/usr/bin/env bash
# rclone's own integration suite for its S3 backend (fstests, from Debian's packaged source of
# rclone 1.60), against the gateway as two providers (below): ~140 checks each of what rclone
# asks of a remote, then its sync, operations and VFS tests (~100, ~130 and ~180) on the gateway. Files of every size through single and multipart uploads, streamed uploads
# of unknown size, ranged and seeking reads, listings flat and recursive, names with every
# character class rclone knows (spaces, control characters, CR and LF, invalid UTF-8, URL
# escapes), server-side copies, modification times and metadata in headers, tiers set by copying
# in place (STANDARD, STANDARD_IA), public links (presigned URLs), versions and gzip-encoded
# objects, purges. Found that a key holding a carriage return listed as another key, and that an
# object could not be copied onto itself naming the storage class it already had. Any failure
# fails the scenario.
source "$(dirname "$0")/lib.sh"
src=/usr/share/gocode/src/github.com/rclone/rclone
[ -d "$src/backend/s3" ] || fail "$src missing: scripts/install-deps.sh test installs golang-github-rclone-rclone-dev"
gotest() { # -c -o OUT PACKAGE [flags]: builds a test binary from the packaged source (GOPATH mode)
  (cd "$src" && GOPATH=/usr/share/gocode GO111MODULE=off GOFLAGS= GOCACHE="$HOME/.cache/penstock/go-build" \
    go test "$@")
}
step build
gotest -c -o "$WORK/s3.test" ./backend/s3 || fail "building rclone's S3 backend tests failed"
# rclone's sync, operations and VFS tests run against a remote too (the first two with the local
# file system as the other side; the VFS's through its file layer with every cache mode). They
# import every backend, some of whose modules Debian's rclone does not pull in: an overlay gives
# them the four they use instead (local, S3, memory, and OneDrive for the QuickXorHash they list).
overlay=()
for f in fs/sync/sync_test.go fs/operations/operations_test.go vfs/vfs_test.go vfs/vfstest_test.go vfs/vfstest/fs.go; do
  o=$WORK/${f//\//_}
  sed 's#_ "github.com/rclone/rclone/backend/all".*#_ "github.com/rclone/rclone/backend/local"\n\t_ "github.com/rclone/rclone/backend/memory"\n\t_ "github.com/rclone/rclone/backend/onedrive"\n\t_ "github.com/rclone/rclone/backend/s3"#' \
    "$src/$f" >"$o"
  grep -q 'backend/memory' "$o" || fail "$f no longer imports backend/all; update the overlay"
  overlay+=("\"$src/$f\": \"$o\"")
done
(IFS=,; echo "{\"Replace\": {${overlay[*]}}}") >"$WORK/overlay.json"
for pkg in fs/sync fs/operations vfs; do
  gotest -vet=off -overlay "$WORK/overlay.json" -c -o "$WORK/${pkg##*/}.test" "./$pkg" ||
    fail "building rclone's $pkg tests failed"
done

# The suite looks for its test servers' scripts (fstest/testserver/init.d) above its working
# directory, and Debian ships none; an empty directory says there is no server to start.
mkdir -p "$WORK/run/fstest/testserver/init.d"

# `suite PROVIDER`: the suite with rclone's quirks for PROVIDER, path style.
suite() {
  printf '[TestS3]\ntype = s3\nprovider = %s\naccess_key_id = %s\nsecret_access_key = %s\nendpoint = %s\nregion = us-east-1\nforce_path_style = true\n' \
    "$1" "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" "$ENDPOINT" >"$WORK/rclone-$1.conf"
  local t passed rc
  for t in s3 operations sync vfs; do
    local args=(-test.v -remote TestS3:)
    [ "$t" = s3 ] && args+=(-test.run TestIntegration)
    # rclone refuses the environment's AWS_CA_BUNDLE; the gateway is plain HTTP here.
    rc=0
    (cd "$WORK/run" && env -u AWS_CA_BUNDLE RCLONE_CONFIG="$WORK/rclone-$1.conf" \
      "$WORK/$t.test" "${args[@]}" >"$WORK/$t-$1.log" 2>&1) || rc=$?
    passed=$(grep -c -- '--- PASS' "$WORK/$t-$1.log" || true)
    # The suites pass with nothing run when they find no remote: hence a floor on the passes. A
    # panic or a timeout exits non-zero without a '--- FAIL' line.
    if [ "$rc" -ne 0 ] || grep -q -- '--- FAIL' "$WORK/$t-$1.log" || [ "$passed" -lt 90 ]; then
      grep -E -- '--- FAIL|Error:|Messages:' "$WORK/$t-$1.log" | head -40 >&2
      tail -n 5 "$WORK/$t-$1.log" >&2
      fail "rclone's $t tests with provider $1: $passed passed"
    fi
    echo "    $t: $passed checks passed"
  done
}
# "Other": ListObjects v1, listings not URL-encoded (rclone retries one with control characters
# URL-encoded after an XML syntax error, with backoff: most of this pass's ~2.5 min).
step "suite as provider Other"
suite Other
# "Minio": AWS's quirks but path style: ListObjectsV2 with encoding-type=url, multipart ETags.
step "suite as provider Minio"
suite Minio
echo "PASS: rclone's S3 integration suite"
