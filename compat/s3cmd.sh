#!/usr/bin/env bash
# s3cmd (PyPI) with its default bucket_location (US, which it also signs for: the gateway's
# AuthorizationHeaderMalformed names the region and s3cmd resends there): mb, put (single and
# multipart), ls, la, info, get, sync both ways, cp, mv, modify, du, signurl, setpolicy,
# expire/getlifecycle, del, rb.
source "$(dirname "$0")/lib.sh"
command -v s3cmd >/dev/null || fail "s3cmd not installed (pip install s3cmd)"
host=${ENDPOINT#http://}
cat >"$WORK/s3cfg" <<CFG
[default]
access_key = $AWS_ACCESS_KEY_ID
secret_key = $AWS_SECRET_ACCESS_KEY
host_base = $host
host_bucket = $host
use_https = False
CFG
grep -q "bucket_location" "$WORK/s3cfg" && fail "the config must keep s3cmd's default bucket_location"
s3c() { s3cmd -c "$WORK/s3cfg" "$@"; }
B=s3cmd-$RANDOM
step mb; s3c mb "s3://$B" >/dev/null
mkdir -p "$WORK/up/sub"
for i in 1 2 3; do head -c $((i * 1000)) /dev/urandom >"$WORK/up/f$i"; done
head -c 5000 /dev/urandom >"$WORK/up/sub/deep"
head -c $((18 * 1024 * 1024)) /dev/urandom >"$WORK/big"
step "put multipart"; s3c put --multipart-chunk-size-mb=5 "$WORK/big" "s3://$B/big" >/dev/null
step info
s3c info "s3://$B/big" >"$WORK/info"
grep -q "File size: $((18 * 1024 * 1024))" "$WORK/info" || fail "info: $(cat "$WORK/info")"
step get; s3c get "s3://$B/big" "$WORK/big.back" >/dev/null
cmp "$WORK/big" "$WORK/big.back" || fail "multipart object read back differs"
step "sync up"; s3c sync "$WORK/up/" "s3://$B/tree/" >/dev/null
n=$(s3c ls -r "s3://$B/tree/" | wc -l)
[ "$n" -eq 4 ] || fail "ls -r shows $n objects, expected 4"
s3c la | has "s3://$B/big" || fail "la does not list the bucket's objects"
step "sync down"; s3c sync "s3://$B/tree/" "$WORK/down/" >/dev/null
diff -r "$WORK/up" "$WORK/down" || fail "synced tree differs"
step "cp, mv"; s3c cp "s3://$B/tree/f1" "s3://$B/copy" >/dev/null
s3c mv "s3://$B/copy" "s3://$B/moved" >/dev/null
s3c get "s3://$B/moved" "$WORK/moved" >/dev/null
cmp "$WORK/up/f1" "$WORK/moved" || fail "moved object differs"
s3c ls "s3://$B/copy" | has . && fail "mv left its source"
step modify; s3c modify --add-header="Cache-Control: max-age=60" "s3://$B/moved" >/dev/null
aws --endpoint-url "$ENDPOINT" s3api head-object --bucket "$B" --key moved | has '"CacheControl": "max-age=60"' \
  || fail "modify did not set Cache-Control"
step signurl
url=$(s3c signurl "s3://$B/moved" +300)
curl -sf "$url" -o "$WORK/signed" || fail "signed URL refused"
cmp "$WORK/up/f1" "$WORK/signed" || fail "signed URL served other bytes"
step setpolicy
printf '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::%s/tree/*"}]}' "$B" >"$WORK/policy.json"
s3c setpolicy "$WORK/policy.json" "s3://$B" >/dev/null
curl -sf "$ENDPOINT/$B/tree/f2" -o "$WORK/public" || fail "policy did not make tree/ public"
cmp "$WORK/up/f2" "$WORK/public" || fail "public read served other bytes"
s3c delpolicy "s3://$B" >/dev/null
step lifecycle; s3c expire "s3://$B" --expiry-days=30 >/dev/null
s3c getlifecycle "s3://$B" | has "<Days>30</Days>" || fail "expiry rule not read back"
s3c dellifecycle "s3://$B" >/dev/null
step du; s3c du "s3://$B" | has "6 objects" || fail "du: $(s3c du "s3://$B")"
step "del, rb"; s3c del --recursive --force "s3://$B" >/dev/null
s3c rb "s3://$B" >/dev/null
s3c ls | has "s3://$B" && fail "bucket still listed after rb"
echo "PASS: s3cmd"
