#!/usr/bin/env bash
# Token GET/PUT over the software transport against plain HTTP of the same objects into the
# same kind of registered client buffer, in one run against one Penstock, alternating A/B for
# several rounds; prints medians and token/HTTP ratios.
#
#   compat/bench/token.sh            full run (release build)
#   compat/bench/token.sh --smoke    tiny sizes, one round, debug build (CI)
source "$(dirname "$0")/common.sh"

export AWS_ACCESS_KEY_ID=PKBENCH0000000000001 AWS_SECRET_ACCESS_KEY=bench-secret-0123456789abcdefghijklmnop
W=$(mktemp -d /tmp/penstock-token-bench.XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$W"; }
trap cleanup EXIT
P=$(free_port); A=$(free_port)
PENSTOCK_ACCESS_KEY=$AWS_ACCESS_KEY_ID PENSTOCK_SECRET_KEY=$AWS_SECRET_ACCESS_KEY PENSTOCK_ADMIN_TOKEN=bench-admin RUST_LOG=warn \
  "$PENSTOCK" serve --data-dir "$W/data" --listen "127.0.0.1:$P" --admin-listen "127.0.0.1:$A" >"$W/penstock.log" 2>&1 &
pid=$!
for _ in $(seq 1 200); do (exec 3<>/dev/tcp/127.0.0.1/"$P") 2>/dev/null && break; sleep 0.05; done
EP=http://127.0.0.1:$P

if [ "$mode" = smoke ]; then cases=("get 1M 4 2" "put 1M 4 2"); dur=1
else cases=("get 16M 16 4" "get 64M 8 2" "get 1M 64 16" "put 16M 16 4"); dur=8; fi
out="$W/results.jsonl"
for c in "${cases[@]}"; do
  read -r w size count conc <<<"$c"
  "$BENCH" --endpoint "$EP" --workload put --size "$size" --count "$count" --concurrency "$conc" --prefix "o$size" >/dev/null
  for round in $(seq 1 "$rounds"); do
    for m in --buffer --token; do
      "$BENCH" --endpoint "$EP" --workload "$w" --size "$size" --count "$count" --concurrency "$conc" \
        --duration "$dur" --prefix "o$size" --json $m | python3 -c "import json,sys; d=json.load(sys.stdin); d['case']='$c'; print(json.dumps(d))" >>"$out"
    done
  done
done
python3 - "$out" "$mode" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"mode: {sys.argv[2]}; medians; MiB/s and p99 ms; transport http-into-buffer vs token-software")
bad = [r for r in rows if r["errors"]]
for case in dict.fromkeys(r["case"] for r in rows):
    med = {}
    for t in ("http-into-buffer", "token-software"):
        rs = [r for r in rows if r["case"] == case and r["transport"] == t]
        med[t] = (statistics.median(r["mib_per_sec"] for r in rs), statistics.median(r["p99_ms"] for r in rs))
    h, k = med["http-into-buffer"], med["token-software"]
    ratio = k[0] / h[0] if h[0] else float("nan")
    print(f"{case:<14} http {h[0]:9.1f} MiB/s p99 {h[1]:7.2f} | token {k[0]:9.1f} MiB/s p99 {k[1]:7.2f} | token/http {ratio:5.2f}x")
if bad:
    print("errors:", bad[0].get("first_error"))
    sys.exit(1)
PY
