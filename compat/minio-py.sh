#!/usr/bin/env bash
# minio-py's functional test suite (the one MinIO's mint runs), from minio 7.2.20's source
# distribution, against the gateway: buckets, objects, copies with conditions, versions, listings,
# presigned GET/PUT/POST, policies, removals. Tests of MinIO's own extensions are expected to fail,
# each named with its reason in compat/suites/minio_py.py; any other failure fails the scenario.
source "$(dirname "$0")/lib.sh"
source "$COMPAT_ROOT/compat/suites/venv.sh"
suite_venv minio-py minio==7.2.20
src=$(suite_sdist minio==7.2.20)
cd "$WORK"
SUITE_DIR="$src/tests/functional" python3 "$COMPAT_ROOT/compat/suites/minio_py.py"
