"""CORS checked by a browser: run by compat/cors.sh against a fresh gateway (ENDPOINT and AWS_*
in the environment). Two static servers on two ports are two origins; the bucket's rules allow
one. The page does what a web upload form does: a presigned PUT of a file, then fetch() of a
presigned GET, then a GET of a missing key (an error response a script must still be able to read).
"""

import http.client
import http.server
import json
import os
import sys
import threading
import time
import urllib.parse
import uuid

import boto3
from botocore.config import Config
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

ENDPOINT = os.environ["ENDPOINT"]
s3 = boto3.client("s3", endpoint_url=ENDPOINT, config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
failures = []


def check(name, cond, detail=""):
    print(f"  {'ok' if cond else 'x'} {name} {detail if not cond else ''}")
    if not cond:
        failures.append(name)


class Pages(http.server.SimpleHTTPRequestHandler):
    pages = {}

    def do_GET(self):
        body = self.pages.get(urllib.parse.urlsplit(self.path).path, "").encode()
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_):
        pass


def serve():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{srv.server_address[1]}"


allowed, refused = serve(), serve()
B = "cors-" + uuid.uuid4().hex[:8]
s3.create_bucket(Bucket=B)
try:
    s3.get_bucket_cors(Bucket=B)
    check("GetBucketCors without rules fails", False)
except s3.exceptions.ClientError as e:
    check("NoSuchCORSConfiguration", e.response["Error"]["Code"] == "NoSuchCORSConfiguration", e.response["Error"])
rules = {"CORSRules": [{"ID": "upload-form", "AllowedOrigins": [allowed], "AllowedMethods": ["GET", "PUT"],
                        "AllowedHeaders": ["*"], "ExposeHeaders": ["ETag"], "MaxAgeSeconds": 600}]}
s3.put_bucket_cors(Bucket=B, CORSConfiguration=rules)
got = s3.get_bucket_cors(Bucket=B)["CORSRules"]
check("rules read back", got[0]["AllowedOrigins"] == [allowed] and got[0]["ExposeHeaders"] == ["ETag"], got)
try:
    s3.put_bucket_cors(Bucket=B, CORSConfiguration={"CORSRules": [{"AllowedOrigins": ["*"], "AllowedMethods": ["PATCH"]}]})
    check("PATCH refused", False)
except s3.exceptions.ClientError as e:
    check("PATCH refused", e.response["Error"]["Code"] == "InvalidRequest", e.response["Error"])


def preflight(origin, method="PUT", headers=None):
    u = urllib.parse.urlsplit(ENDPOINT)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    h = {"Origin": origin, "Access-Control-Request-Method": method}
    if headers:
        h["Access-Control-Request-Headers"] = headers
    c.request("OPTIONS", f"/{B}/upload.txt", headers=h)
    r = c.getresponse()
    return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read()


st, h, _ = preflight(allowed, headers="content-type")
check("preflight allowed", st == 200 and h.get("access-control-allow-origin") == allowed
      and "PUT" in h.get("access-control-allow-methods", "") and h.get("access-control-max-age") == "600", (st, h))
st, h, body = preflight(refused)
check("preflight refused", st == 403 and b"AccessForbidden" in body and "access-control-allow-origin" not in h, (st, h))
st, _, _ = preflight(allowed, method="DELETE")
check("preflight of a method not allowed", st == 403)

PAGE = """<!doctype html><html><body><script>
(async () => {
  const out = {};
  try {
    const put = await fetch(%(put)s, {method: "PUT", body: new Blob([%(body)s])});
    out.put = put.status; out.etag = put.headers.get("ETag");
    const got = await fetch(%(get)s);
    out.get = got.status; out.text = await got.text();
    const missing = await fetch(%(missing)s);
    out.missing = missing.status;
  } catch (e) { out.error = String(e); }
  document.title = "done " + JSON.stringify(out);
})();
</script></body></html>"""


def page_for(key, body):
    put = s3.generate_presigned_url("put_object", Params={"Bucket": B, "Key": key}, ExpiresIn=600)
    get = s3.generate_presigned_url("get_object", Params={"Bucket": B, "Key": key}, ExpiresIn=600)
    missing = s3.generate_presigned_url("get_object", Params={"Bucket": B, "Key": "missing"}, ExpiresIn=600)
    return PAGE % {k: json.dumps(v) for k, v in {"put": put, "get": get, "missing": missing, "body": body}.items()}


opts = webdriver.ChromeOptions()
opts.binary_location = "/usr/bin/chromium"
for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
    opts.add_argument(a)
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
try:
    def run(origin, key, body):
        Pages.pages[f"/{key}.html"] = page_for(key, body)
        driver.get(f"{origin}/{key}.html")
        deadline = time.time() + 30
        while not driver.title.startswith("done ") and time.time() < deadline:
            time.sleep(0.1)
        return json.loads(driver.title[5:]) if driver.title.startswith("done ") else {"error": "page never finished"}

    body = "uploaded from a browser page " + uuid.uuid4().hex
    r = run(allowed, "from-allowed", body)
    check("browser PUT from the allowed origin", r.get("put") == 200 and r.get("etag"), r)
    check("browser GET reads it back", r.get("get") == 200 and r.get("text") == body, r)
    check("error responses are readable by the page", r.get("missing") == 404, r)
    stored = s3.get_object(Bucket=B, Key="from-allowed")["Body"].read().decode()
    check("the object is what the page sent", stored == body, stored)

    r = run(refused, "from-refused", "should never arrive")
    check("browser refused from another origin", "error" in r and "put" not in r, r)
    try:
        s3.head_object(Bucket=B, Key="from-refused")
        check("nothing stored from the refused origin", False)
    except s3.exceptions.ClientError as e:
        check("nothing stored from the refused origin", e.response["Error"]["Code"] in ("404", "NoSuchKey"))
finally:
    driver.quit()

s3.delete_bucket_cors(Bucket=B)
st, _, _ = preflight(allowed)
check("preflight refused after DeleteBucketCors", st == 403)
s3.delete_object(Bucket=B, Key="from-allowed")
s3.delete_bucket(Bucket=B)
if failures:
    print(f"cors: {len(failures)} check(s) failed: {failures}")
    sys.exit(1)
print("PASS: cors (headless Chromium)")
