"""DuckDB's httpfs extension (its own S3 client in C++) on a bucket, against the gateway named
by ENDPOINT and BUCKET: Parquet and CSV written with COPY (multipart uploads), read back whole,
through globs and by ranges (a Parquet footer, then the row groups a filter needs), Hive
partitions written and read, and keys with spaces and `+`. Every result is compared with what
DuckDB computes from the same rows locally."""

import os
from urllib.parse import urlparse

import duckdb
import duckdb_extensions

from scenario import check, step

ENDPOINT, BUCKET = os.environ["ENDPOINT"], os.environ["BUCKET"]
url = urlparse(ENDPOINT)
duckdb_extensions.import_extension("httpfs")
db = duckdb.connect()
db.execute("LOAD httpfs")
db.execute(
    f"""CREATE SECRET gateway (TYPE s3, KEY_ID '{os.environ["AWS_ACCESS_KEY_ID"]}',
    SECRET '{os.environ["AWS_SECRET_ACCESS_KEY"]}', REGION '{os.environ.get("AWS_DEFAULT_REGION", "us-east-1")}',
    ENDPOINT '{url.netloc}', URL_STYLE 'path', USE_SSL {str(url.scheme == "https").lower()})"""
)
s3 = f"s3://{BUCKET}"


def one(sql):
    return db.execute(sql).fetchall()


step("a million rows written as Parquet and read back")
rows = "SELECT range AS i, md5(range::VARCHAR) AS s FROM range(1000000)"
db.execute(f"COPY ({rows}) TO '{s3}/t/data.parquet' (FORMAT parquet, ROW_GROUP_SIZE 100000)")
check(one(f"SELECT count(*), sum(i), max(s) FROM '{s3}/t/data.parquet'") == one(f"SELECT count(*), sum(i), max(s) FROM ({rows})"), "Parquet aggregate differs")
check(one(f"SELECT s FROM '{s3}/t/data.parquet' WHERE i = 777777") == one(f"SELECT md5('777777')"), "Parquet point read differs")
check(one(f"SELECT count(*) FROM read_parquet('{s3}/t/*.parquet')") == [(1000000,)], "glob read differs")

step("a 200 MB CSV written in parts and read back")
big = "SELECT range AS i, repeat(chr(97 + (range % 26)::INTEGER), 200) AS s FROM range(1000000)"
db.execute(f"COPY ({big}) TO '{s3}/big.csv' (FORMAT csv)")
check(one(f"SELECT count(*), sum(i), count(DISTINCT s) FROM read_csv('{s3}/big.csv')") == [(1000000, 499999500000, 26)], "CSV differs")

step("Hive partitions written and read with their keys")
db.execute(f"COPY (SELECT range AS i, range % 7 AS p FROM range(70000)) TO '{s3}/part' (FORMAT parquet, PARTITION_BY (p))")
got = one(f"SELECT p, count(*), sum(i) FROM read_parquet('{s3}/part/*/*.parquet', hive_partitioning = true) GROUP BY p ORDER BY p")
want = one("SELECT range % 7 AS p, count(*), sum(range) FROM range(70000) GROUP BY p ORDER BY p")
check(got == want, f"partitions: {got}")

step("keys with spaces and plus signs")
db.execute(f"COPY (SELECT * FROM range(100)) TO '{s3}/odd/a b+c.csv' (FORMAT csv)")
check(one(f"SELECT count(*), sum(range) FROM '{s3}/odd/a b+c.csv'") == [(100, 4950)], "odd key differs")

step("glob lists every object")
keys = sorted(k for (k,) in one(f"SELECT * FROM glob('{s3}/**')"))
check(f"{s3}/odd/a b+c.csv" in keys and f"{s3}/t/data.parquet" in keys and f"{s3}/big.csv" in keys, f"glob: {keys}")
check(sum(k.startswith(f"{s3}/part/p=") for k in keys) == 7, f"partition files: {keys}")
print("duckdb scenario passed")
