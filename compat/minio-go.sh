#!/usr/bin/env bash
# minio-go's functional test suite (the Go SDK tests MinIO's mint runs), from Debian's packaged
# source of minio-go 7.0.46, against the gateway in the suite's full mode: buckets, objects of
# up to 129 MiB through every upload path (multipart, streaming signatures, unknown lengths,
# checksums), ranged and seeking reads, copies and composes of up to 10,000 sources, presigned
# URLs and POST policies, metadata, tags, listings, and (ENABLE_KMS) SSE-S3 objects, copies
# between encrypted and plain objects and key rotation in place, against a gateway whose volumes
# are declared encrypted at rest (`encrypted_at_rest`), and SSE-C objects (customer keys: put,
# read at offsets and by seeking, copied between SSE-C, SSE-S3 and plain objects and parts),
# which the suite runs over TLS only: so the whole suite speaks TLS. The suite marks a test NA
# where the gateway answers NotImplemented (notifications, MinIO's extensions); any failure not
# named in compat/suites/minio_go.py fails the scenario, and so does a named one that passes.
export COMPAT_CONFIG='encrypted_at_rest = true'
export COMPAT_TLS=1
source "$(dirname "$0")/lib.sh"
src=/usr/share/gocode/src/github.com/minio/minio-go/v7/functional_tests.go
[ -f "$src" ] || fail "$src missing: scripts/install-deps.sh test installs golang-github-minio-minio-go-v7-dev"
# The file is built as its own main package, outside the library's directory: GOPATH mode with
# Debian's packaged modules, and without its `mint` build tag (which, given to go build, would
# pull the file into the library's own package).
mkdir -p "$WORK/suite"
sed '/^\/\/go:build mint$/d; /^\/\/ +build mint$/d' "$src" >"$WORK/suite/main.go"
(cd "$WORK/suite" && GOPATH=/usr/share/gocode GO111MODULE=off GOFLAGS= GOCACHE="$WORK/gocache" \
  go build -o suite .) || fail "building minio-go's functional tests failed"
cd "$WORK"
# RUN_ON_FAIL: report each failure and go on (the suite stops at the first one otherwise).
# TMPDIR: the suite leaves its temporary files (up to 129 MiB each) behind; here they go with $WORK.
mkdir -p "$WORK/tmp"
TMPDIR=$WORK/tmp SERVER_ENDPOINT=localhost:$PORT ACCESS_KEY=$AWS_ACCESS_KEY_ID SECRET_KEY=$AWS_SECRET_ACCESS_KEY \
  SSL_CERT_FILE=$CA_FILE ENABLE_HTTPS=1 ENABLE_KMS=1 MINT_MODE=full RUN_ON_FAIL=1 SERVER_REGION=us-east-1 \
  "$WORK/suite/suite" >"$WORK/results.json" 2>"$WORK/suite.err" || true
python3 "$COMPAT_ROOT/compat/suites/minio_go.py" "$WORK/results.json" || {
  tail -n 20 "$WORK/suite.err" >&2
  fail "minio-go functional tests"
}
