#!/usr/bin/env bash
# Mount a Penstock bucket with s3fs-fuse and use it as a directory.
#
#   AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... examples/s3fs_mount.sh http://127.0.0.1:9000 mybucket /mnt/mybucket
#
# Needs s3fs (apt-get install s3fs) and /dev/fuse. Unmounts when done.
set -euo pipefail
endpoint=${1:-http://127.0.0.1:9000}
bucket=${2:-mounted}
mnt=${3:-$(mktemp -d /tmp/penstock-mount.XXXXXX)}
mkdir -p "$mnt"
creds=$(mktemp)
trap 'fusermount -u "$mnt" 2>/dev/null || umount "$mnt" 2>/dev/null || true; rm -f "$creds"' EXIT
echo "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" >"$creds"
chmod 600 "$creds"

# Create the bucket if needed (s3fs does not); an existing bucket of yours is fine.
aws --endpoint-url "$endpoint" s3 mb "s3://$bucket" 2>/dev/null || true

# use_path_request_style: address the bucket in the path, so no DNS name per bucket is needed.
# The mount works like any directory; the same files are what S3 clients see.
s3fs "$bucket" "$mnt" -o url="$endpoint" -o use_path_request_style -o passwd_file="$creds" \
  -o endpoint=us-east-1 -o sigv4
mkdir -p "$mnt/results"
echo "epoch,loss" >"$mnt/results/metrics.csv"
echo "1,0.42" >>"$mnt/results/metrics.csv"
ls -l "$mnt/results"
aws --endpoint-url "$endpoint" s3 cp "s3://$bucket/results/metrics.csv" - | grep -q "1,0.42"
echo "written through the mount, read back through S3: ok"
