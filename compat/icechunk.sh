#!/usr/bin/env bash
# Icechunk 1.1.21 from PyPI (transactional Zarr storage: commits, branches, tags) through its S3
# storage, the AWS SDK for Rust: repositories, commits and refs made with If-None-Match and
# If-Match writes, a conflicting commit refused and rebased, history, tags and branches read
# back, a branch reset, snapshots expired and garbage collected.
source "$(dirname "$0")/lib.sh"
source "$COMPAT_ROOT/compat/suites/venv.sh"
suite_venv icechunk icechunk==1.1.21 zarr==3.1.6 numpy==2.4.6
B=icechunk-$RANDOM
aws --endpoint-url "$ENDPOINT" s3 mb "s3://$B" >/dev/null
BUCKET=$B python3 "$COMPAT_ROOT/compat/suites/icechunk_client.py" || fail "icechunk scenario failed"
