#!/usr/bin/env bash
# HTTP/2 with a real HTTP/2 client (curl/nghttp2): h2c with prior knowledge on the plain listener,
# and h2 negotiated by ALPN on a TLS listener; signed requests (curl --aws-sigv4).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
command -v curl >/dev/null || { echo "FAIL: curl missing" >&2; exit 1; }
for mode in h2c tls; do
  (
    [ "$mode" = tls ] && export COMPAT_TLS=1
    source "$here/lib.sh"
    sig=(--aws-sigv4 "aws:amz:us-east-1:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD")
    if [ "$mode" = tls ]; then proto=(--http2 --cacert "$CA_FILE"); else proto=(--http2-prior-knowledge); fi
    head -c 3000000 /dev/urandom >"$WORK/blob"
    curl -sf "${proto[@]}" "${sig[@]}" -X PUT "$ENDPOINT/h2bucket" -o /dev/null || fail "$mode: create bucket"
    v=$(curl -sf "${proto[@]}" "${sig[@]}" -T "$WORK/blob" "$ENDPOINT/h2bucket/blob" -o /dev/null -w '%{http_version}') \
      || fail "$mode: PUT"
    [ "$v" = 2 ] || fail "$mode: PUT used HTTP/$v"
    v=$(curl -sf "${proto[@]}" "${sig[@]}" "$ENDPOINT/h2bucket/blob" -o "$WORK/back" -w '%{http_version}') || fail "$mode: GET"
    [ "$v" = 2 ] || fail "$mode: GET used HTTP/$v"
    cmp "$WORK/blob" "$WORK/back" || fail "$mode: bytes differ"
    code=$(curl -s "${proto[@]}" "${sig[@]}" "$ENDPOINT/h2bucket/missing" -o "$WORK/err" -w '%{http_code}')
    [ "$code" = 404 ] && grep -q NoSuchKey "$WORK/err" || fail "$mode: missing key gave $code"
    # A refused HEAD carries no body: over HTTP/2 one would go out as DATA, a protocol error to
    # curl and to Go's and awscrt's clients. HeadBucket's refusal names the region, as S3's does.
    code=$(curl -sS "${proto[@]}" "${sig[@]}" -I "$ENDPOINT/h2bucket/missing" -o /dev/null -w '%{http_code}') \
      || fail "$mode: HEAD of a missing key broke the stream"
    [ "$code" = 404 ] || fail "$mode: HEAD of a missing key gave $code"
    curl -sS "${proto[@]}" -I "$ENDPOINT/h2bucket" -o /dev/null -D "$WORK/head" || fail "$mode: unsigned HEAD bucket broke the stream"
    grep -qi '^x-amz-bucket-region: us-east-1' "$WORK/head" || fail "$mode: HEAD bucket refusal without its region: $(cat "$WORK/head")"
    # Nor does a 304: a conditional GET that matches answers without DATA.
    etag=$(curl -sfI "${proto[@]}" "${sig[@]}" "$ENDPOINT/h2bucket/blob" | tr -d '\r' | sed -n 's/^etag: //Ip')
    code=$(curl -sS "${proto[@]}" "${sig[@]}" -H "If-None-Match: $etag" "$ENDPOINT/h2bucket/blob" -o /dev/null \
      -w '%{http_code}') || fail "$mode: a conditional GET's 304 broke the stream"
    [ "$code" = 304 ] || fail "$mode: If-None-Match with the ETag gave $code"
    step "$mode: PUT/GET/404/HEAD/304 over HTTP/2"
  )
done
