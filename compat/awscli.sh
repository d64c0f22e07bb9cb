#!/usr/bin/env bash
# aws cli round trip: mb, cp 100 MiB (multipart), ls, sync, cp back, rm, rb.
# Usage: compat/awscli.sh v1|v2   (v1: the PyPI `aws` on PATH; v2: Debian's /usr/bin/aws)
source "$(dirname "$0")/lib.sh"
case "${1:-v1}" in
  v1) AWS=$(command -v aws) ;;
  v2) AWS=/usr/bin/aws ;;
  *) fail "unknown aws cli flavour $1" ;;
esac
[ -x "$AWS" ] || fail "aws cli ${1:-v1} not installed ($AWS)"
aws_() { "$AWS" --endpoint-url "$ENDPOINT" "$@"; }
echo "aws cli ${1:-v1}: $("$AWS" --version 2>&1)"

B=awscli-$RANDOM
aws_mb_and_big_upload "$B"

mkdir -p "$WORK/tree/sub"
for i in 1 2 3; do echo "file $i" >"$WORK/tree/f$i.txt"; echo "nested $i" >"$WORK/tree/sub/n$i.txt"; done
step sync; aws_ s3 sync "$WORK/tree" "s3://$B/tree" --only-show-errors
n=$(aws_ s3 ls "s3://$B/tree/" --recursive | wc -l)
[ "$n" -eq 6 ] || fail "sync uploaded $n objects, expected 6"
aws_ s3 sync "$WORK/tree" "s3://$B/tree" --only-show-errors  # second sync: nothing to do
mkdir -p "$WORK/back"
aws_ s3 sync "s3://$B/tree" "$WORK/back" --only-show-errors
diff -r "$WORK/tree" "$WORK/back" || fail "sync down differs"

# A tree full of empty files (Python packages, Spark's _SUCCESS): botocore sends
# `Expect: 100-continue` with each, and a connection left out of step by an empty PUT made the
# next PUT on it wait 60 s for its read timeout (issue #23). 8 files, 4 empty: seconds, not minutes.
mkdir -p "$WORK/pkgs/pkg/sub"
: >"$WORK/pkgs/pkg/__init__.py"; : >"$WORK/pkgs/pkg/sub/__init__.py"; : >"$WORK/pkgs/_SUCCESS"; : >"$WORK/pkgs/.keep"
for i in 1 2 3 4; do echo "x = $i" >"$WORK/pkgs/pkg/m$i.py"; done
step "sync of empty files"
t0=$(date +%s)
aws_ s3 sync "$WORK/pkgs" "s3://$B/pkgs" --only-show-errors --cli-read-timeout 20
t1=$(date +%s)
[ $((t1 - t0)) -lt 15 ] || fail "sync of 8 small files (4 empty) took $((t1 - t0)) s"
n=$(aws_ s3 ls "s3://$B/pkgs/" --recursive | wc -l)
[ "$n" -eq 8 ] || fail "empty-file sync uploaded $n objects, expected 8"
size=$(aws_ s3api head-object --bucket "$B" --key pkgs/pkg/__init__.py --query ContentLength --output text)
[ "$size" = 0 ] || fail "empty file stored with $size bytes"

step "cp back"; aws_ s3 cp "s3://$B/data/big.bin" "$WORK/big.back" --only-show-errors
cmp "$WORK/big.bin" "$WORK/big.back" || fail "downloaded bytes differ"

step "rm, rb"
aws_ s3 rm "s3://$B" --recursive --only-show-errors
[ -z "$(aws_ s3 ls "s3://$B" --recursive)" ] || fail "objects left after rm --recursive"
aws_ s3 rb "s3://$B" >/dev/null
if aws_ s3api head-bucket --bucket "$B" 2>/dev/null; then fail "bucket still exists after rb"; fi
echo "PASS: awscli ${1:-v1}"
