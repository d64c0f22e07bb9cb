#!/usr/bin/env bash
# aws cli round trip: mb, cp 100 MiB (multipart), ls, sync, cp back, SSE-C up, down and copied,
# copies between keys (multipart copies, mv, cp --recursive, stdin and stdout, presign, rm
# --exclude), versioning, lifecycle, bucket policy, ACLs, CORS, rm, rb.
# Usage: compat/awscli.sh v1|v2   (v1: the PyPI `aws` on PATH; v2: Debian's /usr/bin/aws)
source "$(dirname "$0")/lib.sh"
case "${1:-v1}" in
  v1) AWS=$(command -v aws) ;;
  v2) AWS=/usr/bin/aws ;;
  *) fail "unknown aws cli flavour $1" ;;
esac
[ -x "$AWS" ] || fail "aws cli ${1:-v1} not installed ($AWS)"
aws_() { "$AWS" --endpoint-url "$ENDPOINT" "$@"; }
echo "aws cli ${1:-v1}: $("$AWS" --version 2>&1)"

B=awscli-$RANDOM
aws_mb_and_big_upload "$B"

mkdir -p "$WORK/tree/sub"
for i in 1 2 3; do echo "file $i" >"$WORK/tree/f$i.txt"; echo "nested $i" >"$WORK/tree/sub/n$i.txt"; done
step sync; aws_ s3 sync "$WORK/tree" "s3://$B/tree" --only-show-errors
n=$(aws_ s3 ls "s3://$B/tree/" --recursive | wc -l)
[ "$n" -eq 6 ] || fail "sync uploaded $n objects, expected 6"
aws_ s3 sync "$WORK/tree" "s3://$B/tree" --only-show-errors  # second sync: nothing to do
mkdir -p "$WORK/back"
aws_ s3 sync "s3://$B/tree" "$WORK/back" --only-show-errors
diff -r "$WORK/tree" "$WORK/back" || fail "sync down differs"

# A tree full of empty files (Python packages, Spark's _SUCCESS): botocore sends
# `Expect: 100-continue` with each, and a connection left out of step by an empty PUT made the
# next PUT on it wait 60 s for its read timeout (issue #23). 8 files, 4 empty: seconds, not minutes.
mkdir -p "$WORK/pkgs/pkg/sub"
: >"$WORK/pkgs/pkg/__init__.py"; : >"$WORK/pkgs/pkg/sub/__init__.py"; : >"$WORK/pkgs/_SUCCESS"; : >"$WORK/pkgs/.keep"
for i in 1 2 3 4; do echo "x = $i" >"$WORK/pkgs/pkg/m$i.py"; done
step "sync of empty files"
t0=$(date +%s)
aws_ s3 sync "$WORK/pkgs" "s3://$B/pkgs" --only-show-errors --cli-read-timeout 20
t1=$(date +%s)
[ $((t1 - t0)) -lt 15 ] || fail "sync of 8 small files (4 empty) took $((t1 - t0)) s"
n=$(aws_ s3 ls "s3://$B/pkgs/" --recursive | wc -l)
[ "$n" -eq 8 ] || fail "empty-file sync uploaded $n objects, expected 8"
size=$(aws_ s3api head-object --bucket "$B" --key pkgs/pkg/__init__.py --query ContentLength --output text)
[ "$size" = 0 ] || fail "empty file stored with $size bytes"

step "cp back"; aws_ s3 cp "s3://$B/data/big.bin" "$WORK/big.back" --only-show-errors
cmp "$WORK/big.bin" "$WORK/big.back" || fail "downloaded bytes differ"

step "SSE-C: cp up (multipart) and down with a customer key, a multipart copy under another key"
head -c 32 /dev/urandom >"$WORK/ssec.key"; head -c 32 /dev/urandom >"$WORK/ssec2.key"
aws_ s3 cp "$WORK/big.bin" "s3://$B/ssec/big" --sse-c AES256 --sse-c-key "fileb://$WORK/ssec.key" --only-show-errors
aws_ s3 cp "s3://$B/ssec/big" - 2>/dev/null | cmp -s - "$WORK/big.bin" && fail "an SSE-C object read without its key"
aws_ s3 cp "s3://$B/ssec/big" - --sse-c AES256 --sse-c-key "fileb://$WORK/ssec.key" | cmp - "$WORK/big.bin" ||
  fail "SSE-C download differs"
aws_ s3 cp "s3://$B/ssec/big" "s3://$B/ssec/copy" --sse-c-copy-source AES256 \
  --sse-c-copy-source-key "fileb://$WORK/ssec.key" --sse-c AES256 --sse-c-key "fileb://$WORK/ssec2.key" --only-show-errors
aws_ s3 cp "s3://$B/ssec/copy" - --sse-c AES256 --sse-c-key "fileb://$WORK/ssec2.key" | cmp - "$WORK/big.bin" ||
  fail "SSE-C copy under another key differs"
aws_ s3 rm "s3://$B/ssec" --recursive --only-show-errors

step "copies between keys: multipart copy, mv, cp --recursive, stdin/stdout, presign, rm --exclude"
head -c $((20 * 1000 * 1000)) /dev/urandom >"$WORK/c20"
aws_ s3 cp "$WORK/c20" "s3://$B/cp/src" --storage-class STANDARD_IA --metadata k=v --content-type text/x-foo --only-show-errors
aws_ s3api put-object-tagging --bucket "$B" --key cp/src --tagging 'TagSet=[{Key=t,Value=1}]'
aws_ s3 cp "s3://$B/cp/src" "s3://$B/cp/copy" --only-show-errors  # 20 MB: UploadPartCopy
aws_ s3 mv "s3://$B/cp/copy" "s3://$B/cp/moved" --only-show-errors
aws_ s3api head-object --bucket "$B" --key cp/copy >/dev/null 2>&1 && fail "mv left its source"
aws_ s3 cp "s3://$B/cp/moved" - | cmp - "$WORK/c20" || fail "multipart copy differs"
if [ "${1:-v1}" = v2 ]; then
  # v2 copies the source's properties (--copy-props default): type, metadata and tags; v1 does not.
  props=$(aws_ s3api head-object --bucket "$B" --key cp/moved --output json |
    python3 -c 'import json, sys; d = json.load(sys.stdin); print(d.get("ContentType"), d.get("Metadata"))')
  [ "$props" = "text/x-foo {'k': 'v'}" ] || fail "multipart copy's properties: $props"
  tags=$(aws_ s3api get-object-tagging --bucket "$B" --key cp/moved --query 'TagSet[0].Value' --output text)
  [ "$tags" = 1 ] || fail "multipart copy's tags: $tags"
fi
aws_ s3 cp --recursive "s3://$B/tree" "s3://$B/cp/tree" --only-show-errors
n=$(aws_ s3 ls "s3://$B/cp/tree/" --recursive | wc -l)
[ "$n" -eq 6 ] || fail "cp --recursive between prefixes made $n objects, expected 6"
aws_ s3 cp - "s3://$B/cp/stdin" --only-show-errors <"$WORK/c20"
aws_ s3 cp "s3://$B/cp/stdin" - | cmp - "$WORK/c20" || fail "object streamed from stdin differs"
url=$(aws_ s3 presign "s3://$B/cp/stdin" --expires-in 120)
curl -sf "$url" | cmp - "$WORK/c20" || fail "presigned GET differs"
aws_ s3 rm "s3://$B/cp" --recursive --exclude "tree/*" --only-show-errors
left=$(aws_ s3 ls "s3://$B/cp/" --recursive | awk '{print $4}' | sort | tr '\n' ' ')
[ "$left" = "cp/tree/f1.txt cp/tree/f2.txt cp/tree/f3.txt cp/tree/sub/n1.txt cp/tree/sub/n2.txt cp/tree/sub/n3.txt " ] || fail "rm --exclude left: $left"

step "versioning: put-bucket-versioning, versions by id, delete marker, restore"
V=$B-ver
aws_ s3 mb "s3://$V" >/dev/null
aws_ s3api put-bucket-versioning --bucket "$V" --versioning-configuration Status=Enabled
[ "$(aws_ s3api get-bucket-versioning --bucket "$V" --query Status --output text)" = Enabled ] \
  || fail "versioning status not Enabled"
echo first >"$WORK/v1"; echo second >"$WORK/v2"
v1=$(aws_ s3api put-object --bucket "$V" --key ckpt --body "$WORK/v1" --query VersionId --output text)
v2=$(aws_ s3api put-object --bucket "$V" --key ckpt --body "$WORK/v2" --query VersionId --output text)
[ "$v1" != "$v2" ] || fail "two PUTs gave one version id"
aws_ s3api get-object --bucket "$V" --key ckpt --version-id "$v1" "$WORK/v1.back" >/dev/null
cmp "$WORK/v1" "$WORK/v1.back" || fail "version $v1 read back differs"
listed=$(aws_ s3api list-object-versions --bucket "$V" --query 'Versions[].VersionId' --output text)
[ "$listed" = "$v2	$v1" ] || fail "list-object-versions gave '$listed', expected newest first"
marker=$(aws_ s3api delete-object --bucket "$V" --key ckpt --query VersionId --output text)
if aws_ s3api head-object --bucket "$V" --key ckpt >/dev/null 2>&1; then fail "key still readable under a delete marker"; fi
aws_ s3api delete-object --bucket "$V" --key ckpt --version-id "$marker" >/dev/null
aws_ s3 cp "s3://$V/ckpt" "$WORK/restored" --only-show-errors
cmp "$WORK/v2" "$WORK/restored" || fail "deleting the marker did not restore the latest version"
aws_ s3api delete-object --bucket "$V" --key ckpt --version-id "$v2" >/dev/null
aws_ s3api delete-object --bucket "$V" --key ckpt --version-id "$v1" >/dev/null
[ "$(aws_ s3api list-object-versions --bucket "$V" --query 'length(Versions || `[]`)' --output text)" = 0 ] \
  || fail "versions left after deleting each by id"
step "lifecycle: put/get/delete-bucket-lifecycle-configuration"
cat >"$WORK/lifecycle.json" <<'JSON'
{"Rules": [
  {"ID": "scratch", "Status": "Enabled", "Filter": {"Prefix": "tmp/"}, "Expiration": {"Days": 7}},
  {"ID": "old-versions", "Status": "Enabled", "Filter": {"Prefix": ""},
   "NoncurrentVersionExpiration": {"NoncurrentDays": 30, "NewerNoncurrentVersions": 3},
   "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 2}}
]}
JSON
aws_ s3api put-bucket-lifecycle-configuration --bucket "$V" --lifecycle-configuration "file://$WORK/lifecycle.json"
ids=$(aws_ s3api get-bucket-lifecycle-configuration --bucket "$V" --query 'Rules[].ID' --output text)
[ "$ids" = "scratch	old-versions" ] || fail "lifecycle rules read back as '$ids'"
echo x >"$WORK/tmpfile"
exp=$(aws_ s3api put-object --bucket "$V" --key tmp/x --body "$WORK/tmpfile" --query Expiration --output text)
case "$exp" in *'rule-id="scratch"'*) ;; *) fail "PUT under tmp/ announced expiration '$exp'" ;; esac
echo '{"Rules": [{"ID": "bad", "Status": "Enabled", "Filter": {"Prefix": ""}, "Expiration": {"Days": 0}}]}' >"$WORK/bad.json"
if aws_ s3api put-bucket-lifecycle-configuration --bucket "$V" --lifecycle-configuration "file://$WORK/bad.json" 2>"$WORK/err"; then
  fail "Days 0 accepted"
fi
grep -q InvalidArgument "$WORK/err" || fail "Days 0 refused without InvalidArgument: $(cat "$WORK/err")"
aws_ s3api delete-bucket-lifecycle --bucket "$V"
if aws_ s3api get-bucket-lifecycle-configuration --bucket "$V" 2>"$WORK/err"; then fail "rules left after delete"; fi
grep -q NoSuchLifecycleConfiguration "$WORK/err" || fail "no NoSuchLifecycleConfiguration after delete"
tmpv=$(aws_ s3api list-object-versions --bucket "$V" --prefix tmp/ --query 'Versions[0].VersionId' --output text)
aws_ s3api delete-object --bucket "$V" --key tmp/x --version-id "$tmpv" >/dev/null
aws_ s3 rb "s3://$V" >/dev/null

step "bucket policy: put-bucket-policy, anonymous curl, get-bucket-policy-status, delete"
aws_ s3 cp "$WORK/tree/f1.txt" "s3://$B/public/f1.txt" --only-show-errors
url="$ENDPOINT/$B/public/f1.txt"
curl_status() { curl -s -o "$WORK/anon" -w '%{http_code}' ${CA_FILE:+--cacert "$CA_FILE"} "$@"; }
[ "$(curl_status "$url")" = 403 ] || fail "anonymous GET served without a policy"
cat >"$WORK/policy.json" <<JSON
{"Version": "2012-10-17", "Statement": [{"Sid": "PublicRead", "Effect": "Allow", "Principal": "*",
  "Action": "s3:GetObject", "Resource": "arn:aws:s3:::$B/public/*"}]}
JSON
aws_ s3api put-bucket-policy --bucket "$B" --policy "file://$WORK/policy.json"
[ "$(curl_status "$url")" = 200 ] || fail "anonymous curl refused under a public-read policy"
cmp -s "$WORK/anon" "$WORK/tree/f1.txt" || fail "anonymous curl got other bytes"
[ "$(curl_status "$ENDPOINT/$B/data/big.bin" -r 0-0)" = 403 ] || fail "anonymous GET outside the policy's prefix"
[ "$(curl_status -X PUT --data-binary x "$ENDPOINT/$B/public/new")" = 403 ] || fail "anonymous PUT accepted"
public=$(aws_ s3api get-bucket-policy-status --bucket "$B" --query PolicyStatus.IsPublic --output text)
[ "$public" = True ] || fail "policy status IsPublic is '$public'"
echo '{"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::elsewhere/*"}]}' >"$WORK/badpolicy.json"
if aws_ s3api put-bucket-policy --bucket "$B" --policy "file://$WORK/badpolicy.json" 2>"$WORK/err"; then
  fail "a policy for another bucket accepted"
fi
grep -q MalformedPolicy "$WORK/err" || fail "no MalformedPolicy: $(cat "$WORK/err")"
aws_ s3api delete-bucket-policy --bucket "$B"
[ "$(curl_status "$url")" = 403 ] || fail "anonymous GET served after delete-bucket-policy"

step "ACLs: cp --acl public-read refused while ACLs are off, served once ownership controls allow them"
if aws_ s3 cp "$WORK/tree/f2.txt" "s3://$B/public/f2.txt" --acl public-read --only-show-errors 2>"$WORK/err"; then
  fail "public-read accepted on a bucket with ACLs disabled"
fi
grep -q AccessControlListNotSupported "$WORK/err" || fail "no AccessControlListNotSupported: $(cat "$WORK/err")"
aws_ s3api put-bucket-ownership-controls --bucket "$B" \
  --ownership-controls 'Rules=[{ObjectOwnership=BucketOwnerPreferred}]'
aws_ s3 cp "$WORK/tree/f2.txt" "s3://$B/public/f2.txt" --acl public-read --only-show-errors
[ "$(curl_status "$ENDPOINT/$B/public/f2.txt")" = 200 ] || fail "anonymous curl refused a public-read object"
cmp -s "$WORK/anon" "$WORK/tree/f2.txt" || fail "anonymous curl got other bytes"
grantee=$(aws_ s3api get-object-acl --bucket "$B" --key public/f2.txt --query 'Grants[?Grantee.Type==`Group`].Grantee.URI' --output text)
[ "$grantee" = http://acs.amazonaws.com/groups/global/AllUsers ] || fail "get-object-acl shows '$grantee'"
aws_ s3api put-object-acl --bucket "$B" --key public/f2.txt --acl private
[ "$(curl_status "$ENDPOINT/$B/public/f2.txt")" = 403 ] || fail "anonymous GET served after put-object-acl private"
aws_ s3api delete-bucket-ownership-controls --bucket "$B"

step "CORS: put-bucket-cors, get-bucket-cors, a preflight answered, delete-bucket-cors"
cat >"$WORK/cors.json" <<'JSON'
{"CORSRules": [{"AllowedOrigins": ["https://notebook.example"], "AllowedMethods": ["GET", "PUT"],
                "AllowedHeaders": ["*"], "ExposeHeaders": ["ETag"], "MaxAgeSeconds": 300}]}
JSON
aws_ s3api put-bucket-cors --bucket "$B" --cors-configuration "file://$WORK/cors.json"
origins=$(aws_ s3api get-bucket-cors --bucket "$B" --query 'CORSRules[0].AllowedOrigins[0]' --output text)
[ "$origins" = https://notebook.example ] || fail "get-bucket-cors shows '$origins'"
preflight() {
  curl -s -o /dev/null -D "$WORK/pre" -w '%{http_code}' ${CA_FILE:+--cacert "$CA_FILE"} -X OPTIONS \
    -H "Origin: $1" -H 'Access-Control-Request-Method: PUT' "$ENDPOINT/$B/public/f1.txt"
}
[ "$(preflight https://notebook.example)" = 200 ] || fail "preflight from the allowed origin refused"
grep -qi '^access-control-allow-origin: https://notebook.example' "$WORK/pre" || fail "no Access-Control-Allow-Origin"
[ "$(preflight https://elsewhere.example)" = 403 ] || fail "preflight from another origin allowed"
aws_ s3api delete-bucket-cors --bucket "$B"
[ "$(preflight https://notebook.example)" = 403 ] || fail "preflight allowed after delete-bucket-cors"

step "rm, rb"
aws_ s3 rm "s3://$B" --recursive --only-show-errors
[ -z "$(aws_ s3 ls "s3://$B" --recursive)" ] || fail "objects left after rm --recursive"
aws_ s3 rb "s3://$B" >/dev/null
if aws_ s3api head-bucket --bucket "$B" 2>/dev/null; then fail "bucket still exists after rb"; fi
echo "PASS: awscli ${1:-v1}"
