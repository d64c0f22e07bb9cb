#!/usr/bin/env bash
# aws cli against the scale-out deployment (scripts/cluster-lib.sh): PostgreSQL, three gateways
# on one shared volume, nginx balancing over them. Multipart 100 MiB through the balancer (its
# parts spread over the gateways), `s3 sync` up and down, every gateway serving the same bytes,
# and a bucket made through one gateway listed through another.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PENSTOCK_BIN=${PENSTOCK_BIN:-$ROOT/target/debug/penstock}
[ -x "$PENSTOCK_BIN" ] || { echo "FAIL: $PENSTOCK_BIN missing; build with cargo build -p penstock" >&2; exit 1; }
export AWS_ACCESS_KEY_ID=PKCLUSTERCOMPAT0001
export AWS_SECRET_ACCESS_KEY=cluster-secret-0123456789abcdefghijklmn
export AWS_DEFAULT_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
unset AWS_PROFILE AWS_SESSION_TOKEN || true
# shellcheck source=compat/helpers.sh
source "$ROOT/compat/helpers.sh"

WORK=$(mktemp -d /tmp/penstock-cluster-compat.XXXXXX)
chmod 755 "$WORK"  # the PostgreSQL cluster below belongs to an unprivileged user
CLUSTER_DIR=$WORK/cluster
mkdir -p "$CLUSTER_DIR"
# shellcheck source=scripts/cluster-lib.sh
. "$ROOT/scripts/cluster-lib.sh"
finish() {
  local rc=$?
  cluster_stop
  if [ $rc -ne 0 ]; then
    for f in "$CLUSTER_DIR"/gw*.log "$CLUSTER_DIR/nginx-error.log"; do
      echo "---- $f (last 20 lines) ----" >&2; tail -n 20 "$f" >&2 || true
    done
  fi
  rm -rf "$WORK"
  exit $rc
}
trap finish EXIT
cluster_start
AWS=$(command -v aws) || fail "aws cli missing"
aws_() { "$AWS" --endpoint-url "$ENDPOINT" "$@"; }
echo "aws cli: $("$AWS" --version 2>&1); balancer $ENDPOINT over ${GATEWAY_ENDPOINTS[*]}"

B=cluster-$RANDOM
step "mb through the balancer"; aws_ s3 mb "s3://$B" >/dev/null
head -c $((100 * 1024 * 1024)) /dev/urandom >"$WORK/big.bin"
step "cp 100 MiB (multipart through the balancer)"
aws_ s3 cp "$WORK/big.bin" "s3://$B/data/big.bin" --only-show-errors
etag=$(aws_ s3api head-object --bucket "$B" --key data/big.bin --query ETag --output text)
case "$etag" in *-*) ;; *) fail "expected a multipart ETag, got $etag" ;; esac
want=$(md5sum <"$WORK/big.bin" | cut -d' ' -f1)
for gw in "${GATEWAY_ENDPOINTS[@]}"; do
  step "GET from $gw"
  got=$("$AWS" --endpoint-url "$gw" s3 cp "s3://$B/data/big.bin" - | md5sum | cut -d' ' -f1)
  [ "$got" = "$want" ] || fail "$gw served other bytes"
  "$AWS" --endpoint-url "$gw" s3 ls "s3://$B/data/" | has " 104857600 big.bin" || fail "$gw does not list big.bin"
done

mkdir -p "$WORK/tree/sub/deeper"
for i in $(seq 1 40); do head -c $((i * 1000)) /dev/urandom >"$WORK/tree/f$i.bin"; done
for i in 1 2 3; do echo "nested $i" >"$WORK/tree/sub/n$i.txt"; echo "deep $i" >"$WORK/tree/sub/deeper/d$i.txt"; done
# Files older than the sync, as real trees are: sync compares whole-second times, and a file
# written in the same second as its upload can look newer than the object.
find "$WORK/tree" -type f -exec touch -d '-1 minute' {} +
step "sync up"; aws_ s3 sync "$WORK/tree" "s3://$B/tree" --only-show-errors
n=$(aws_ s3 ls "s3://$B/tree/" --recursive | wc -l)
[ "$n" -eq 46 ] || fail "sync uploaded $n objects, expected 46"
step "second sync: nothing to do"
out=$(aws_ s3 sync "$WORK/tree" "s3://$B/tree")
[ -z "$out" ] || fail "second sync copied again: $out"
mkdir -p "$WORK/back"
step "sync down"; aws_ s3 sync "s3://$B/tree" "$WORK/back" --only-show-errors
diff -r "$WORK/tree" "$WORK/back" || fail "sync down differs"

step "bucket made on gateway 1, seen on the others"
"$AWS" --endpoint-url "${GATEWAY_ENDPOINTS[0]}" s3 mb "s3://$B-direct" >/dev/null
for gw in "${GATEWAY_ENDPOINTS[@]:1}"; do
  "$AWS" --endpoint-url "$gw" s3 ls | has " $B-direct$" || fail "$gw does not list $B-direct"
done
step "rm, rb"
aws_ s3 rm "s3://$B" --recursive --only-show-errors
aws_ s3 rb "s3://$B" >/dev/null
aws_ s3 rb "s3://$B-direct" >/dev/null
echo "cluster: ok"
