#!/usr/bin/env bash
# libs3's `s3` tool (Debian's libs3-2: the C client library, SigV2 header signing and query
# strings): create, put with every attribute it sends (an `Expires` written `... UTC`, which S3
# keeps as text), Content-MD5 checked both ways, head, get with ranges and conditions, listings
# paged by marker and rolled up by delimiter, copies replacing metadata, ACLs, logging status,
# a signed query string, delete.
source "$(dirname "$0")/lib.sh"
command -v s3 >/dev/null || fail "libs3's s3 tool missing: scripts/install-deps.sh test installs libs3-2"
export S3_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID S3_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY S3_HOSTNAME=${ENDPOINT#http://}
s3u() { s3 -u -r 0 "$@"; }
B=libs3-$RANDOM
step create; s3u create "$B" >/dev/null || fail "create"
s3u test "$B" | has "$B" || fail "test does not find the bucket"
head -c 3000000 /dev/urandom >"$WORK/f"
step "put with attributes"
s3u put "$B/dir/f" filename="$WORK/f" contentType=text/plain cacheControl=no-cache \
  contentDispositionFilename="a b.txt" expires=2030-01-01T00:00:00 x-amz-meta-team=vision >/dev/null 2>"$WORK/err" \
  || fail "put: $(cat "$WORK/err")"
grep -q ERROR "$WORK/err" && fail "put: $(cat "$WORK/err")"
s3u head "$B/dir/f" >"$WORK/head" || fail "head"
grep -q 'Content-Type: text/plain' "$WORK/head" && grep -q 'x-amz-meta-team: vision' "$WORK/head" \
  || fail "head: $(cat "$WORK/head")"
aws --endpoint-url "$ENDPOINT" s3api head-object --bucket "$B" --key dir/f >"$WORK/head.json"
grep -q '"CacheControl": "no-cache"' "$WORK/head.json" && grep -q 'filename=\\"a b.txt\\"' "$WORK/head.json" \
  && grep -q '"ExpiresString": "Tue, 01 Jan 2030 00:00:00 UTC"' "$WORK/head.json" \
  || fail "attributes not kept: $(cat "$WORK/head.json")"
step "Content-MD5"
md5=$(openssl md5 -binary "$WORK/f" | base64)
s3u put "$B/md5" filename="$WORK/f" md5="$md5" >/dev/null 2>&1 || fail "put with its MD5"
head -c 1000 /dev/urandom >"$WORK/other"
s3u put "$B/bad" filename="$WORK/other" md5="$md5" 2>&1 | has ErrorBadDigest || fail "a wrong MD5 was taken"
# (The tool exits 0 after an error answer; what it prints is what counts.)
s3u head "$B/bad" 2>&1 | has "HttpErrorNotFound\|ErrorNoSuchKey" || fail "a refused put left an object"
step "get, ranges, conditions"
s3u get "$B/dir/f" filename="$WORK/back" || fail get
cmp "$WORK/f" "$WORK/back" || fail "read back differs"
s3u get "$B/dir/f" filename="$WORK/range" startByte=1000 byteCount=500 || fail "ranged get"
cmp <(tail -c +1001 "$WORK/f" | head -c 500) "$WORK/range" || fail "range differs"
etag=$(sed -n 's/^ETag: //p' "$WORK/head")
s3u get "$B/dir/f" filename="$WORK/m" ifMatch="$etag" && cmp "$WORK/f" "$WORK/m" || fail "If-Match on its ETag refused"
s3u get "$B/dir/f" filename="$WORK/m" ifMatch='"0"' 2>&1 | has PreconditionFailed || fail "If-Match on another ETag served"
s3u get "$B/dir/f" filename="$WORK/nm" ifNotMatch="$etag" 2>&1 | has Error || fail "If-None-Match on its ETag served"
step "listings"
for i in $(seq 1 25); do echo "$i" | s3u put "$B/many/k$i" contentLength=$(echo "$i" | wc -c) >/dev/null || fail "put many/k$i"; done
n=$(s3u list "$B" prefix=many/ | grep -c '^many/k')
[ "$n" -eq 25 ] || fail "listing shows $n keys, expected 25"
s3u list "$B" prefix=many/ maxkeys=4 | grep '^many/k' | awk '{print $1}' >"$WORK/four"
[ "$(tr '\n' ' ' <"$WORK/four")" = "many/k1 many/k10 many/k11 many/k12 " ] || fail "maxkeys=4: $(cat "$WORK/four")"
s3u list "$B" prefix=many/ marker=many/k5 | grep '^many/k' | awk '{print $1}' >"$WORK/after"
[ "$(tr '\n' ' ' <"$WORK/after")" = "many/k6 many/k7 many/k8 many/k9 " ] || fail "marker: $(cat "$WORK/after")"
s3u list "$B" delimiter=/ >"$WORK/rolled"
grep -q 'Common Prefix: dir/' "$WORK/rolled" && grep -q 'Common Prefix: many/' "$WORK/rolled" \
  && ! grep -q '^many/k' "$WORK/rolled" || fail "delimiter: $(cat "$WORK/rolled")"
s3u list | has "$B" || fail "the bucket is not listed"
step "copy replacing metadata"
s3u copy "$B/dir/f" "$B/dir/copy" contentType=application/x-copy x-amz-meta-n=1 >/dev/null || fail copy
s3u head "$B/dir/copy" >"$WORK/chead"
grep -q 'Content-Type: application/x-copy' "$WORK/chead" && grep -q 'x-amz-meta-n: 1' "$WORK/chead" \
  && ! grep -q 'x-amz-meta-team' "$WORK/chead" || fail "copy: $(cat "$WORK/chead")"
step "acl, logging"
s3u getacl "$B/dir/f" | has FULL_CONTROL || fail "getacl"
s3u getlogging "$B" | has "not enabled" || fail "getlogging"
step "signed query string"
url=$(s3u gqs "$B/dir/f" expires=2099-01-01T00:00:00)
curl -sf "$url" -o "$WORK/q" || fail "signed query string refused"
cmp "$WORK/f" "$WORK/q" || fail "signed query string served other bytes"
step delete
for k in dir/f dir/copy md5 $(seq -f 'many/k%g' 1 25); do s3u delete "$B/$k" || fail "delete $k"; done
s3u delete "$B" || fail "delete bucket"
s3u test "$B" 2>&1 | has "Does Not Exist" || fail "bucket still there"
echo PASS: libs3
