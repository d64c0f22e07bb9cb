#!/usr/bin/env bash
# MinIO's JavaScript SDK (npm `minio`, pinned): the operations a Node.js application makes through
# it, checked value by value (compat/minio_js_suite.mjs).
source "$(dirname "$0")/lib.sh"
command -v npm >/dev/null || fail "npm not installed (scripts/install-deps.sh test)"
command -v node >/dev/null || fail "node not installed (scripts/install-deps.sh test)"
mkdir -p "$WORK/js"
cp "$COMPAT_ROOT/compat/minio_js_suite.mjs" "$WORK/js/"
cd "$WORK/js"
echo '{"name": "penstock-minio-js-compat", "private": true, "type": "module"}' >package.json
step "npm install minio@8.0.7"
npm install --no-audit --no-fund --loglevel=error minio@8.0.7 >npm.log 2>&1 ||
  fail "npm install of minio-js failed: $(tail -5 npm.log)"
NODE_NO_WARNINGS=1 node minio_js_suite.mjs
