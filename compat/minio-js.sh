#!/usr/bin/env bash
# MinIO's JavaScript SDK (npm `minio`, pinned): the operations a Node.js application makes through
# it, checked value by value (compat/minio_js_suite.mjs).
source "$(dirname "$0")/lib.sh"
node_suite minio_js_suite.mjs module minio@8.0.7
