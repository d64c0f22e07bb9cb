#!/usr/bin/env bash
# DuckDB 1.5.5 with its httpfs extension (both from PyPI), whose S3 client is its own (C++):
# Parquet and CSV written with COPY and read back whole, through globs and by ranges, Hive
# partitions, keys with spaces and `+`, each result compared with the same query run locally.
source "$(dirname "$0")/lib.sh"
source "$COMPAT_ROOT/compat/suites/venv.sh"
suite_venv duckdb duckdb==1.5.5 duckdb-extensions==1.5.5 duckdb-extension-httpfs==1.5.5
B=duckdb-$RANDOM
aws --endpoint-url "$ENDPOINT" s3 mb "s3://$B" >/dev/null
BUCKET=$B python3 "$COMPAT_ROOT/compat/suites/duckdb_client.py" || fail "duckdb scenario failed"
grep -q 'operation="CompleteMultipartUpload"' "$WORK/gateway.log" || fail "DuckDB wrote no object in parts"
