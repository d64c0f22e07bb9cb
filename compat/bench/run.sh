#!/usr/bin/env bash
# Penstock against its peers on this machine, in one run: s3s-fs 0.14.1 (the s3s sample server)
# and nginx serving the same files as static files (sendfile on: the ceiling for GET over HTTP);
# PUT cases also against the disk itself (penstock-bench disk-put: the same payloads written as
# files and fsynced at the same concurrency, no server).
# Each server runs on loopback over a fresh directory; workloads alternate between servers for
# several rounds; medians and Penstock/peer ratios are printed, with peak RSS of every server.
#
#   compat/bench/run.sh            full run (release build; several minutes; needs ~8 GiB disk)
#   compat/bench/run.sh --smoke    tiny sizes, one round, debug build (CI: keeps the script alive)
source "$(dirname "$0")/common.sh"
# A smoke run measures nothing, so it takes a debug build of s3s-fs (minutes less to compile on a
# fresh machine), installed apart from the release build that full runs compare against.
s3sfs_root=$cache/s3s-fs s3sfs_profile=()
[ "$mode" = smoke ] && s3sfs_root=$cache/s3s-fs-debug s3sfs_profile=(--debug)
S3SFS="$s3sfs_root/bin/s3s-fs"
if [ ! -x "$S3SFS" ]; then
  echo "installing s3s-fs 0.14.1 into $s3sfs_root (once per machine)" >&2
  # Built in a target directory of its own, removed after: the gateway's would be locked for the
  # minutes this takes, and CI runs other scenarios meanwhile.
  cargo install s3s-fs --version 0.14.1 --features binary --locked "${s3sfs_profile[@]}" --root "$s3sfs_root" \
    --target-dir "$s3sfs_root/build" >&2
  rm -rf "$s3sfs_root/build"
fi
command -v nginx >/dev/null || { echo "nginx missing: apt-get install nginx" >&2; exit 1; }

export AWS_ACCESS_KEY_ID=PKBENCH0000000000001 AWS_SECRET_ACCESS_KEY=bench-secret-0123456789abcdefghijklmnop
W=$(mktemp -d /tmp/penstock-bench.XXXXXX)
chmod 755 "$W"  # nginx workers run unprivileged
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$W"; }
trap cleanup EXIT
wait_port() { for _ in $(seq 1 200); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.05; done; echo "port $1 never opened" >&2; return 1; }

P_PORT=$(free_port); P_ADMIN=$(free_port)
PENSTOCK_ACCESS_KEY=$AWS_ACCESS_KEY_ID PENSTOCK_SECRET_KEY=$AWS_SECRET_ACCESS_KEY PENSTOCK_ADMIN_TOKEN=bench-admin RUST_LOG=warn \
  "$PENSTOCK" serve --data-dir "$W/penstock" --listen "127.0.0.1:$P_PORT" --admin-listen "127.0.0.1:$P_ADMIN" >"$W/penstock.log" 2>&1 &
pids+=($!); P_PID=$!
S_PORT=$(free_port); mkdir -p "$W/s3sfs"
"$S3SFS" --host 127.0.0.1 --port "$S_PORT" --access-key "$AWS_ACCESS_KEY_ID" --secret-key "$AWS_SECRET_ACCESS_KEY" "$W/s3sfs" >"$W/s3sfs.log" 2>&1 &
pids+=($!); S_PID=$!
N_PORT=$(free_port); mkdir -p "$W/nginx-root" "$W/nginx-tmp"
cat >"$W/nginx.conf" <<CONF
daemon off;
worker_processes 2;
pid $W/nginx.pid;
error_log $W/nginx-error.log;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 100000;
  client_body_temp_path $W/nginx-tmp;
  proxy_temp_path $W/nginx-tmp;
  fastcgi_temp_path $W/nginx-tmp;
  uwsgi_temp_path $W/nginx-tmp;
  scgi_temp_path $W/nginx-tmp;
  server { listen 127.0.0.1:$N_PORT; root $W/nginx-root; }
}
CONF
nginx -c "$W/nginx.conf" -p "$W" &
pids+=($!); N_PID=$!
wait_port "$P_PORT"; wait_port "$S_PORT"; wait_port "$N_PORT"

results="${BENCH_RESULTS:-$cache/bench-results.jsonl}"
: >"$results"
bench() { # server label, endpoint, extra args...
  local label=$1 endpoint=$2; shift 2
  local out
  out=$("$BENCH" --endpoint "$endpoint" --json "$@" 2>"$W/bench.err") || { echo "bench failed for $label ($case): $out $(tail -n 5 "$W/bench.err")" >&2; exit 1; }
  echo "{\"server\":\"$label\",\"round\":$round,\"case\":\"$case\",$(echo "$out" | cut -c2-)" >>"$results"
}

if [ "$mode" = smoke ]; then
  cases=("get-16m|GET|64K|8|4" "put-16m|PUT|64K|16|4" "put-16m-new|PUT|64K|16|4" "get-1g|GET|256K|2|2" "small-put|PUT|4K|64|16" "small-get|GET|4K|64|16" "list-dir|LIST|100|2500|1")
else
  cases=("get-16m|GET|16M|32|8" "put-16m|PUT|16M|32|8" "put-16m-new|PUT|16M|256|8" "get-1g|GET|1G|2|2" "small-put|PUT|4K|2000|16" "small-get|GET|4K|2000|16" "list-dir|LIST|100|50000|1")
fi
if [ -n "$only" ]; then
  kept=(); for c in "${cases[@]}"; do [ "${c%%|*}" = "$only" ] && kept+=("$c"); done
  [ ${#kept[@]} -gt 0 ] || { echo "no case named $only" >&2; exit 2; }
  cases=("${kept[@]}")
fi

# Populate the GET sets once per server; nginx serves Penstock's folder of the same bucket.
# The LIST set is a directory of files written beside the servers, as a compute session writes
# them: in Penstock's folder, in s3s-fs's bucket directory, and for the disk reference.
declare -A folders
populate_dir() { # directory, count, size
  python3 -c 'import os, sys
d, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(d, exist_ok=True)
for i in range(n):
    with open(os.path.join(d, f"f{i:08d}"), "wb") as f:
        f.write(b"x" * size)' "$1" "$2" "$3"
}
for c in "${cases[@]}"; do
  IFS='|' read -r case op size count conc <<<"$c"
  [ "$op" = GET ] || [ "$op" = LIST ] || continue
  populated=$count; [ "$op" = LIST ] && populated=1  # the bucket, with one object outside the listed directory
  for ep in "http://127.0.0.1:$P_PORT" "http://127.0.0.1:$S_PORT"; do
    "$BENCH" --endpoint "$ep" --bucket "$case" --workload head --populate --size "$size" --count "$populated" --concurrency 2 >/dev/null
  done
  folder=$("$PENSTOCK" admin --url "http://127.0.0.1:$P_ADMIN" --token bench-admin --json vfolder list | python3 -c "
import json, sys
b = next(b for b in json.load(sys.stdin) if b['name'] == '$case')
scope = b['quota_scope'].split(':')[1].replace('-', '')
fid = b['folder_id'].replace('-', '')
print(f'$W/penstock/volumes/local/{scope}/{fid[:2]}/{fid[2:4]}/{fid[4:]}')")
  ln -sfn "$folder" "$W/nginx-root/$case"
  folders[$case]=$folder
  if [ "$op" = LIST ]; then
    for d in "$folder/files" "$W/s3sfs/$case/files" "$W/disk/$case"; do populate_dir "$d" "$count" "$size"; done
  fi
done

run_on() { # server, then the case's bench arguments
  case $1 in
    penstock) bench penstock "http://127.0.0.1:$P_PORT" "${@:2}" ;;
    s3s-fs) bench s3s-fs "http://127.0.0.1:$S_PORT" "${@:2}" ;;
    nginx) bench nginx "http://127.0.0.1:$N_PORT" --anonymous "${@:2}" ;;
    # The disk's own limit for the same PUT payloads: files written and fsynced (no server).
    disk) bench disk "http://127.0.0.1:9" --dir "$W/disk/$case" "${@:2}" ;;
  esac
}
for round in $(seq 1 "$rounds"); do
  for c in "${cases[@]}"; do
    IFS='|' read -r case op size count conc <<<"$c"
    w=$(echo "$op" | tr 'A-Z' 'a-z')
    dur=(); [ "$mode" = full ] && [ "$case" != get-1g ] && [ "$case" != put-16m-new ] && dur=(--duration 8)
    # put-16m-new writes keys no round wrote before (one pass), so no upload replaces a file.
    fresh=(); [ "$case" = put-16m-new ] && fresh=(--prefix "round$round")
    servers=(penstock s3s-fs); [ "$op" = GET ] && servers+=(nginx); [ "$op" = PUT ] || [ "$op" = LIST ] && servers+=(disk)
    # Who goes first rotates per round, so no server always runs right after a PUT case.
    for i in "${!servers[@]}"; do
      s=${servers[$(( (i + round) % ${#servers[@]} ))]}
      # Earlier writes are flushed first: a case must not pay for the previous case's writeback.
      sync
      # GETs are measured from the page cache for every server alike: this machine reclaims
      # cold pages (DAMON), so whoever ran first after a PUT case used to read from disk.
      if [ "$op" = GET ]; then
        if [ "$s" = s3s-fs ]; then warm="$W/s3sfs/$case"; else warm=${folders[$case]}; fi
        find "$warm" -type f -exec cat {} + >/dev/null
      fi
      listing=()
      if [ "$op" = LIST ]; then
        # Every server lists from the dentry and inode caches alike.
        for d in "${folders[$case]}/files" "$W/s3sfs/$case/files" "$W/disk/$case"; do find "$d" -mindepth 1 -printf '%s\n' >/dev/null; done
        wl=list-all; [ "$s" = disk ] && wl=disk-list
        listing=(--prefix files/)
      else
        wl=$w; [ "$s" = disk ] && wl=disk-put
      fi
      run_on "$s" --bucket "$case" --workload "$wl" --size "$size" --count "$count" --concurrency "$conc" "${dur[@]}" "${fresh[@]}" "${listing[@]}"
      if [ ${#fresh[@]} -gt 0 ] && [ "$s" = disk ]; then
        rm -f "$W/disk/$case/round$round"-*
      elif [ ${#fresh[@]} -gt 0 ]; then  # not measured: frees the disk space for the next rounds
        ep=http://127.0.0.1:$P_PORT; [ "$s" = s3s-fs ] && ep=http://127.0.0.1:$S_PORT
        "$BENCH" --endpoint "$ep" --bucket "$case" --workload delete --count "$count" --concurrency 4 "${fresh[@]}" >/dev/null
      fi
    done
  done
done

rss() { awk '/VmHWM/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
whole_rss=$(rss $P_PID)
# 64 concurrent GETs of the largest objects: the gateway's memory must stay bounded. Its peak
# is reset first (clear_refs 5) so this phase's own peak is measured, not the PUT phases'.
if [ "$mode" = full ]; then many=(--size 1G --count 2 --concurrency 64 --duration 15); else many=(--size 256K --count 2 --concurrency 64); fi
x64_rss=
if [ -z "$only" ] || [ "$only" = get-1g ]; then
  sync
  find "${folders[get-1g]}" -type f -exec cat {} + >/dev/null
  echo 5 >"/proc/$P_PID/clear_refs"
  round=0 case=get-1g-x64 bench penstock "http://127.0.0.1:$P_PORT" --bucket get-1g --workload get "${many[@]}"
  x64_rss=", penstock during get-1g-x64 $(rss $P_PID)"
  whole_rss=$(( $(rss $P_PID) > whole_rss ? $(rss $P_PID) : whole_rss ))
fi

nginx_rss=0; for p in $(pgrep -f "nginx.*$W/nginx.conf" || true); do nginx_rss=$((nginx_rss + $(rss "$p"))); done
python3 "$root/compat/bench/summary.py" "$results" "$mode" penstock,s3s-fs,nginx,disk \
  "peak RSS (KiB): penstock $whole_rss, s3s-fs $(rss $S_PID), nginx (all processes) $nginx_rss$x64_rss"
