#!/usr/bin/env bash
# boto3 (current PyPI, default checksum settings): the full operation list and presigned URLs.
source "$(dirname "$0")/lib.sh"
python3 -c 'import boto3' 2>/dev/null || fail "boto3 not installed (pip install boto3)"
python3 "$COMPAT_ROOT/compat/boto3_suite.py"
