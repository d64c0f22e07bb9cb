#!/usr/bin/env bash
# The Amazon S3 Connector for PyTorch's client (s3torchconnectorclient 1.5.0 from PyPI:
# Mountpoint's CRT-based S3 client with Python bindings), through which the connector's
# datasets, checkpoints and Lightning plugin read and write: a dataset listed page by page and
# read whole and in ranges, a checkpoint streamed in odd-sized writes (multipart) and read back
# in parallel ranged GETs, copies, overwrites, deletes and the errors for missing objects.
source "$(dirname "$0")/lib.sh"
source "$COMPAT_ROOT/compat/suites/venv.sh"
suite_venv s3torch s3torchconnectorclient==1.5.0
B=s3torch-$RANDOM
aws --endpoint-url "$ENDPOINT" s3 mb "s3://$B" >/dev/null
BUCKET=$B python3 "$COMPAT_ROOT/compat/suites/s3torch_client.py" || fail "s3torchconnectorclient scenario failed"
