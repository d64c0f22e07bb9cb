#!/usr/bin/env bash
# The aws cli (v2, Debian) against a TLS listener (tls_cert/tls_key), trusting the test CA:
# mb, cp 20 MiB (multipart), ls, cp back, compare, rm, rb. Plain HTTP to the TLS port is refused.
export COMPAT_TLS=1
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
