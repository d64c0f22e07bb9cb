#!/usr/bin/env bash
# The metadata engines compared in one run on this machine: one gateway on the embedded RocksDB
# engine, one gateway on PostgreSQL, and three gateways on PostgreSQL behind nginx (the balancer
# and the three gateways share this machine's cores with the load generator and the database).
# Cases: 4 KiB PUT and GET (metadata round trips dominate) and 16 MiB PUT and GET (bytes
# dominate). Medians over rounds, and each PostgreSQL setup's ratio to RocksDB.
#
#   compat/bench/cluster.sh            full run (release build)
#   compat/bench/cluster.sh --smoke    tiny sizes, one round, debug build
source "$(dirname "$0")/common.sh"
export AWS_ACCESS_KEY_ID=PKBENCHCLUSTER000001 AWS_SECRET_ACCESS_KEY=bench-cluster-secret-0123456789abcdefgh
W=$(mktemp -d /tmp/penstock-bench-cluster.XXXXXX)
chmod 755 "$W"
CLUSTER_DIR=$W/cluster; mkdir -p "$CLUSTER_DIR"; CLUSTER_GATEWAYS=3
PENSTOCK_BIN=$PENSTOCK
# shellcheck source=scripts/cluster-lib.sh
. scripts/cluster-lib.sh
pids=()
cleanup() { cluster_stop; for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$W"; }
trap cleanup EXIT
RUST_LOG=warn cluster_start

R_PORT=$(cluster_free_port); R_ADMIN=$(cluster_free_port)
PENSTOCK_ACCESS_KEY=$AWS_ACCESS_KEY_ID PENSTOCK_SECRET_KEY=$AWS_SECRET_ACCESS_KEY PENSTOCK_ADMIN_TOKEN=bench-admin RUST_LOG=warn \
  "$PENSTOCK" serve --data-dir "$W/rocks" --listen "127.0.0.1:$R_PORT" --admin-listen "127.0.0.1:$R_ADMIN" >"$W/rocks.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 200); do (exec 3<>/dev/tcp/127.0.0.1/"$R_PORT") 2>/dev/null && break; sleep 0.05; done

declare -A endpoint=([rocksdb]="http://127.0.0.1:$R_PORT" [pg1]="${GATEWAY_ENDPOINTS[0]}" [pg3]="$ENDPOINT")
servers=(rocksdb pg1 pg3)
results="${BENCH_RESULTS:-$cache/bench-cluster.jsonl}"
: >"$results"
if [ "$mode" = smoke ]; then
  cases=("small-put|PUT|4K|64|8" "small-get|GET|4K|64|8" "put-16m|PUT|64K|16|4" "get-16m|GET|64K|16|4")
else
  cases=("small-put|PUT|4K|2000|16" "small-get|GET|4K|2000|16" "put-16m|PUT|16M|32|8" "get-16m|GET|16M|32|8")
fi
for c in "${cases[@]}"; do
  IFS='|' read -r case op size count conc <<<"$c"
  [ "$op" = GET ] || continue
  # pg1 and pg3 share one database and volume: one population serves both.
  for s in rocksdb pg1; do
    "$BENCH" --endpoint "${endpoint[$s]}" --bucket "$case" --workload head --populate --size "$size" --count "$count" --concurrency 4 >/dev/null
  done
done
for round in $(seq 1 "$rounds"); do
  for c in "${cases[@]}"; do
    IFS='|' read -r case op size count conc <<<"$c"
    w=$(echo "$op" | tr 'A-Z' 'a-z')
    dur=(); [ "$mode" = full ] && dur=(--duration 8)
    for i in "${!servers[@]}"; do
      s=${servers[$(( (i + round) % ${#servers[@]} ))]}
      sync
      out=$("$BENCH" --endpoint "${endpoint[$s]}" --json --bucket "$case" --workload "$w" --size "$size" \
        --count "$count" --concurrency "$conc" "${dur[@]}" 2>"$W/bench.err") ||
        { echo "bench failed for $s ($case): $(tail -n 5 "$W/bench.err")" >&2; exit 1; }
      echo "{\"server\":\"$s\",\"round\":$round,\"case\":\"$case\",$(echo "$out" | cut -c2-)" >>"$results"
    done
  done
done
# What a small PUT costs PostgreSQL's disk: WAL flushes per PUT (pg_stat_wal.wal_sync), which
# this machine's fast flushes (~0.1 ms) hide from the throughput above. Backends report their
# counts within ~10 s of going idle, hence the pauses; the gateways' heartbeats add a few.
wal_syncs() { psql "$PG_URL" -Atc "SELECT wal_sync FROM pg_stat_wal"; }
n=2000; [ "$mode" = smoke ] && n=64
sleep 11; before=$(wal_syncs)
out=$("$BENCH" --endpoint "${endpoint[pg1]}" --json --bucket flushes --workload put --size 4K --count "$n" --concurrency 16)
sleep 11; after=$(wal_syncs)
python3 -c 'import json, sys; ops = json.loads(sys.argv[1])["ops"]
print(f"WAL flushes per small PUT on PostgreSQL: {(int(sys.argv[3]) - int(sys.argv[2])) / ops:.2f} ({ops} PUTs, 16 in flight)")' \
  "$out" "$before" "$after" >"$W/flushes"
python3 - "$results" "$mode" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
cases = list(dict.fromkeys(r["case"] for r in rows))
med = lambda c, s, f: statistics.median([r[f] for r in rows if r["case"] == c and r["server"] == s])
print(f"mode: {sys.argv[2]}; medians over rounds; throughput MiB/s, ops/s, p99 ms; ratio to rocksdb")
print(f"{'case':<10} {'engine':<8} {'MiB/s':>9} {'ops/s':>9} {'p99 ms':>8} {'ratio':>7}")
for c in cases:
    base = med(c, "rocksdb", "ops_per_sec")
    for s in ("rocksdb", "pg1", "pg3"):
        o = med(c, s, "ops_per_sec")
        print(f"{c:<10} {s:<8} {med(c, s, 'mib_per_sec'):9.1f} {o:9.1f} {med(c, s, 'p99_ms'):8.2f} {o / base:6.2f}x")
PY
cat "$W/flushes"
