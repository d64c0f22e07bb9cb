#!/usr/bin/env bash
# The gateway on an NFS volume against the NFS client library alone, in one run: PUT and GET of
# the same sizes through Penstock (S3 over HTTP, NFS volume on NFS-Ganesha) and straight through
# nfs-rs (backends/examples/nfs_bench.rs: the same library, RPC sizes and concurrency, no S3).
# GETs read the very files the gateway stored. Rounds alternate; medians and ratios are printed.
#
#   compat/bench/nfs.sh            full run (release build; a few minutes)
#   compat/bench/nfs.sh --smoke    tiny sizes, one round, debug build (CI)
source "$(dirname "$0")/common.sh"
# Beside a gateway scripts/test built (common.sh's prebuilt), the example its `cargo test` built:
# building it here with `-p` would unify other features and compile half the workspace again.
NFSBENCH="$bindir/examples/nfs_bench"
if [ -z "$prebuilt" ] || [ ! -x "$NFSBENCH" ]; then
  cargo build --locked $([ "$profile" = release ] && echo --release) -p penstock-backends --example nfs_bench >&2
  NFSBENCH="$CARGO_TARGET_DIR/$profile/examples/nfs_bench"
fi
source "$root/compat/ganesha.sh"
export AWS_ACCESS_KEY_ID=PKBENCH0000000000001 AWS_SECRET_ACCESS_KEY=bench-secret-0123456789abcdefghijklmnop
W=$(mktemp -d /tmp/penstock-nfsbench.XXXXXX)
cleanup() { kill "${P_PID:-}" 2>/dev/null || true; wait "${P_PID:-}" 2>/dev/null || true; eval "$GANESHA_CLEANUP" || true; rm -rf "$W"; }
trap cleanup EXIT
P_PORT=$(free_port); P_ADMIN=$(free_port)
cat >"$W/penstock.toml" <<CONF
default_volume = "nfs"
[[volumes]]
name = "nfs"
backend = "nfs"
url = "$NFS_URL"
path = "penstock"
CONF
PENSTOCK_ACCESS_KEY=$AWS_ACCESS_KEY_ID PENSTOCK_SECRET_KEY=$AWS_SECRET_ACCESS_KEY PENSTOCK_ADMIN_TOKEN=bench-admin RUST_LOG=warn \
  "$PENSTOCK" serve --config "$W/penstock.toml" --data-dir "$W/penstock" --listen "127.0.0.1:$P_PORT" \
  --admin-listen "127.0.0.1:$P_ADMIN" >"$W/penstock.log" 2>&1 &
P_PID=$!
for _ in $(seq 1 200); do (exec 3<>/dev/tcp/127.0.0.1/"$P_PORT") 2>/dev/null && break; sleep 0.05; done
EP="http://127.0.0.1:$P_PORT"

if [ "$mode" = smoke ]; then
  cases=("put-16m|PUT|256K|8|4" "get-16m|GET|256K|8|4" "get-1g|GET|1M|2|2")
else
  cases=("put-16m|PUT|16M|32|8" "get-16m|GET|16M|32|8" "get-1g|GET|1G|2|2")
fi
if [ -n "$only" ]; then
  kept=(); for c in "${cases[@]}"; do [ "${c%%|*}" = "$only" ] && kept+=("$c"); done
  [ ${#kept[@]} -gt 0 ] || { echo "no case named $only" >&2; exit 2; }
  cases=("${kept[@]}")
fi
results="${BENCH_RESULTS:-$cache/bench-nfs-results.jsonl}"
: >"$results"
record() { echo "{\"server\":\"$1\",\"round\":$round,\"case\":\"$case\",$(echo "$2" | cut -c2-)" >>"$results"; }

# Folder of a bucket, relative to the export.
folder_of() {
  "$PENSTOCK" admin --url "http://127.0.0.1:$P_ADMIN" --token bench-admin --json vfolder list | python3 -c "
import json, sys
b = next(b for b in json.load(sys.stdin) if b['name'] == '$1')
scope = b['quota_scope'].split(':')[1].replace('-', '')
fid = b['folder_id'].replace('-', '')
print(f'penstock/{scope}/{fid[:2]}/{fid[2:4]}/{fid[4:]}')"
}
for c in "${cases[@]}"; do
  IFS='|' read -r case op size count conc <<<"$c"
  [ "$op" = GET ] || continue
  "$BENCH" --endpoint "$EP" --bucket "$case" --workload head --populate --size "$size" --count "$count" --concurrency 2 >/dev/null
done

for round in $(seq 1 "$rounds"); do
  for c in "${cases[@]}"; do
    IFS='|' read -r case op size count conc <<<"$c"
    dur=(); [ "$mode" = full ] && [ "$case" != get-1g ] && dur=(--duration 8)
    if [ "$op" = PUT ]; then
      out=$("$BENCH" --endpoint "$EP" --bucket "$case" --workload put --size "$size" --count "$count" --concurrency "$conc" "${dur[@]}" --json)
      record penstock "$out"
      out=$("$NFSBENCH" --url "$NFS_URL" --dir "direct/$case" --workload put --size "$size" --count "$count" --concurrency "$conc" "${dur[@]}")
      record nfs-rs "$out"
    else
      out=$("$BENCH" --endpoint "$EP" --bucket "$case" --workload get --size "$size" --count "$count" --concurrency "$conc" "${dur[@]}" --json)
      record penstock "$out"
      out=$("$NFSBENCH" --url "$NFS_URL" --dir "$(folder_of "$case")" --workload get --size "$size" --count "$count" --concurrency "$conc" "${dur[@]}")
      record nfs-rs "$out"
    fi
  done
done
python3 "$root/compat/bench/summary.py" "$results" "$mode" penstock,nfs-rs \
  "peak RSS (KiB): penstock $(awk '/VmHWM/ {print $2}' /proc/$P_PID/status), ganesha $(awk '/VmHWM/ {print $2}' /proc/$GANESHA_PID/status)"
