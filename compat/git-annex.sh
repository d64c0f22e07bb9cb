#!/usr/bin/env bash
# git-annex (Debian's) with S3 special remotes, the storage DataLad's datasets use: its own
# `git annex testremote` battery (stores, retrieves, checks presence, removes, resumes and
# corrupts content, in chunks and whole, and the export tree) over the remote's S3 client (the
# Haskell `aws` library), then a file added, copied to the bucket, dropped, fetched back and
# checked. Signed with SigV2 (git-annex's default) on the gateway's port, and with SigV4 on port
# 80 in a network namespace of its own: the library signs the Host without its port and names
# the endpoint's host name as the region, so SigV4 works only on a default port, where a
# scope that names no region is verified as the client named it.
source "$(dirname "$0")/lib.sh"
command -v git-annex >/dev/null || fail "git-annex not installed (apt-get install git-annex)"
command -v unshare >/dev/null || fail "unshare not installed (util-linux)"

repo() { # dir: a repository with annex enabled, allowed to reach the loopback address
  git init -q "$1"
  git -C "$1" config user.email compat@penstock.test
  git -C "$1" config user.name compat
  git -C "$1" config annex.security.allowed-ip-addresses all
  (cd "$1" && git annex init -q compat) || fail "git annex init"
}

# A file added, copied to remote $2, dropped here, fetched back and checked there; in repo $1.
round_trip() {
  local dir=$1 remote=$2
  head -c $((3 * 1024 * 1024 + 17)) /dev/urandom >"$dir/data.bin"
  local sum; sum=$(sha256sum <"$dir/data.bin")
  (
    cd "$dir"
    git annex add -q data.bin && git commit -q -m data
    git annex copy -q --to "$remote" data.bin
    git annex drop -q data.bin
    [ ! -e data.bin ] || exit 1
    git annex get -q --from "$remote" data.bin
    git annex fsck -q --from "$remote" data.bin
  ) || fail "add, copy, drop, get and fsck through $remote"
  [ "$(sha256sum <"$dir/data.bin")" = "$sum" ] || fail "the file fetched from $remote differs"
}

step "SigV2: initremote (chunks of 1 MiB)"
repo "$WORK/v2"
(cd "$WORK/v2" && git annex initremote -q pv2 type=S3 encryption=none host=127.0.0.1 port="$PORT" \
  protocol=http requeststyle=path bucket=annex-v2 chunk=1MiB) >"$WORK/v2.log" 2>&1 \
  || { cat "$WORK/v2.log"; fail "initremote (SigV2)"; }
step "SigV2: testremote (its full battery)"
(cd "$WORK/v2" && git annex testremote pv2) >"$WORK/v2.log" 2>&1 || { tail -n 40 "$WORK/v2.log"; fail "testremote (SigV2)"; }
grep -E "^All [0-9]+ tests passed" "$WORK/v2.log" || { tail -n 40 "$WORK/v2.log"; fail "testremote (SigV2) printed no summary"; }
step "SigV2: add, copy, drop, get, fsck"
round_trip "$WORK/v2" pv2

# SigV4: a gateway on 127.0.0.1:80 in a network namespace with only a loopback device, and the
# quick battery there (whole objects this time).
step "SigV4 on port 80: a gateway in a network namespace"
cat >"$WORK/v4.sh" <<EOF
set -euo pipefail
ip link set lo up
PENSTOCK_ACCESS_KEY=\$AWS_ACCESS_KEY_ID PENSTOCK_SECRET_KEY=\$AWS_SECRET_ACCESS_KEY \
  "$PENSTOCK_BIN" serve --data-dir "$WORK/data80" --listen 127.0.0.1:80 \
  --admin-listen 127.0.0.1:81 >"$WORK/gateway80.log" 2>&1 &
gw=\$!
trap 'kill \$gw 2>/dev/null || true' EXIT
for _ in \$(seq 1 200); do (exec 3<>/dev/tcp/127.0.0.1/80) 2>/dev/null && break; sleep 0.05; done
cd "$WORK/v4"
git annex initremote -q pv4 type=S3 encryption=none host=127.0.0.1 port=80 protocol=http \
  requeststyle=path bucket=annex-v4 signature=v4
git annex testremote --fast pv4
EOF
repo "$WORK/v4"
unshare -n bash "$WORK/v4.sh" >"$WORK/v4.log" 2>&1 || { tail -n 40 "$WORK/v4.log"; tail -n 20 "$WORK/gateway80.log"; fail "testremote (SigV4)"; }
grep -E "^All [0-9]+ tests passed" "$WORK/v4.log" || { tail -n 40 "$WORK/v4.log"; fail "testremote (SigV4) printed no summary"; }
echo "git-annex $(git annex version --raw): SigV2 and SigV4 remotes passed"
