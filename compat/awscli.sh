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

step "cp back"; aws_ s3 cp "s3://$B/data/big.bin" "$WORK/big.back" --only-show-errors
cmp "$WORK/big.bin" "$WORK/big.back" || fail "downloaded bytes differ"

step "rm, rb"
aws_ s3 rm "s3://$B" --recursive --only-show-errors
[ -z "$(aws_ s3 ls "s3://$B" --recursive)" ] || fail "objects left after rm --recursive"
aws_ s3 rb "s3://$B" >/dev/null
if aws_ s3api head-bucket --bucket "$B" 2>/dev/null; then fail "bucket still exists after rb"; fi
echo "PASS: awscli ${1:-v1}"
