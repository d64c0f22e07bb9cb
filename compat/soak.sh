#!/usr/bin/env bash
# Soak: 64 clients mixing every operation (penstock-bench --workload soak: verified GETs, HEADs,
# overwrites, listings, PUT+DELETE and multipart uploads read back) for SOAK_SECS seconds (default
# 600; CI runs 60), sampling the gateway's RSS and open descriptors every 5 s.
# Passes with 0 errors, RSS flat (the second half's peak at most 1.15x the first half's + 16 MiB;
# the 30-minute run plateaus at ~150 MiB once RocksDB's capped memtables and block cache are full)
# and descriptors bounded. SOAK_OUT=file also writes the samples there (CSV).
source "$(dirname "$0")/lib.sh"
SECS=${SOAK_SECS:-600}
BENCH=${PENSTOCK_BENCH:-$(dirname "$PENSTOCK_BIN")/penstock-bench}
[ -x "$BENCH" ] || fail "$BENCH missing; build with cargo build -p penstock-client"
samples="$WORK/samples.csv"
echo "elapsed_s,rss_kib,fds" >"$samples"
sample() {
  local t=0
  while kill -0 "$GW_PID" 2>/dev/null; do
    local rss fds
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$GW_PID/status" 2>/dev/null || echo 0)
    fds=$(ls "/proc/$GW_PID/fd" 2>/dev/null | wc -l)
    echo "$t,$rss,$fds" >>"$samples"
    sleep 5; t=$((t + 5))
  done
}
step "populate 256 objects of 256 KiB"
"$BENCH" --endpoint "$ENDPOINT" --bucket soak --workload head --size 256K --count 256 --populate >/dev/null
sample & SAMPLER=$!
CLEANUP_HOOKS+=("kill $SAMPLER 2>/dev/null")
step "soak: 64 clients for $SECS s"
"$BENCH" --endpoint "$ENDPOINT" --bucket soak --workload soak --size 256K --count 256 \
  --concurrency 64 --duration "$SECS" --json >"$WORK/report.json" || true
kill "$SAMPLER" 2>/dev/null || true
[ -n "${SOAK_OUT:-}" ] && cp "$samples" "$SOAK_OUT"
python3 - "$WORK/report.json" "$samples" <<'PY' || fail "soak criteria not met"
import csv, json, sys
r = json.load(open(sys.argv[1]))
rows = [(int(a), int(b), int(c)) for a, b, c in list(csv.reader(open(sys.argv[2])))[1:]]
half = max(1, len(rows) // 2)
first = max(b for _, b, _ in rows[:half]) / 1024
second = max(b for _, b, _ in rows[half:] or rows) / 1024
fds = max(c for _, _, c in rows)
print(f"  soak: {r['seconds']:.0f} s, {r['ops']} ops ({r['ops_per_sec']:.0f}/s), {r['errors']} errors, "
      f"p99 {r['p99_ms']:.1f} ms; RSS peak {first:.1f} MiB (first half) -> {second:.1f} MiB (second half); "
      f"open fds max {fds}")
ok = True
if r["errors"]:
    print(f"  errors: {r['errors']}, first: {r['first_error']}"); ok = False
if second > first * 1.15 + 16:
    print("  RSS grew in the second half"); ok = False
if fds > 64 + 200:
    print("  descriptors exceed connections + 200"); ok = False
sys.exit(0 if ok else 1)
PY
echo "PASS: soak"
