#!/usr/bin/env bash
# s3transfer's integration suite (boto3's transfer manager, and the awscrt-based CRT transfer
# manager LMCache-like clients use), from s3transfer 0.19.3's source distribution, over TLS:
# uploads and downloads below and above the multipart threshold, streams, copies, deletes,
# progress callbacks, cancellation, many files at once. The suite is written for AWS; what is
# changed to run it here, and the tests expected to fail, are named below with their reasons.
export COMPAT_TLS=1
# The suite's buckets are made in us-west-2, and its set-up turns on default encryption (SSE-S3):
# the gateway runs as over volumes that encrypt at rest (`encrypted_at_rest`), which serves that.
export COMPAT_CONFIG=$'region = "us-west-2"\nencrypted_at_rest = true'
source "$(dirname "$0")/lib.sh"
source "$COMPAT_ROOT/compat/suites/venv.sh"
suite_venv s3transfer boto3==1.44.8 'botocore[crt]==1.44.8' s3transfer==0.19.3 pytest==9.2.0
src=$(suite_sdist s3transfer==0.19.3)
cd "$src"
# Its bucket set-up (default encryption, ownership controls, public access block) runs as written.
python3 - <<'PY' || fail "cannot adapt the suite's set-up"
p = "tests/integration/test_crt.py"
s = open(p).read()
# The CRT client trusts the system's CAs; the gateway's certificate here is self-signed.
old = "self.region, self._get_crt_credentials_provider()\n"
assert old in s, "create_s3_crt_client call not found"
open(p, "w").write(s.replace(old, "self.region, self._get_crt_credentials_provider(), verify=os.environ['CA_FILE']\n"))
PY
export AWS_ENDPOINT_URL=$ENDPOINT AWS_CA_BUNDLE=$CA_FILE AWS_DEFAULT_REGION=us-west-2
# Every test runs, SSE-C ones included (`*_ssec`, `*extra_params_on_download`: objects written
# and read under the client's own key, taken over TLS).
python3 -m pytest -q -p no:cacheprovider -rfEs tests/integration >"$WORK/pytest.out" 2>&1 ||
  { tail -n 60 "$WORK/pytest.out"; fail "s3transfer integration tests failed"; }
tail -n 1 "$WORK/pytest.out"
grep -q '^SKIPPED' "$WORK/pytest.out" && { grep '^SKIPPED' "$WORK/pytest.out"; fail "a test was skipped"; }
echo "PASS: s3transfer integration tests"
