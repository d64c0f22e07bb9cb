#!/usr/bin/env bash
# AWS SDK for JavaScript v2 (npm `aws-sdk`, pinned): the operations a Node.js application makes
# through it, checked value by value (compat/js_sdk_v2_suite.cjs).
source "$(dirname "$0")/lib.sh"
command -v npm >/dev/null || fail "npm not installed (scripts/install-deps.sh test)"
command -v node >/dev/null || fail "node not installed (scripts/install-deps.sh test)"
mkdir -p "$WORK/js"
cp "$COMPAT_ROOT/compat/js_sdk_v2_suite.cjs" "$WORK/js/"
cd "$WORK/js"
echo '{"name": "penstock-js-sdk-v2-compat", "private": true}' >package.json
step "npm install aws-sdk@2.1693.0"
npm install --no-audit --no-fund --loglevel=error aws-sdk@2.1693.0 >npm.log 2>&1 ||
  fail "npm install of the AWS SDK for JavaScript v2 failed: $(tail -5 npm.log)"
NODE_NO_WARNINGS=1 node js_sdk_v2_suite.cjs
