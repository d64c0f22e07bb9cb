#!/usr/bin/env bash
# Runs every program under examples/ against a fresh gateway, so none of them rots:
# boto3_quickstart.py, s3fs_mount.sh, lmcache/replay.py (small) and gpu_fill (host memory here;
# device memory where a GPU and the cuda feature are present).
source "$(dirname "$0")/lib.sh"
ex="$COMPAT_ROOT/examples"

step "boto3_quickstart.py"
python3 "$ex/boto3_quickstart.py" "$ENDPOINT" quickstart || fail "boto3_quickstart.py"

step "s3fs_mount.sh"
command -v s3fs >/dev/null || fail "s3fs not installed"
timeout 120 "$ex/s3fs_mount.sh" "$ENDPOINT" mounted "$WORK/mnt" || fail "s3fs_mount.sh"

step "lmcache/replay.py"
getent hosts kvcache.localhost >/dev/null || echo "127.0.0.1 kvcache.localhost" >>/etc/hosts
aws --endpoint-url "$ENDPOINT" s3 mb s3://kvcache >/dev/null
python3 "$ex/lmcache/replay.py" "localhost:$PORT" kvcache --chunks 8 --chunk-mib 16 --inflight 8 || fail "lmcache/replay.py"

step "gpu_fill"
GPU_FILL=${GPU_FILL_BIN:-$(dirname "$PENSTOCK_BIN")/gpu-fill}
[ -x "$GPU_FILL" ] || fail "$GPU_FILL missing: cargo build -p gpu-fill"
"$GPU_FILL" --endpoint "$ENDPOINT" --mib 32 --rounds 2 || fail "gpu_fill"
