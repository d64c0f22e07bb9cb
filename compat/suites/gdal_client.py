"""GDAL's /vsis3/ (under rasterio, QGIS, pyogrio/geopandas and the GDAL tools) on a bucket,
against the gateway named by ENDPOINT (http://host:port) and BUCKET. Its S3 client is its own
(C++ over libcurl), signing as it builds URLs.

Rasters are written as GDAL writes them: a cloud-optimized GeoTIFF streamed in multipart
uploads (5 MiB parts), a tiled GeoTIFF through a local temporary file; and read as it reads
them, a window at a time through ranged GETs, each window compared with the array written.
The file-system layer underneath is checked call by call, in path style (where GDAL signs the
bucket listing for `//`) and in virtual-hosted style: the bucket listing, stat of files,
directories and missing keys, directory listings, Mkdir/Rmdir (marker objects), object tags and
metadata set by copying in place, rename, a 60 MiB file written in 1 MiB writes and read at an
offset, a signed URL fetched without GDAL, Sync up and down, DeleteObjects and a recursive
removal, keys with a space, a `+` and UTF-8; and vector data (FlatGeobuf, GeoJSON) written to
the bucket and queried with a spatial filter."""

import filecmp
import os
import tempfile
import urllib.request

import numpy as np
from osgeo import gdal, ogr, osr

from scenario import check, fail
from scenario import step as name_step

ENDPOINT, BUCKET = os.environ["ENDPOINT"], os.environ["BUCKET"]
HOSTPORT = ENDPOINT.split("://", 1)[1]
gdal.UseExceptions()
for k, v in {
    "AWS_S3_ENDPOINT": HOSTPORT,
    "AWS_HTTPS": "NO",
    "AWS_VIRTUAL_HOSTING": "FALSE",
    # Small parts and small read chunks: several parts per upload, many ranges per read.
    "VSIS3_CHUNK_SIZE": "5",
    "CPL_VSIL_CURL_CHUNK_SIZE": "65536",
    "CPL_VSIL_USE_TEMP_FILE_FOR_RANDOM_WRITE": "YES",
}.items():
    gdal.SetConfigOption(k, v)
B = f"/vsis3/{BUCKET}"


def step(name):
    """Names the step and empties GDAL's caches of listings and reads made before it (a
    directory listed empty before a file was written in it stays empty in that cache), so
    that each step's answers come from the gateway."""
    gdal.VSICurlClearCache()
    name_step(name)


tmp = tempfile.mkdtemp(prefix="gdal-")


def read_bytes(path, offset=0, size=None):
    f = gdal.VSIFOpenL(path, "rb")
    check(f is not None, f"cannot open {path}")
    try:
        gdal.VSIFSeekL(f, offset, 0)
        if size is None:
            size = gdal.VSIStatL(path).size - offset
        return bytes(gdal.VSIFReadL(1, size, f))
    finally:
        gdal.VSIFCloseL(f)


def headers(path):
    """The answer's headers as GDAL reports them, by lower-case name (names are case-insensitive;
    S3 spells them `ETag`, `Content-Type`)."""
    return {k.lower(): v for k, v in gdal.GetFileMetadata(path, "HEADERS").items()}


def write_bytes(path, data, piece=1 << 20):
    f = gdal.VSIFOpenL(path, "wb")
    check(f is not None, f"cannot create {path}")
    for i in range(0, len(data), piece):
        check(
            gdal.VSIFWriteL(data[i : i + piece], 1, len(data[i : i + piece]), f) == len(data[i : i + piece]),
            f"short write to {path}",
        )
    check(gdal.VSIFCloseL(f) == 0, f"closing {path} (completing its upload) failed")


step("the bucket listing, signed by GDAL for '//' in path style")
check(BUCKET in (gdal.ReadDir("/vsis3/") or []), f"bucket listing: {gdal.ReadDir('/vsis3/')}")
check(gdal.ReadDir(B) == ["."], f"an empty bucket lists as GDAL's '.': {gdal.ReadDir(B)}")

step("a 2048 x 2048 x 3 UInt16 raster with a projection, written as a COG (multipart, DEFLATE)")
srs = osr.SpatialReference()
srs.ImportFromEPSG(32633)
src = os.path.join(tmp, "src.tif")
ds = gdal.GetDriverByName("GTiff").Create(src, 2048, 2048, 3, gdal.GDT_UInt16, ["TILED=YES"])
ds.SetGeoTransform([500000, 10, 0, 4600000, 0, -10])
ds.SetProjection(srs.ExportToWkt())
rng = np.random.default_rng(11)
bands = [rng.integers(0, 65535, (2048, 2048), dtype=np.uint16) for _ in range(3)]
for i, a in enumerate(bands):
    ds.GetRasterBand(i + 1).WriteArray(a)
ds = None
gdal.Translate(f"{B}/cog/scene.tif", src, format="COG", creationOptions=["COMPRESS=DEFLATE", "BLOCKSIZE=256"])
size = gdal.VSIStatL(f"{B}/cog/scene.tif").size
check(size > 15 << 20, f"the COG is {size} bytes; several 5 MiB parts were meant")
info = gdal.Info(f"{B}/cog/scene.tif", format="json")
check(
    info["size"] == [2048, 2048] and info["geoTransform"] == [500000, 10, 0, 4600000, 0, -10],
    f"gdalinfo: {info['size']} {info['geoTransform']}",
)
check("32633" in info["coordinateSystem"]["wkt"], "the projection did not come back")

step("windows read back through ranged GETs, compared with the array written")
cog = gdal.Open(f"{B}/cog/scene.tif")
for band, (x, y, w, h) in [
    (1, (0, 0, 256, 256)),
    (2, (1000, 1200, 300, 200)),
    (3, (1792, 1792, 256, 256)),
    (1, (5, 2040, 2043, 8)),
]:
    got = cog.GetRasterBand(band).ReadAsArray(x, y, w, h)
    check(
        np.array_equal(got, bands[band - 1][y : y + h, x : x + w]),
        f"band {band} window {(x, y, w, h)} differs",
    )
check(cog.GetRasterBand(1).GetOverviewCount() >= 1, "the COG's overviews are missing")
cog = None

step("a tiled GeoTIFF written through a local temporary file, read back whole")
gdal.Translate(f"{B}/gtiff/scene.tif", src, format="GTiff", creationOptions=["TILED=YES", "COMPRESS=LZW"])
gt = gdal.Open(f"{B}/gtiff/scene.tif")
check(np.array_equal(gt.GetRasterBand(3).ReadAsArray(), bands[2]), "the GeoTIFF's band 3 differs")
gt = None

step("stat of a file, a directory and a missing key; listings")
st = gdal.VSIStatL(f"{B}/cog/scene.tif")
check(st is not None and st.size == size and not st.IsDirectory(), "stat of the COG")
st = gdal.VSIStatL(f"{B}/cog")
check(st is not None and st.IsDirectory(), "stat of the implicit directory cog")
check(gdal.VSIStatL(f"{B}/cog/none.tif") is None, "a missing key stats as something")
check(gdal.ReadDir(B) == ["cog", "gtiff"], f"ReadDir of the bucket: {gdal.ReadDir(B)}")
check(gdal.ReadDir(f"{B}/cog") == ["scene.tif"], f"ReadDir of cog: {gdal.ReadDir(f'{B}/cog')}")
check(
    sorted(gdal.ReadDirRecursive(B)) == ["cog/scene.tif", "gtiff/scene.tif"],
    f"ReadDirRecursive: {gdal.ReadDirRecursive(B)}",
)

step("Mkdir and Rmdir (directory marker objects)")
check(gdal.Mkdir(f"{B}/empty", 0o755) == 0, "Mkdir failed")
st = gdal.VSIStatL(f"{B}/empty")
check(st is not None and st.IsDirectory(), "the new directory does not stat as one")
check("empty" in gdal.ReadDir(B), f"the new directory is not listed: {gdal.ReadDir(B)}")
check(gdal.Rmdir(f"{B}/empty") == 0, "Rmdir failed")
check("empty" not in gdal.ReadDir(B), "the removed directory is still listed")

step("object tags, and metadata set by a copy in place")
check(
    gdal.SetFileMetadata(f"{B}/cog/scene.tif", {"mission": "S2", "tile": "33 T"}, "TAGS"),
    "PutObjectTagging failed",
)
check(
    gdal.GetFileMetadata(f"{B}/cog/scene.tif", "TAGS") == {"mission": "S2", "tile": "33 T"},
    f"tags: {gdal.GetFileMetadata(f'{B}/cog/scene.tif', 'TAGS')}",
)
check(
    gdal.SetFileMetadata(
        f"{B}/cog/scene.tif",
        {"x-amz-meta-sensor": "MSI", "Content-Type": "image/tiff; application=geotiff"},
        "HEADERS",
    ),
    "the copy in place failed",
)
h = headers(f"{B}/cog/scene.tif")
check(
    h.get("x-amz-meta-sensor") == "MSI" and h.get("content-type") == "image/tiff; application=geotiff",
    f"headers after the copy: {h}",
)
check(gdal.VSIStatL(f"{B}/cog/scene.tif").size == size, "the copy in place changed the size")

step("rename of a file (a copy, then a delete)")
write_bytes(f"{B}/moves/a.txt", b"moved bytes")
check(gdal.Rename(f"{B}/moves/a.txt", f"{B}/moves/b.txt") == 0, "Rename failed")
check(gdal.ReadDir(f"{B}/moves") == ["b.txt"], f"after the rename: {gdal.ReadDir(f'{B}/moves')}")
check(read_bytes(f"{B}/moves/b.txt") == b"moved bytes", "the renamed file's bytes")

step("60 MiB in 1 MiB writes (a multipart upload of 5 MiB parts), read at offsets")
big = rng.integers(0, 256, 60 << 20, dtype=np.uint8).tobytes()
write_bytes(f"{B}/raw/big.bin", big)
check(gdal.VSIStatL(f"{B}/raw/big.bin").size == len(big), "size of the 60 MiB file")
for off, n in [(0, 100), (50_000_000, 4096), (len(big) - 10, 10), (5 << 20, 3 << 20)]:
    check(read_bytes(f"{B}/raw/big.bin", off, n) == big[off : off + n], f"bytes at {off}+{n}")
h = headers(f"{B}/raw/big.bin")
check(h.get("etag", "").endswith('-12"'), f"a 12-part upload's ETag: {h.get('etag')}")

step("a signed URL, fetched without GDAL")
url = gdal.GetSignedURL(f"{B}/moves/b.txt")
check(url and "X-Amz-Signature=" in url, f"signed URL: {url}")
check(urllib.request.urlopen(url).read() == b"moved bytes", "the signed URL's bytes")

step("Sync of a local tree to the bucket and back")
up = os.path.join(tmp, "up")
os.makedirs(os.path.join(up, "sub", "deeper"))
for rel, data in [("a.txt", b"a" * 10), ("sub/b.bin", os.urandom(300_000)), ("sub/deeper/c.txt", b"")]:
    with open(os.path.join(up, rel), "wb") as f:
        f.write(data)
# Into "sync", not "sync/": GDAL 3.6 makes a missing target named with a slash twice, and
# fails, on any file system.
check(gdal.Sync(up + "/", f"{B}/sync"), "Sync up failed")
check(
    sorted(gdal.ReadDirRecursive(f"{B}/sync"))
    == ["a.txt", "sub/", "sub/b.bin", "sub/deeper/", "sub/deeper/c.txt"],
    f"synced tree: {gdal.ReadDirRecursive(f'{B}/sync')}",
)
down = os.path.join(tmp, "down")
check(gdal.Sync(f"{B}/sync/", down), "Sync down failed")
for rel in ["a.txt", "sub/b.bin", "sub/deeper/c.txt"]:
    check(
        filecmp.cmp(os.path.join(up, rel), os.path.join(down, rel), shallow=False),
        f"{rel} came back different",
    )

step("keys with a space, a '+' and UTF-8, path style and virtual-hosted style")
name = f"{B}/odd names/a b+c ü日本.txt"
write_bytes(name, b"odd")
check(read_bytes(name) == b"odd", "bytes of the odd key")
check(gdal.ReadDir(f"{B}/odd names") == ["a b+c ü日本.txt"], f"odd listing: {gdal.ReadDir(f'{B}/odd names')}")
gdal.SetConfigOption("AWS_S3_ENDPOINT", HOSTPORT.replace("127.0.0.1", "localhost"))
gdal.SetConfigOption("AWS_VIRTUAL_HOSTING", "TRUE")
check(BUCKET in gdal.ReadDir("/vsis3/"), "bucket listing, virtual-hosted")
check(read_bytes(name) == b"odd", "bytes of the odd key, virtual-hosted")
write_bytes(f"{B}/odd names/vh+ß.txt", b"vh")
check(
    gdal.ReadDir(f"{B}/odd names") == ["a b+c ü日本.txt", "vh+ß.txt"],
    f"listing, virtual-hosted: {gdal.ReadDir(f'{B}/odd names')}",
)
check(read_bytes(f"{B}/raw/big.bin", 1 << 20, 1 << 20) == big[1 << 20 : 2 << 20], "a range, virtual-hosted")
gdal.SetConfigOption("AWS_S3_ENDPOINT", HOSTPORT)
gdal.SetConfigOption("AWS_VIRTUAL_HOSTING", "FALSE")

step("vector data: FlatGeobuf and GeoJSON written to the bucket, queried with a spatial filter")
gpkg = os.path.join(tmp, "points.gpkg")
vs = ogr.GetDriverByName("GPKG").CreateDataSource(gpkg)
layer = vs.CreateLayer("points", srs, ogr.wkbPoint)
layer.CreateField(ogr.FieldDefn("name", ogr.OFTString))
for i in range(5000):
    feat = ogr.Feature(layer.GetLayerDefn())
    feat.SetField("name", f"p{i}")
    feat.SetGeometry(ogr.CreateGeometryFromWkt(f"POINT ({500000 + i} {4600000 - i})"))
    layer.CreateFeature(feat)
vs = None
for fmt, ext in [("FlatGeobuf", "fgb"), ("GeoJSON", "geojson")]:
    gdal.VectorTranslate(f"{B}/vector/points.{ext}", gpkg, format=fmt)
    opened = ogr.Open(f"{B}/vector/points.{ext}")  # kept: the layer lives inside it
    lyr = opened.GetLayer(0)
    check(lyr.GetFeatureCount() == 5000, f"{fmt}: {lyr.GetFeatureCount()} features")
    lyr.SetSpatialFilterRect(500100, 4599800, 500200, 4599900)
    got = sorted(f.GetField("name") for f in lyr)
    check(got == sorted(f"p{i}" for i in range(100, 201)), f"{fmt}: the filter found {len(got)} features")
    lyr = opened = None

step("DeleteObjects of two keys, a recursive removal, and what is left")
check(gdal.UnlinkBatch([f"{B}/moves/b.txt", f"{B}/gtiff/scene.tif"]), "UnlinkBatch failed")
check(gdal.RmdirRecursive(f"{B}/sync") == 0, "RmdirRecursive failed")
left = sorted(gdal.ReadDirRecursive(B))
want = [
    "cog/scene.tif",
    "odd names/a b+c ü日本.txt",
    "odd names/vh+ß.txt",
    "raw/big.bin",
    "vector/points.fgb",
    "vector/points.geojson",
]
if left != want:
    fail(f"left in the bucket: {left}")
