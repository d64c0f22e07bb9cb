#!/usr/bin/env bash
# A container registry on a bucket: Docker's distribution registry (Debian's docker-registry,
# whose S3 storage driver uses the AWS SDK for Go v1) with skopeo as the client. An OCI image of
# two layers (one of 12 MB, written by the driver as a multipart upload in 5 MiB parts) is pushed,
# inspected, pulled back and compared blob by blob; the catalog and tags are listed through the
# registry's walk of the bucket; the manifest is deleted and garbage collection removes every
# blob it held from the bucket.
source "$(dirname "$0")/lib.sh"
command -v docker-registry >/dev/null || fail "docker-registry not installed (apt-get install docker-registry)"
command -v skopeo >/dev/null || fail "skopeo not installed (apt-get install skopeo)"
B=registry-$RANDOM
aws --endpoint-url "$ENDPOINT" s3 mb "s3://$B" >/dev/null
RPORT=$(free_port)
cat >"$WORK/registry.yml" <<CONF
version: 0.1
log:
  level: warn
storage:
  s3:
    accesskey: $AWS_ACCESS_KEY_ID
    secretkey: $AWS_SECRET_ACCESS_KEY
    region: us-east-1
    regionendpoint: $ENDPOINT
    bucket: $B
    forcepathstyle: true
    secure: false
    v4auth: true
    chunksize: 5242880
    rootdirectory: /reg
  delete:
    enabled: true
  redirect:
    disable: true
http:
  addr: 127.0.0.1:$RPORT
  secret: compat-registry-secret
CONF
# The SDK refuses the AWS_CA_BUNDLE this environment sets for a plain-HTTP endpoint.
env -u AWS_CA_BUNDLE docker-registry serve "$WORK/registry.yml" >"$WORK/registry.log" 2>&1 &
RPID=$!
CLEANUP_HOOKS+=("kill $RPID")
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$RPORT/v2/" >/dev/null && break; sleep 0.1; done
curl -sf "http://127.0.0.1:$RPORT/v2/" >/dev/null || { cat "$WORK/registry.log"; fail "the registry never answered"; }

step "an OCI image of two layers"
img=$WORK/img
mkdir -p "$img/blobs/sha256" "$WORK/l1" "$WORK/l2"
blob() { local d; d=$(sha256sum "$1" | cut -d' ' -f1); mv "$1" "$img/blobs/sha256/$d"; echo "$d"; }
head -c 12000000 /dev/urandom >"$WORK/l1/big.bin"
tar -C "$WORK/l1" -cf "$WORK/layer1.tar" . && gzip -n "$WORK/layer1.tar"
echo hello >"$WORK/l2/hello" && tar -C "$WORK/l2" -cf "$WORK/layer2.tar" . && gzip -n "$WORK/layer2.tar"
diff1=$(gzip -dc "$WORK/layer1.tar.gz" | sha256sum | cut -d' ' -f1)
diff2=$(gzip -dc "$WORK/layer2.tar.gz" | sha256sum | cut -d' ' -f1)
l1=$(blob "$WORK/layer1.tar.gz"); l2=$(blob "$WORK/layer2.tar.gz")
printf '{"architecture":"amd64","os":"linux","config":{},"rootfs":{"type":"layers","diff_ids":["sha256:%s","sha256:%s"]}}' \
  "$diff1" "$diff2" >"$WORK/config.json"
cfg=$(blob "$WORK/config.json")
size() { stat -c %s "$img/blobs/sha256/$1"; }
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%s},{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%s}]}' \
  "$cfg" "$(size "$cfg")" "$l1" "$(size "$l1")" "$l2" "$(size "$l2")" >"$WORK/manifest.json"
man=$(blob "$WORK/manifest.json")
printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"org.opencontainers.image.ref.name":"v1"}}]}' \
  "$man" "$(size "$man")" >"$img/index.json"
echo '{"imageLayoutVersion":"1.0.0"}' >"$img/oci-layout"

ref=docker://127.0.0.1:$RPORT/team/app:v1
step "skopeo copy (push)"
skopeo copy --quiet --dest-tls-verify=false "oci:$img:v1" "$ref" || { tail -20 "$WORK/registry.log"; fail "push"; }
digest=$(skopeo inspect --tls-verify=false "$ref" | python3 -c 'import json, sys; print(json.load(sys.stdin)["Digest"])')
[ "$digest" = "sha256:$man" ] || fail "inspect names $digest, pushed sha256:$man"
step "skopeo copy (pull), compared blob by blob"
skopeo copy --quiet --src-tls-verify=false "$ref" "oci:$WORK/pulled:v1" || { tail -20 "$WORK/registry.log"; fail "pull"; }
diff -r "$img/blobs" "$WORK/pulled/blobs" || fail "pulled blobs differ"
step "catalog and tags"
[ "$(curl -sf "http://127.0.0.1:$RPORT/v2/_catalog")" = '{"repositories":["team/app"]}' ] || fail "catalog: $(curl -s "http://127.0.0.1:$RPORT/v2/_catalog")"
[ "$(curl -sf "http://127.0.0.1:$RPORT/v2/team/app/tags/list")" = '{"name":"team/app","tags":["v1"]}' ] || fail "tags"
step "delete the manifest, garbage-collect"
blobs() { aws --endpoint-url "$ENDPOINT" s3 ls "s3://$B/reg/docker/registry/v2/blobs/" --recursive | grep -c '/data$' || true; }
[ "$(blobs)" -eq 4 ] || fail "$(blobs) blobs in the bucket after the push, expected 4 (config, two layers, manifest)"
[ "$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "http://127.0.0.1:$RPORT/v2/team/app/manifests/$digest")" = 202 ] || fail "manifest delete"
env -u AWS_CA_BUNDLE docker-registry garbage-collect "$WORK/registry.yml" >"$WORK/gc.log" 2>&1 || { cat "$WORK/gc.log"; fail "garbage-collect"; }
[ "$(blobs)" -eq 0 ] || fail "$(blobs) blobs left after garbage collection"
echo "PASS: container registry (docker-registry, skopeo)"
