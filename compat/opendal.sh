#!/usr/bin/env bash
# Apache OpenDAL's own behaviour tests for its S3 service: the suite its Python binding ships in
# the opendal 0.47.12 sdist on PyPI, run against the binding's wheel (the Rust core that Databend,
# GreptimeDB, RisingWave and sccache store data through). Sync and async writes (whole, in
# parts, with content types and user metadata), reads (ranges, conditions on ETags and dates),
# stats, listings (recursive, with start-after), copies, batch deletes, presigned requests and
# conditional writes, in a plain bucket and in a versioned one (versions read, stat'ed and
# deleted by id). OpenDAL skips the tests of capabilities S3 lacks (rename) or that it tests only
# on other services; the scenario fails on any failure, and if fewer tests pass than this suite
# passes here (a suite that finds no service skips everything).
source "$(dirname "$0")/lib.sh"
source "$COMPAT_ROOT/compat/suites/venv.sh"
suite_venv opendal opendal==0.47.12 pytest==9.2.0 pytest-asyncio==1.5.0 python-dotenv==1.2.4 \
  pydantic-settings==2.16.3
src=$(suite_sdist opendal==0.47.12)
cd "$src/bindings/python"
export OPENDAL_TEST=s3 OPENDAL_S3_ENDPOINT=$ENDPOINT OPENDAL_S3_REGION=us-east-1 \
  OPENDAL_S3_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID OPENDAL_S3_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY
aws_() { aws --endpoint-url "$ENDPOINT" "$@"; }

# suite BUCKET MIN_PASSED [versioned]
suite() {
  local bucket=$1 min=$2 versioned=${3:-}
  step "$bucket"
  aws_ s3 mb "s3://$bucket" >/dev/null
  if [ -n "$versioned" ]; then
    aws_ s3api put-bucket-versioning --bucket "$bucket" --versioning-configuration Status=Enabled
  fi
  OPENDAL_S3_BUCKET=$bucket OPENDAL_S3_ENABLE_VERSIONING=${versioned:-false} \
    python3 -m pytest -q -p no:cacheprovider -o asyncio_default_fixture_loop_scope=function -rfEs tests \
    >"$WORK/$bucket.out" 2>&1 || { tail -n 60 "$WORK/$bucket.out"; fail "OpenDAL's suite failed ($bucket)"; }
  local last passed
  last=$(tail -n 1 "$WORK/$bucket.out")
  echo "$last"
  passed=$(grep -o '[0-9]* passed' <<<"$last" | cut -d' ' -f1)
  [ "${passed:-0}" -ge "$min" ] || fail "only ${passed:-0} of OpenDAL's tests passed ($bucket); $min pass here"
}
suite opendal-plain 160
suite opendal-versioned 165 true
echo "PASS: OpenDAL's S3 behaviour tests"
