#!/usr/bin/env bash
# LMCache's S3 connector traffic with the real awscrt client (examples/lmcache/replay.py): 64 chunks of
# 32 MiB, 64 in flight, PUT then HEAD then GET, bytes verified, HEAD of a missing key -> 404.
# Runs twice: plain HTTP/1.1 (LMCache with disable_tls) and TLS with ALPN h2, which LMCache
# prefers; the gateway's request log must show the second run was served over HTTP/2. Over h2 a
# second pass sends 1024 chunks of 1 MiB: many stream ends under flow control, which crashed the
# awscrt client on every run while the gateway's stream windows could bind (gateway/src/server.rs).
# The plain run also uploads with every checksum awscrt offers and downloads with its checksum
# validation, empty objects included (compat/suites/awscrt_transfers.py).
#
# Virtual-hosted addressing needs kvcache.localhost to resolve: added to /etc/hosts if missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python3 -c 'import awscrt' 2>/dev/null || { echo "FAIL: awscrt not installed (pip install awscrt)" >&2; exit 1; }
if ! getent hosts kvcache.localhost >/dev/null; then
  [ -w /etc/hosts ] || { echo "FAIL: kvcache.localhost does not resolve and /etc/hosts is not writable" >&2; exit 1; }
  echo "127.0.0.1 kvcache.localhost" >>/etc/hosts
fi
for mode in plain tls; do
  echo "-- awscrt ($mode)"
  (
    [ "$mode" = tls ] && export COMPAT_TLS=1
    source "$here/lib.sh"
    python3 - <<PY
import boto3, botocore.config, os
s3 = boto3.client("s3", endpoint_url=os.environ["ENDPOINT"], verify=os.environ.get("CA_FILE") or None,
                  config=botocore.config.Config(s3={"addressing_style": "path"}))
s3.create_bucket(Bucket="kvcache")
PY
    args=("localhost:$PORT" kvcache)
    [ "$mode" = tls ] && args+=(--tls "$CA_FILE")
    # A native crash in the client prints the Python stacks instead of only "Segmentation fault".
    export PYTHONFAULTHANDLER=1
    python3 "$here/../examples/lmcache/replay.py" "${args[@]}"
    # Uploads with every checksum, validated downloads, empty objects (plain HTTP: the script
    # speaks to the gateway's address, as the replay's plain run does).
    if [ "$mode" = plain ]; then
      python3 "$here/suites/awscrt_transfers.py" "127.0.0.1:$PORT" kvcache \
        || fail "awscrt transfers with checksums failed"
    fi
    [ "$mode" = tls ] && python3 "$here/../examples/lmcache/replay.py" "${args[@]}" --chunks 1024 --chunk-mib 1
    if [ "$mode" = tls ]; then
      grep -q 'version=HTTP/2.0' "$WORK/gateway.log" || fail "awscrt did not use HTTP/2 over TLS (ALPN)"
      step "awscrt negotiated HTTP/2 by ALPN"
    fi
  )
done
