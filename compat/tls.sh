#!/usr/bin/env bash
# The aws cli (v2, Debian) against a TLS listener (tls_cert/tls_key), trusting the test CA:
# mb, cp 20 MiB (multipart), ls, cp back, compare, rm, rb. Plain HTTP to the TLS port is refused.
# Then certificate renewal without a restart: a broken certificate file and SIGHUP leave the
# served certificate as it was; a new pair put in place and SIGHUP is what new connections are
# shown; a second gateway that polls its files (tls_reload_interval_secs) takes a renewal without
# a signal. This gateway polls hourly, so only its SIGHUP can explain what it serves.
export COMPAT_TLS=1
export COMPAT_CONFIG='tls_reload_interval_secs = 3600'
source "$(dirname "$0")/lib.sh"
AWS=/usr/bin/aws
[ -x "$AWS" ] || fail "aws cli v2 missing (apt-get install awscli)"
aws_() { "$AWS" --endpoint-url "$ENDPOINT" --ca-bundle "$CA_FILE" "$@"; }
head -c $((20 << 20)) /dev/urandom >"$WORK/f"
aws_ s3 mb s3://tlsbucket >/dev/null || fail "mb"
aws_ s3 cp "$WORK/f" s3://tlsbucket/f >/dev/null || fail "cp up"
aws_ s3 ls s3://tlsbucket | has " f$" || fail "ls"
aws_ s3 cp s3://tlsbucket/f "$WORK/g" >/dev/null || fail "cp down"
cmp "$WORK/f" "$WORK/g" || fail "bytes differ"
aws_ s3 rm s3://tlsbucket/f >/dev/null && aws_ s3 rb s3://tlsbucket >/dev/null || fail "rm/rb"
if curl -sf "http://127.0.0.1:$PORT/" -o /dev/null 2>/dev/null; then fail "plain HTTP accepted on the TLS port"; fi
step "aws cli v2 over TLS: mb/cp/ls/cp/cmp/rm/rb"

# --- Certificate renewal without a restart ---
# The SHA-256 fingerprint of the certificate a new connection to port $1 is shown, and of file $1.
served_fp() {
  openssl s_client -connect "127.0.0.1:$1" -servername localhost </dev/null 2>/dev/null |
    openssl x509 -noout -fingerprint -sha256 2>/dev/null | cut -d= -f2
}
file_fp() { openssl x509 -in "$1" -noout -fingerprint -sha256 | cut -d= -f2; }
# A new self-signed pair for localhost at $1.pem and $1.key.
new_pair() {
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=localhost renewed $RANDOM" \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -keyout "$1.key" -out "$1.pem" 2>/dev/null
}
# Puts a copy of $1 at $2 by a rename, as deployment tools replace files.
swap_in() { cp "$1" "$2.tmp" && mv "$2.tmp" "$2"; }
# Waits up to 10 s for port $1 to show the certificate with fingerprint $2.
await_fp() {
  for _ in $(seq 1 100); do [ "$(served_fp "$1")" = "$2" ] && return 0; sleep 0.1; done
  return 1
}

cp "$CA_FILE" "$WORK/first.pem"
first=$(file_fp "$WORK/first.pem")
[ "$(served_fp "$PORT")" = "$first" ] || fail "the listener does not show tls_cert"

# A renewal that broke half-way: the certificate file cut short.
head -c 300 "$WORK/first.pem" >"$CA_FILE"
kill -HUP "$GW_PID"
sleep 1
kill -0 "$GW_PID" 2>/dev/null || fail "SIGHUP ended the gateway"
[ "$(served_fp "$PORT")" = "$first" ] || fail "a broken certificate file changed what is served"
grep -q "TLS certificate not reloaded" "$WORK/gateway.log" || fail "no warning for the broken certificate"
"$AWS" --endpoint-url "$ENDPOINT" --ca-bundle "$WORK/first.pem" s3 ls >/dev/null ||
  fail "requests failed after a broken renewal"
step "a broken certificate file and SIGHUP: still served the previous certificate, warned"

new_pair "$WORK/second"
swap_in "$WORK/second.key" "$WORK/key.pem"
swap_in "$WORK/second.pem" "$CA_FILE"
kill -HUP "$GW_PID"
await_fp "$PORT" "$(file_fp "$WORK/second.pem")" || fail "SIGHUP did not serve the renewed certificate"
"$AWS" --endpoint-url "$ENDPOINT" --ca-bundle "$WORK/second.pem" s3 ls >/dev/null ||
  fail "requests trusting the renewed certificate failed"
if "$AWS" --endpoint-url "$ENDPOINT" --ca-bundle "$WORK/first.pem" s3 ls >/dev/null 2>&1; then
  fail "a new connection was still shown the old certificate"
fi
grep -q "TLS certificate reloaded" "$WORK/gateway.log" || fail "the reload was not logged"
step "a renewed pair and SIGHUP: new connections shown the new certificate, no restart"

# A gateway that polls its files every half second takes a renewal without a signal.
mkdir -p "$WORK/poll"
cp "$WORK/second.pem" "$WORK/poll/tls.pem"
cp "$WORK/second.key" "$WORK/poll/tls.key"
printf 'tls_cert = "%s"\ntls_key = "%s"\ntls_reload_interval_secs = 0.5\n' \
  "$WORK/poll/tls.pem" "$WORK/poll/tls.key" >"$WORK/poll/penstock.toml"
poll_port=$(free_port)
"$PENSTOCK_BIN" serve --config "$WORK/poll/penstock.toml" --data-dir "$WORK/poll/data" \
  --listen "127.0.0.1:$poll_port" --admin-listen "127.0.0.1:$(free_port)" >"$WORK/poll/gateway.log" 2>&1 &
CLEANUP_HOOKS+=("kill $! 2>/dev/null")
await_fp "$poll_port" "$(file_fp "$WORK/second.pem")" || fail "the polling gateway did not start"
new_pair "$WORK/third"
swap_in "$WORK/third.key" "$WORK/poll/tls.key"
swap_in "$WORK/third.pem" "$WORK/poll/tls.pem"
await_fp "$poll_port" "$(file_fp "$WORK/third.pem")" || fail "the polling gateway did not take the renewal"
step "a gateway polling its files: the renewal served within a second, no signal"
