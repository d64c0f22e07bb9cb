#!/usr/bin/env bash
# rclone's own integration suite for its S3 backend (fstests, from Debian's packaged source of
# rclone 1.60), against the gateway as an "Other" S3 provider (path style, ListObjects v1, no
# URL-encoded listings): ~140 checks of what rclone asks of a remote. Files of every size through
# single and multipart uploads, streamed uploads of unknown size, ranged and seeking reads,
# listings flat and recursive, names with every character class rclone knows (spaces, control
# characters, CR and LF, invalid UTF-8, URL escapes), server-side copies, modification times and
# metadata in headers, tiers set by copying in place (STANDARD, STANDARD_IA), public links
# (presigned URLs), versions and gzip-encoded objects, purges. Found that a key holding a
# carriage return listed as another key, and that an object could not be copied onto itself
# naming the storage class it already had. Any failure fails the scenario.
source "$(dirname "$0")/lib.sh"
src=/usr/share/gocode/src/github.com/rclone/rclone
[ -d "$src/backend/s3" ] || fail "$src missing: scripts/install-deps.sh test installs golang-github-rclone-rclone-dev"
step build
(cd "$src" && GOPATH=/usr/share/gocode GO111MODULE=off GOFLAGS= GOCACHE="$HOME/.cache/penstock/go-build" \
  go test -c -o "$WORK/s3.test" ./backend/s3) || fail "building rclone's S3 backend tests failed"
cat >"$WORK/rclone.conf" <<EOF
[TestS3]
type = s3
provider = Other
access_key_id = $AWS_ACCESS_KEY_ID
secret_access_key = $AWS_SECRET_ACCESS_KEY
endpoint = $ENDPOINT
region = us-east-1
force_path_style = true
EOF
# The suite looks for its test servers' scripts (fstest/testserver/init.d) above its working
# directory, and Debian ships none; an empty directory says there is no server to start.
mkdir -p "$WORK/run/fstest/testserver/init.d"
step "suite (about 2.5 min: listings with control characters are retried by rclone with backoff)"
# rclone refuses the environment's AWS_CA_BUNDLE; the gateway is plain HTTP here.
(cd "$WORK/run" && env -u AWS_CA_BUNDLE RCLONE_CONFIG="$WORK/rclone.conf" \
  "$WORK/s3.test" -test.v -test.run TestIntegration -remote TestS3: >"$WORK/suite.log" 2>&1) || true
passed=$(grep -c -- '--- PASS' "$WORK/suite.log" || true)
if grep -q -- '--- FAIL' "$WORK/suite.log" || [ "$passed" -lt 100 ]; then
  grep -E -- '--- FAIL|Error:|Messages:' "$WORK/suite.log" | head -40 >&2
  tail -n 5 "$WORK/suite.log" >&2
  fail "rclone's S3 integration suite: $passed passed"
fi
echo "PASS: rclone's S3 integration suite ($passed checks passed)"
