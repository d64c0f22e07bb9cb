#!/usr/bin/env bash
# GDAL 3.6 (Debian's gdal-bin and python3-gdal; under rasterio, QGIS, pyogrio/geopandas): its
# /vsis3/ file system is an S3 client of its own in C++ over libcurl. Cloud-optimized and tiled
# GeoTIFFs written (multipart) and read a window at a time, the file-system calls GDAL makes on a
# bucket (listings, stat, Mkdir/Rmdir, tags, metadata by copy, rename, Sync, DeleteObjects),
# signed URLs, odd keys, path style and virtual-hosted style, vector data queried in place.
# Debian's Python runs it: python3-gdal is built for it.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
"$PY" -c 'from osgeo import gdal; import numpy' 2>/dev/null ||
  fail "GDAL's Python bindings missing (apt-get install python3-gdal; scripts/install-deps.sh test)"
B=gdal-$RANDOM
aws --endpoint-url "$ENDPOINT" s3 mb "s3://$B" >/dev/null
BUCKET=$B "$PY" "$COMPAT_ROOT/compat/suites/gdal_client.py" || fail "GDAL scenario failed"
# What GDAL wrote, as another client sees it.
aws --endpoint-url "$ENDPOINT" s3api head-object --bucket "$B" --key cog/scene.tif --query ContentType --output text |
  grep -qx 'image/tiff; application=geotiff' || fail "the COG's Content-Type, read by the aws cli"
n=$(aws --endpoint-url "$ENDPOINT" s3 ls --recursive "s3://$B" | wc -l)
[ "$n" -ge 6 ] || fail "the aws cli lists $n objects"
echo "gdal: ok"
