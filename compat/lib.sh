# Shared helpers for compat scenarios: start a fresh gateway, fail loudly, clean up.
# Source it from a scenario script; it starts the gateway and exports ENDPOINT and AWS_* vars.
set -euo pipefail
COMPAT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=compat/helpers.sh
source "$COMPAT_ROOT/compat/helpers.sh"
PENSTOCK_BIN=${PENSTOCK_BIN:-$COMPAT_ROOT/target/debug/penstock}
[ -x "$PENSTOCK_BIN" ] || { echo "FAIL: $PENSTOCK_BIN missing; build with cargo build -p penstock" >&2; exit 1; }

export AWS_ACCESS_KEY_ID=PKCOMPATTEST0000001
export AWS_SECRET_ACCESS_KEY=compat-secret-0123456789abcdefghijklmnop
export AWS_DEFAULT_REGION=us-east-1
export AWS_EC2_METADATA_DISABLED=true
unset AWS_PROFILE AWS_SESSION_TOKEN || true

WORK=$(mktemp -d /tmp/penstock-compat.XXXXXX)
PORT=$(free_port)
ADMIN_PORT=$(free_port)
export ENDPOINT="http://127.0.0.1:$PORT"
: >"$WORK/penstock.toml"
# COMPAT_TLS=1: a self-signed certificate for localhost and *.localhost; clients trust $CA_FILE.
if [ -n "${COMPAT_TLS:-}" ]; then
  export CA_FILE="$WORK/cert.pem"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
    -addext "subjectAltName=DNS:localhost,DNS:*.localhost,IP:127.0.0.1" \
    -keyout "$WORK/key.pem" -out "$CA_FILE" 2>/dev/null
  printf 'tls_cert = "%s"\ntls_key = "%s"\n' "$CA_FILE" "$WORK/key.pem" >>"$WORK/penstock.toml"
  export ENDPOINT="https://localhost:$PORT"
fi
[ -n "${COMPAT_CONFIG:-}" ] && printf '%s\n' "$COMPAT_CONFIG" >>"$WORK/penstock.toml"

PENSTOCK_ACCESS_KEY=$AWS_ACCESS_KEY_ID PENSTOCK_SECRET_KEY=$AWS_SECRET_ACCESS_KEY \
  "$PENSTOCK_BIN" serve --config "$WORK/penstock.toml" --data-dir "$WORK/data" --listen "127.0.0.1:$PORT" \
  --admin-listen "127.0.0.1:$ADMIN_PORT" >"$WORK/gateway.log" 2>&1 &
GW_PID=$!

cleanup() {
  local rc=$?
  for f in "${CLEANUP_HOOKS[@]:-}"; do [ -n "$f" ] && eval "$f" || true; done
  kill "$GW_PID" 2>/dev/null || true
  wait "$GW_PID" 2>/dev/null || true
  if [ $rc -ne 0 ]; then
    echo "---- gateway log (last 40 lines) ----" >&2
    tail -n 40 "$WORK/gateway.log" >&2 || true
  fi
  rm -rf "$WORK"
  exit $rc
}
CLEANUP_HOOKS=()
trap cleanup EXIT

for _ in $(seq 1 200); do
  if (exec 3<>/dev/tcp/127.0.0.1/"$PORT") 2>/dev/null; then break; fi
  sleep 0.05
done

# With an `aws_` function (aws cli with --endpoint-url): makes bucket $1, uploads 100 MiB of random
# bytes from $WORK/big.bin to data/big.bin (multipart), checks ls and the multipart ETag.
aws_mb_and_big_upload() {
  local b=$1
  step mb; aws_ s3 mb "s3://$b" >/dev/null
  head -c $((100 * 1024 * 1024)) /dev/urandom >"$WORK/big.bin"
  step "cp 100 MiB"; aws_ s3 cp "$WORK/big.bin" "s3://$b/data/big.bin" --only-show-errors
  aws_ s3 ls "s3://$b/data/" | has " 104857600 big.bin" || fail "ls does not show the 100 MiB object"
  local etag
  etag=$(aws_ s3api head-object --bucket "$b" --key data/big.bin --query ETag --output text)
  case "$etag" in *-*) ;; *) fail "expected a multipart ETag, got $etag" ;; esac
}

# `node_suite SUITE TYPE PACKAGE...`: runs compat/SUITE with Node.js in a project of its own
# under $WORK (TYPE `module` or `commonjs`) holding the pinned npm PACKAGEs; npm keeps its cache
# in ~/.npm, so later runs fetch nothing.
node_suite() {
  local suite=$1 type=$2; shift 2
  command -v npm >/dev/null || fail "npm not installed (scripts/install-deps.sh test)"
  command -v node >/dev/null || fail "node not installed (scripts/install-deps.sh test)"
  mkdir -p "$WORK/node"
  cp "$COMPAT_ROOT/compat/$suite" "$WORK/node/"
  printf '{"name": "penstock-compat", "private": true, "type": "%s"}\n' "$type" >"$WORK/node/package.json"
  step "npm install $*"
  (cd "$WORK/node" && npm install --no-audit --no-fund --loglevel=error "$@" >npm.log 2>&1) ||
    fail "npm install $* failed: $(tail -5 "$WORK/node/npm.log")"
  (cd "$WORK/node" && NODE_NO_WARNINGS=1 node "$suite")
}
