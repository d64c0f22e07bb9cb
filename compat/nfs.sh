#!/usr/bin/env bash
# aws cli against a bucket whose folder is on an NFS volume (NFS-Ganesha, spoken to from user
# space): mb, cp 100 MiB (multipart), ls, cp back, compare, rm; the object is a plain file in the
# export; a file written into the folder by another NFS client (nfs-cp) lists and downloads.
source "$(dirname "$0")/ganesha.sh"
export COMPAT_CONFIG="default_volume = \"nfs\"
[[volumes]]
name = \"nfs\"
backend = \"nfs\"
url = \"$NFS_URL\"
path = \"penstock\""
source "$(dirname "$0")/lib.sh"
CLEANUP_HOOKS+=("$GANESHA_CLEANUP")
command -v nfs-cp >/dev/null || fail "nfs-cp missing (apt-get install libnfs-utils)"
AWS=$(command -v aws)
aws_() { "$AWS" --endpoint-url "$ENDPOINT" "$@"; }

B=nfs-$RANDOM
aws_mb_and_big_upload "$B"
step "the object is a plain file in the export"
onfs=$(find "$NFS_EXPORT/penstock" -path '*/data/big.bin' -type f)
[ -n "$onfs" ] || fail "big.bin not found in the export"
cmp "$WORK/big.bin" "$onfs" || fail "file in the export differs"
step "cp back"; aws_ s3 cp "s3://$B/data/big.bin" "$WORK/big.back" --only-show-errors
cmp "$WORK/big.bin" "$WORK/big.back" || fail "downloaded bytes differ"

step "nfs-cp into the folder, then ls and cp through S3"
folder=${onfs%/data/big.bin}
head -c 3000000 /dev/urandom >"$WORK/session.bin"
nfs-cp "$WORK/session.bin" "$(libnfs_url "${folder#"$NFS_EXPORT"}/data/session.bin")" >/dev/null ||
  fail "nfs-cp into the folder failed"
aws_ s3 ls "s3://$B/data/" | has " 3000000 session.bin" || fail "file written by nfs-cp not listed"
aws_ s3 cp "s3://$B/data/session.bin" "$WORK/session.back" --only-show-errors
cmp "$WORK/session.bin" "$WORK/session.back" || fail "file written by nfs-cp downloads different bytes"

step "rm, rb"
aws_ s3 rm "s3://$B" --recursive --only-show-errors
[ -z "$(aws_ s3 ls "s3://$B" --recursive)" ] || fail "objects left after rm --recursive"
aws_ s3 rb "s3://$B" >/dev/null
[ -z "$(find "$NFS_EXPORT/penstock" -name big.bin)" ] || fail "file left in the export"
echo "PASS: nfs (aws cli on an NFS volume)"
