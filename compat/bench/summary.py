"""Prints the medians table of a benchmark results file (JSON lines with server, case and the
penstock-bench report fields) and the ratios of Penstock to every peer.

usage: summary.py RESULTS MODE SERVER[,SERVER...] [FOOTER]   (the first server is Penstock)"""
import json
import statistics
import sys

path, mode, servers = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
footer = sys.argv[4] if len(sys.argv) > 4 else ""
rows = [json.loads(line) for line in open(path)]
cases = []
for r in rows:
    if r["case"] not in cases:
        cases.append(r["case"])


def med(case, server, field):
    v = [r[field] for r in rows if r["case"] == case and r["server"] == server]
    return statistics.median(v) if v else None


print(f"mode: {mode}; medians over rounds; throughput MiB/s, ops/s, p99 ms")
print(f"{'case':<12} {'server':<9} {'MiB/s':>9} {'ops/s':>9} {'p99 ms':>8}   ratio {servers[0]}/peer (MiB/s, ops/s)")
for case in cases:
    p = (med(case, servers[0], "mib_per_sec"), med(case, servers[0], "ops_per_sec"))
    for server in servers:
        m, o, lat = (med(case, server, f) for f in ("mib_per_sec", "ops_per_sec", "p99_ms"))
        if m is None:
            continue
        ratio = ""
        if server != servers[0] and o and p[1] is not None:
            # Listings move no payload: their ratio is of whole listings per second alone.
            by_bytes = f"{p[0] / m:6.2f}x" if m and p[0] else f"{'-':>7}"
            ratio = f"{by_bytes} {p[1] / o:6.2f}x"
        print(f"{case:<12} {server:<9} {m:9.1f} {o:9.1f} {lat:8.2f}   {ratio}")
if footer:
    print(footer)
