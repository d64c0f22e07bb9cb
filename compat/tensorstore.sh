#!/usr/bin/env bash
# TensorStore 0.1.86 from PyPI (Google's array storage library, under JAX/Orbax checkpoints and
# Neuroglancer volumes): its S3 key-value store is an HTTP client of its own in C++, not an AWS
# SDK. zarr v2 and sharded zarr v3 arrays written, merged and read back in slices (suffix and
# plain ranges, If-Match reads); the key-value layer's generations, If-Match and
# If-None-Match writes, conditional reads, ranges, listings, range deletes and a transaction.
source "$(dirname "$0")/lib.sh"
source "$COMPAT_ROOT/compat/suites/venv.sh"
suite_venv tensorstore tensorstore==0.1.86 numpy==2.4.6
B=tensorstore-$RANDOM
aws --endpoint-url "$ENDPOINT" s3 mb "s3://$B" >/dev/null
# The AWS CRT inside logs every credentials file it does not find; the environment's keys are used.
BUCKET=$B python3 "$COMPAT_ROOT/compat/suites/tensorstore_client.py" 2> >(grep -v 'AuthCredentialsProvider\|common-io' >&2) ||
  fail "tensorstore scenario failed"
