# Starts a scale-out Penstock on this machine: PostgreSQL (Debian's packages, a scratch cluster
# owned by an unprivileged user), N gateways on one shared POSIX volume, nginx balancing over
# them. Sourced by scripts/cluster (interactive) and compat/cluster.sh (the compat scenario).
#
# Inputs:  PENSTOCK_BIN (the binary), CLUSTER_DIR (an empty directory), CLUSTER_GATEWAYS (default
#          3), CLUSTER_PORT (balancer port; default a free one), AWS_ACCESS_KEY_ID and
#          AWS_SECRET_ACCESS_KEY (the bootstrap keypair; default generated).
# Outputs: ENDPOINT (the balancer), GATEWAY_ENDPOINTS (array), ADMIN_ENDPOINTS (array),
#          CLUSTER_ADMIN_TOKEN (every gateway's admin API token), PG_URL, cluster_stop
#          (function), CLUSTER_PIDS.
# shellcheck shell=bash

cluster_free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

cluster_start() {
  local n=${CLUSTER_GATEWAYS:-3} d=$CLUSTER_DIR
  command -v nginx >/dev/null || { echo "nginx missing: apt-get install nginx" >&2; return 1; }
  local pgbin
  pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -x "$pgbin/initdb" ] || { echo "PostgreSQL missing: apt-get install postgresql" >&2; return 1; }
  mkdir -p "$d/pg" "$d/volume" "$d/nginx-tmp"
  chmod 755 "$d"
  # PostgreSQL refuses to run as root: as root the cluster belongs to the package's postgres user.
  local as=()
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres "$d/pg"
    as=(runuser -u postgres --)
  fi
  local pg_port
  pg_port=$(cluster_free_port)
  "${as[@]}" "$pgbin/initdb" -D "$d/pg/data" -U penstock -A trust -E UTF8 >"$d/pg/initdb.log" 2>&1 ||
    { cat "$d/pg/initdb.log" >&2; return 1; }
  "${as[@]}" "$pgbin/pg_ctl" -D "$d/pg/data" -l "$d/pg/postgres.log" -w \
    -o "-p $pg_port -c listen_addresses=127.0.0.1 -k $d/pg -c max_connections=200" start >/dev/null ||
    { cat "$d/pg/postgres.log" >&2; return 1; }
  CLUSTER_PG_STOP=("${as[@]}" "$pgbin/pg_ctl" -D "$d/pg/data" -m fast -w stop)
  "${as[@]}" "$pgbin/createdb" -h 127.0.0.1 -p "$pg_port" -U penstock penstock
  PG_URL="postgres://penstock@127.0.0.1:$pg_port/penstock"

  : "${AWS_ACCESS_KEY_ID:=PK$(head -c 1024 /dev/urandom | tr -dc 'A-Z0-9' | head -c 18)}"
  : "${AWS_SECRET_ACCESS_KEY:=$(head -c 1024 /dev/urandom | tr -dc 'A-Za-z0-9' | head -c 40)}"
  export AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
  local master
  master=$(head -c 32 /dev/urandom | base64)
  : "${CLUSTER_ADMIN_TOKEN:=$(head -c 1024 /dev/urandom | tr -dc 'a-z0-9' | head -c 40)}"
  export CLUSTER_ADMIN_TOKEN
  cat >"$d/penstock.toml" <<TOML
master_key = "$master"
admin_token = "$CLUSTER_ADMIN_TOKEN"
default_volume = "shared"
[[volumes]]
name = "shared"
backend = "posix"
path = "$d/volume"
[metadata]
engine = "postgres"
url = "$PG_URL"
pool_size = 16
TOML
  GATEWAY_ENDPOINTS=(); ADMIN_ENDPOINTS=(); CLUSTER_PIDS=()
  local upstream="" i port admin
  for i in $(seq 1 "$n"); do
    port=$(cluster_free_port); admin=$(cluster_free_port)
    PENSTOCK_ACCESS_KEY=$AWS_ACCESS_KEY_ID PENSTOCK_SECRET_KEY=$AWS_SECRET_ACCESS_KEY \
      "$PENSTOCK_BIN" serve --config "$d/penstock.toml" --data-dir "$d/gw$i" \
      --listen "127.0.0.1:$port" --admin-listen "127.0.0.1:$admin" >"$d/gw$i.log" 2>&1 &
    CLUSTER_PIDS+=($!)
    GATEWAY_ENDPOINTS+=("http://127.0.0.1:$port"); ADMIN_ENDPOINTS+=("http://127.0.0.1:$admin")
    upstream+="    server 127.0.0.1:$port;"$'\n'
  done
  local lb_port=${CLUSTER_PORT:-$(cluster_free_port)}
  # Streaming both ways (no buffering of bodies, so multi-GiB PUTs and GETs pass straight
  # through), the client's Host kept (it is part of every SigV4 signature), keep-alive upstream.
  cat >"$d/nginx.conf" <<CONF
worker_processes 2;
events { worker_connections 4096; }
pid $d/nginx.pid;
error_log $d/nginx-error.log;
http {
$(for k in client_body proxy fastcgi uwsgi scgi; do echo "  ${k}_temp_path $d/nginx-tmp;"; done)
  access_log off;
  upstream penstock {
    least_conn;
$upstream    keepalive 64;
  }
  server {
    listen 127.0.0.1:$lb_port;
    client_max_body_size 0;
    location / {
      proxy_pass http://penstock;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host \$http_host;
      proxy_request_buffering off;
      proxy_buffering off;
      proxy_read_timeout 300s;
      proxy_send_timeout 300s;
    }
  }
}
CONF
  nginx -c "$d/nginx.conf" -p "$d" -g 'daemon off;' >"$d/nginx.out" 2>&1 &
  CLUSTER_PIDS+=($!)
  ENDPOINT="http://127.0.0.1:$lb_port"
  export ENDPOINT PG_URL
  local e
  for e in "${GATEWAY_ENDPOINTS[@]}" "$ENDPOINT"; do
    for _ in $(seq 1 300); do
      curl -s -o /dev/null "$e" && break
      sleep 0.1
    done
    curl -s -o /dev/null "$e" || { echo "$e did not come up" >&2; tail -n 20 "$d"/gw*.log >&2; return 1; }
  done
}

cluster_stop() {
  local p
  for p in "${CLUSTER_PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  for p in "${CLUSTER_PIDS[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null || true; done
  [ -n "${CLUSTER_PG_STOP[*]:-}" ] && "${CLUSTER_PG_STOP[@]}" >/dev/null 2>&1 || true
}
